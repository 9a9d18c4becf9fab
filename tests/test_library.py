"""The team plan library on a real SQLite file and a real PostgreSQL server (tests/library_backends.py):
round trips, migrations, stale saves, soft delete, concurrency, restarts, old plans, a 1,000-plan CSV import."""

from __future__ import annotations

import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, select, text, update

from planner import (
    CONFLICT_TAG,
    NameTaken,
    PlannerError,
    Scenario,
    StalePlanError,
    default_catalogs,
    open_library,
    read_saved_scenarios,
    repaired,
    saved_scenarios_csv,
)
from planner.library.connect import (
    SQLITE_BUSY_TIMEOUT_S,
    _use_wal,
    create_library_engine,
    head_revision,
    upgrade,
)
from planner.library.store import PlanLibrary
from planner.library.tables import metadata, plans
from planner.library.versioning import PLANNER_VERSION
from tests.library_backends import restart_postgres

EIGHT_B_LORA = Scenario(model="Llama 3.1 8B", method="lora", gpu="H100 SXM", n_gpus=4, micro_batch=2)


def _separate_process_view(url: str) -> PlanLibrary:
    """A second engine on the same database, as another replica would have (no cache, no shared pool)."""
    engine = create_library_engine(url)
    upgrade(engine)
    return PlanLibrary(engine)


def test_a_saved_plan_comes_back_whole(library_url):
    library = open_library(library_url)
    saved = library.create("8B LoRA", EIGHT_B_LORA, author="Ann", tags=["lora", " q3 ", "LoRA", ""])
    again = _separate_process_view(library_url).find("8B LoRA")
    assert again.scenario == EIGHT_B_LORA
    assert (again.id, again.version, again.author, again.updated_by) == (saved.id, 1, "Ann", "Ann")
    assert again.tags == ("lora", "q3")  # stripped, empty dropped, a case-insensitive repeat kept once
    assert again.planner_version == PLANNER_VERSION
    assert again.model == "Llama 3.1 8B" and again.gpu == "H100 SXM"
    assert again.created_at == again.updated_at and again.created_at.tzinfo is not None
    assert again.problem is None and not again.deleted
    # Every input is stored, defaults included, so later defaults cannot change a saved plan.
    assert set(json.loads(again.scenario_json)) == set(Scenario.model_fields)


def test_the_migrated_schema_is_exactly_the_tables_module(library_url):
    library = open_library(library_url)
    with library.engine.connect() as connection:
        context = MigrationContext.configure(connection)
        assert context.get_current_revision() == head_revision()
        assert compare_metadata(context, metadata) == []  # a schema change without a migration fails here


def test_opening_a_fresh_database_from_many_replicas_at_once_migrates_it_once(library_url):
    barrier = threading.Barrier(6)

    def open_one(_: int) -> int:
        barrier.wait()
        return _separate_process_view(library_url).count()

    with ThreadPoolExecutor(6) as pool:
        assert list(pool.map(open_one, range(6))) == [0] * 6
    with create_library_engine(library_url).connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM alembic_version")).scalar_one() == 1


def _switch_to_wal_at_once(path: Path, n_connections: int) -> list[str]:
    """`n_connections` connections switch `path` to WAL at the same moment; the errors they met."""
    barrier, failures = threading.Barrier(n_connections), []

    def switch(_: int) -> None:
        connection = sqlite3.connect(path, timeout=SQLITE_BUSY_TIMEOUT_S, isolation_level=None)
        barrier.wait()
        try:
            _use_wal(connection.cursor())
        except sqlite3.OperationalError as err:
            failures.append(str(err))
        finally:
            connection.close()

    with ThreadPoolExecutor(n_connections) as pool:
        list(pool.map(switch, range(n_connections)))
    return failures


