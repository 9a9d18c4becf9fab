"""The one composition of every formula: typed input `Columns` in, result columns out.

A single estimate passes floats, the GPU comparison passes one value per GPU and the plan search one value per
configuration; all three run this same function, so they can never disagree. Inputs are built by
`planner.resolve`; categorical choices arrive as enum codes (`Method`, `Recompute`) and bytes per parameter.
Outputs are in bytes, seconds, FLOPs and rates; `planner.results.OUTPUTS` names and converts what users see.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from planner.catalogue.memory_band import memory_band
from planner.columns import Columns, memory_inputs
from planner.failures import with_failures
from planner.formulas.memory.loading import whole_model
from planner.formulas.memory.model_states import stage_model_states
from planner.formulas.memory.peak import MemoryBreakdown, MemoryInputs, max_micro_batch
from planner.formulas.memory.recipes import Method, Recompute
from planner.formulas.memory.verdict import verdict_outputs
from planner.formulas.operators.outputs import bound_by_code, step_parts
from planner.formulas.operators.step import BAND, operator_compute
from planner.formulas.scalars import any_row, is_one_of, nan_to_zero
from planner.formulas.step import collectives, comm, compute, contention, timing
from planner.formulas.step.offload import OffloadStep
from planner.multimodal import step as mm  # vision-language and diffusion parts beside the main transformer
from planner.post.step import is_sft, policy_view, post_training_outputs
from planner.step_parts import (
    adapter_memory_time_s,
    checkpoint_io_s,
    moe_critical_path_s,
    moe_layout,
    money_and_energy,
    offload_step,
)

Outputs = dict[str, Any]


def flops_per_token(c: Columns, causal: int = 1) -> tuple[Any, Any]:
    """(model, hardware) FLOPs per processed token; the seed's override replaces the model FLOPs.

    `causal` = 0 counts the full attention matrix, as Megatron's TFLOP/s counter does (validation reads
    such published figures with it); the planner's own figures use the causal half.
    """
    m, lay = c.model, c.layout
    seq_len = c.workload.seq_len_tokens
    attn = (
        nan_to_zero(compute.attention_fwd_flops_per_token(m.n_layers, m.n_heads, m.head_dim, seq_len, causal))
        * m.has_shape
    )
    frozen = c.recipe.method != Method.FULL
    formula = compute.model_flops_per_token(m.n_matmul_params, attn, frozen, m.n_adapter_params)
    model = compute.override_flops_per_token(formula, c.workload.flops_per_param_token, m.n_active_params)
    layer_params = m.n_layer_matmul_params + m.n_adapter_params * frozen
    hardware = compute.hardware_flops_per_token(
        # Op-level selective recompute is charged like attention-only selective recompute: it repeats cheap
        # element-wise and attention ops, not the large matmuls (torchtitan activation_checkpoint "op").
        model,
        layer_params,
        attn,
        lay.flash_attention,
        lay.recompute == Recompute.FULL,
        is_one_of(lay.recompute, (Recompute.SELECTIVE, Recompute.SELECTIVE_OP)),
    )
    return model + (side := mm.side_flops_per_token(c)), hardware + side  # encoders, VAE


def _step_comm(c: Columns) -> comm.StepComm:
    """Communication per optimizer step for the layout (the same `layout_comm` the calibration uses)."""
    m, r, lay = c.model, c.recipe, c.layout
    frozen = r.method != Method.FULL
    grad_comm_bytes = collectives.reduce_bytes(
        lay.reduce_bytes_per_param, r.master_bytes_per_param, r.grad_bytes_per_param
    )
    weight_comm_bytes = np.where(frozen, r.frozen_weight_bytes_per_param, r.weight_bytes_per_param)
    step = comm.layout_comm(
        n_params=m.n_params,
        n_trainable_params=np.where(frozen, m.n_adapter_params, m.n_params),
        n_layers=m.n_layers,
        hidden_size=m.hidden_size,
        kv_dim=m.n_kv_heads * m.head_dim,
        seq_len=c.workload.seq_len_tokens,
        micro_batch=lay.micro_batch_seqs,
        grad_accum=lay.n_micro_batches,
        tp=lay.tp,
        pp=lay.pp,
        cp=lay.cp,
        dp=lay.dp,
        zero_stage=lay.zero_stage,
        hybrid_shard=lay.hybrid_shard,
        full_recompute=lay.recompute == Recompute.FULL,
        grad_comm_bytes=grad_comm_bytes,
        weight_comm_bytes=weight_comm_bytes,
        activation_bytes=r.activation_bytes_per_element,
        gpus_per_node=lay.n_gpus_per_node,
        intra_node_gb_per_s=c.gpu.intra_node_gb_per_s,
        pcie_gb_per_s=c.gpu.pcie_gb_per_s,
        inter_node_gb_per_s=lay.inter_node_gb_per_s,
        n_virtual_stages=lay.n_virtual_stages,
        moe=moe_layout(c),
        overlap_windows=lay.overlap_windows,
    )
    # No shape: the in-pipeline traffic and ZeRO's per-layer unhidden share are unknown, so left out.
    pipelined = np.where(m.has_shape > 0, step.pipelined_s, 0.0)
    unhidden = step.data_parallel_unhidden_frac  # used only by the windows overlap model
    if any_row(step.windows):
        unhidden = np.where((lay.zero_stage >= 1) & (m.has_shape == 0), 0.0, unhidden)
    tensor = step.exposed_tensor_s * (1.0 - lay.tp_comm_overlap) * (m.has_shape > 0)  # Megatron's option
    return replace(step, pipelined_s=pipelined, data_parallel_unhidden_frac=unhidden, exposed_tensor_s=tensor)


def _run(
    c: Columns,
    model_fpt: Any,
    hw_fpt: Any,
    processed: Any,
    batch: Any,
    step_comm: comm.StepComm,
    bubble: Any,
    utilisation_frac: Any,
    host: OffloadStep,
    memory_bound_s: Any,
    operator_s: Any,
) -> timing.RunTime:
    w, lay, g = c.workload, c.layout, c.gpu
    rates = (model_fpt, hw_fpt, w.training_tokens, processed, batch, lay.n_gpus, g.peak_flops_per_s)
    end_to_end = (utilisation_frac, g.utilisation_is_end_to_end)
    sm_frac = contention.nccl_sm_frac(g.n_sms)
    return timing.run_time(
        *rates, *end_to_end, step_comm, bubble, lay.overlap_frac, host, memory_bound_s, operator_s, sm_frac
    )


Memory = tuple[MemoryInputs, MemoryBreakdown]


def policy_memory(c: Columns) -> Memory:
    """The memory model's inputs and per-GPU breakdown (a paged optimizer's states paged as VRAM runs short)
    for columns already in the policy's view (`policy_view`): the memory part of `evaluate`, which the plan
    search runs first to evaluate the rest only for the rows that fit (planner.decide.sweep)."""
    inputs = memory_inputs(c)
    return inputs, mm.paged_memory(c, inputs)


def device_peak_bytes(c: Columns, breakdown: MemoryBreakdown) -> Any:
    """The device peak `evaluate` reports as `peak_bytes` before post-training's phases: NaN without a shape."""
    return np.where(c.model.has_shape > 0, breakdown.peak_bytes, np.nan)


