"""Bad input on the command line: exit status 2 and one line naming what the user typed and the allowed range.

Through the real CLI (a subprocess): the flag as typed (an alias such as the seed's --devices included),
`--set FIELD`, or the scenario file's key; never the internal field name the user did not type.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

BASE = ["estimate", "--params-b", "8", "--mfu", "0.3"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_devices_0_names_devices_and_the_range():
    line = one_line_error(run_cli(*BASE, "--devices", "0"))
    assert line == (
        "error: --devices: Input should be greater than or equal to 1 (allowed: >= 1 and <= 1e+06; got '0')"
    )


@pytest.mark.parametrize(
    ("flags", "named", "range_text"),
    [
        (["--gpus", "0"], "--gpus", ">= 1"),
        (["--n-gpus", "0"], "--n-gpus", ">= 1"),
        (["--set", "n_gpus=0"], "--set n_gpus", ">= 1"),
        (["--mfu", "1.5"], "--mfu", "<= 1"),
        (["--mfu", "0"], "--mfu", ">= 0.001"),
        (["--epochs", "nan"], "--epochs", ">= 0.001"),
        (["--examples", "0"], "--examples", ">= 1"),
        (["--peak-tflops", "inf"], "--peak-tflops", ">= 0.001"),
        (["--tokens-per-example", "1e12"], "--tokens-per-example", "<= 1e+08"),
        (["--params-b", "1e9"], "--params-b", "<= 100000"),
        (["--usd-per-device-hour", "-2"], "--usd-per-device-hour", ">= 0"),
        (["--usd-per-gpu-hour", "-2"], "--usd-per-gpu-hour", ">= 0"),
        (["--vram-gib", "abc"], "--vram-gib", ">= 0.01"),
        (["--bytes-per-param", "0"], "--bytes-per-param", "> 0"),
        (["--zero", "7"], "--zero", "<= 3"),
        (["--method", "dora"], "--method", "full, lora, qlora"),
        (["--seq-len", "8"], "--seq-len", ">= 16"),
    ],
)
def test_out_of_range_value_names_the_flag_typed(flags, named, range_text):
    line = one_line_error(run_cli(*BASE, *flags))
    assert line.startswith(f"error: {named}: "), line
    assert range_text in line


def test_a_rule_over_several_flags_names_the_one_typed():
    line = one_line_error(run_cli(*BASE, "--devices", "6", "--tp", "4"))
    assert line == "error: --devices: must be a multiple of tp x pp x cp = 4 (got 6)"
    # n_gpus left at its default: the flag the user typed is named, and the sentence says which input it is about
    line = one_line_error(run_cli(*BASE, "--tp", "3"))
    assert line == "error: --tp: --n-gpus must be a multiple of tp x pp x cp = 3 (got 8)"


def test_scenario_file_names_its_key(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"n_gpus": 0}))
    line = one_line_error(run_cli("estimate", str(path)))
    assert line.startswith("error: plan.json key 'n_gpus': ") and ">= 1" in line
    # a flag given after the file wins, and is then what the error names
    line = one_line_error(run_cli("estimate", str(path), "--devices", "-1"))
    assert line.startswith("error: --devices: ")


def test_unknown_gpu_lists_closest_matches():
    line = one_line_error(run_cli(*BASE, "--gpu", "H10"))
    assert line.startswith("error: --gpu: unknown GPU (got 'H10'; closest: ") and "H100 SXM" in line


def test_unknown_set_field_suggests_the_closest():
    line = one_line_error(run_cli(*BASE, "--set", "n_gpu=4"))
    assert line.startswith("error: --set: expected FIELD=VALUE") and "closest: n_gpus" in line


def test_bad_model_config_names_the_flag_and_the_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": "big"}))
    line = one_line_error(run_cli("estimate", "--model-config", str(path)))
    assert line.startswith("error: --model-config: config key 'hidden_size'"), line


def test_recommend_names_its_own_flags():
    line = one_line_error(run_cli("recommend", "--deadline-h", "-1"))
    assert line == "error: --deadline-h: must be > 0 hours (allowed: > 0; got -1.0)"


def test_unknown_flag_is_one_line():
    one_line_error(run_cli("estimate", "--no-such-flag", "1"))


def test_schema_prints_json_schema():
    done = run_cli("schema")
    assert done.returncode == 0 and '"mfu"' in done.stdout


def test_cli_imports_point_one_way():
    """Only main imports the command modules; they share cli_common and never import main (no cycle)."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "planner" / "cli"
    offenders = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if path.name != "main.py" and any(m == "planner.cli.main" for m in modules):
                offenders.add(path.name)
            if path.name == "cli_common.py" and any(
                m.startswith("planner.cli.cli_") and m != "planner.cli.cli_args" for m in modules
            ):
                offenders.add(path.name)
    assert offenders == set()