def test_six_connections_switching_a_fresh_file_to_wal_at_once_all_succeed(tmp_path):
    # without the retry, 13 of 60 such trials had a connection told "database is locked" at once
    for trial in range(20):
        path = tmp_path / f"fresh{trial}.sqlite3"
        sqlite3.connect(path).close()
        assert _switch_to_wal_at_once(path, 6) == [], f"trial {trial}"
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_stale_save_is_refused_and_both_versions_are_kept(library_url):
    library = open_library(library_url)
    plan = library.create("70B pre-train", EIGHT_B_LORA, author="Ann")
    bob = library.update(plan.id, EIGHT_B_LORA.updated(n_gpus=16), expected_version=1, author="Bob")
    assert bob.version == 2
    with pytest.raises(StalePlanError) as refused:
        library.update(plan.id, EIGHT_B_LORA.updated(n_gpus=64), expected_version=1, author="Cem")
    message = str(refused.value)
    assert "changed by Bob" in message and "now version 2; you loaded version 1" in message
    assert refused.value.kept.name in message
    stored = library.find("70B pre-train")
    assert (stored.version, stored.scenario.n_gpus, stored.updated_by) == (2, 16, "Bob")  # not overwritten
    kept = library.get(refused.value.kept.id)
    assert kept.scenario.n_gpus == 64 and CONFLICT_TAG in kept.tags and kept.author == "Cem"


def test_delete_is_soft_and_undo_brings_the_plan_back(library_url):
    library = open_library(library_url)
    plan = library.create("spot run", EIGHT_B_LORA, author="Ann")
    library.delete(plan.id, author="Bob")
    assert library.plans() == [] and [p.name for p in library.plans(deleted=True)] == ["spot run"]
    assert library.undo_delete(plan.id, author="Bob").name == "spot run"
    assert [p.name for p in library.plans()] == ["spot run"]
    # A deleted plan's name is free again; undoing then keeps both, the restored one under a copy name.
    library.delete(plan.id)
    library.create("spot run", EIGHT_B_LORA.updated(n_gpus=8))
    assert library.undo_delete(plan.id).name == "spot run (copy)"
    assert sorted(p.name for p in library.plans()) == ["spot run", "spot run (copy)"]


def test_twenty_concurrent_saves_lose_nothing(library_url):
    library = open_library(library_url)
    shared = library.create("shared", EIGHT_B_LORA)
    barrier = threading.Barrier(20)

    def save(number: int) -> str:
        replica = _separate_process_view(library_url)  # its own engine and connections
        barrier.wait()
        if number % 2:  # ten new plans at once
            return replica.create(f"plan {number}", EIGHT_B_LORA.updated(n_gpus=4 * number)).name
        try:  # ten saves over one plan, all loaded at version 1: one wins, nine are kept as copies
            return replica.update(
                shared.id, EIGHT_B_LORA.updated(micro_batch=number + 1), expected_version=1
            ).name
        except StalePlanError as refused:
            return refused.kept.name

    with ThreadPoolExecutor(20) as pool:
        names = list(pool.map(save, range(20)))
    stored = {p.name: p for p in library.plans()}
    assert set(names) <= set(stored) and len(stored) == 1 + 10 + 9  # the shared plan, 10 new, 9 kept copies
    assert stored["shared"].version == 2
    batches = sorted(p.scenario.micro_batch for p in stored.values() if p.name.startswith("shared"))
    assert batches == [number + 1 for number in range(0, 20, 2)]  # every one of the ten saves is there


def test_plans_survive_a_restart(library_url):
    library = open_library(library_url)
    library.create("keep me", EIGHT_B_LORA, tags=["restart"])
    if library.backend == "postgresql":
        restart_postgres()
        assert [p.name for p in library.plans()] == ["keep me"]  # the pool's dead connections are replaced
    library.engine.dispose()
    assert _separate_process_view(library_url).find("keep me").scenario == EIGHT_B_LORA


