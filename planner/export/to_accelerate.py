"""The plan as a Hugging Face accelerate config YAML (accelerate v1.15.0, `accelerate config`'s keys).

FSDP2 (`fsdp_version: 2`) is written when FSDP can say the plan: ZeRO 2 or 3 map to resharding after forward
or not, a hybrid or tensor/context-parallel layout to `parallelism_config`. ZeRO 1, or optimizer offload
without parameter offload, have no FSDP form, so those plans get the DeepSpeed plugin instead; ZeRO 0 is
plain multi-GPU data parallelism. Batch size, sequence length, optimizer and LoRA live in the training
script, so they are listed as not expressed.
"""

from __future__ import annotations

from typing import Any

from planner.export.export_types import Export, Gaps, adapters, header, in_node_shard, n_nodes
from planner.export.serialize import yaml_text
from planner.inputs.scenario import Scenario

TARGET = "accelerate"
FILE_NAME = "accelerate_config.yaml"
MIXED_PRECISION = {
    "bf16_mixed": "bf16",
    "bf16_pure": "bf16",
    "fp16_mixed": "fp16",
    "fp8_mixed": "fp8",
    "fp32": "no",
}


def export(s: Scenario) -> Export:
    gaps = Gaps()
    config: dict[str, Any] = {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": _distributed_type(s),
    }
    if config["distributed_type"] == "FSDP":
        config["fsdp_config"] = _fsdp(s, gaps)
        if _needs_parallelism_config(s):
            config["parallelism_config"] = _parallelism(s)
    elif config["distributed_type"] == "DEEPSPEED":
        config["deepspeed_config"] = _deepspeed(s, gaps)
    config.update(_precision(s, gaps))
    config.update(_machines(s))
    _script_side(s, config["distributed_type"], gaps)
    if n_nodes(s) > 1:
        gaps.note("Several machines: set machine_rank, main_process_ip and main_process_port on each.")
    return gaps.export(TARGET, yaml_text(config, header(s, TARGET)), FILE_NAME, config)


def _distributed_type(s: Scenario) -> str:
    if s.n_gpus == 1:
        return "NO"
    if s.zero_stage == 1 or (s.offload_optimizer and not s.offload_params):
        return "DEEPSPEED"
    return "MULTI_GPU" if s.zero_stage == 0 and s.tp == s.cp == 1 else "FSDP"


def _fsdp(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    fsdp: dict[str, Any] = {
        "fsdp_version": 2,
        # FSDP2 reshards after forward (FULL_SHARD, ZeRO-3) or keeps the gathered weights (SHARD_GRAD_OP).
        "fsdp_reshard_after_forward": s.zero_stage == 3,
        "fsdp_offload_params": s.offload_params,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_cpu_ram_efficient_loading": True,
        "fsdp_activation_checkpointing": s.recompute == "full",
    }
    if s.zero_stage == 0:
        gaps.drop(
            "ZeRO stage 0 with tensor or context parallelism: accelerate's layouts need FSDP; it shards."
        )
    if s.recompute in ("selective", "selective_op"):
        gaps.drop(f"Recompute {s.recompute}: accelerate's FSDP checkpoints whole layers or none; left off.")
    return fsdp


def _needs_parallelism_config(s: Scenario) -> bool:
    return s.hybrid_shard or s.tp > 1 or s.cp > 1


def _parallelism(s: Scenario) -> dict[str, Any]:
    dp = s.dp * s.pp  # no pipeline in accelerate: the pipeline ranks become data-parallel ones
    shard = min(in_node_shard(s) * s.pp, dp) if s.hybrid_shard else dp
    prefix = "parallelism_config_"
    return {
        prefix + "dp_replicate_size": dp // shard,
        prefix + "dp_shard_size": shard,
        prefix + "tp_size": s.tp,
        prefix + "cp_size": s.cp,
    }


def _deepspeed(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    """The DeepSpeed plugin's own keys; a full DeepSpeed config can be given instead (export --to deepspeed)."""
    plugin: dict[str, Any] = {
        "zero_stage": s.zero_stage,
        "gradient_accumulation_steps": s.grad_accum,
        "offload_optimizer_device": "cpu" if s.offload_optimizer and s.zero_stage >= 1 else "none",
        "offload_param_device": "cpu" if s.offload_params and s.zero_stage == 3 else "none",
    }
    if s.zero_stage == 3:
        plugin["zero3_init_flag"] = True  # build the model sharded, as accelerate asks for ZeRO-3
    if s.offload_params and s.zero_stage != 3:
        gaps.drop("Parameter offload: DeepSpeed offloads parameters only under ZeRO stage 3.")
    if s.hybrid_shard:
        gaps.drop(
            "Hybrid sharding: the accelerate DeepSpeed plugin has no key for it (see export --to deepspeed)."
        )
    if s.recompute != "none":
        gaps.drop(
            f"Recompute {s.recompute}: switch it on in the script (model.gradient_checkpointing_enable())."
        )
    return plugin


def _precision(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    mixed: dict[str, Any] = {"mixed_precision": MIXED_PRECISION[s.precision]}
    if s.precision == "fp8_mixed":
        mixed["fp8_config"] = {"backend": "TE", "fp8_format": "HYBRID"}  # Transformer Engine, e4m3/e5m2
    if s.precision == "bf16_pure":
        gaps.drop(
            "Precision pure bf16: accelerate's bf16 is autocast over fp32 weights; load the model in bf16 "
            "yourself for the plan's master-free states."
        )
    return mixed


def _machines(s: Scenario) -> dict[str, Any]:
    return {
        "num_machines": n_nodes(s),
        "num_processes": s.n_gpus,  # every process on every machine, as accelerate counts them
        "machine_rank": 0,
        "main_training_function": "main",
        "rdzv_backend": "static",
        "same_network": True,
        "use_cpu": False,
    }


def _script_side(s: Scenario, distributed_type: str, gaps: Gaps) -> None:
    """What the training script sets, not accelerate's config file."""
    if distributed_type != "DEEPSPEED" and s.grad_accum > 1:
        gaps.drop(f"Gradient accumulation {s.grad_accum}: pass Accelerator(gradient_accumulation_steps=...).")
    gaps.drop(
        f"Micro-batch {s.micro_batch} and sequence length {s.seq_len}: the script's DataLoader sets them."
    )
    gaps.drop(f"Optimizer {s.optimizer}: the script builds it; accelerate's config names none.")
    if s.method != "full":
        gaps.drop(f"LoRA: the plan's {adapters(s)} come from PEFT in the script.")
    if s.pp > 1:
        gaps.drop(
            f"Pipeline parallelism {s.pp}: accelerate has no pipeline; its {s.pp}x GPUs join data parallelism, "
            f"so the global batch grows {s.pp}-fold unless you cut accumulation."
        )
    if s.offload_activations:
        gaps.drop("Activation offload: accelerate's config has no such option.")
    if s.optimizer_in_backward:
        gaps.drop("Optimizer step in backward: accelerate's config has no such option.")
    if distributed_type != "FSDP" and (s.tp > 1 or s.cp > 1):
        gaps.drop("Tensor/context parallelism: accelerate sets them only through FSDP2's parallelism_config.")
