"""The one composition of every formula: numeric input columns in, result columns out.

A single estimate passes floats, the GPU comparison passes one value per GPU and the plan search one value per
configuration; all three run this same function, so they can never disagree. Inputs are built by
`planner.resolve`; categorical choices arrive already mapped to numbers (codes, bytes per parameter).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from planner.formulas import comm, compute, cost, energy, timing
from planner.formulas.memory import MemoryInputs, max_micro_batch, memory_per_gpu
from planner.formulas.model_states import stage_model_states
from planner.formulas.units import SECONDS_PER_HOUR

Columns = Mapping[str, Any]
MEMORY_FIELDS = tuple(MemoryInputs.__dataclass_fields__)


def _flops_per_token(c: Columns) -> tuple[Any, Any]:
    """(model, hardware) FLOPs per processed token; the seed's override replaces the model FLOPs."""
    attn = (
        np.nan_to_num(
            compute.attention_fwd_flops_per_token(c["n_layers"], c["n_heads"], c["head_dim"], c["seq_len"])
        )
        * c["has_shape"]
    )
    frozen = c["method"] > 0
    formula = compute.model_flops_per_token(c["n_matmul_params"], attn, frozen, c["n_adapter_params"])
    model = compute.override_flops_per_token(formula, c["flops_per_param_token"], c["n_active_params"])
    layer_params = c["n_layer_matmul_params"] + c["n_adapter_params"] * frozen
    hardware = compute.hardware_flops_per_token(
        # Op-level selective recompute (code 3) is charged like attention-only selective recompute: it repeats
        # cheap element-wise and attention ops, not the large matmuls (torchtitan activation_checkpoint "op").
        model,
        layer_params,
        attn,
        c["flash_attention"],
        c["recompute"] == 2,
        np.isin(c["recompute"], (1, 3)),
    )
    return model, hardware


def _step_comm(c: Columns) -> comm.StepComm:
    """Communication per optimizer step for the layout (the same `layout_comm` the calibration uses)."""
    frozen = c["method"] > 0
    # Mixed precision reduces gradients in fp32 (PyTorch AMP, Composer, Megatron); pure recipes in their dtype.
    grad_comm_bytes = np.where(c["master_bytes"] > 0, 4.0, c["grad_bytes"])
    weight_comm_bytes = np.where(frozen, c["frozen_weight_bytes"], c["weight_bytes"])
    step = comm.layout_comm(
        n_params=c["n_params"],
        n_trainable_params=np.where(frozen, c["n_adapter_params"], c["n_params"]),
        n_layers=c["n_layers"],
        hidden_size=c["hidden"],
        kv_dim=c["n_kv_heads"] * c["head_dim"],
        seq_len=c["seq_len"],
        micro_batch=c["micro_batch"],
        grad_accum=c["grad_accum"],
        tp=c["tp"],
        pp=c["pp"],
        cp=c["cp"],
        dp=c["dp"],
        zero_stage=c["zero_stage"],
        hybrid_shard=c["hybrid_shard"],
        full_recompute=c["recompute"] == 2,
        grad_comm_bytes=grad_comm_bytes,
        weight_comm_bytes=weight_comm_bytes,
        activation_bytes=c["activation_bytes"],
        gpus_per_node=c["gpus_per_node"],
        intra_node_gb_per_s=c["intra_node_gb_per_s"],
        pcie_gb_per_s=c["pcie_gb_per_s"],
        inter_node_gb_per_s=c["inter_node_gb_per_s"],
    )
    # Without a shape the in-pipeline (tensor, context, pipeline) traffic is unknown: left out, as for a bare count.
    return comm.StepComm(
        pipelined_s=np.where(c["has_shape"] > 0, step.pipelined_s, 0.0), data_parallel_s=step.data_parallel_s
    )


def _run(
    c: Columns,
    model_fpt: Any,
    hw_fpt: Any,
    processed: Any,
    batch: Any,
    step_comm: comm.StepComm,
    bubble: Any,
    utilisation: Any,
) -> timing.RunTime:
    return timing.run_time(
        model_fpt,
        hw_fpt,
        c["training_tokens"],
        processed,
        batch,
        c["n_gpus"],
        c["peak_flops_per_s"],
        utilisation,
        c["end_to_end"],
        step_comm,
        bubble,
        c["overlap_frac"],
    )