def test_an_old_plan_that_no_longer_validates_is_listed_with_its_reason_and_can_be_repaired(library_url):
    library = open_library(library_url)
    plan = library.create("from 2025", EIGHT_B_LORA)
    old = {**json.loads(plan.scenario_json), "n_gpus": 0, "gradient_checkpointing": True}
    with library.engine.begin() as connection:
        connection.execute(
            update(plans)
            .where(plans.c.id == plan.id)
            .values(scenario_json=json.dumps(old), planner_version="0.0.9")
        )
    listed = library.find("from 2025")
    assert listed.scenario is None and listed.planner_version == "0.0.9"
    assert "n_gpus" in listed.problem and "gradient_checkpointing" in listed.problem
    fixed, notices = repaired(listed)
    assert fixed == EIGHT_B_LORA.updated(n_gpus=Scenario().n_gpus)
    assert any("gradient_checkpointing" in n for n in notices) and any("n_gpus" in n for n in notices)
    saved = library.update(listed.id, fixed, expected_version=listed.version)
    assert saved.scenario == fixed and saved.version == 2 and saved.planner_version == PLANNER_VERSION


def test_search_by_name_tag_model_gpu_and_author(library_url):
    library = open_library(library_url)
    library.create("Llama LoRA", EIGHT_B_LORA, author="Ann", tags=["team-a"])
    library.create("Qwen full", Scenario(model="Qwen2.5 7B", gpu="A100 80GB SXM"), author="Bob", tags=["q3"])
    library.create("100% off_peak", Scenario(model="Qwen2.5 0.5B", gpu="L40S"), tags=["q3"])

    def names(search: str) -> list[str]:
        return sorted(p.name for p in library.plans(search))

    assert names("llama") == ["Llama LoRA"]
    assert names("Q3") == ["100% off_peak", "Qwen full"]
    assert names("qwen2.5 7b") == ["Qwen full"] and names("a100") == ["Qwen full"]
    assert names("bob q3") == ["Qwen full"]  # every word must match
    assert names("100%") == ["100% off_peak"] and names("f_p") == ["100% off_peak"]  # wildcards are literal
    assert names("h100") == ["Llama LoRA"]


def test_bad_names_tags_and_taken_names_are_refused_with_the_reason(library_url):
    library = open_library(library_url)
    library.create("taken", EIGHT_B_LORA)
    with pytest.raises(NameTaken):
        library.create("taken", EIGHT_B_LORA)
    with pytest.raises(PlannerError, match="at most 80 characters"):
        library.create("x" * 81, EIGHT_B_LORA)
    with pytest.raises(PlannerError, match="tags: a tag has at most 40 characters"):
        library.create("ok", EIGHT_B_LORA, tags=["t" * 41])
    with pytest.raises(PlannerError, match=r"author: .*control characters"):
        library.create("ok", EIGHT_B_LORA, author="Ann\nBob")
    assert library.count() == 1


def test_a_csv_import_of_1000_plans_lands_in_one_go_and_again_as_new_versions(library_url):
    cats = default_catalogs()
    named = {
        f"sweep {i:04d}": EIGHT_B_LORA.updated(micro_batch=1 + i % 8, grad_accum=1 + i // 8)
        for i in range(1000)
    }
    parsed = read_saved_scenarios(saved_scenarios_csv(named, cats).encode(), cats)
    assert not parsed.problems and parsed.scenarios == named
    library = open_library(library_url)
    report = library.import_plans(parsed.scenarios, author="Ann", tags=["sweep"])
    assert len(report.created) == 1000 and not report.replaced
    stored = {p.name: p for p in library.plans("sweep")}
    assert {name: plan.scenario for name, plan in stored.items()} == named
    again = library.import_plans(parsed.scenarios, author="Bob")
    assert len(again.replaced) == 1000 and not again.created
    with library.engine.connect() as connection:
        versions = connection.execute(select(func.min(plans.c.version), func.max(plans.c.version))).one()
    assert tuple(versions) == (2, 2) and library.count() == 1000


def test_every_migration_runs_down_and_up_again(library_url):
    from alembic import command

    from planner.library.connect import alembic_config

    engine = create_library_engine(library_url)
    upgrade(engine)
    with engine.begin() as connection:
        command.downgrade(alembic_config(connection), "base")
    with engine.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() is None
    upgrade(engine)
    assert PlanLibrary(engine).create("after", EIGHT_B_LORA).version == 1
