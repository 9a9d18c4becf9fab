"""torchtitan loads every torchtitan export with its own code: 0.3.0's ConfigManager parses the argument file
(config function + tyro overrides); the 0.2.2 TOML form is read as the TOML 0.2.2's job config takes and its
section and field names are checked against 0.3.0's config dataclasses where both have them (0.2.2 itself does
not install beside torchtune's pins)."""

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
