"""Shared fixtures: AppTest helpers with isolated Streamlit caches, and a plan library of the test run's own."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.ci import FUZZ_PROFILE, in_ci, n_examples

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

# CI gives one answer per commit: under CI=true every hypothesis test draws the same examples each run
# (derandomize), and the examples it ever failed on are kept as explicit @example cases. Locally they stay random.
# `make fuzz` (HYPOTHESIS_PROFILE=fuzz, which wins over CI) runs the same tests with random seeds and many more
# examples; tests that set their own count take it through tests.ci.n_examples.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile(FUZZ_PROFILE, derandomize=False, max_examples=n_examples(100), print_blob=True)
_profile = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if in_ci() else "")
if _profile:
    settings.load_profile(_profile)

# Every test (and every app or CLI process a test starts, which inherits the environment) uses a throwaway
# SQLite library unless it sets its own: the suite never writes to the user's real plan library.
os.environ["PLANNER_DB_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='planner-test-')}/plans.sqlite3"


@pytest.fixture
def fresh_catalogs(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No team folder unless the test sets one, and no catalogue or upload left over from another test."""
    import streamlit as st

    from ui import data as ui_data

    monkeypatch.delenv(ui_data.OVERLAY_ENV, raising=False)
    st.cache_data.clear()
    ui_data.clear_data_cache()
    yield
    ui_data.clear_data_cache()


@pytest.fixture
def fresh_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An empty SQLite library for this test alone (the app and the CLI find it through PLANNER_DB_URL)."""
    url = f"sqlite:///{tmp_path / 'plans.sqlite3'}"
    monkeypatch.setenv("PLANNER_DB_URL", url)
    yield url


@pytest.fixture
def app():
    """A fresh AppTest of the whole app, run once (caches cleared so tests never share state)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    return at


@pytest.fixture(params=["sqlite", "postgresql"])
def library_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty plan library on each backend: a fresh SQLite file, a fresh PostgreSQL database."""
    from tests.library_backends import POSTGRES_RUNS, backend_url

    url = backend_url(request.param, tmp_path)
    if request.param == "postgresql":
        POSTGRES_RUNS.append(request.node.nodeid)
    return url


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say in the log which real database the library tests ran against (CI checks the log for it)."""
    from tests.library_backends import POSTGRES_RUNS

    if POSTGRES_RUNS:
        passed = {report.nodeid for report in terminalreporter.stats.get("passed", [])}
        ok = sum(node in passed for node in POSTGRES_RUNS)
        terminalreporter.write_line(
            f"plan library: {len(POSTGRES_RUNS)} tests ran against a real PostgreSQL server "
            f"({ok} passed), the same tests against SQLite"
        )


def team_uploader(at: Any, kind: str) -> Any:
    """The sidebar's uploader for the session's own `kind` ("gpus" or "prices") file, opening its section first
    (a closed section draws no uploaders: ui/team_data.py)."""
    from ui.team_data import UPLOADS_OPEN_KEY

    at.session_state[UPLOADS_OPEN_KEY] = True
    at.run()
    matches = [u for u in at.sidebar.get("file_uploader") if str(u.key).startswith(f"team_data.w.{kind}.")]
    assert matches, f"no {kind} uploader in the sidebar"
    return matches[0]
