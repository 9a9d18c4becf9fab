"""Opening the library: one engine per database URL and process, migrated before its first use, and opened
again when its SQLite file was replaced (restored from a backup, copied over) or removed since."""

from __future__ import annotations

import os
import sqlite3
import threading

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from planner.library.connect import create_library_engine, library_url, parse_url, upgrade
from planner.library.store import PlanLibrary

_opened: dict[str, tuple[PlanLibrary, tuple[int, int] | None]] = {}
_lock = threading.Lock()
MAX_OPEN = 8  # URLs kept open at once in one process (tests and --db open a few; a server one)


def _file_identity(url: str) -> tuple[int, int] | None:
    """The SQLite file's device and inode (a replaced file has another), or None (PostgreSQL, no file yet)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    try:
        found = os.stat(os.path.expanduser(parsed.database))
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _close_replaced(library: PlanLibrary) -> None:
    """Close the connections still open on a replaced file, first emptying its write-ahead log: the log file
    is found by name, so frames of the old file left in it would otherwise be read as part of the new one."""
    try:
        raw = library.engine.raw_connection()  # outside any transaction: a checkpoint cannot run inside one
        try:
            raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[union-attr]
        finally:
            raw.close()
    except (SQLAlchemyError, sqlite3.Error):
        pass  # the old file is gone or unreadable: nothing of it can be carried over
    library.engine.dispose()


def open_library(url: str | None = None) -> PlanLibrary:
    """The library at `url` (default: `PLANNER_DB_URL`, else the SQLite file in the user's data folder),
    migrated to the newest schema. One engine per URL and process; a failure is not remembered, so a database
    that comes back is found on the next call, and a replaced SQLite file is opened anew (its old connections
    closed) instead of the old file being read through connections still open on it."""
    url = url or library_url()
    parse_url(url)  # a URL the planner cannot use is refused before anything is opened
    with _lock:
        cached = _opened.get(url)
        if cached is not None and cached[1] == _file_identity(url):
            return cached[0]
        if cached is not None:
            _close_replaced(cached[0])
            del _opened[url]
        library = PlanLibrary(create_library_engine(url))
        try:
            upgrade(library.engine)
        except Exception:
            library.engine.dispose()  # nothing kept open on a database that was refused
            raise
        if len(_opened) >= MAX_OPEN:
            _opened.pop(next(iter(_opened)))[0].engine.dispose()
        _opened[url] = (library, _file_identity(url))
        return library
