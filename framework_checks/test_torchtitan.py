"""torchtitan 0.3.0 loads every `torchtitan` export with its own ConfigManager (config function + tyro overrides,
then its config checks). The `torchtitan-0.2` TOML form is not loaded here: torchtitan 0.2.2 is not installed beside
0.3.0 in this environment, so that file is covered only by the planner's own tests (tests/test_export.py)."""

from __future__ import annotations

import shlex

import pytest

from framework_checks.conftest import refused, written

CASES = written("torchtitan")


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_torchtitan_config_manager_parses_the_file(plan, path, entry) -> None:
    from torchtitan.config.manager import ConfigManager

    args = [word for line in path.read_text().splitlines() for word in shlex.split(line)]
    config = ConfigManager().parse_args(args)
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


def test_models_torchtitan_lacks_are_refused_not_trained_as_its_debug_model() -> None:
    for target in ("torchtitan", "torchtitan-0.2"):
        assert "custom_shape_1gpu" in refused(target)
        assert (
            "debug model" in refused(target)["custom_shape_1gpu"]
            or "another one" in refused(target)["custom_shape_1gpu"]
        )