def _memory(c: Columns) -> dict[str, Any]:
    inputs = MemoryInputs(**{name: c[name] for name in MEMORY_FIELDS if name in c})
    breakdown = memory_per_gpu(inputs)
    state_total = _model_state_bytes_total(inputs)
    shaped = c["has_shape"] > 0
    nan = np.nan
    return {
        "weights_bytes": breakdown.weights_bytes,
        "gradients_bytes": breakdown.gradients_bytes,
        "optimizer_bytes": breakdown.optimizer_bytes,
        "master_bytes": breakdown.master_bytes,
        "activations_bytes": np.where(shaped, breakdown.activations_bytes, nan),
        "logits_bytes": np.where(shaped, breakdown.logits_bytes, nan),
        "prefetch_bytes": np.where(shaped, breakdown.prefetch_bytes, 0.0),
        "overhead_bytes": breakdown.overhead_bytes,
        "fragmentation_bytes": np.where(shaped, breakdown.fragmentation_bytes, nan),
        "peak_bytes": np.where(shaped, breakdown.peak_bytes, nan),
        # what torch.cuda.max_memory_allocated / max_memory_reserved show (published memory statistics)
        "allocated_peak_bytes": np.where(shaped, breakdown.allocated_peak_bytes, nan),
        "reserved_peak_bytes": np.where(shaped, breakdown.reserved_peak_bytes, nan),
        "peak_phase": np.where(shaped, breakdown.peak_phase, nan),
        "host_offload_bytes": breakdown.host_offload_bytes,
        "max_micro_batch": np.where(shaped, max_micro_batch(inputs, c["vram_bytes"]), nan),
        "model_state_bytes_total": state_total,
    }


def _model_state_bytes_total(inputs: MemoryInputs) -> Any:
    """Weights, gradients, optimizer states and master copy of the whole model on one unsharded GPU.

    The model-state terms of `memory_per_gpu` with no tensor, pipeline, context or data parallelism, no ZeRO
    and nothing offloaded (the same `stage_model_states` rules, one stage holding the embedding and the
    head); activations do not enter, so they are not computed.
    """
    whole = replace(
        inputs,
        tp=1.0,
        pp=1.0,
        cp=1.0,
        dp=1.0,
        zero_stage=0.0,
        offload_optimizer=0.0,
        offload_params=0.0,
    )
    states = stage_model_states(whole, 1.0, 1.0)
    return states["weights"] + states["grads"] + states["optimizer"] + states["master"]


def evaluate(c: Columns) -> dict[str, Any]:
    """Every figure of the plan for each row of the input columns (floats or equal-length arrays)."""
    padding = compute.padding_factor(c["tokens_per_example"], c["seq_len"], c["packing"])
    processed = compute.processed_tokens(c["training_tokens"], padding)
    batch = compute.global_batch_tokens(c["micro_batch"], c["grad_accum"], c["dp"], c["seq_len"])
    model_fpt, hw_fpt = _flops_per_token(c)
    step_comm = _step_comm(c)
    bubble = comm.pipeline_bubble_frac(c["pp"], c["grad_accum"])
    typical = _run(c, model_fpt, hw_fpt, processed, batch, step_comm, bubble, c["utilisation"])
    slow = _run(c, model_fpt, hw_fpt, processed, batch, step_comm, bubble, c["utilisation_low"])
    fast = _run(c, model_fpt, hw_fpt, processed, batch, step_comm, bubble, c["utilisation_high"])
    io_s = _checkpoint_io_s(c)
    out: dict[str, Any] = {
        "processed_tokens": processed,
        "global_batch_tokens": batch,
        "n_steps": compute.optimizer_steps(processed, batch),
        "model_flops": compute.total_flops(model_fpt, processed),
        "hardware_flops": compute.total_flops(hw_fpt, processed),
        "step_time_s": typical.step_time_s,
        "comm_time_s": typical.comm_time_s,
        "bubble_frac": typical.bubble_frac,
        "tokens_per_s_per_gpu": typical.tokens_per_s_per_gpu,
        "mfu": typical.mfu,
        "hfu": typical.hfu,
        "checkpoint_io_s": io_s,
        "wall_clock_s": typical.wall_clock_s + io_s,
        "wall_clock_s_low": fast.wall_clock_s + io_s,
        "wall_clock_s_high": slow.wall_clock_s + io_s,
        "compute_wall_clock_s": typical.wall_clock_s,
    }
    out["per_device_flops_per_s"] = typical.mfu * c["peak_flops_per_s"]
    out["cluster_flops_per_s"] = out["per_device_flops_per_s"] * c["n_gpus"]
    out["tokens_per_s"] = c["training_tokens"] / out["wall_clock_s"]
    out.update(_memory(c))
    out["fits_vram"] = fits_vram(
        out["peak_bytes"], out["model_state_bytes_total"], out["overhead_bytes"], c["n_gpus"], c["vram_bytes"]
    )
    out.update(_money_and_energy(c, out))
    return out


