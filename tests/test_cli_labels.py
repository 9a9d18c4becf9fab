"""The CLI's text tables label their columns in words with the unit in brackets; JSON keeps the record keys.

Each command runs for real (the bundled case file, the trainer logs of tests/data/runs/, an SQLite library)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from planner.cli.cli_labels import header, worded
from planner.cli.main import main
from planner.trace.traced import TraceReport

RUNS = Path(__file__).parent / "data" / "runs"
# a record key as a header: lower case words joined by underscores (e.g. case_id, peak_allocated_gib)
KEY = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def _first_line(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()[0]


def test_headers_are_words_with_their_unit():
    assert header("case_id") == "Case"
    assert header("peak_allocated_gib") == "Peak allocated memory (GiB)"  # the run figures' own words
    assert header("traced_allocated_peak_gib") == "Traced allocated peak (GiB)"
    assert header("time_error_before") == "Time error before"
    assert header("gpu") == "GPU" and header("wall_clock_s") == "Wall clock (s)"
    assert worded([{"n_skipped": 1, "rel_error": 0.5}]) == [
        {"Skipped": 1, "Error (predicted / measured - 1)": 0.5}
    ]


def test_trace_report_keys_all_have_headers_in_words():
    for key in TraceReport.__dataclass_fields__:
        assert not KEY.search(header(key)) and "_" not in header(key), (key, header(key))


def test_validate_table_has_worded_headers_and_json_keeps_keys(capsys):
    lines = []
    capsys.readouterr()
    assert main(["validate", "--category", "energy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["Case", "Category", "Unit"] and "Skipped because" in lines[0]
    assert lines[-2].startswith("Category  Cases  Skipped  Median |error|")
    assert not KEY.search(lines[0]) and not KEY.search(lines[-2])
    assert main(["validate", "--category", "energy", "--format", "json"]) == 0
    assert "case_id" in json.loads(capsys.readouterr().out)["rows"][0]


def test_runs_tables_have_worded_headers(capsys):
    imported = _first_line(capsys, "runs", "import", str(RUNS / "megatron.log"))
    assert imported.startswith("Log file") and "Step time (s per optimizer step)" in imported
    assert not KEY.search(imported), imported
    compared = _first_line(capsys, "runs", "compare", "--files", str(RUNS / "megatron.log"))
    assert compared.split()[:2] == ["Run", "Figure"] and "Error (predicted / measured - 1)" in compared
    assert not KEY.search(compared), compared
    assert main(["runs", "import", str(RUNS / "megatron.log"), "--format", "json"]) == 0
    assert "log_format" in json.loads(capsys.readouterr().out)[0]


def test_plans_tables_have_worded_headers_and_json_keeps_keys(capsys, tmp_path):
    db = f"sqlite:///{tmp_path / 'plans.db'}"
    saved = _first_line(capsys, "plans", "save", "--name", "demo", "--db", db)
    assert saved.split()[:2] == ["Id", "1"]
    listed = _first_line(capsys, "plans", "list", "--db", db)
    assert listed.split()[:3] == ["Id", "Name", "Version"] and "Changed at" in listed
    assert not KEY.search(listed), listed
    assert main(["plans", "list", "--db", db, "--format", "json"]) == 0
    assert "updated_at" in json.loads(capsys.readouterr().out)[0]
