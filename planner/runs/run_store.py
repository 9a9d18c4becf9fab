"""Imported runs kept in the team library (table `runs`, migration 0003_runs), attached to a saved plan or not.

The same database as the plans (SQLite by default, PostgreSQL by `PLANNER_DB_URL`), so runs survive restarts
and every replica of the app sees them. One insert or one read per call, each its own transaction.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import RowMapping, insert, select

from planner.library.store import PlanLibrary
from planner.library.tables import MAX_AUTHOR_CHARS, runs
from planner.runs.record import RunLogError, RunRecord

MAX_FILE_NAME_CHARS = 255  # the source_file column


def save_run(library: PlanLibrary, record: RunRecord, *, plan_id: int | None = None, author: str = "") -> int:
    """Store one imported run (attached to `plan_id` when given, which must be a live plan); its new id."""
    if plan_id is not None:
        library.get(plan_id)  # an unknown id is refused by name before anything is written
    if len(author) > MAX_AUTHOR_CHARS:
        raise RunLogError(f"author: at most {MAX_AUTHOR_CHARS} characters")
    values = {
        "plan_id": plan_id,
        "source_file": record.path[:MAX_FILE_NAME_CHARS],
        "log_format": record.log_format,
        "figures_json": json.dumps(record.figures, allow_nan=False),
        "config_json": json.dumps(record.config),
        "notes": json.dumps(record.notes),
        "author": author,
        "imported_at": datetime.now(UTC),
    }
    with library.engine.begin() as connection:
        result = connection.execute(insert(runs).values(**values))
        key = result.inserted_primary_key
    return int(key[0]) if key else 0


def plan_runs(library: PlanLibrary, plan_id: int | None) -> list[tuple[int, RunRecord]]:
    """The runs attached to a plan (None: the runs attached to none), oldest first, with their ids."""
    where = runs.c.plan_id.is_(None) if plan_id is None else runs.c.plan_id == plan_id
    with library.engine.connect() as connection:
        rows = connection.execute(select(runs).where(where).order_by(runs.c.id)).all()
    return [(row.id, _record(row._mapping)) for row in rows]


def _record(mapping: RowMapping) -> RunRecord:
    return RunRecord(
        path=str(mapping["source_file"]),
        log_format=str(mapping["log_format"]),
        figures={key: float(value) for key, value in json.loads(str(mapping["figures_json"])).items()},
        config={key: str(value) for key, value in json.loads(str(mapping["config_json"])).items()},
        notes=list(json.loads(str(mapping["notes"]))),
    )
