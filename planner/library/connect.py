"""Where the library lives and how it is opened: the database URL, the engine, and the migrations on opening.

`PLANNER_DB_URL` names the database (any SQLAlchemy URL for SQLite or PostgreSQL); without it the library is an
SQLite file in the user's data folder, so `make run` needs nothing else. Opening migrates the schema to the
newest revision under a lock, so two replicas starting at once on one database migrate it once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from planner.errors import PlannerError

DB_URL_ENV = "PLANNER_DB_URL"
MIGRATIONS_DIR = Path(__file__).with_name("migrations")
BACKENDS = ("sqlite", "postgresql")
# Writers wait for each other up to this long instead of failing at once: a save takes milliseconds, so 30 s
# only runs out when something holds the database far longer than any save (a stuck process).
SQLITE_BUSY_TIMEOUT_S = 30
PG_CONNECT_TIMEOUT_S = (
    5  # a reachable server answers in milliseconds; 5 s allows a slow network, not a dead host
)
# Any fixed 64-bit number, the same in every process: PostgreSQL's advisory lock that serialises migrations.
MIGRATION_LOCK_KEY = 7_243_501_017


class LibraryUnavailable(PlannerError):
    """The database cannot be opened or reached; the message names the URL (without its password)."""


def default_sqlite_path(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/training-run-planner/plans.sqlite3` (~/.local/share/... when XDG_DATA_HOME is unset)."""
    env = os.environ if environ is None else environ
    base = Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "training-run-planner" / "plans.sqlite3"


def library_url(environ: Mapping[str, str] | None = None) -> str:
    """The URL the library uses: `PLANNER_DB_URL`, else the default SQLite file."""
    env = os.environ if environ is None else environ
    return env.get(DB_URL_ENV, "").strip() or f"sqlite:///{default_sqlite_path(env)}"


def shown_url(url: str | URL) -> str:
    """The URL as messages show it: the password hidden."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return str(url)[:200]


def parse_url(url: str) -> URL:
    """The URL checked: SQLite or PostgreSQL (psycopg 3 as PostgreSQL's driver), or a LibraryUnavailable."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise LibraryUnavailable(
            DB_URL_ENV, "is not a database URL", value=url[:200], allowed="sqlite:///FILE or postgresql://..."
        ) from err
    if parsed.get_backend_name() not in BACKENDS:
        raise LibraryUnavailable(
            DB_URL_ENV,
            "names a database the library does not support",
            value=shown_url(parsed),
            allowed="SQLite or PostgreSQL",
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
    return create_engine(parsed, pool_pre_ping=True, connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S})


def _sqlite_engine(url: URL) -> Engine:
    if url.database and url.database != ":memory:":
        Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # The driver's own transaction handling is switched off so that `_on_begin` decides how one starts.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never wait for a writer; writers queue
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # IMMEDIATE takes the write lock at the start: a read-then-write transaction (the version check) can
        # then never deadlock against another writer, it waits its turn (SQLAlchemy's pysqlite notes).
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


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
    head = head_revision()
    try:
        with engine.connect() as probe:
            if MigrationContext.configure(probe).get_current_revision() == head:
                return
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            command.upgrade(alembic_config(connection), "head")  # re-reads the revision under the lock
    except SQLAlchemyError as err:
        raise unavailable(engine.url, err) from err


def unavailable(url: str | URL, err: Exception) -> LibraryUnavailable:
    first_line = str(getattr(err, "orig", None) or err).strip().splitlines()
    return LibraryUnavailable(
        DB_URL_ENV,
        f"the plan library cannot be reached ({first_line[0][:200] if first_line else type(err).__name__})",
        value=shown_url(url),
    )
