"""The hostile corpus of the library, kept as regression tests on a real SQLite file and a real PostgreSQL server:
text that is not UTF-8, lookalike names, name races, a database from a newer planner, held write locks, slow
and damaged databases, huge ids, a replaced database file. Each ends in a clear refusal or a shown value, never
a raw database error."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import select, text

from planner import LibraryUnavailable, NameTaken, PlannerError, PlanNotFound, Scenario, open_library
from planner.library import connect
from planner.library.connect import alembic_config, create_library_engine, upgrade
from planner.library.store import PlanLibrary
from planner.library.tables import MAX_PLAN_ID, metadata, plans
from tests.library_backends import hold_write, unwritable_home

BAD_BYTE = "ok\udcff"  # what Python makes of the byte 0xFF typed on a command line (PEP 383)
# Names that look like "plan" on screen: zero-width space, right-to-left override, full-width letters,
# a soft hyphen, a combining grapheme joiner, a variation selector, a doubled space.
PLAN_LOOKALIKES = [
    "pl\u200ban",
    "\u202eplan",
    "\uff50\uff4c\uff41\uff4e",
    "pl\u00adan",
    "pla\u034fn",
    "plan\ufe0f",
]


def _fresh_view(url: str) -> PlanLibrary:
    """The library as a newly started process sees it: its own engine, migrated, no cache."""
    engine = create_library_engine(url)
    upgrade(engine)
    return PlanLibrary(engine)


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("tags", lambda lib: lib.create("a", Scenario(), tags=["fine", BAD_BYTE])),
        ("name", lambda lib: lib.create(BAD_BYTE, Scenario())),
        ("author", lambda lib: lib.create("a", Scenario(), author=BAD_BYTE)),
        ("name", lambda lib: lib.import_plans({BAD_BYTE: Scenario()})),
        ("search", lambda lib: lib.plans(BAD_BYTE)),
    ],
)
def test_text_that_is_not_utf8_is_refused_on_the_way_in(library_url, field, call):
    library = open_library(library_url)
    with pytest.raises(PlannerError, match="not valid UTF-8") as refused:
        call(library)
    assert refused.value.field == field and "\udcff" not in str(refused.value)
    assert library.count() == 0


def test_a_bad_value_stored_by_an_older_planner_is_shown_not_crashed_on(library_url):
    library = open_library(library_url)
    plan = library.create("tagged", Scenario(), tags=["fine"])
    with library.engine.begin() as connection:  # the JSON an older planner wrote for a tag with byte 0xFF
        connection.execute(plans.update().where(plans.c.id == plan.id).values(tags='["fine", "ok\\udcff"]'))
    [listed] = _fresh_view(library_url).plans()
    assert listed.tags == ("fine", "ok\ufffd")
    assert all(tag.encode("utf-8") for tag in listed.tags)  # what a page sends to the browser must encode


def test_bytes_that_are_not_utf8_in_a_sqlite_file_are_shown_with_a_replacement(tmp_path):
    url = f"sqlite:///{tmp_path / 'plans.sqlite3'}"
    library = open_library(url)
    library.create("fine", Scenario(), author="Ann")
    with library.engine.begin() as connection:  # another tool wrote raw bytes that are not UTF-8
        connection.execute(
            text("UPDATE plans SET author = CAST(X'416EFF' AS TEXT), name = CAST(X'6EFF' AS TEXT)")
        )
    [listed] = _fresh_view(url).plans()
    assert (listed.name, listed.author) == ("n\ufffd", "An\ufffd")


def test_lookalike_names_are_one_name_and_the_display_name_is_kept(library_url):
    library = open_library(library_url)
    library.create("plan", Scenario())
    for lookalike in PLAN_LOOKALIKES:
        with pytest.raises(NameTaken):
            library.create(lookalike, Scenario())
    with pytest.raises(NameTaken, match="'plan' looks the same"):
        library.save("pl\u200ban", Scenario())
    assert library.find("\uff50\uff4c\uff41\uff4e").name == "plan"  # found under its key, shown as stored
    wide = library.create("\uff37ide  one", Scenario(n_gpus=8))
    assert wide.name == "\uff37ide  one"  # the display name is stored as typed
    assert library.find("Wide one").id == wide.id
    # A combining accent typed separately is the same letter as the precomposed one; a doubled mark is one mark.
    accented = library.create("caf\u00e9", Scenario())
    for twin in ("cafe\u0301", "cafe\u0301\u0301", "caf\u00e9\u0301"):
        with pytest.raises(NameTaken):
            library.create(twin, Scenario())
    library.delete(accented.id)
    assert (
        library.create("cafe\u0301", Scenario()).name == "cafe\u0301"
    )  # free again once the first is deleted
    copy = library.duplicate(library.find("plan").id)
    assert copy.name == "plan (copy)"


def test_names_of_invisible_characters_only_are_refused(library_url):
    with pytest.raises(PlannerError, match="visible character"):
        open_library(library_url).create("\u200b\u200d", Scenario())


def test_simultaneous_imports_of_the_same_new_names_all_succeed(library_url):
    """Twelve imports at once, five rounds: on PostgreSQL the losers of the unique-name race used to raise a
    raw IntegrityError; now every import either creates the names or saves new versions of them."""
    names = [f"race {i}" for i in range(6)]
    workers, rounds = 12, 5
    views = [_fresh_view(library_url) for _ in range(workers)]
    errors: list[BaseException] = []
    for round_number in range(rounds):
        barrier = threading.Barrier(workers)

        def one(index: int, round_number: int = round_number, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                views[index].import_plans({name: Scenario(n_gpus=8 + round_number) for name in names})
            except BaseException as err:  # every failure is collected and shown
                errors.append(err)

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(one, range(workers)))
    assert errors == []
    stored = open_library(library_url).plans()
    assert sorted(plan.name for plan in stored) == names
    assert {plan.version for plan in stored} == {workers * rounds}  # one creation, then a version each


def test_simultaneous_saves_of_one_new_name_keep_one_and_refuse_the_others_clearly(library_url):
    workers = 10
    views = [_fresh_view(library_url) for _ in range(workers)]
    barrier = threading.Barrier(workers)

    def one(index: int) -> str:
        barrier.wait()
        try:
            views[index].save("same", Scenario(n_gpus=index + 1))
        except NameTaken as err:
            return err.problem
        return "saved"

    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(one, range(workers)))
    assert outcomes.count("saved") == 1
    assert all("name" in outcome for outcome in outcomes if outcome != "saved")
    assert open_library(library_url).count() == 1


def test_a_library_migrated_by_a_newer_planner_is_refused_with_its_revision(library_url):
    engine = create_library_engine(library_url)
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0042_future'"))
    with pytest.raises(LibraryUnavailable) as refused:
        open_library(library_url)
    assert refused.value.kind == "newer"
    assert "this library was written by a newer planner (revision 0042_future); upgrade" in str(refused.value)


def test_a_library_of_the_first_schema_with_lookalike_names_is_migrated_without_losing_any(library_url):
    engine = create_library_engine(library_url)
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "0001")
    row = {
        "scenario_json": Scenario().model_dump_json(),
        "planner_version": "0.1",
        "author": "",
        "tags": "[]",
    }
    row |= {"updated_by": "", "model": "m", "gpu": "g", "version": 1, "deleted_at": None}
    now = {"created_at": "2026-12-01 10:00:00+00:00", "updated_at": "2026-12-01 10:00:00+00:00"}
    with engine.begin() as connection:
        for name in ("plan", "pl\u200ban", "other"):
            connection.execute(text(_insert_sql()), {**row, **now, "name": name})
    library = open_library(library_url)
    assert sorted(plan.name for plan in library.plans()) == ["other", "plan", "pl\u200ban (plan 2)"]
    with library.engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), metadata) == []
    with pytest.raises(NameTaken):
        library.create("p\u200blan", Scenario())


def _insert_sql() -> str:
    columns = "name, scenario_json, planner_version, author, updated_by, tags, model, gpu, created_at, "
    columns += "updated_at, version, deleted_at"
    values = ", ".join(f":{column.strip()}" for column in columns.split(","))
    return f"INSERT INTO plans ({columns}) VALUES ({values})"


def test_huge_and_odd_ids_are_not_found_rather_than_crashing(library_url):
    library = open_library(library_url)
    library.create("one", Scenario())
    for plan_id in (0, -1, MAX_PLAN_ID + 1, 10**30):
        with pytest.raises(PlanNotFound):
            library.get(plan_id)
    for ref in ("9" * 40, "\u00b2", "\u0661", "1e9"):  # 40 digits, a superscript two, an Arabic-Indic one
        with pytest.raises(PlanNotFound):
            library.find(ref)
    assert library.find("1").name == "one"


# ------------------------------------------------------------------------------------ locks held elsewhere


def test_a_listing_completes_in_under_a_second_while_another_process_holds_a_write(library_url):
    open_library(library_url).create("listed", Scenario())
    holder = hold_write(library_url, 20)
    try:
        started = time.monotonic()
        listed = _fresh_view(library_url).plans()  # a new engine, as a newly started CLI or replica has
        assert time.monotonic() - started < 1.0
        assert [plan.name for plan in listed] == ["listed"] and listed[0].author == ""  # the last commit
    finally:
        holder.kill()
        holder.wait()


def test_a_write_that_waits_too_long_for_a_held_lock_says_locked(library_url, monkeypatch):
    monkeypatch.setattr(connect, "SQLITE_BUSY_TIMEOUT_S", 1)
    monkeypatch.setattr(connect, "PG_LOCK_TIMEOUT_S", 1)
    view = _fresh_view(library_url)
    holder = hold_write(library_url, 20)
    try:
        with pytest.raises(LibraryUnavailable) as refused:
            view.create("blocked", Scenario())
    finally:
        holder.kill()
        holder.wait()
    assert refused.value.kind == "locked" and "stayed locked by another writer" in str(refused.value)


def test_a_query_that_runs_too_long_says_slow_on_postgresql(monkeypatch):
    from tests.library_backends import fresh_postgres_database

    url = fresh_postgres_database()
    monkeypatch.setattr(connect, "PG_STATEMENT_TIMEOUT_S", 1)
    view = _fresh_view(url)
    holder = hold_write(url, 20, mode="ACCESS EXCLUSIVE")  # even reads wait for this one
    try:
        with pytest.raises(LibraryUnavailable) as refused:
            view.plans()
    finally:
        holder.kill()
        holder.wait()
    assert refused.value.kind == "slow" and "did not answer in time" in str(refused.value)


def test_postgresql_gets_the_lock_and_statement_timeouts_and_keeps_the_urls_own_options():
    from tests.library_backends import fresh_postgres_database

    url = fresh_postgres_database()
    with create_library_engine(url).connect() as connection:
        assert connection.execute(text("SHOW lock_timeout")).scalar_one() == "30s"
        assert connection.execute(text("SHOW statement_timeout")).scalar_one() == "1min"
    own = f"{url}?options=-c%20statement_timeout%3D5s%20-c%20application_name%3Dteam"
    with create_library_engine(own).connect() as connection:
        assert connection.execute(text("SHOW statement_timeout")).scalar_one() == "5s"
        assert connection.execute(text("SHOW application_name")).scalar_one() == "team"
        assert connection.execute(text("SHOW lock_timeout")).scalar_one() == "30s"


def test_unreachable_and_damaged_are_told_apart(tmp_path):
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(b"this is not a database, it is a text file of some length" * 20)
    with pytest.raises(LibraryUnavailable) as found:
        open_library(f"sqlite:///{damaged}")
    assert found.value.kind == "damaged" and "restore the file from a backup" in str(found.value)
    with pytest.raises(LibraryUnavailable) as found:
        open_library("postgresql://nobody@127.0.0.1:1/none")
    assert found.value.kind == "unreachable" and "cannot be reached" in str(found.value)


def test_a_data_folder_that_cannot_be_created_is_named_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("PLANNER_DB_URL", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(unwritable_home(tmp_path)))
    with pytest.raises(LibraryUnavailable) as refused:
        open_library()
    message = str(refused.value)
    assert refused.value.kind == "unwritable" and ".local/share/training-run-planner" in message
    assert "set PLANNER_DB_URL (or XDG_DATA_HOME) to a writable place" in message


def test_a_replaced_database_file_is_opened_anew(tmp_path):
    path = tmp_path / "plans.sqlite3"
    url = f"sqlite:///{path}"
    open_library(url).create("before", Scenario())
    restored = tmp_path / "restored.sqlite3"
    other = open_library(f"sqlite:///{restored}")
    other.create("from the backup", Scenario())
    other.engine.dispose()
    os.replace(restored, path)
    assert [plan.name for plan in open_library(url).plans()] == ["from the backup"]
    path.unlink()
    assert open_library(url).plans() == []  # removed: a new, empty library in its place
    with open_library(url).engine.connect() as connection:
        assert connection.execute(select(plans.c.id)).all() == []
