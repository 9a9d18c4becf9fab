"""torchtitan loads every torchtitan export with its own code, at both releases in use: 0.3.0 (.venv-exports)
parses each `torchtitan` file with its ConfigManager (config function + tyro overrides, then its config checks);
0.2.2 (requirements-torchtitan-0.2.txt, on the path of one subprocess only) parses each `torchtitan-0.2` TOML
with its ConfigManager and finds the model's flavor in its train spec (framework_checks/torchtitan_02_config.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from framework_checks.conftest import refused, written

CASES = written("torchtitan")
CASES_02 = written("torchtitan-0.2")
TORCHTITAN_02 = Path(os.environ.get("TORCHTITAN_02_DIR", ".venv-exports/torchtitan-0.2"))


def _check_layout(config: Any, entry: dict[str, Any]) -> None:
    p = entry["plan"]
    assert config.parallelism.tensor_parallel_degree == p["tp"]
    assert config.parallelism.pipeline_parallel_degree == p["pp"]
    assert config.parallelism.context_parallel_degree == p["cp"]
    shard, replicate = (
        config.parallelism.data_parallel_shard_degree,
        config.parallelism.data_parallel_replicate_degree,
    )
    assert shard * replicate == entry["dp"]
    assert config.training.local_batch_size >= p["micro_batch"]


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_torchtitan_config_manager_parses_the_file(plan, path, entry) -> None:
    from torchtitan.config.manager import ConfigManager

    args = [word for line in path.read_text().splitlines() for word in shlex.split(line)]
    _check_layout(ConfigManager().parse_args(args), entry)


@pytest.fixture(scope="module")
def loaded_02(tmp_path_factory) -> list[dict[str, Any]]:
    assert (TORCHTITAN_02 / "torchtitan" / "config" / "manager.py").exists(), (
        f"{TORCHTITAN_02}: make test-exports"
    )
    out = tmp_path_factory.mktemp("torchtitan02") / "results.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TORCHTITAN_02.resolve()), os.getcwd()])}
    run = subprocess.run(
        [sys.executable, "-m", "framework_checks.torchtitan_02_config", str(out)],
        input=json.dumps([str(path) for _, path, _ in CASES_02]),
        text=True,
        env=env,
        capture_output=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("index", range(len(CASES_02)), ids=[c[0] for c in CASES_02])
def test_torchtitan_02_config_manager_parses_the_toml(index, loaded_02) -> None:
    _, _, entry = CASES_02[index]
    result, plan = loaded_02[index], entry["plan"]
    assert "error" not in result, result.get("trace")
    assert str(TORCHTITAN_02.resolve()) in result["torchtitan"]  # 0.2.2, not the environment's 0.3.0
    assert (result["tp"], result["pp"], result["cp"]) == (plan["tp"], plan["pp"], plan["cp"])
    assert result["dp"] == entry["dp"] and result["local_batch"] >= plan["micro_batch"]


def test_models_torchtitan_lacks_are_refused_not_trained_as_its_debug_model() -> None:
    for target in ("torchtitan", "torchtitan-0.2"):
        assert "custom_shape_1gpu" in refused(target)
        assert (
            "debug model" in refused(target)["custom_shape_1gpu"]
            or "another one" in refused(target)["custom_shape_1gpu"]
        )
