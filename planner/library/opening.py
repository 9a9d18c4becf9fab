"""Opening the library: one engine per database URL and process, migrated before its first use."""

from __future__ import annotations

import functools

from planner.library.connect import create_library_engine, library_url, upgrade
from planner.library.store import PlanLibrary


@functools.lru_cache(maxsize=8)
def _open(url: str) -> PlanLibrary:
    engine = create_library_engine(url)
    upgrade(engine)
    return PlanLibrary(engine)


def open_library(url: str | None = None) -> PlanLibrary:
    """The library at `url` (default: `PLANNER_DB_URL`, else the SQLite file in the user's data folder),
    migrated to the newest schema. One engine per URL and process; a failure is not remembered, so a database
    that comes back is found on the next call."""
    return _open(url or library_url())
