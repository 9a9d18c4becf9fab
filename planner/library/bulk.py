"""Many plans saved in one transaction (a CSV import): new names are created, live names get a new version.

Two imports of the same new names at once: on SQLite the second waits for the first's write lock and then
finds the names live; on PostgreSQL both would read the names as free and the second's insert hit the unique
index. Imports therefore queue on an advisory lock on PostgreSQL (as SQLite's writers queue on the write lock), and an
import that still meets a name another save created in that instant is run again from the start, finds the
names live and saves new versions: the same outcome as on SQLite, never a raw IntegrityError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from sqlalchemy import Connection, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from planner.inputs.scenario import Scenario
from planner.library.names import fold_name
from planner.library.records import checked_name, content_values, new_values
from planner.library.refusals import NameTaken
from planner.library.tables import plans


class PlanLibrary(Protocol):
    """What an import needs of `planner.library.store.PlanLibrary` (named here so the two modules do not
    import each other): one write transaction."""

    def _transaction(self) -> AbstractContextManager[Connection]: ...


# Each retry means another writer created one of these names in the same instant; after the retry the names
# are live, so a second collision needs a third writer racing on the same names, and so on.
IMPORT_ATTEMPTS = 10
# Any fixed 64-bit number other than the migration lock's: PostgreSQL's advisory lock that queues imports, so
# two imports meet no unique-name collision; the rerun above covers a single save racing an import.
IMPORT_LOCK_KEY = 7_243_501_018


@dataclass(frozen=True)
class ImportReport:
    created: tuple[str, ...]
    replaced: tuple[str, ...]


def import_named(
    library: PlanLibrary, named: Mapping[str, Scenario], author: str, tags: Sequence[str]
) -> ImportReport:
    """Save `named` (author and tags already checked) in one transaction, run again after losing a name race."""
    keys = {name: fold_name(checked_name(name)) for name in named}
    if len(set(keys.values())) < len(keys):
        twins = [name for name in named if list(keys.values()).count(keys[name]) > 1]
        raise NameTaken("name", "two plans of the import have names that look the same", value=twins[0])
    for _ in range(IMPORT_ATTEMPTS):
        try:
            return _import_once(library, named, keys, author, tags)
        except IntegrityError:
            continue
    raise NameTaken("name", "other saves kept taking these names; import again", value=next(iter(named), ""))


def _import_once(
    library: PlanLibrary,
    named: Mapping[str, Scenario],
    keys: Mapping[str, str],
    author: str,
    tags: Sequence[str],
) -> ImportReport:
    with library._transaction() as connection:
        if connection.dialect.name == "postgresql":  # imports queue for each other, as SQLite's writers do
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": IMPORT_LOCK_KEY})
        live_query = select(plans.c.name_key, plans.c.id).where(plans.c.deleted_at.is_(None))
        live = {str(key): int(plan_id) for key, plan_id in connection.execute(live_query).all()}
        new = [new_values(name, item, author, tags) for name, item in named.items() if keys[name] not in live]
        if new:
            connection.execute(insert(plans), new)
        for name, item in named.items():
            if keys[name] in live:
                values = content_values(item) | {"updated_by": author, "updated_at": datetime.now(UTC)}
                connection.execute(
                    update(plans)
                    .where(plans.c.id == live[keys[name]])
                    .values(**values, version=plans.c.version + 1)
                )
    created = tuple(name for name in named if keys[name] not in live)
    return ImportReport(created, tuple(name for name in named if keys[name] in live))