def fits_vram(
    peak_bytes: Any, state_bytes_total: Any, overhead_bytes: Any, n_gpus: Any, vram_bytes: Any
) -> Any:
    """1.0 fits, 0.0 does not, NaN unknown.

    Judged on the peak over the step when the model's shape is known; otherwise on the evenly split model state
    plus the fixed overhead (the only memory figures a bare parameter count allows, as in the seed).
    """
    judged = np.where(np.isnan(peak_bytes), state_bytes_total / n_gpus + overhead_bytes, peak_bytes)
    return np.where(np.isnan(judged), np.nan, (judged <= vram_bytes).astype(float))


def _checkpoint_io_s(c: Columns) -> Any:
    """Model load once plus every checkpoint save; 0 when no storage bandwidth is given (NaN)."""
    weights = c["n_params"] * np.where(c["method"] > 0, c["frozen_weight_bytes"], c["weight_bytes"])
    trainable = np.where(c["method"] > 0, c["n_adapter_params"], c["n_params"])
    saved_weights = np.where(c["method"] > 0, c["n_adapter_params"], c["n_params"])
    each = timing.checkpoint_bytes(
        saved_weights, c["weight_bytes"], trainable, c["master_bytes"] + c["optimizer_bytes"]
    )
    storage = np.nan_to_num(c["storage_gb_per_s"], nan=1.0)
    load = timing.checkpoint_load_time_s(weights, storage, c["pcie_gb_per_s"])
    save = timing.checkpoint_save_time_s(each, storage, c["n_checkpoints"])
    return np.where(np.isfinite(c["storage_gb_per_s"]), load + save, 0.0)


def _money_and_energy(c: Columns, out: Mapping[str, Any]) -> dict[str, Any]:
    hours = out["wall_clock_s"] / SECONDS_PER_HOUR
    gpu_hours = hours * c["n_gpus"]
    rate = cost.RateBand(c["usd_per_gpu_hour"], c["usd_per_gpu_hour_low"], c["usd_per_gpu_hour_high"], "")
    money = cost.cost_figures(
        gpu_hours,
        rate,
        c["training_tokens"],
        c["experiments_multiplier"],
        out["wall_clock_s_low"] / SECONDS_PER_HOUR * c["n_gpus"],
        out["wall_clock_s_high"] / SECONDS_PER_HOUR * c["n_gpus"],
    )
    power = energy.energy_figures(
        c["n_gpus"],
        hours,
        c["tdp_w"],
        c["g_co2e_per_kwh"],
        gpu_util_frac=c["gpu_util_frac"],
        idle_power_frac=c["idle_power_frac"],
        host_overhead_frac=c["host_overhead_frac"],
        pue=c["pue"],
        usd_per_kwh=c["usd_per_kwh"],
        wall_clock_h_low=out["wall_clock_s_low"] / SECONDS_PER_HOUR,
        wall_clock_h_high=out["wall_clock_s_high"] / SECONDS_PER_HOUR,
        experiments_multiplier=c["experiments_multiplier"],
    )
    return {
        "device_hours": gpu_hours,
        "cost_usd": money.cost_usd,
        "cost_usd_low": money.cost_usd_low,
        "cost_usd_high": money.cost_usd_high,
        "usd_per_million_tokens": money.usd_per_million_tokens,
        "energy_kwh": power.energy_kwh,
        "energy_kwh_low": power.energy_kwh_low,
        "energy_kwh_high": power.energy_kwh_high,
        "gpu_energy_kwh": power.gpu_energy_kwh,
        "host_energy_kwh": power.host_energy_kwh,
        "facility_overhead_kwh": power.facility_overhead_kwh,
        "co2e_kg": power.co2e_kg,
        "co2e_kg_low": power.co2e_kg_low,
        "co2e_kg_high": power.co2e_kg_high,
        "electricity_cost_usd": power.electricity_cost_usd,
    }
