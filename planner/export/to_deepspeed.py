"""The plan as a DeepSpeed config JSON (DeepSpeed v0.16.4, docs/_pages/config-json.md).

The config holds the batch, precision, optimizer and ZeRO; tensor and pipeline parallelism, LoRA and
activation recompute are set in the training code (Megatron-DeepSpeed's mpu, `PipelineModule`, PEFT,
`deepspeed.checkpointing`), so those parts of a plan are listed as not expressed.
"""

from __future__ import annotations

from typing import Any

from planner.export.export_types import Export, Gaps, adapters, in_node_shard, steps_note
from planner.export.serialize import json_text
from planner.inputs.scenario import Scenario

TARGET = "deepspeed"
FILE_NAME = "ds_config.json"
# DeepSpeed takes optimizers by name: its own (Adam, AdamW, ...) or any torch.optim class (config-json.md,
# "will import other optimizers from torch"). torch.optim.Adafactor exists from PyTorch 2.5.
OPTIMIZERS: dict[str, dict[str, Any]] = {
    "adamw": {"type": "AdamW"},
    "sgd": {"type": "SGD"},
    # The plan only says "with momentum"; 0.9 is torch's usual value and what Megatron defaults to.
    "sgd_momentum": {"type": "SGD", "params": {"momentum": 0.9}},
    "adafactor": {"type": "Adafactor"},
}


def export(s: Scenario) -> Export:
    gaps = Gaps()
    config: dict[str, Any] = {
        # DeepSpeed checks train_batch_size == micro-batch x accumulation x data-parallel size exactly.
        "train_batch_size": s.sequences_per_step,
        "train_micro_batch_size_per_gpu": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
    }
    config.update(_optimizer(s, gaps))
    config.update(_precision(s, gaps))
    config["zero_optimization"] = _zero(s, gaps)
    _code_side(s, gaps)
    gaps.note(steps_note(s))
    gaps.note("Learning rate and schedule are not part of a plan: add optimizer.params.lr and a scheduler.")
    return gaps.export(TARGET, json_text(config), FILE_NAME, config)


def _optimizer(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.optimizer not in OPTIMIZERS:
        gaps.drop(
            "Optimizer 8-bit AdamW: DeepSpeed has no 8-bit AdamW of its own; the config names no optimizer, "
            "so pass bitsandbytes' AdamW8bit (PagedAdamW8bit for the paged one) to "
            "deepspeed.initialize(optimizer=...) yourself."
        )
        return {}
    return {"optimizer": OPTIMIZERS[s.optimizer]}


def _precision(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.precision == "fp32":
        return {}  # DeepSpeed trains in fp32 when neither fp16 nor bf16 is enabled
    if s.precision == "fp16_mixed":
        return {"fp16": {"enabled": True}}
    if s.precision == "fp8_mixed":
        gaps.drop(
            "Precision fp8: DeepSpeed's config has no FP8 switch (Transformer Engine layers in the model "
            "code do FP8); the config enables bf16 around them."
        )
    if s.precision == "bf16_pure":
        gaps.drop(
            "Precision pure bf16: DeepSpeed's bf16 mode keeps fp32 master weights in its optimizer, so "
            "model states take more memory than the plan's pure-bf16 figure."
        )
    return {"bf16": {"enabled": True}}


def _zero(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    zero: dict[str, Any] = {"stage": s.zero_stage}
    if s.offload_optimizer:
        if s.zero_stage >= 1:
            zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
        else:
            gaps.drop("Optimizer offload: DeepSpeed offloads the optimizer only under ZeRO stage 1 or more.")
    if s.offload_params:
        if s.zero_stage == 3:
            zero["offload_param"] = {"device": "cpu", "pin_memory": True}
        else:
            gaps.drop("Parameter offload: DeepSpeed offloads parameters only under ZeRO stage 3.")
    if s.hybrid_shard:
        _hybrid(s, zero, gaps)
    return zero


def _hybrid(s: Scenario, zero: dict[str, Any], gaps: Gaps) -> None:
    # MiCS (docs/code-docs/source/zero3.rst) shards the ZeRO-3 states within groups of mics_shard_size
    # ranks and replicates across groups: HYBRID_SHARD under DeepSpeed's name.
    if s.zero_stage == 3:
        zero["mics_shard_size"] = in_node_shard(s)
    else:
        gaps.drop("Hybrid sharding: DeepSpeed shards within a node (MiCS) only under ZeRO stage 3.")


def _code_side(s: Scenario, gaps: Gaps) -> None:
    """What a DeepSpeed run sets in its training code, not in this file."""
    if s.method != "full":
        gaps.drop(
            f"LoRA: DeepSpeed's config has no adapters; the plan's {adapters(s)} come from PEFT in code."
        )
    for name, degree, how in (
        ("Tensor parallelism", s.tp, "Megatron-DeepSpeed's model-parallel unit"),
        ("Pipeline parallelism", s.pp, "deepspeed.pipe.PipelineModule(num_stages=...)"),
        ("Context parallelism", s.cp, "DeepSpeed-Ulysses' sequence_data_parallel_group in code"),
    ):
        if degree > 1:
            gaps.drop(f"{name} {degree}: not a DeepSpeed config key; it is set through {how}.")
    if s.ep > 1:
        gaps.drop(
            f"Expert parallelism {s.ep}: not a DeepSpeed config key; DeepSpeed-MoE takes it in code, "
            f"deepspeed.moe.layer.MoE(..., ep_size={s.ep})."
        )
    if s.etp is not None:
        gaps.drop(
            f"Expert tensor parallelism {s.etp}: not a DeepSpeed config key; DeepSpeed-MoE's layer takes only "
            "deepspeed.moe.layer.MoE(..., enable_expert_tensor_parallelism=True), the experts split over tp."
        )
    if s.pp_virtual_stages > 1:
        gaps.drop(
            f"Interleaved pipeline ({s.pp_virtual_stages} virtual stages per GPU): DeepSpeed's PipelineModule "
            "runs plain 1F1B, one stage per GPU, so its bubble is the 1F1B one."
        )
    if s.recompute != "none":
        gaps.drop(
            f"Recompute {s.recompute}: the config cannot switch recompute on; the model calls "
            "deepspeed.checkpointing.checkpoint (or gradient_checkpointing_enable()) itself."
        )
    if s.offload_activations:
        gaps.drop("Activation offload: not a DeepSpeed config setting for this plan's layout.")
    if s.optimizer_in_backward:
        gaps.drop("Optimizer step in backward: DeepSpeed has no such option.")
    gaps.note(f"Sequence length {s.seq_len} is the data loader's; DeepSpeed's config has no sequence length.")
