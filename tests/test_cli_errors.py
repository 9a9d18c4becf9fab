"""Bad input on the command line: exit status 2 and one line naming the field and its allowed range."""

from __future__ import annotations

import subprocess
import sys

import pytest

BASE = ["estimate", "--params-b", "8", "--mfu", "0.3"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("flags", "field", "range_text"),
    [
        (["--mfu", "1.5"], "mfu", "<= 1"),
        (["--mfu", "0"], "mfu", ">= 0.001"),
        (["--devices", "-4"], "n_gpus", ">= 1"),
        (["--epochs", "nan"], "epochs", ">= 0.001"),
        (["--examples", "0"], "examples", ">= 1"),
        (["--peak-tflops", "inf"], "peak_tflops", ">= 0.001"),
        (["--tokens-per-example", "1e12"], "tokens_per_example", "<= 1e+08"),
        (["--params-b", "1e9"], "params_b", "<= 100000"),
        (["--usd-per-device-hour", "-2"], "usd_per_gpu_hour", ">= 0"),
        (["--vram-gib", "abc"], "vram_gib", ">= 0.01"),
    ],
)
def test_out_of_range_value_exits_2_with_one_line(flags, field, range_text):
    done = run_cli(*BASE, *flags)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert field in lines[0] and range_text in lines[0]
    assert "Traceback" not in done.stderr


def test_unknown_gpu_lists_closest_matches():
    done = run_cli(*BASE, "--gpu", "H10")
    assert done.returncode == 2
    assert "H100" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_unknown_flag_is_one_line():
    done = run_cli("estimate", "--no-such-flag", "1")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_schema_prints_json_schema():
    done = run_cli("schema")
    assert done.returncode == 0 and '"mfu"' in done.stdout
