"""TRL 1.16.0 parses every trl export with its own argument classes, as `trl sft|dpo|grpo --config FILE` does:
every key must be a field of the trainer's config (SFTConfig / DPOConfig / GRPOConfig, over transformers'
TrainingArguments) or of trl.ModelConfig, and their __post_init__ checks run."""

from __future__ import annotations

import pytest
import yaml

from framework_checks.conftest import refused, written

CASES = written("trl")


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_trl_argument_classes_accept_the_file(plan, path, entry, tmp_path) -> None:
    from transformers import HfArgumentParser
    from trl import DPOConfig, GRPOConfig, ModelConfig, SFTConfig

    trainer_config = {"sft": SFTConfig, "dpo": DPOConfig, "grpo": GRPOConfig}[entry["plan"]["post_training"]]
    values = yaml.safe_load(path.read_text())
    # output_dir is the run's own; use_cpu because this machine has no GPU (bf16 stays as the file says)
    values |= {"output_dir": str(tmp_path), "use_cpu": True}
    training, model = HfArgumentParser((trainer_config, ModelConfig)).parse_dict(
        values, allow_extra_keys=False
    )
    assert training.per_device_train_batch_size == entry["plan"]["micro_batch"]
    assert model.use_peft is (entry["plan"]["method"] != "full")
    assert model.load_in_4bit is (entry["plan"]["method"] == "qlora")


def test_objectives_trl_target_lacks_are_refused() -> None:
    assert "ppo_full_8b_8gpu" in refused("trl")
    assert all("trl target writes" in reason for reason in refused("trl").values())


def test_every_objective_trl_has_a_config_for_is_written() -> None:
    objectives = {entry["plan"]["post_training"] for _, _, entry in CASES}
    assert objectives == {"sft", "dpo", "grpo"}
