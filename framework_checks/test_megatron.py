"""Megatron-LM core_v0.19.2 starts every Megatron export: its own `parse_args` and `validate_args`
(megatron/training/arguments.py) and the TransformerConfig `core_transformer_config_from_args` builds, run by
framework_checks/megatron_lm_args.py with the release of requirements-megatron-lm.txt on its path. Each file runs
as rank 0 of the plan's world size, with the environment the export's notes tell the user to set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from framework_checks.conftest import refused, written

MEGATRON_LM = Path(os.environ.get("MEGATRON_LM_DIR", ".venv-exports/megatron-lm"))
CASES = written("megatron")
# Compute capability major of the plans' GPUs (NVIDIA's CUDA GPUs table): validate_args asks the device, which a
# CPU machine lacks. Hopper 9.0, Ada 8.9.
ARCH_MAJOR = {"H100 SXM": 9, "RTX 4090": 8}
ONE_CONNECTION = {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}


def _env(entry: dict[str, Any]) -> dict[str, str]:
    advice = " ".join(entry["targets"]["megatron"]["advice"])
    return ONE_CONNECTION if "CUDA_DEVICE_MAX_CONNECTIONS=1 set" in advice else {}


def _job(path: Path, entry: dict[str, Any], env: dict[str, str]) -> list[Any]:
    return [str(path), entry["plan"]["n_gpus"], ARCH_MAJOR[entry["plan"]["gpu"]], env]


# Each file with the advised environment, then the tensor-parallel plan without it (Megatron must stop).
TP_PLAN = next(c for c in CASES if c[0] == "tp4_pp2_70b_64gpu")
JOBS = [_job(path, entry, _env(entry)) for _, path, entry in CASES] + [_job(TP_PLAN[1], TP_PLAN[2], {})]


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> list[dict[str, Any]]:
    """Megatron-LM's verdict per job, from one process (importing megatron.training takes most of the time)."""
    assert (MEGATRON_LM / "megatron" / "training" / "arguments.py").exists(), (
        f"{MEGATRON_LM}: run make test-exports"
    )
    out = tmp_path_factory.mktemp("megatron") / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(MEGATRON_LM.resolve()), os.getcwd()])}
    run = subprocess.run(
        [sys.executable, "-m", "framework_checks.megatron_lm_args", str(out)],
        input=json.dumps(JOBS),
        text=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c[0] for c in CASES])
def test_megatron_lm_parses_and_validates_the_file(index, started) -> None:
    _, _, entry = CASES[index]
    result, plan = started[index], entry["plan"]
    assert "error" not in result, result.get("trace")
    assert (result["tp"], result["pp"], result["cp"]) == (plan["tp"], plan["pp"], plan["cp"])
    assert result["dp"] == entry["dp"] and result["micro_batch"] == plan["micro_batch"]
    assert result["sequence_parallel"] is plan["sequence_parallel"]


def test_tensor_parallelism_without_the_advised_environment_stops_megatron(started) -> None:
    assert "CUDA_DEVICE_MAX_CONNECTIONS" in started[-1]["error"]
    assert "CUDA_DEVICE_MAX_CONNECTIONS=1" in " ".join(TP_PLAN[2]["targets"]["megatron"]["advice"])


def test_moe_with_tensor_parallelism_without_sequence_parallelism_is_refused() -> None:
    assert "sequence parallelism" in refused("megatron")["ep8_tp2_moe_no_sp"]


def test_rope_base_scaling_and_norm_epsilon_come_from_the_model(started) -> None:
    # config.json of each: Llama 3.1 rope_theta 500000, rms_norm_eps 1e-05; Qwen2.5 7B and Qwen3 30B A3B
    # rope_theta 1000000, rms_norm_eps 1e-06
    by_plan = {name: started[i] for i, (name, _, _) in enumerate(CASES)}
    assert (by_plan["full_8b_zero3_8gpu"]["rotary_base"], by_plan["full_8b_zero3_8gpu"]["norm_epsilon"]) == (
        500000,
        pytest.approx(1e-5),
    )
    for name in ("grpo_full_8b_8gpu", "ep8_tp2_moe_64gpu"):
        assert (by_plan[name]["rotary_base"], by_plan[name]["norm_epsilon"]) == (1000000, pytest.approx(1e-6))
    path = next(p for name, p, _ in CASES if name == "full_8b_zero3_8gpu")
    words = path.read_text().split()
    assert "--use-rope-scaling" in words and words[words.index("--rope-scaling-factor") + 1] == "8"