def _memory(c: Columns, memory: Memory, micro_batch_limit: bool) -> Outputs:
    inputs, breakdown = memory
    state_total = _model_state_bytes_total(inputs)
    shaped, nan = c.model.has_shape > 0, np.nan
    peak = device_peak_bytes(c, breakdown)
    return {
        "weights_bytes": breakdown.weights_bytes,
        "gradients_bytes": breakdown.gradients_bytes,
        "optimizer_bytes": breakdown.optimizer_bytes,
        "master_bytes": breakdown.master_bytes,
        "activations_bytes": np.where(shaped, breakdown.activations_bytes, nan),
        "logits_bytes": np.where(shaped, breakdown.logits_bytes, nan),
        "prefetch_bytes": np.where(shaped, breakdown.prefetch_bytes, 0.0),
        "optimizer_step_temp_bytes": breakdown.optimizer_step_temp_bytes,
        "overhead_bytes": breakdown.overhead_bytes,
        "fragmentation_bytes": np.where(shaped, breakdown.fragmentation_bytes, nan),
        "peak_bytes": peak,
        # what torch.cuda.max_memory_allocated / max_memory_reserved show (published memory statistics)
        "allocated_peak_bytes": np.where(shaped, breakdown.allocated_peak_bytes, nan),
        "reserved_peak_bytes": np.where(shaped, breakdown.reserved_peak_bytes, nan),
        "peak_phase": np.where(shaped, breakdown.peak_phase, nan),
        "loading_peak_bytes": np.where(shaped, breakdown.loading_peak_bytes, nan),  # 0: loaded sharded
        "training_peak_phase": np.where(shaped, breakdown.training_peak_phase, nan),
        "headroom_bytes": c.gpu.vram_bytes - peak,
        "host_offload_bytes": breakdown.host_offload_bytes,
        "max_micro_batch": (
            np.where(shaped, max_micro_batch(inputs, mm.room_bytes(c)), nan) if micro_batch_limit else nan
        ),
        "model_state_bytes_total": state_total,
        "model_state_bytes_per_device": state_total / c.layout.n_gpus,
    }


