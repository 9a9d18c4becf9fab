"""The hostile corpus through the command line: every case ends with exit status 2 and one line naming what to
fix, never a traceback (real SQLite files, the real PostgreSQL test server, FIFOs, a read-only HOME)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from planner import Scenario, open_library, shape_from_hf_config
from planner.cli.main import main
from planner.library import connect
from planner.library.connect import create_library_engine, upgrade
from tests.library_backends import ROOT, hold_write, unwritable_home
from tests.test_hf_config import LLAMA_31_8B


def _planner(*args: str | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI in a process of its own; bytes arguments reach it as raw bytes (not UTF-8 ones included)."""
    return subprocess.run(
        [sys.executable, "-m", "planner", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _main_line(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([b"--tags", b"fine,ok\xff"], "error: --tags: a tag is not valid UTF-8 text"),
        ([b"--author", b"Ann\xff"], "error: --author: is not valid UTF-8 text"),
        ([b"--name", b"n\xff"], "error: --name: is not valid UTF-8 text"),
    ],
)
def test_a_byte_that_is_not_utf8_is_refused_on_save(library_url, args, expected):
    command: list[str | bytes] = ["plans", "save", "--name", "plan", *args]
    assert _one_line(_planner(*command, env={"PLANNER_DB_URL": library_url})).startswith(expected)
    assert open_library(library_url).count() == 0


def test_a_search_with_a_byte_that_is_not_utf8_is_refused(fresh_library):
    line = _one_line(_planner("plans", "list", "--search", b"lo\xffra"))
    assert line.startswith("error: --search: is not valid UTF-8 text")


def test_a_tag_an_older_planner_stored_with_a_bad_byte_is_listed(library_url, monkeypatch):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    library = open_library(library_url)
    plan = library.create("tagged", Scenario())
    with library.engine.begin() as connection:
        connection.execute(
            text("UPDATE plans SET tags = :tags WHERE id = :id"), {"tags": '["ok\\udcff"]', "id": plan.id}
        )
    listed = _planner("plans", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)[0]["tags"] == ["ok\ufffd"]


def test_ids_too_large_for_the_database_are_named_with_their_range(library_url, monkeypatch, capsys):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    open_library(library_url).create("one", Scenario())
    for action in (["show"], ["delete"], ["delete", "--undo"]):
        line = _main_line(capsys, "plans", *action, "9" * 40)
        assert line.startswith("error: PLAN: no") and "ids run from 1 to 2147483647" in line
    line = _main_line(
        capsys, "plans", "save", "--name", "one", "--replace", "--expect-version", "99999999999"
    )
    assert (
        line
        == "error: argument --expect-version: a version is a whole number from 1 to 2147483647 (got '99999999999')"
    )
    assert _main_line(capsys, "plans", "show", "\u00b2").startswith(
        "error: PLAN: no plan has that name or id"
    )


def test_a_lookalike_name_is_refused_naming_the_plan_it_looks_like(library_url, monkeypatch, capsys):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    open_library(library_url).create("plan", Scenario())
    line = _main_line(capsys, "plans", "save", "--name", "pl\u200ban")
    assert line.startswith(
        "error: --name: a plan with this name exists ('plan' looks the same); add --replace"
    )
    assert main(["plans", "save", "--name", "\uff50lan", "--replace", "--gpus", "16"]) == 0
    assert open_library(library_url).find("plan").scenario.n_gpus == 16


def test_a_library_of_a_newer_planner_is_refused_with_its_revision(library_url, monkeypatch, capsys):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    engine = create_library_engine(library_url)
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0099_later'"))
    line = _main_line(capsys, "plans", "list")
    assert line.startswith(
        "error: PLANNER_DB_URL: this library was written by a newer planner (revision 0099_later); upgrade"
    )
    assert _main_line(capsys, "export", "--to", "deepspeed", "--plan", "x").startswith(
        "error: --plan: this library was written by a newer planner (revision 0099_later)"
    )


def test_a_write_held_by_another_process_says_locked_and_a_listing_does_not_wait(
    library_url, monkeypatch, capsys
):
    monkeypatch.setenv("PLANNER_DB_URL", library_url)
    monkeypatch.setattr(connect, "SQLITE_BUSY_TIMEOUT_S", 1)
    monkeypatch.setattr(connect, "PG_LOCK_TIMEOUT_S", 1)
    open_library(library_url).create("kept", Scenario())
    holder = hold_write(library_url, 30)
    try:
        started = time.monotonic()
        assert main(["plans", "list", "--format", "json"]) == 0
        assert time.monotonic() - started < 1.0
        assert [plan["name"] for plan in json.loads(capsys.readouterr().out)] == ["kept"]
        line = _main_line(capsys, "plans", "save", "--name", "blocked")
    finally:
        holder.kill()
        holder.wait()
    assert line.startswith("error: PLANNER_DB_URL: the plan library stayed locked by another writer")
    assert "try again" in line


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+asyncpg://u@127.0.0.1/db", "error: PLANNER_DB_URL: names the driver 'asyncpg'"),
        (
            "postgresql://u@127.0.0.1:port/db",
            "error: PLANNER_DB_URL: is not a database URL (a port, when given",
        ),
        ("postgresql://u@127.0.0.1:99999/db", "error: PLANNER_DB_URL: names a port that does not exist"),
        ("sqlite+aiosqlite:///x.sqlite3", "error: PLANNER_DB_URL: names the driver 'aiosqlite'"),
        ("postgresql://u:secret@127.0.0.1:1/db", "error: PLANNER_DB_URL: the plan library cannot be reached"),
    ],
)
def test_a_database_url_the_planner_cannot_use_names_planner_db_url(url, expected):
    line = _one_line(_planner("plans", "list", env={"PLANNER_DB_URL": url}))
    assert line.startswith(expected) and "secret" not in line


