"""The hostile library corpus in the app (AppTest): a stored value that is not UTF-8, a lookalike name, a data
folder that cannot be created, a library from a newer planner, a replaced database file. The Scenarios page and
the Plan sheet show a clear message (or the value, with U+FFFD) and keep working; none raises."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from planner import Scenario, open_library
from planner.library.connect import create_library_engine, upgrade
from tests.library_backends import unwritable_home
from tests.test_scenarios_page import PAGE, ok, save_as, table, texts

SHEET = "app_pages/plan_sheet.py"


@pytest.fixture
def page(fresh_library, app):
    return ok(app.switch_page(PAGE).run())


def test_a_stored_tag_that_is_not_utf8_is_shown_on_the_scenarios_page(library_url, app, monkeypatch):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    library = open_library(library_url)
    plan = library.create("tagged", Scenario(), tags=["fine"], author="Ann")
    with library.engine.begin() as connection:  # what `plans save --tags` stored before it checked UTF-8
        connection.execute(
            text("UPDATE plans SET tags = :tags WHERE id = :id"), {"tags": '["ok\\udcff"]', "id": plan.id}
        )
    ok(app.switch_page(PAGE).run())
    shown = table(app, "Name")
    assert list(shown["Name"]) == ["tagged"] and "ok\ufffd" in str(shown.iloc[0].to_dict())


def test_bytes_another_tool_wrote_into_the_sqlite_file_are_shown_on_the_scenarios_page(fresh_library, app):
    library = open_library(fresh_library)
    library.create("tagged", Scenario(), author="Ann")
    with library.engine.begin() as connection:  # raw bytes that are not UTF-8 ("An" and 0xFF)
        connection.execute(text("UPDATE plans SET author = CAST(X'416EFF' AS TEXT)"))
    ok(app.switch_page(PAGE).run())
    assert list(table(app, "Name")["Author"]) == ["An\ufffd"]


def test_a_lookalike_name_is_refused_naming_the_plan_it_looks_like(page):
    save_as(page, "plan")
    save_as(page, "pl\u200ban")
    errors = texts(page.error)
    assert any("'pl\u200ban' ('plan' looks the same) is already in the team library" in t for t in errors), (
        errors
    )


def test_a_data_folder_that_cannot_be_created_is_named_on_the_scenarios_page_and_the_sheet(
    app, monkeypatch, tmp_path
):
    monkeypatch.delenv("PLANNER_DB_URL", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(unwritable_home(tmp_path)))
    ok(app.switch_page(PAGE).run())
    [error] = texts(app.error)
    assert "cannot be created or written" in error and "training-run-planner" in error
    assert "set PLANNER_DB_URL (or XDG_DATA_HOME) to a writable place" in error
    assert app.download_button(key="scn.download_current").label == "Download the current plan as CSV"
    ok(app.switch_page(SHEET).run())
    warnings = texts(app.warning)
    assert any(
        "starts without the team library" in w and "cannot be created or written" in w for w in warnings
    )
    assert list(app.data_editor[0].value["Name"]) == ["Current plan"]


def test_a_library_of_a_newer_planner_is_refused_on_the_page(library_url, app, monkeypatch):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    engine = create_library_engine(library_url)
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099_later'"))
    engine.dispose()
    ok(app.switch_page(PAGE).run())
    [error] = texts(app.error)
    assert "this library was written by a newer planner (revision 0099_later); upgrade the planner" in error


def test_a_replaced_database_file_is_read_on_the_next_page_run(page, fresh_library, tmp_path):
    save_as(page, "before")
    assert list(table(page, "Name")["Name"]) == ["before"]
    backup = open_library(f"sqlite:///{tmp_path / 'backup.sqlite3'}")
    backup.create("restored", Scenario(n_gpus=16))
    backup.engine.dispose()
    (tmp_path / "backup.sqlite3").replace(fresh_library.split(":///", 1)[1])
    ok(page.run())
    assert list(table(page, "Name")["Name"]) == ["restored"]
