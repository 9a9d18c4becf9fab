"""Real-browser fixtures: one Streamlit server per test session, Debian's chromium driven by Playwright.

Why a browser at all: AppTest misses the page-switch widget clean-up, fragment reruns, the URL the browser
really shows and download contents (DESIGN.md §5, reference/streamlit-notes.md §4.3).

Without chromium (or Playwright) the tests skip with the reason; with CI=true they fail instead, so a CI machine
that silently lost its browser cannot pass. Never run `playwright install`: the download is blocked here and
Debian's chromium is the supported browser (`CHROMIUM_PATH` overrides its location).

Extending: request the `app_page` fixture (an `AppPage` on a fresh browser context) or `open_app_page` (more
contexts in one test), then use its helpers: `goto`, `open_plan`, `nav`, `select`, `set_number`, `metrics`, `shot`...
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci import in_ci
from tests.e2e.app_page import AppPage
from tests.e2e.server import ServerDidNotStart, launch, stop

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
VIEWPORT = {"width": 1400, "height": 1000}


def _missing_browser_reason() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
        import pytest_playwright  # noqa: F401
    except ImportError:
        return "playwright / pytest-playwright not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} not found: apt-get install -y chromium (never `playwright install`)"
    return None


@pytest.fixture(scope="session")
def browser_available() -> None:
    """Skip (locally) or fail (CI=true) when the browser cannot run."""
    reason = _missing_browser_reason()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"CI=true but the real-browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


def start_server(log_path: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` on 127.0.0.1 at a free port, waited for until healthy; (process, base URL).

    `env` is added to this process's environment (e.g. another PLANNER_DB_URL). The log is kept for the
    failure message."""
    try:
        return launch(ROOT / "app.py", log_path, env)
    except ServerDidNotStart as err:
        pytest.fail(str(err), pytrace=False)


def stop_server(server: subprocess.Popen) -> None:
    stop(server)


@pytest.fixture(scope="session")
def app_url(browser_available: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the whole test session (every test that needs no server of its own)."""
    server, url = start_server(tmp_path_factory.mktemp("streamlit") / "server.log")
    yield url
    stop_server(server)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any], browser_available: None) -> dict:
    """pytest-playwright hook: Debian's chromium instead of a downloaded build."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": ["--no-sandbox"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict:
    return {**browser_context_args, "viewport": VIEWPORT, "accept_downloads": True}


@pytest.fixture
def app_page(browser_available: None, app_url: str, request: pytest.FixtureRequest) -> AppPage:
    """The app's default page in a fresh browser context (pytest-playwright's `page`)."""
    page = request.getfixturevalue("page")
    return AppPage(page, app_url, request.node.name).goto("/")


@pytest.fixture
def open_app_page(
    browser_available: None, app_url: str, request: pytest.FixtureRequest
) -> Callable[[str], AppPage]:
    """Factory: `open_app_page(path_and_query)` gives an AppPage in ANOTHER new browser context (own session)."""
    new_context = request.getfixturevalue("new_context")  # pytest-playwright closes these after the test
    opened = 0

    def open_page(path_and_query: str = "/") -> AppPage:
        nonlocal opened
        opened += 1
        page = new_context().new_page()
        return AppPage(page, app_url, f"{request.node.name}-ctx{opened}").goto(path_and_query)

    return open_page
