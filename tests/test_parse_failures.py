"""Every input path survives every failure of parsing: deep nesting, overflow, huge integers,
wrong types. Each gets a one-line message naming the input, the bad part shortened, and the previous state kept.

Paths: the share link (planner/inputs/query.py, and the app reading it), the Scenarios CSV import
(planner/inputs/scenario_io.py), the CLI's scenario file and flags, the config.json import.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

from planner.inputs.query import scenario_from_query
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import read_scenarios_csv, scenarios_to_csv
from planner.model.hf_config import shape_from_hf_config
from planner.model.hf_json import ConfigImportError
from ui.state import NOTICES_KEY, SCENARIO_KEY

ROOT = Path(__file__).resolve().parents[1]
DEEP = "[" * 1000  # found by tests/test_hostile.py's share-link fuzzing: RecursionError in json.loads
HUGE = "9" * 4000  # under Python's 4,300-digit limit for int(str), so it parses; it must not be echoed whole
HUGER = "9" * 5000  # over it: int(str) raises ValueError
# A message echoes at most 40 characters of what was typed, then "…" (planner/errors.py MAX_VALUE_CHARS).
MAX_ECHO = 41
HANDFUL = 5  # notices a link gets before the rest are counted ("at most a handful")


# ---------------------------------------------------------------------------------------------- share links


def test_a_deeply_nested_model_shape_link_is_dropped_with_a_short_notice() -> None:
    scenario, notices = scenario_from_query({"model_shape": DEEP, "n_gpus": "16"})
    assert scenario.model_shape is None and scenario.n_gpus == 16
    assert len(notices) == 1 and notices[0].startswith("Ignored link parameter 'model_shape': ")
    assert "levels deep" in notices[0] and "…" in notices[0] and len(notices[0]) < 200


def test_each_dropped_link_parameter_gets_its_own_message() -> None:
    _, notices = scenario_from_query({"n_gpus": "x", "pue": "1e400", "epochs": HUGE, "optimizer": "adam"})
    by_key = {
        key: [n for n in notices if n.startswith(f"Ignored link parameter '{key}'")]
        for key in ("n_gpus", "pue", "epochs", "optimizer")
    }
    assert all(len(found) == 1 for found in by_key.values()), notices
    assert "integer" in by_key["n_gpus"][0] and "'x'" in by_key["n_gpus"][0]
    assert "finite" in by_key["pue"][0] and "1e400" in by_key["pue"][0] and "integer" not in by_key["pue"][0]
    assert "adamw" in by_key["optimizer"][0]


def test_a_four_thousand_digit_number_is_shortened_in_the_notice() -> None:
    # One link each: together they pass the share link's length limit, which drops the whole link at once.
    notices = [scenario_from_query({"n_gpus": HUGE})[1], scenario_from_query({"examples": HUGER})[1]]
    assert [len(each) for each in notices] == [1, 1], notices
    for [notice] in notices:
        assert "9" * MAX_ECHO not in notice and "…" in notice and len(notice) < 300, notice


def test_hundreds_of_bad_link_parameters_give_a_handful_of_notices_then_a_count() -> None:
    query = {f"junk{i}": "1" for i in range(500)}
    _, notices = scenario_from_query(query)
    assert len(notices) == HANDFUL + 1
    assert notices[-1].startswith(f"…and {500 - HANDFUL} more ignored link parameters: 'junk5', ")


def test_a_blank_gpu_in_a_link_is_dropped_and_later_edits_still_apply() -> None:
    scenario, notices = scenario_from_query({"gpu": " "})
    assert scenario.gpu == Scenario().gpu and any("'gpu'" in n for n in notices), notices
    assert scenario.updated(n_gpus=16).n_gpus == 16
    assert Scenario(gpu="  A100 80GB ").gpu == "A100 80GB"  # surrounding spaces still dropped


def _app(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update(query)
    return at.run()


def test_the_app_opens_a_deeply_nested_link_and_a_blank_gpu_link_without_a_traceback() -> None:
    at = _app({"model_shape": DEEP, "gpu": "%20", "pue": "1e400"})
    assert not at.exception, [e.value for e in at.exception]
    told = " ".join(w.value for w in at.warning)
    assert "'model_shape'" in told and "'pue'" in told and "'gpu'" in told, told
    at.run()  # a rerun of the same session keeps working
    assert not at.exception
    kept = at.session_state[SCENARIO_KEY]
    assert kept.gpu == Scenario().gpu and kept.updated(n_gpus=16).n_gpus == 16  # later edits validate
    assert at.session_state[NOTICES_KEY] == []


# ---------------------------------------------------------------------------------------------- CSV import


def _csv_with(column: str, text: str) -> str:
    good = scenarios_to_csv({"a": Scenario()})
    header, row = good.splitlines()[:2]
    cells = row.split(",")
    cells[header.split(",").index(column)] = f'"{text}"'
    return header + "\n" + ",".join(cells) + "\n"


def test_a_deeply_nested_shape_in_a_scenarios_csv_is_a_row_problem() -> None:
    found = read_scenarios_csv(_csv_with("model_shape", DEEP))
    assert not found.scenarios and len(found.problems) == 1
    problem = found.problems[0]
    assert (problem.row, problem.column) == (2, "model_shape") and "levels deep" in problem.problem
    assert len(str(problem)) < 200


def test_huge_and_overflowing_numbers_in_a_scenarios_csv_are_row_problems() -> None:
    for column, text in (("n_gpus", HUGE), ("examples", HUGER), ("pue", "1e400")):
        found = read_scenarios_csv(_csv_with(column, text))
        assert [p.column for p in found.problems] == [column], (column, found.problems)
        assert "9" * MAX_ECHO not in str(found.problems[0])


# ---------------------------------------------------------------------------------------------- the CLI


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_scenario_files_that_break_the_json_parser_exit_2_with_one_line(tmp_path: Path) -> None:
    cases = {
        "deep.json": ('{"n_gpus": ' + DEEP + "]" * 1000 + "}", "levels deep"),
        "digits.json": ('{"n_gpus": ' + HUGER + "}", "4,300 digits"),
        "huge.json": ('{"n_gpus": ' + HUGE + ', "pue": 1e400}', "n_gpus"),
    }
    for name, (text, expected) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        done = _cli(str(path))
        assert done.returncode == 2, (name, done.stderr[-500:])
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0] and "9" * MAX_ECHO not in lines[0], (name, lines)


# ---------------------------------------------------------------------------------------------- config.json


def test_a_config_with_a_four_thousand_digit_width_is_refused_briefly() -> None:
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_hidden_layers": 2,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    }
    text = json.dumps(config).replace("4096", HUGE)
    try:
        shape_from_hf_config(text)
    except ConfigImportError as err:
        message = str(err)
    else:
        raise AssertionError("a 4,000-digit hidden size was accepted")
    assert "hidden_size" in message and "9" * MAX_ECHO not in message and len(message) < 200, message
