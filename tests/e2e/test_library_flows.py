"""The team library across app processes (real browser): two servers on one database see each other's saves,
and a plan survives a server restart (the database, not a process or a browser session, holds it)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.app_page import AppPage
from tests.e2e.conftest import start_server, stop_server

pytestmark = pytest.mark.e2e

PLAN = "shared across servers"
TAGS = "e2e, team"


@pytest.fixture
def start_on_one_db(browser_available: None, tmp_path: Path) -> Iterator[Callable[[str], tuple]]:
    """Factory: `start(label)` starts another app process on this test's own SQLite library."""
    environment = {"PLANNER_DB_URL": f"sqlite:///{tmp_path / 'team.sqlite3'}"}
    started: list[subprocess.Popen] = []

    def start(label: str) -> tuple[subprocess.Popen, str]:
        server, url = start_server(tmp_path / f"{label}.log", environment)
        started.append(server)
        return server, url

    yield start
    for server in started:
        if server.poll() is None:
            stop_server(server)


@pytest.fixture
def browser_on(request: pytest.FixtureRequest) -> Callable[[str, str], AppPage]:
    """Factory: `browser_on(base_url, label)` opens the Scenarios page of that server in a new browser context."""
    new_context = request.getfixturevalue("new_context")

    def open_page(base_url: str, label: str) -> AppPage:
        page = new_context().new_page()
        return AppPage(page, base_url, f"{request.node.name}-{label}").goto("/scenarios", heading="Scenarios")

    return open_page


def _type(app: AppPage, label: str, text: str) -> None:
    box = app.page.get_by_test_id("stMain").get_by_label(label, exact=True)
    box.fill(text)
    box.press("Enter")
    app.wait_idle()


def test_two_app_processes_on_one_database_see_each_others_saves_and_plans_survive_a_restart(
    start_on_one_db, browser_on
) -> None:
    server_a, url_a = start_on_one_db("server-a")
    _, url_b = start_on_one_db("server-b")
    alice = browser_on(url_a, "alice")
    alice.set_number("Number of GPUs", "16", sidebar=True)
    _type(alice, "Your name", "Alice")
    _type(alice, "Name", PLAN)
    _type(alice, "Tags", TAGS)
    alice.page.get_by_role("button", name="Save as a new plan", exact=True).click()
    alice.wait_idle()
    assert any(f"Saved '{PLAN}'" in text for text in alice.alerts()), alice.alerts()
    assert alice.dataframe_column(column=1) == [PLAN]
    alice.shot("saved-on-a")

    bob = browser_on(url_b, "bob")  # another process, another browser
    bob.shot("listed-on-b")
    assert bob.dataframe_column(column=1) == [PLAN]
    assert bob.dataframe_column(column=4) == ["16 × H100 SXM"]
    assert bob.dataframe_column(column=6) == ["Alice"]
    bob.page.get_by_role("button", name="Load into the planner").click()
    bob.wait_idle()
    assert bob.number_input("Number of GPUs", sidebar=True).input_value() == "16"

    stop_server(server_a)
    _, url_c = start_on_one_db("server-a-restarted")
    again = browser_on(url_c, "after-restart")
    again.shot("after-restart")
    assert again.dataframe_column(column=1) == [PLAN]
    assert again.dataframe_column(column=5) == [TAGS]
