"""The databases the plan-library tests run against: a fresh SQLite file, and a fresh database on the real
PostgreSQL server that .ci/run starts (PLANNER_TEST_PG_URL; scripts/pg_test_server.sh starts one locally).

Without that server the PostgreSQL cases skip with the reason locally and fail under CI=true, so CI cannot
pass without really running them. `POSTGRES_RUNS` counts them for the summary line CI prints.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.ci import in_ci

ROOT = Path(__file__).resolve().parents[1]
PG_URL_ENV = "PLANNER_TEST_PG_URL"
PG_DIR_ENV = "PLANNER_TEST_PG_DIR"
BACKENDS = ("sqlite", "postgresql")
POSTGRES_RUNS: list[str] = []  # node ids of the tests that ran against PostgreSQL
_numbers = itertools.count()


def require_postgres() -> str:
    url = os.environ.get(PG_URL_ENV, "").strip()
    if url:
        return url
    reason = (
        f"{PG_URL_ENV} is not set: start a server with `scripts/pg_test_server.sh start DIR` and export it"
    )
    if in_ci():
        pytest.fail(f"CI=true but the PostgreSQL library tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def fresh_postgres_database() -> str:
    """A new, empty database on the test server; its URL."""
    import psycopg

    base = make_url(require_postgres())
    name = f"planner_t{os.getpid()}_{next(_numbers)}"
    admin = base.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return base.set(database=name).render_as_string(hide_password=False)


def restart_postgres() -> None:
    folder = os.environ.get(PG_DIR_ENV, "").strip()
    if not folder:
        pytest.skip(f"{PG_DIR_ENV} is not set: the test server's folder is needed to restart it")
    subprocess.run([str(ROOT / "scripts" / "pg_test_server.sh"), "restart", folder], check=True, timeout=120)


def backend_url(backend: str, tmp_path: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'plans.sqlite3'}"
    return fresh_postgres_database()


HOLD_SQLITE = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
connection.execute("UPDATE plans SET author = 'holder'")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("ROLLBACK")
"""
HOLD_POSTGRES = """
import psycopg, sys, time
with psycopg.connect(sys.argv[1]) as connection:
    connection.execute("UPDATE plans SET author = 'holder'")
    connection.execute("LOCK TABLE plans IN " + sys.argv[3] + " MODE")
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    connection.rollback()
"""


def hold_write(url: str, seconds: float, mode: str = "SHARE ROW EXCLUSIVE") -> subprocess.Popen[str]:
    """A second process that opens a write transaction on `url` and keeps it open for `seconds`."""
    if url.startswith("sqlite"):
        args = [HOLD_SQLITE, url.split(":///", 1)[1], str(seconds)]
    else:
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        args = [HOLD_POSTGRES, plain, str(seconds), mode]
    holder = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


def unwritable_home(tmp_path: Path) -> Path:
    """A HOME nobody can create folders in: a read-only folder, or (as root, whom permissions do not stop)
    sysfs, which refuses new folders even to root."""
    if os.geteuid() == 0:
        return Path("/sys")
    home = tmp_path / "readonly-home"
    home.mkdir()
    home.chmod(0o555)
    return home