def test_a_damaged_file_is_called_damaged_not_unreachable(tmp_path):
    damaged = tmp_path / "plans.sqlite3"
    damaged.write_bytes(b"not a database " * 100)
    line = _one_line(_planner("plans", "list", env={"PLANNER_DB_URL": f"sqlite:///{damaged}"}))
    assert line.startswith("error: PLANNER_DB_URL: the plan library is damaged or is not a plan library")
    assert "restore the file from a backup" in line


def test_a_read_only_home_is_named_with_what_to_do(tmp_path):
    env = {"HOME": str(unwritable_home(tmp_path)), "PLANNER_DB_URL": "", "XDG_DATA_HOME": ""}
    line = _one_line(_planner("plans", "list", env=env))
    assert line.startswith("error: PLANNER_DB_URL: the plan library's folder ")
    assert (
        "cannot be created or written" in line
        and "set PLANNER_DB_URL (or XDG_DATA_HOME) to a writable" in line
    )


def test_export_output_refuses_a_fifo_a_folder_and_a_device_without_hanging(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    line = _one_line(_planner("export", "--to", "deepspeed", "--output", str(fifo)))
    assert time.monotonic() - started < 60  # it used to wait for a reader forever
    assert line.startswith(
        f"error: --output: cannot write {fifo}: it is a pipe or device no program is reading"
    )
    assert _one_line(_planner("export", "--to", "deepspeed", "--output", str(tmp_path))).startswith(
        f"error: --output: cannot write {tmp_path}: Is a directory"
    )
    assert _one_line(_planner("export", "--to", "deepspeed", "--output", "/dev/null")) == (
        "error: --output: /dev/null is not a regular file; give a new path or a file to replace"
    )


def test_export_output_writes_a_new_path_and_replaces_a_regular_file_whole(tmp_path):
    target = tmp_path / "ds.json"
    target.write_text("x" * 100_000)  # longer than the configuration: nothing of it may remain
    done = _planner("export", "--to", "deepspeed", "--gpus", "8", "--output", str(target))
    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text())["train_batch_size"] > 0
    fresh = tmp_path / "new.json"
    assert _planner("export", "--to", "deepspeed", "--gpus", "8", "--output", str(fresh)).returncode == 0
    assert fresh.read_text() == target.read_text()


def test_set_model_shape_takes_json_like_a_scenario_file(tmp_path, capsys):
    shape = shape_from_hf_config(json.dumps(LLAMA_31_8B).encode(), name="llama-8b").model_dump()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_31_8B))
    assert main(["estimate", "--model-config", str(config), "--format", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "estimate",
                "--set",
                f"model_shape={json.dumps({**shape, 'name': 'config'})}",
                "--set",
                "model=",
                "--format",
                "json",
            ]
        )
        == 0
    )
    from_set = json.loads(capsys.readouterr().out)
    assert from_set["total_flops"] == pytest.approx(from_file["total_flops"], rel=1e-12)
    line = _main_line(capsys, "estimate", "--set", "model_shape={bad")
    assert line.startswith("error: --set: model_shape takes a JSON object (is not valid JSON")
    line = _main_line(capsys, "estimate", "--set", f"model_shape={json.dumps({**shape, 'hidden_size': -1})}")
    assert line.startswith("error: --set model_shape: hidden_size: ")


def test_a_replaced_database_file_is_read_by_the_next_command(tmp_path, monkeypatch, capsys):
    path = tmp_path / "plans.sqlite3"
    monkeypatch.setenv("PLANNER_DB_URL", f"sqlite:///{path}")
    assert main(["plans", "save", "--name", "before"]) == 0
    backup = open_library(f"sqlite:///{tmp_path / 'backup.sqlite3'}")
    backup.create("restored", Scenario())
    backup.engine.dispose()
    Path(tmp_path / "backup.sqlite3").replace(path)
    capsys.readouterr()
    assert main(["plans", "list", "--format", "json"]) == 0
    assert [plan["name"] for plan in json.loads(capsys.readouterr().out)] == ["restored"]
