"""The plan as a DeepSpeed config JSON (DeepSpeed v0.19.8: deepspeed/runtime/config.py, runtime/zero/config.py).

The config holds the batch, precision, optimizer and ZeRO; tensor and pipeline parallelism, LoRA and
activation recompute are set in the training code (Megatron-DeepSpeed's mpu, `PipelineModule`, PEFT,
`deepspeed.checkpointing`), so those parts of a plan are listed as not expressed. `make test-exports` loads
every file with `DeepSpeedConfig` and runs `deepspeed.initialize` and one step on CPU.

What DeepSpeed cannot run is refused: ZeRO 2 or 3 under pipeline parallelism (runtime/pipe/engine.py asserts
"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism").
"""

from __future__ import annotations

from typing import Any

from planner.errors import PlannerError
from planner.export.export_types import (
    Export,
    Gaps,
    adapters,
    in_node_shard,
    learning_rate,
    steps_note,
    written_for,
)
from planner.export.serialize import json_text
from planner.inputs.scenario import Scenario

TARGET = "deepspeed"
FILE_NAME = "ds_config.json"
# JSON has no comments; DeepSpeedConfig reads only the keys it knows at the top level, so the release and the
# install line travel under a key of their own (DeepSpeedConfig loads the file with it in make test-exports;
# tests/test_export_versions.py checks it names the pinned release).
WRITTEN_FOR = {"_written_for": f"{written_for(TARGET)} By Training Run Planner."}
# DeepSpeed's ZeRO runs its tested optimizers only (runtime/zero/utils.py ZERO_SUPPORTED_OPTIMIZERS: its own
# Adam/AdamW/Lamb and torch's Adam/AdamW); any other needs zero_allow_untested_optimizer, else
# deepspeed.initialize stops with "You are using an untested ZeRO Optimizer".
ZERO_TESTED = frozenset({"adamw"})
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
    _refuse(s)
    gaps = Gaps()
    config: dict[str, Any] = {
        **WRITTEN_FOR,
        # DeepSpeed checks train_batch_size == micro-batch x accumulation x data-parallel size exactly.
        "train_batch_size": s.sequences_per_step,
        "train_micro_batch_size_per_gpu": s.micro_batch,
        "gradient_accumulation_steps": s.grad_accum,
    }
    config.update(_optimizer(s, gaps))
    config.update(_precision(s, gaps))
    config["zero_optimization"] = _zero(s, gaps)
    if config["zero_optimization"]["stage"] >= 1 and s.optimizer not in ZERO_TESTED:
        config["zero_allow_untested_optimizer"] = True
    _code_side(s, gaps)
    gaps.note(steps_note(s))
    gaps.note(
        f"The learning rate {learning_rate(s):g} is torchtune's recipe value for this method, not part of the "
        "plan: tune it and add a scheduler."
    )
    return gaps.export(TARGET, json_text(config), FILE_NAME, config)


def _optimizer(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.optimizer not in OPTIMIZERS:
        gaps.drop(
            "Optimizer 8-bit AdamW: DeepSpeed has no 8-bit AdamW of its own; the config names no optimizer, "
            "so pass bitsandbytes' AdamW8bit (PagedAdamW8bit for the paged one) to "
            "deepspeed.initialize(optimizer=...) yourself."
        )
        return {}
    chosen = OPTIMIZERS[s.optimizer]
    return {"optimizer": {**chosen, "params": {**chosen.get("params", {}), "lr": learning_rate(s)}}}


def _refuse(s: Scenario) -> None:
    if s.pp > 1 and s.zero_stage >= 2:
        raise PlannerError(
            "zero_stage",
            f"DeepSpeed's pipeline engine cannot run ZeRO stage {s.zero_stage} with pipeline parallelism "
            "(runtime/pipe/engine.py: ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism)",
            value=s.zero_stage,
            allowed="ZeRO stage 0 or 1 when pp > 1",
            related=("pp",),
        )


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
    zero: dict[str, Any] = {"stage": _stage(s, gaps)}
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


def _stage(s: Scenario, gaps: Gaps) -> int:
    """The plan's ZeRO stage; on one data-parallel rank there is nothing to shard, so stage 0 unless an
    offload needs ZeRO (optimizer offload from stage 1, parameter offload at stage 3)."""
    if s.dp > 1 or s.zero_stage == 0 or s.offload_params or s.offload_optimizer:
        return s.zero_stage
    gaps.note(
        f"ZeRO stage {s.zero_stage} on one data-parallel rank shards nothing: the file says stage 0 "
        "(same memory, no gather traffic)."
    )
    return 0


def _hybrid(s: Scenario, zero: dict[str, Any], gaps: Gaps) -> None:
    # DeepSpeed 0.19 removed MiCS, its HYBRID_SHARD (runtime/config.py rejects mics_shard_size). The nearest it
    # keeps is ZeRO++'s hierarchical partitioning (hpZ, runtime/zero/config.py zero_hpz_partition_size): ZeRO-3
    # over every rank plus a secondary copy of the weights sharded within the node, so backward gathers stay
    # inside it.
    if s.zero_stage == 3:
        zero["zero_hpz_partition_size"] = in_node_shard(s)
        gaps.drop(
            "Hybrid sharding: DeepSpeed 0.19 has no HYBRID_SHARD (MiCS was removed); the file uses ZeRO++ hpZ, "
            "which shards over every rank and keeps an extra in-node copy of the weights, so its memory "
            "differs from the plan's."
        )
    else:
        gaps.drop("Hybrid sharding: DeepSpeed's in-node partitioning (ZeRO++ hpZ) needs ZeRO stage 3.")


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