def _model_state_bytes_total(inputs: MemoryInputs) -> Any:
    """Weights, gradients, optimizer states and master copy of the whole model on one unsharded GPU.

    The model-state terms of `memory_per_gpu` with no tensor, pipeline, context or data parallelism, no ZeRO
    and nothing offloaded (the same `stage_model_states` rules, one stage holding the embedding and the
    head); activations do not enter, so they are not computed.
    """
    states = stage_model_states(whole_model(inputs), 1.0, 1.0)
    return states["weights"] + states["grads"] + states["optimizer"] + states["master"]


def _inputs_shown(c: Columns) -> Outputs:
    """Input figures reported beside the results (the table of outputs converts them like the rest)."""
    return {
        "n_params": c.model.n_params,
        "n_active_params": c.model.n_active_params,
        "training_tokens": c.workload.training_tokens,
        "peak_flops_per_s": c.gpu.peak_flops_per_s,
        "power_limit_w": c.gpu.power_limit_w,
        "vram_bytes": c.gpu.vram_bytes,
        "utilisation_frac_low": c.gpu.utilisation_frac_low,
        "utilisation_frac_high": c.gpu.utilisation_frac_high,
        "usd_per_gpu_hour": c.gpu.usd_per_gpu_hour,
        "g_co2e_per_kwh": c.energy.g_co2e_per_kwh,
    }


