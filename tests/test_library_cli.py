"""`planner plans list|show|save|delete` against the same database from separate processes, and its errors."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from planner import Scenario, open_library
from planner.cli.main import main
from tests.library_backends import ROOT


def _planner(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLANNER_DB_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "planner", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plan_saved_in_one_process_is_listed_with_its_scenario_in_another(library_url):
    flags = ["--model", "Llama 3.1 70B", "--gpu", "H100 SXM", "--devices", "16", "--tp", "4", "--zero", "3"]
    saved = _planner(
        library_url, "plans", "save", "--name", "x", "--author", "Ann", "--tags", "70b, q3", *flags
    )
    assert saved.returncode == 0, saved.stderr
    listed = _planner(library_url, "plans", "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    [plan] = json.loads(listed.stdout)
    expected = Scenario(model="Llama 3.1 70B", gpu="H100 SXM", n_gpus=16, tp=4, zero_stage=3)
    assert plan["name"] == "x" and plan["version"] == 1 and plan["tags"] == ["70b", "q3"]
    assert Scenario.model_validate(plan["scenario"]) == expected
    assert open_library(library_url).find("x").scenario == expected  # and the app's library reads the same


def test_show_delete_undo_and_csv_listing(fresh_library, capsys):
    assert main(["plans", "save", "--name", "spot", "--gpus", "16", "--pricing", "spot"]) == 0
    capsys.readouterr()
    assert main(["plans", "show", "spot", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["scenario"]["n_gpus"] == 16 and shown["scenario"]["pricing"] == "spot"
    assert main(["plans", "delete", "spot"]) == 0
    capsys.readouterr()
    assert main(["plans", "list", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["plans", "list", "--deleted", "--format", "csv"]) == 0
    [row] = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["name"] == "spot" and row["deleted_at"]
    assert main(["plans", "delete", "spot", "--undo"]) == 0
    capsys.readouterr()
    assert main(["plans", "list"]) == 0
    assert "spot" in capsys.readouterr().out


def test_replace_checks_the_version_it_was_told(fresh_library, capsys):
    assert main(["plans", "save", "--name", "p", "--gpus", "8"]) == 0
    assert main(["plans", "save", "--name", "p", "--gpus", "16", "--replace", "--expect-version", "1"]) == 0
    capsys.readouterr()
    assert main(["plans", "save", "--name", "p", "--gpus", "32", "--replace", "--expect-version", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --name: not saved over 'p'") and "Your version is kept as 'p (copy)'" in err
    library = open_library(fresh_library)
    assert library.find("p").scenario.n_gpus == 16 and library.find("p (copy)").scenario.n_gpus == 32


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["plans", "show", "nope"], "error: PLAN: no plan has that name or id (got 'nope')"),
        (["plans", "save", "--name", "taken"], "error: --name: a plan with this name exists; add --replace"),
        (
            ["plans", "save", "--name", "t", "--tags", ",".join(f"t{i}" for i in range(30))],
            "error: --tags: at most 20 tags",
        ),
        (["plans", "save", "--name", "t", "--devices", "0"], "error: --devices: "),
        (
            ["plans", "save", "--name", "t", "--expect-version", "3"],
            "error: --expect-version: only applies with",
        ),
        (
            ["plans", "list", "--db", "mysql://u@h/db"],
            "error: --db: names a database the library does not support",
        ),
        (
            ["plans", "list", "--db", "postgresql://u:secret@127.0.0.1:1/db"],
            "error: --db: the plan library cannot be reached",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_it(fresh_library, capsys, args, expected):
    open_library(fresh_library).create("taken", Scenario())
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1 and "secret" not in err


def test_export_starts_from_a_library_plan_and_flags_override_it(fresh_library, capsys):
    open_library(fresh_library).create("layout", Scenario(n_gpus=16, tp=4, pp=2, zero_stage=1))
    assert main(["export", "--to", "megatron", "--plan", "layout"]) == 0
    args = capsys.readouterr().out.split()
    assert args[args.index("--tensor-model-parallel-size") + 1] == "4"
    assert main(["export", "--to", "deepspeed", "--plan", "layout", "--zero", "3", "--pp", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["zero_optimization"]["stage"] == 3
    assert main(["export", "--to", "deepspeed", "--plan", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: --plan: no plan has that name or id (got 'nope')")
