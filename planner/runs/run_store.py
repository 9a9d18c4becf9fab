"""Imported runs kept in the team library (table `runs`, migration 0003_runs), attached to a saved plan or not.

The same database as the plans (SQLite by default, PostgreSQL by `PLANNER_DB_URL`), so runs survive restarts
and every replica of the app sees them. One insert or one read per call, each its own transaction.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import RowMapping, insert, select

from planner.library.store import PlanLibrary
from planner.library.tables import MAX_AUTHOR_CHARS, calibrations, runs
from planner.runs.calibration import Calibration
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


def attached_runs(library: PlanLibrary) -> list[tuple[int, int, RunRecord]]:
    """Every run attached to a plan: (run id, plan id, record), oldest first."""
    with library.engine.connect() as connection:
        rows = connection.execute(select(runs).where(runs.c.plan_id.is_not(None)).order_by(runs.c.id)).all()
    return [(row.id, row.plan_id, _record(row._mapping)) for row in rows]


def save_calibration(library: PlanLibrary, calibration: Calibration, author: str = "") -> None:
    values = {
        "gpu": calibration.gpu,
        "regime": calibration.regime,
        "time_scale": calibration.time_scale,
        "memory_scale": calibration.memory_scale,
        "run_ids_json": json.dumps(calibration.run_ids),
        "loo_json": json.dumps(calibration.loo),
        "notes": json.dumps(calibration.notes),
        "author": author[:MAX_AUTHOR_CHARS],
        "created_at": datetime.now(UTC),
    }
    with library.engine.begin() as connection:
        connection.execute(insert(calibrations).values(**values))


def latest_calibration(library: PlanLibrary, gpu: str, regime: str) -> Calibration | None:
    """The newest calibration stored for this GPU and regime, or None."""
    where = (calibrations.c.gpu == gpu) & (calibrations.c.regime == regime)
    with library.engine.connect() as connection:
        row = connection.execute(
            select(calibrations).where(where).order_by(calibrations.c.id.desc()).limit(1)
        ).first()
    if row is None:
        return None
    return Calibration(
        gpu=row.gpu,
        regime=row.regime,
        time_scale=float(row.time_scale),
        memory_scale=float(row.memory_scale),
        run_ids=[int(i) for i in json.loads(row.run_ids_json)],
        loo={key: float(value) for key, value in json.loads(row.loo_json).items()},
        notes=list(json.loads(row.notes)),
    )
