"""Why the library cannot be used, in words a user can act on: unreachable, damaged, locked, slow, written by a
newer planner, a folder that cannot be written, or a URL the planner cannot use.

Every failure of the database reaches the user as one `LibraryUnavailable` whose `kind` says which of these it
is, so the CLI prints one line (exit 2) and the app one message; none of them is a traceback. The kind is read
from the driver's own error: PostgreSQL's SQLSTATE code (psycopg's `sqlstate`, PostgreSQL manual appendix A
"Error codes") and SQLite's result text (sqlite.org/rescode.html), never from a guess about the URL.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from planner.errors import PlannerError

DB_URL_ENV = "PLANNER_DB_URL"
WHAT_TO_DO = {
    "unreachable": "check that the server runs and that PLANNER_DB_URL names its host, port, user and database",
    "damaged": "restore the file from a backup, or point PLANNER_DB_URL at another file",
    "locked": "another process holds a write open; try again, and stop that process if it stays stuck",
    "slow": "the database is overloaded; try again in a moment",
    "newer": "upgrade the planner (to the version that wrote it, or a later one) to use it",
    "unwritable": "make it writable, or set PLANNER_DB_URL (or XDG_DATA_HOME) to a writable place",
}
# SQLSTATE classes and codes (PostgreSQL manual, appendix A) that say what went wrong.
PG_LOCKED = ("55P03", "40P01")  # lock_not_available (lock_timeout), deadlock_detected
PG_SLOW = ("57014",)  # query_canceled: statement_timeout ran out
PG_DAMAGED = ("XX001", "XX002")  # data_corrupted, index_corrupted
PG_UNWRITABLE = ("25006",)  # read_only_sql_transaction: a standby or a read-only default
# SQLite's result texts (sqlite.org/rescode.html): SQLITE_BUSY/LOCKED, SQLITE_NOTADB/CORRUPT, SQLITE_READONLY.
SQLITE_LOCKED = ("database is locked", "database table is locked")
SQLITE_DAMAGED = ("file is not a database", "database disk image is malformed", "malformed database schema")
SQLITE_UNWRITABLE = ("readonly database", "read-only")
SQLITE_SLOW = ("interrupted",)


class LibraryUnavailable(PlannerError):
    """The database cannot be used; `kind` says why (the keys of WHAT_TO_DO, or "url" for a URL it cannot use).

    The message names PLANNER_DB_URL's value (without its password) and what to do."""

    def __init__(
        self, field: str, problem: str, *, kind: str = "unreachable", value: object = None, allowed: str = ""
    ) -> None:
        self.kind = kind
        super().__init__(field, problem, value=value, allowed=allowed)


def shown_url(url: str | URL) -> str:
    """The URL as messages show it: the password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return str(url)[:200]


def refusal(url: str | URL, kind: str, what: str) -> LibraryUnavailable:
    """The one message of a library that cannot be used: what happened, then what to do."""
    return LibraryUnavailable(DB_URL_ENV, f"{what}; {WHAT_TO_DO[kind]}", kind=kind, value=shown_url(url))


def kind_of(err: BaseException) -> str:
    """Which of WHAT_TO_DO a database error is (the driver's error behind SQLAlchemy's wrapper)."""
    found = getattr(err, "orig", None) or err
    code = str(getattr(found, "sqlstate", "") or "")
    text = str(found).lower()
    if code in PG_LOCKED or any(words in text for words in SQLITE_LOCKED):
        return "locked"
    if code in PG_SLOW or any(words in text for words in SQLITE_SLOW):
        return "slow"
    if code in PG_DAMAGED or any(words in text for words in SQLITE_DAMAGED):
        return "damaged"
    if code in PG_UNWRITABLE or any(words in text for words in SQLITE_UNWRITABLE):
        return "unwritable"
    return "unreachable"


HEADLINES = {
    "unreachable": "the plan library cannot be reached",
    "damaged": "the plan library is damaged or is not a plan library",
    "locked": "the plan library stayed locked by another writer",
    "slow": "the plan library did not answer in time",
    "unwritable": "the plan library cannot be written here",
}


def unavailable(url: str | URL, err: BaseException) -> LibraryUnavailable:
    """A database error as the user's one message, its kind read from the driver's error."""
    found = getattr(err, "orig", None) or err
    lines = str(found).strip().splitlines()
    detail = lines[0][:200] if lines else type(found).__name__
    kind = kind_of(err)
    return refusal(url, kind, f"{HEADLINES[kind]} ({detail})")


def folder_refusal(url: str | URL, folder: Path, err: OSError) -> LibraryUnavailable:
    """A folder for the SQLite file that cannot be created or written (a read-only HOME, a full disk)."""
    reason = err.strerror or type(err).__name__
    return refusal(
        url, "unwritable", f"the plan library's folder {folder} cannot be created or written ({reason})"
    )


def newer_schema(url: str | URL, revision: str) -> LibraryUnavailable:
    return refusal(url, "newer", f"this library was written by a newer planner (revision {revision[:40]})")
