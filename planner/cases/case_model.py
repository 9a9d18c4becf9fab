"""The compute and time formulas applied to one published measurement (inputs from `compute_cases`).

Two directions over the same formulas: `case_efficiency` takes the measured step apart into compute,
exposed communication and pipeline bubble and returns the compute-only efficiency (what the presets hold);
`predict_case` puts a preset efficiency back together into the measured quantity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.formulas import comm
from planner.formulas.comm import StepComm
from planner.formulas.compute import (
    attention_fwd_flops_per_token,
    global_batch_tokens,
    hardware_flops_per_token,
    model_flops_per_token,
)
from planner.formulas.timing import compute_time_from_step_s, run_time
from planner.formulas.units import SECONDS_PER_HOUR

SECONDS_PER_DAY = 86_400.0


def flops_per_token(c: Mapping[str, Any], causal: int = 1) -> tuple[float, float]:
    """(model, hardware) FLOPs per token of a case; `causal` = 0 counts attention the Megatron-2021 way."""
    attn = attention_fwd_flops_per_token(c["n_layers"], c["n_heads"], c["head_dim"], c["seq_len"], causal)
    model = model_flops_per_token(c["n_matmul_params"], attn, c["frozen_base"], c["n_adapter_params"])
    layer_params = c["n_layer_matmul_params"] + c["n_adapter_params"]
    hardware = hardware_flops_per_token(
        model, layer_params, attn, c["flash_attention"], c["full_recompute"], c["selective_recompute"]
    )
    return float(model), float(hardware)


def step_comm(c: Mapping[str, Any]) -> StepComm:
    """Communication per optimizer step of a case's layout (`planner.formulas.comm.layout_comm`)."""
    trainable = c["n_adapter_params"] if c["frozen_base"] else c["n_params"]
    names = (
        "n_params", "n_layers", "kv_dim", "seq_len", "micro_batch", "grad_accum", "tp", "pp", "cp", "dp",
        "zero_stage", "hybrid_shard", "grad_comm_bytes", "weight_comm_bytes", "activation_bytes",
        "gpus_per_node", "intra_node_gb_per_s", "pcie_gb_per_s", "inter_node_gb_per_s",
    )  # fmt: skip
    return comm.layout_comm(
        **{name: c[name] for name in names},
        n_trainable_params=trainable,
        hidden_size=c["hidden"],
        full_recompute=c["full_recompute"],
    )


def batch_tokens(c: Mapping[str, Any]) -> float:
    return float(global_batch_tokens(c["micro_batch"], c["grad_accum"], c["dp"], c["seq_len"]))


def bubble_frac(c: Mapping[str, Any]) -> float:
    return float(comm.pipeline_bubble_frac(c["pp"], c["grad_accum"], c["n_virtual_stages"]))


def interpreted_unit(c: Mapping[str, Any]) -> str:
    """The unit a value is read in; an ambiguous tokens/s is total when a per-GPU reading would need more
    model FLOP/s than the GPU's dense peak (the only physically possible reading), per GPU otherwise."""
    if c["measured_unit"] != "tokens_per_s_ambiguous":
        return str(c["measured_unit"])
    model, _ = flops_per_token(c)
    per_gpu_ceiling = c["peak_flops_per_s"] / model
    return "tokens_per_s_total" if c["measured_value"] > per_gpu_ceiling else "tokens_per_s_per_gpu"


def step_to_measured(c: Mapping[str, Any], step_s: float) -> float:
    """A step time expressed in the case's measured unit."""
    unit, tokens = interpreted_unit(c), batch_tokens(c)
    per_gpu_tokens_per_s = tokens / (step_s * c["n_gpus"])
    source_model, source_hardware = flops_per_token(c, c["source_attention_causal"])
    converters = {
        "tokens_per_s_per_gpu": lambda: per_gpu_tokens_per_s,
        "tokens_per_s_total": lambda: tokens / step_s,
        "samples_per_s_total": lambda: c["global_batch"] / step_s,
        "tflops_per_gpu_model": lambda: per_gpu_tokens_per_s * source_model / 1e12,
        "tflops_per_gpu_hardware": lambda: per_gpu_tokens_per_s * source_hardware / 1e12,
        "s_per_iteration": lambda: step_s,
        "days": lambda: step_s * c["n_tokens"] / tokens / SECONDS_PER_DAY,
        "gpu_hours": lambda: step_s * c["n_tokens"] / tokens * c["n_gpus"] / SECONDS_PER_HOUR,
    }
    return float(converters[unit]())


def measured_step_s(c: Mapping[str, Any]) -> float:
    """The measured value turned into seconds per optimizer step (inverse of `step_to_measured`).

    Every unit is proportional or inversely proportional to the step time, so one evaluation at 1 s
    gives the factor.
    """
    at_one_second = step_to_measured(c, 1.0)
    if interpreted_unit(c) in ("s_per_iteration", "days", "gpu_hours"):
        return float(c["measured_value"] / at_one_second)
    return float(at_one_second / c["measured_value"])


def case_efficiency(c: Mapping[str, Any]) -> float:
    """Compute-only efficiency a measurement implies: hardware FLOPs / (GPUs × peak × compute time).

    NaN when the modelled exposed communication alone exceeds the measured step.
    """
    _, hardware = flops_per_token(c)
    traffic = step_comm(c)
    compute_s = compute_time_from_step_s(
        measured_step_s(c), traffic.pipelined_s, traffic.data_parallel_s, bubble_frac(c), c["overlap_frac"]
    )
    return float(hardware * batch_tokens(c) / (c["n_gpus"] * c["peak_flops_per_s"] * compute_s))


def predict_case(c: Mapping[str, Any], utilisation_frac: float) -> float:
    """The case's measured quantity predicted from a compute-only efficiency (`planner.formulas.timing.run_time`)."""
    model, hardware = flops_per_token(c)
    tokens = batch_tokens(c)
    result = run_time(
        model, hardware, tokens, tokens, tokens, c["n_gpus"], c["peak_flops_per_s"], utilisation_frac,
        0, step_comm(c), bubble_frac(c), c["overlap_frac"],
    )  # fmt: skip
    return step_to_measured(c, float(result.step_time_s))


def efficiency_record(c: Mapping[str, Any]) -> dict[str, Any] | str:
    """One measurement's contribution to the presets, or why it contributes nothing.

    Above 100 % of the datasheet peak a row contradicts its own configuration (wrong peak, unit or
    settings); it is left out of the presets but still scored.
    """
    efficiency = case_efficiency(c)
    if efficiency != efficiency:  # NaN
        return "modelled communication alone exceeds the measured step"
    if efficiency > 1.0:
        return f"implies {efficiency:.0%} of the dense peak: inconsistent with the datasheet"
    keys = ("case_id", "generation", "n_params", "method", "precision")
    return {**{k: c[k] for k in keys}, "efficiency": efficiency}
