"""The plan as a TRL trainer config YAML (TRL v1.16.0: trl/trainer/{sft,dpo,grpo}_config.py, trl.ModelConfig).

For `trl sft|dpo|grpo --config FILE --dataset_name ...`: the file's keys are fields of TRL's own argument
classes (SFTConfig / DPOConfig / GRPOConfig, which extend transformers' TrainingArguments, and ModelConfig for
the adapters and 4-bit base), which `make test-exports` parses them with. The GPU layout is accelerate's (TRL
launches through it): export the same plan for accelerate beside this file. Objectives TRL 1.16 has no stable
trainer config for in this planner's table (SimPO, ORPO, KTO, reward models, PPO) are refused.
"""

from __future__ import annotations

import math
from typing import Any

from planner.errors import PlannerError
from planner.export.export_types import Export, Gaps, header, learning_rate, optimizer_steps
from planner.export.serialize import yaml_text
from planner.inputs import post_training as pt
from planner.inputs.scenario import Scenario

TARGET = "trl"
FILE_NAME = "trl_config.yaml"
# TrainingArguments' `optim` names (transformers/training_args.py OptimizerNames)
OPTIM = {
    "adamw": "adamw_torch",
    "adamw_8bit": "adamw_bnb_8bit",
    "paged_adamw_8bit": "paged_adamw_8bit",
    "sgd": "sgd",
    "sgd_momentum": "sgd",
    "adafactor": "adafactor",
}
COMMANDS = {"sft": "sft", "dpo": "dpo", "grpo": "grpo"}


def export(s: Scenario) -> Export:
    if s.post_training not in COMMANDS:
        raise PlannerError(
            "post_training",
            f"the trl target writes SFT, DPO and GRPO configs only; {s.post_training} is not among them",
            value=s.post_training,
            allowed=", ".join(COMMANDS),
        )
    gaps = Gaps()
    config: dict[str, Any] = {
        "per_device_train_batch_size": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
        "learning_rate": learning_rate(s),
        "max_steps": optimizer_steps(s),
        "optim": OPTIM[s.optimizer],
        "gradient_checkpointing": s.recompute == "full",
        "bf16": s.precision in ("bf16_mixed", "bf16_pure", "fp8_mixed"),
        "fp16": s.precision == "fp16_mixed",
    }
    if s.optimizer == "sgd_momentum":
        config["optim_args"] = (
            "momentum=0.9"  # the plan only says "with momentum"; 0.9 is torch's usual value
        )
    config.update(_objective(s))
    config.update(_adapters(s))
    if s.recompute in ("selective", "selective_op"):
        gaps.drop(f"Recompute {s.recompute}: TRL checkpoints whole layers or none; the file leaves it off.")
    gaps.note(
        "Launch with accelerate and this plan's accelerate export for the GPU layout (tp, pp, sharding)."
    )
    heading = [
        *header(s, TARGET),
        f"Then: trl {COMMANDS[s.post_training]} --config {FILE_NAME} --dataset_name ...",
    ]
    return gaps.export(TARGET, yaml_text(config, heading), FILE_NAME, config)


def _objective(s: Scenario) -> dict[str, Any]:
    if s.post_training == "grpo":
        # the defaults the estimate uses when the plan leaves them empty (planner/post/columns.py)
        samples = s.samples_per_prompt or pt.GRPO_SAMPLES_PER_PROMPT
        completion = s.completion_tokens or s.tokens_per_example // 2
        # the plan's rollout batch (prompts x samples), a multiple of num_generations as TRL requires
        prompts = s.rollout_prompts or math.ceil(s.sequences_per_step / samples)
        return {
            "num_generations": samples,
            "generation_batch_size": prompts * samples,
            "max_completion_length": int(completion),
            "use_vllm": s.generation_engine == "vllm",
        }
    fields = {"max_length": s.seq_len}
    if s.post_training == "sft":
        fields["packing"] = s.packing
    return fields


def _adapters(s: Scenario) -> dict[str, Any]:
    """trl.ModelConfig's PEFT fields; alpha 2 x rank as in the torchtune export."""
    if s.method == "full":
        return {}
    fields: dict[str, Any] = {
        "use_peft": True,
        "lora_r": s.lora_rank,
        "lora_alpha": 2 * s.lora_rank,
        "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]
        if s.lora_targets == "attention"
        else "all-linear",
    }
    if s.method == "qlora":
        fields.update(load_in_4bit=True, bnb_4bit_quant_type="nf4")
    return fields
