"""Time the FLOP count and the communication model miss, composed from `Columns`: LoRA/QLoRA memory-bound
work per step, checkpoint I/O per run, the host transfers of offload; and the routed experts the communication
model reads.

`planner.evaluate` adds them to the step; the formulas themselves live in `planner.formulas` (here:
`planner.formulas.step.adapter_time`, `.offload`, `.comm`, `.timing`), this module only says which columns feed them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.columns import Columns
from planner.failures import checkpoint_bytes_each
from planner.formulas.energy import footprint as energy
from planner.formulas.memory.memory_inputs import MemoryBreakdown
from planner.formulas.memory.recipes import Method, Recompute
from planner.formulas.money import cost
from planner.formulas.scalars import any_row
from planner.formulas.step import adapter_time, comm, expert_compute, moe, offload, timing
from planner.formulas.step.comm import BYTES_PER_GB
from planner.formulas.units import SECONDS_PER_HOUR


def adapter_memory_time_s(c: Columns) -> Any:
    """Per optimizer step and GPU: LoRA/QLoRA work bound by memory bandwidth (`planner.formulas.step.adapter_time`).

    Each GPU holds 1/(tp·pp) of the layers and sees its replica's tokens over the context-parallel ranks.
    """
    m, lay, r = c.model, c.layout, c.recipe
    shards, full_recompute = lay.tp * lay.pp, lay.recompute == Recompute.FULL
    tokens = lay.micro_batch_seqs * c.workload.seq_len_tokens * lay.n_micro_batches / lay.cp
    layer_weights = (m.n_params - m.n_embedding_params - m.n_head_params) * m.has_shape / shards
    dequant = adapter_time.dequant_step_bytes(
        layer_weights, r.frozen_weight_bytes_per_param, full_recompute, lay.n_micro_batches
    )
    adapters = adapter_time.adapter_step_bytes(
        # rank·(d_in + d_out) parameters per adapted matrix: over the rank, the elements in and out per token
        m.n_adapter_params / lay.lora_rank / shards,
        r.activation_bytes_per_element,
        full_recompute,
        tokens,
    )
    step_bytes = np.where(r.method == Method.QLORA, dequant, 0.0) + np.where(
        r.method != Method.FULL, adapters, 0.0
    )
    return adapter_time.memory_bound_time_s(step_bytes, c.gpu.memory_gb_per_s * BYTES_PER_GB)


def checkpoint_io_s(c: Columns) -> Any:
    """Model load once plus every checkpoint save; 0 when no storage bandwidth is given (NaN)."""
    m, r, w = c.model, c.recipe, c.workload
    frozen = r.method != Method.FULL
    weights = m.n_params * np.where(frozen, r.frozen_weight_bytes_per_param, r.weight_bytes_per_param)
    storage = np.nan_to_num(w.storage_gb_per_s, nan=1.0)
    load = timing.checkpoint_load_time_s(weights, storage, c.gpu.pcie_gb_per_s)
    save = timing.checkpoint_save_time_s(checkpoint_bytes_each(c), storage, w.n_checkpoints)
    return np.where(np.isfinite(w.storage_gb_per_s), load + save, 0.0)


def moe_layout(c: Columns) -> comm.MoeLayout | None:
    """The communication model's view of the routed experts; None for a dense model (a scalar 0), which then
    skips every expert term."""
    m = c.model
    if np.ndim(m.n_expert_params) == 0 and not m.n_expert_params:
        return None
    trainable = np.where(c.recipe.method != Method.FULL, m.n_expert_adapter_params, m.n_expert_params)
    etp = moe.expert_tensor_degree(c.layout.etp, c.layout.tp)
    return comm.MoeLayout(m.n_expert_params, trainable, m.n_moe_layers, m.n_experts_active, c.layout.ep, etp)


def moe_critical_path_s(c: Columns) -> tuple[Any, Any]:
    """(all-to-all seconds, routed experts' extra compute seconds at a utilisation of 1) per optimizer step and
    GPU; (0, 0) for a dense model. Both sit on every micro-batch's critical path: the experts wait for the dispatch and the
    next layer for the combine, so no compute hides them (`planner.formulas.step.moe`, `.expert_compute`)."""
    m, lay, r, g = c.model, c.layout, c.recipe, c.gpu
    if np.ndim(m.n_expert_params) == 0 and not m.n_expert_params:
        return 0.0, 0.0
    full_recompute = lay.recompute == Recompute.FULL
    tokens = lay.micro_batch_seqs * c.workload.seq_len_tokens / lay.cp  # per context-parallel rank
    etp = moe.expert_tensor_degree(lay.etp, lay.tp)  # the dispatcher's rules: planner.formulas.step.moe
    links = moe.ExpertLinks(
        etp, lay.n_gpus_per_node, comm.intra_node_link_gb_per_s(g.intra_node_gb_per_s, g.pcie_gb_per_s),
        lay.inter_node_gb_per_s,
    )  # fmt: skip
    all_to_all_s = moe.expert_parallel_comm_s(
        lay.ep, m.n_moe_layers / lay.pp, tokens / lay.tp, m.n_experts_active, m.hidden_size,
        r.activation_bytes_per_element, lay.n_micro_batches, full_recompute, links, lay.moe_capacity_factor,
    )  # fmt: skip
    frac = expert_compute.expert_matmul_efficiency_frac(
        expert_compute.tokens_per_expert(tokens, m.n_experts_active, lay.ep, m.n_experts, etp / lay.tp),
        m.hidden_size, m.expert_ffn_hidden_size / etp, r.activation_bytes_per_element, g.peak_flops_per_s,
        g.memory_gb_per_s * BYTES_PER_GB,
    )  # fmt: skip
    # FLOPs per routed weight and token: forward 2, backward 4 (2 with a frozen base: no weight gradient),
    # and the forward again under full recompute (planner.formulas.step.compute's counting).
    per_weight = 2.0 + np.where(r.method != Method.FULL, 2.0, 4.0) + 2.0 * full_recompute
    # a GPU runs 1/etp of each expert matmul on etp GPUs' b·s/(cp·tp) tokens: 1/tp of its tokens at any etp
    tokens_per_gpu_step = tokens * lay.n_micro_batches / lay.tp
    routed_flops = per_weight * m.n_routed_active_params / lay.pp * tokens_per_gpu_step
    extra_s = expert_compute.routed_expert_extra_s(
        routed_flops, g.peak_flops_per_s, 1.0, frac,
        expert_compute.busiest_rank_load(lay.ep, lay.moe_capacity_factor),
    )  # fmt: skip
    return all_to_all_s, extra_s


def offload_step(c: Columns, host: MemoryBreakdown) -> offload.OffloadStep:
    """The offload model's view: one GPU's host transfers and CPU step, from what memory put on its host."""
    r, lay = c.recipe, c.layout
    flags = (lay.offload_optimizer, lay.offload_params, lay.offload_activations, r.paged_optimizer)
    if not any(any_row(np.asarray(flag) > 0) for flag in flags):  # nothing on the host: skip the per-row work
        return offload.NO_OFFLOAD
    state_bytes = r.optimizer_bytes_per_param + r.master_bytes_per_param
    return offload.offload_step(
        host_optimizer_params=np.where(
            state_bytes > 0, host.host_optimizer_bytes / np.maximum(state_bytes, 1e-30), 0.0
        ),
        host_weights_bytes=host.host_weights_bytes,
        host_grads_bytes=host.host_grads_bytes,
        host_activations_bytes=host.host_activations_bytes,
        paged_bytes=host.host_paged_bytes,
        activation_micro_batches_held=np.minimum(lay.n_micro_batches, lay.pp),
        n_micro_batches=lay.n_micro_batches,
        offload_params=lay.offload_params,
        bytes_per_param={
            "optimizer": r.optimizer_bytes_per_param,
            "master": r.master_bytes_per_param,
            "grad": r.grad_bytes_per_param,
            "weight": r.weight_bytes_per_param,
        },
        gpus_on_host=np.minimum(lay.n_gpus, lay.n_gpus_per_node),
        pcie_gb_per_s=c.gpu.pcie_gb_per_s,
        host_memory_gb_per_s=lay.host_memory_gb_per_s,
    )


def money_and_energy(c: Columns, out: dict[str, Any]) -> dict[str, Any]:
    """Cost and energy of the run's GPU-hours: the training GPUs and any that only generate.

    Their bands follow the wall clock's (`wall_clock_s_low`/`_high`); without one in `out` (the plan
    search's hot path) the band figures are left out."""
    g, e, n_gpus = c.gpu, c.energy, c.layout.n_gpus + c.post.n_generation_gpus
    hours = out["wall_clock_s"] / SECONDS_PER_HOUR
    banded = "wall_clock_s_low" in out
    low_h = out["wall_clock_s_low"] / SECONDS_PER_HOUR if banded else None
    high_h = out["wall_clock_s_high"] / SECONDS_PER_HOUR if banded else None
    gpu_hours = hours * n_gpus
    rate = cost.RateBand(g.usd_per_gpu_hour, g.usd_per_gpu_hour_low, g.usd_per_gpu_hour_high, "")
    money = cost.cost_figures(
        gpu_hours,
        rate,
        c.workload.training_tokens,
        c.workload.experiments_multiplier,
        None if low_h is None else low_h * n_gpus,
        None if high_h is None else high_h * n_gpus,
    )
    power = energy.energy_figures(
        n_gpus,
        hours,
        g.power_limit_w,  # the run's draw follows the power limit (its TDP unless capped)
        e.g_co2e_per_kwh,
        gpu_util_frac=e.gpu_util_frac,
        idle_power_frac=e.idle_power_frac,
        host_overhead_frac=e.host_overhead_frac,
        pue=e.pue,
        usd_per_kwh=e.usd_per_kwh,
        wall_clock_h_low=low_h,
        wall_clock_h_high=high_h,
        experiments_multiplier=c.workload.experiments_multiplier,
    )
    figures = {
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
    if not banded:
        for name in ("cost_usd", "energy_kwh", "co2e_kg"):
            del figures[f"{name}_low"], figures[f"{name}_high"]
    return figures
