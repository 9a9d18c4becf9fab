"""Where the library lives and how it is opened: the database URL, the engine, and the migrations on opening.

`PLANNER_DB_URL` names the database (any SQLAlchemy URL for SQLite or PostgreSQL); without it the library is an
SQLite file in the user's data folder, so `make run` needs nothing else. Opening migrates the schema to the
newest revision under a lock, so two replicas starting at once on one database migrate it once.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from planner.library.diagnosis import (
    DB_URL_ENV,
    LibraryUnavailable,
    folder_refusal,
    kind_of,
    newer_schema,
    shown_url,
    unavailable,
)

__all__ = ["DB_URL_ENV", "LibraryUnavailable", "shown_url", "unavailable"]  # re-exported for older imports
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
BACKENDS = ("sqlite", "postgresql")
# Writers wait for each other up to this long instead of failing at once: a save takes milliseconds, so 30 s
# only runs out when something holds the database far longer than any save (a stuck process).
SQLITE_BUSY_TIMEOUT_S = 30
PG_CONNECT_TIMEOUT_S = (
    5  # a reachable server answers in milliseconds; 5 s allows a slow network, not a dead host
)
# A PostgreSQL write waits for another's row or table lock as long as SQLite's writers wait (then "locked"); any
# statement running longer than this is cancelled (then "slow"): the library's queries take milliseconds, so
# these only end a stuck lock holder's or an overloaded server's wait, and say which it was.
PG_LOCK_TIMEOUT_S = SQLITE_BUSY_TIMEOUT_S
PG_STATEMENT_TIMEOUT_S = 60
# Connection option that starts a transaction as a plain (deferred) BEGIN on SQLite: a read then takes no
# write lock and, in WAL mode, never waits for a writer. Writes keep BEGIN IMMEDIATE.
READING = "planner_reading"
PORTS = range(1, 65536)
DRIVERS = {"sqlite": ("", "pysqlite"), "postgresql": ("", "psycopg", "psycopg2")}
# Any fixed 64-bit number, the same in every process: PostgreSQL's advisory lock that serialises migrations.
MIGRATION_LOCK_KEY = 7_243_501_017


def default_sqlite_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/training-run-planner/plans.sqlite3` (~/.local/share/... when XDG_DATA_HOME is unset)."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")  # "~" again when no home is known: refused on opening
    base = Path(env.get("XDG_DATA_HOME") or Path(home) / ".local" / "share")
    return base / "training-run-planner" / "plans.sqlite3"


def library_url(environ: Mapping[str, str] | None = None) -> str:
    """The URL the library uses: `PLANNER_DB_URL`, else the default SQLite file."""
    env = os.environ if environ is None else environ
    return env.get(DB_URL_ENV, "").strip() or f"sqlite:///{default_sqlite_path(env)}"


def parse_url(url: str) -> URL:
    """The URL checked: SQLite or PostgreSQL (psycopg 3 as PostgreSQL's driver), or a LibraryUnavailable."""
    try:
        parsed = make_url(url)
        port = parsed.port
    except (ArgumentError, ValueError) as err:  # ValueError: a port that is not a number
        raise LibraryUnavailable(
            DB_URL_ENV,
            "is not a database URL (a port, when given, is a number)",
            kind="url",
            value=shown_url(url),
            allowed="sqlite:///FILE or postgresql://USER@HOST:PORT/DATABASE",
        ) from err
    if port is not None and port not in PORTS:
        raise LibraryUnavailable(
            DB_URL_ENV,
            "names a port that does not exist",
            kind="url",
            value=shown_url(parsed),
            allowed="1-65535",
        )
    if parsed.get_backend_name() not in BACKENDS:
        raise LibraryUnavailable(
            DB_URL_ENV,
            "names a database the library does not support",
            kind="url",
            value=shown_url(parsed),
            allowed="SQLite or PostgreSQL",
        )
    if parsed.get_driver_name() not in DRIVERS[parsed.get_backend_name()]:
        raise LibraryUnavailable(
            DB_URL_ENV,
            f"names the driver {parsed.get_driver_name()!r}, which the planner does not use",
            kind="url",
            value=shown_url(parsed),
            allowed="sqlite:///FILE, or postgresql:// (psycopg 3)",
        )
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() in ("", "psycopg2"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # the driver installed with the planner
    return parsed


def create_library_engine(url: str) -> Engine:
    parsed = parse_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    # pre-ping: a restarted server's dead connections are replaced; the connect timeout keeps a host that does
    # not answer (rather than refusing) from holding a page or a command for the operating system's minutes.
    timeouts = (
        f"-c lock_timeout={PG_LOCK_TIMEOUT_S * 1000} -c statement_timeout={PG_STATEMENT_TIMEOUT_S * 1000}"
    )
    given = parsed.query.get(
        "options", ""
    )  # a URL's own ?options=... are kept, after ours: a team's own settings win
    given = " ".join(given) if isinstance(given, tuple) else given
    connect_args = {"connect_timeout": PG_CONNECT_TIMEOUT_S, "options": f"{timeouts} {given}".strip()}
    return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)


def _sqlite_engine(url: URL) -> Engine:
    if url.database and url.database != ":memory:":
        folder = Path(url.database).expanduser().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a read-only HOME, a file where a folder should be, a full disk
            raise folder_refusal(url, folder, err) from err
        if not os.access(folder, os.W_OK | os.X_OK):  # SQLite's WAL needs files beside the database
            raise folder_refusal(url, folder, PermissionError(13, "Permission denied"))
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own transaction handling is switched off so that `_on_begin` decides how one starts.
        dbapi_connection.isolation_level = None
        # Text another tool wrote that is not UTF-8 comes back with U+FFFD in place of the bad bytes: shown,
        # never an error on reading the whole list.
        dbapi_connection.text_factory = lambda raw: raw.decode("utf-8", "replace")
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        _use_wal(cursor)  # readers never wait for a writer; writers queue
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # A write's IMMEDIATE takes the write lock at the start: a read-then-write transaction (the version
        # check) can then never deadlock against another writer, it waits its turn (SQLAlchemy's pysqlite
        # notes). A read's plain BEGIN takes no lock: with WAL it reads the last commit while a writer works.
        reading = connection.get_execution_options().get(READING, False)
        connection.exec_driver_sql("BEGIN" if reading else "BEGIN IMMEDIATE")

    return engine


def _use_wal(cursor: Any) -> None:
    """Put the file in WAL mode, waiting out other connections that switch it at the same moment.

    The mode is stored in the file, so only a fresh database switches. Two connections switching at once each
    hold the file shared and want it alone; SQLite breaks that deadlock by answering "database is locked" to one
    of them at once, busy timeout or not (six connections on a fresh file: 13 of 60 trials had such a failure,
    and one in CI failed the library's test of six replicas opening at once). So the switch is retried within
    the same busy timeout; once one connection has switched, the others find WAL already set.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if kind_of(err) != "locked" or time.monotonic() > deadline:
                raise
            time.sleep(0.05)  # a switch takes milliseconds


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration for the library's migrations, run on `connection` (migrations/env.py)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def upgrade(engine: Engine) -> None:
    """Migrate the database to the newest schema; a no-op (one query) when it is there already."""
    scripts = ScriptDirectory.from_config(alembic_config())
    try:
        with engine.connect() as probe:
            probe.execution_options(**{READING: True})  # the check takes no write lock
            current = MigrationContext.configure(probe).get_current_revision()
        if current == scripts.get_current_head():
            return
        if current is not None and current not in {script.revision for script in scripts.walk_revisions()}:
            raise newer_schema(engine.url, current)
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            command.upgrade(alembic_config(connection), "head")  # re-reads the revision under the lock
    except CommandError as err:  # a newer planner migrated it while this one waited for the lock
        raise newer_schema(engine.url, str(err).split("'")[1] if "'" in str(err) else "unknown") from err
    except SQLAlchemyError as err:
        raise unavailable(engine.url, err) from err