def evaluate(c: Columns, everything: bool = True, memory: Memory | None = None) -> Outputs:
    """Every figure of the plan for each row of the input columns (floats or equal-length arrays).

    `everything` False (the search's hot path, the utilisation solver) leaves out what they never read: the
    figures with failures, the largest micro-batch that fits (a quarter of the search's time) and, for
    supervised fine-tuning, the efficiency band's ends (`mfu_low`/`_high`, `wall_clock_s_low`/`_high` and
    the cost, energy and CO2e bands that follow from them: two more runs of the time model); post-training
    keeps the band, which its own wall clock adds to. `memory`: `policy_memory` of these very columns when
    the caller has it already (the search), so it is not computed twice."""
    c = policy_view(c)  # post-training: the sequences the policy trains on (planner.post.step)
    w, lay = c.workload, c.layout
    padding = compute.padding_factor(w.tokens_per_example, w.seq_len_tokens, w.packing)
    processed = compute.processed_tokens(w.training_tokens, padding)
    batch = compute.global_batch_tokens(lay.micro_batch_seqs, lay.n_micro_batches, lay.dp, w.seq_len_tokens)
    model_fpt, hw_fpt = flops_per_token(c)
    step_comm = _step_comm(c)
    bubble = comm.pipeline_bubble_frac(lay.pp, lay.n_micro_batches, lay.n_virtual_stages)
    g, adapter_s = c.gpu, adapter_memory_time_s(c)
    memory = policy_memory(c) if memory is None else memory
    inputs, breakdown = memory
    host = offload_step(c, breakdown)
    common = (c, model_fpt, hw_fpt, processed, batch, step_comm, bubble)
    a2a_s, expert_at_peak_s = moe_critical_path_s(c)  # the experts' extra time scales with 1 / utilisation
    ops, op_s = operator_compute(c, adapter_s)  # NaN without a shape: the preset's utilisation then
    # the encoders' and VAE's FLOPs at the matmul rate where the operators time the step (in hw_fpt otherwise)
    side_at_peak_s = np.where(np.isnan(op_s), 0.0, mm.side_flops_per_token(c) * batch / lay.n_gpus)
    side_at_peak_s = side_at_peak_s / c.gpu.peak_flops_per_s

    def serial_s(utilisation_frac: Any) -> Any:  # per-step work on the critical path beside the FLOPs
        at_peak_s = expert_at_peak_s + side_at_peak_s
        return (
            np.where(np.isnan(op_s), adapter_s, 0.0)  # the operator model runs the adapters inside its passes
            + a2a_s
            + mm.side_step_s(c)
            + at_peak_s / np.where(np.isnan(op_s), utilisation_frac, ops.gemm_frac)
        )

    typical = _run(*common, g.utilisation_frac, host, serial_s(g.utilisation_frac), op_s)
    io_s = checkpoint_io_s(c)
    out: Outputs = {
        **_inputs_shown(c),
        "processed_tokens": processed,
        "global_batch_tokens": batch,
        "n_steps": compute.optimizer_steps(processed, batch),
        "model_flops": compute.total_flops(model_fpt, processed),
        "hardware_flops": compute.total_flops(hw_fpt, processed),
        "step_time_s": typical.step_time_s,
        # the MoE all-to-all is communication too, though it joins the compute on the critical path
        "comm_time_s": typical.comm_time_s + a2a_s,
        "expert_all_to_all_s": a2a_s + 0.0 * typical.step_time_s,
        "expert_compute_extra_s": np.where(
            g.utilisation_is_end_to_end, 0.0, expert_at_peak_s / g.utilisation_frac
        ),
        "offload_time_s": typical.offload_time_s,
        # what the step pays for the adapters: all of it beside a preset, what the launches leave visible beside
        # the operator model
        "adapter_memory_time_s": np.where(
            g.utilisation_is_end_to_end, 0.0, np.where(np.isnan(op_s), adapter_s, ops.adapter_s)
        ),
        "bubble_frac": typical.bubble_frac,
        "tokens_per_s_per_gpu": typical.tokens_per_s_per_gpu,
        "mfu": typical.mfu,
        "hfu": typical.hfu,
        "checkpoint_io_s": io_s,
        "wall_clock_s": typical.wall_clock_s + io_s,
        "compute_wall_clock_s": typical.wall_clock_s,
    }
    if everything:  # where the step goes and its largest part (the search's hot path never reads them)
        out.update(step_parts(ops, typical, op_s, 1.0 - g.utilisation_is_end_to_end, typical.bubble_frac))
    if everything or not is_sft(c):  # the band's ends: the same run at the preset's low and high efficiency
        slow = _run(*common, g.utilisation_frac_low, host, serial_s(g.utilisation_frac_low), op_s / BAND[0])
        fast = _run(*common, g.utilisation_frac_high, host, serial_s(g.utilisation_frac_high), op_s / BAND[1])
        out["mfu_low"] = slow.mfu  # end to end like `mfu`: it brackets `mfu`
        out["mfu_high"] = fast.mfu
        out["wall_clock_s_low"] = fast.wall_clock_s + io_s
        out["wall_clock_s_high"] = slow.wall_clock_s + io_s
    out["per_device_flops_per_s"] = typical.mfu * g.peak_flops_per_s
    out["cluster_flops_per_s"] = out["per_device_flops_per_s"] * lay.n_gpus
    out["tokens_per_s"] = w.training_tokens / out["wall_clock_s"]
    out["bound_by_code"] = bound_by_code(out) if everything else np.nan
    out.update(mm.with_side_parts(c, out | _memory(c, memory, everything)))
    out.update(post_training_outputs(c, out, breakdown, inputs))
    room = out.pop("generation_fits", 1.0)  # a colocated rollout engine with no room: does not fit
    out.update(verdict_outputs(out, c.recipe.method, c.layout.n_gpus, c.gpu.vram_bytes, memory_band(), room))
    out.update(money_and_energy(c, out))
    return {**out, **with_failures(c, out)} if everything else out
