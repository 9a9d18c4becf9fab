"""The parts beside the main transformer inside `planner.evaluate`: their FLOPs, memory and transfer time.

Three seams, each a few lines in `evaluate`: `side_flops_per_token` adds the encoders' (and, for a diffusion
transformer, the non-causal half of attention's) FLOPs to the main transformer's per token, so the time path
runs unchanged on the sum; `side_step_s` is the per-step time of offloaded text encoders' weights crossing
PCIe, on the critical path like the other serial work; `with_side_bytes` adds the parts' bytes to the memory
model's peaks (the plan search's memory pass reads the same); `with_side_parts` names the figures.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from planner.columns import Columns
from planner.formulas.memory.memory_inputs import MemoryBreakdown, MemoryInputs
from planner.formulas.memory.model_states import zero_shard_degree
from planner.formulas.memory.paging import memory_with_paging
from planner.formulas.scalars import all_rows, any_row
from planner.formulas.step.comm import BYTES_PER_GB, effective_pcie_gb_per_s
from planner.formulas.step.compute import ATTENTION_TRAINING_OVER_FORWARD, attention_fwd_flops_per_token
from planner.formulas.units import SECONDS_PER_HOUR
from planner.multimodal.group import TEXT

Outputs = dict[str, Any]


def is_text(c: Columns) -> bool:
    return all_rows(np.asarray(c.mm.multimodal_kind) == TEXT)


def side_flops_per_token(c: Columns) -> Any:
    """Extra training FLOPs per main-transformer token: the side parts' per example ÷ tokens per example, and
    for bidirectional attention the half of QKᵀ and A·V that the causal count leaves out."""
    m, mm = c.model, c.mm
    causal_half = attention_fwd_flops_per_token(
        m.n_layers, m.n_heads, m.head_dim, c.workload.seq_len_tokens, 1
    )
    attention = ATTENTION_TRAINING_OVER_FORWARD * causal_half * mm.bidirectional
    return mm.n_side_flops_per_example / c.workload.tokens_per_example + attention


def side_step_s(c: Columns) -> Any:
    """Offloaded text encoders move onto the GPU for each micro-batch's captions (diffusers' model CPU offload)."""
    moved = c.mm.text_encoder_stream_bytes * c.layout.n_micro_batches
    return moved / (effective_pcie_gb_per_s(c.gpu.pcie_gb_per_s) * BYTES_PER_GB)


def _vision_optimizer_bytes(c: Columns) -> Any:
    """The trained vision encoder's and projector's optimizer states on one GPU (what a paged optimizer pages:
    bitsandbytes pages its states, not the fp32 master copy or the gradients)."""
    lay = c.layout
    shard = zero_shard_degree(lay.dp, lay.hybrid_shard, lay.n_gpus_per_node, lay.tp, lay.pp, lay.cp)
    states_div = np.where(lay.zero_stage >= 1, shard, 1.0)
    return c.mm.n_vision_trainable_params * c.recipe.optimizer_bytes_per_param / states_div


def _vision_bytes(c: Columns) -> Any:
    """Vision encoder + projector on one GPU: frozen weights whole; trained ones with their gradients and
    optimizer states, sharded by the same ZeRO stage as the language model; the encoder's saved activations
    for the images of one micro-batch."""
    mm, r, lay, w = c.mm, c.recipe, c.layout, c.workload
    shard = zero_shard_degree(lay.dp, lay.hybrid_shard, lay.n_gpus_per_node, lay.tp, lay.pp, lay.cp)
    z = lay.zero_stage
    weights_div, grads_div, states_div = (np.where(z >= k, shard, 1.0) for k in (3, 2, 1))
    adapters = mm.n_vision_trainable_params - mm.n_vision_full_params
    weights = (mm.n_vision_full_params / weights_div + adapters) * r.weight_bytes_per_param
    states = mm.n_vision_trainable_params * (
        r.grad_bytes_per_param / grads_div
        + (r.master_bytes_per_param + r.optimizer_bytes_per_param) / states_div
    )
    examples_per_seq = np.where(w.packing > 0, np.maximum(w.seq_len_tokens / w.tokens_per_example, 1.0), 1.0)
    images = lay.micro_batch_seqs * examples_per_seq * mm.n_images_per_example
    activations = mm.vision_patch_activation_bytes * mm.n_image_patches_max * images
    return mm.vision_frozen_weight_bytes + weights + states + activations


def side_bytes(c: Columns) -> Any:
    """Every part beside the main transformer, per GPU, as allocated: resident through the whole step."""
    return _vision_bytes(c) + c.mm.text_encoder_bytes + c.mm.vae_bytes + c.mm.buffer_bytes


def room_bytes(c: Columns) -> Any:
    """GPU memory left to the main transformer once the parts and their slack are in (the largest micro-batch
    is searched in it; a trained encoder's activations are taken at the plan's micro-batch)."""
    if is_text(c):
        return c.gpu.vram_bytes
    return c.gpu.vram_bytes - side_bytes(c) * (1.0 + c.layout.fragmentation_frac)


def paged_memory(c: Columns, inputs: MemoryInputs) -> MemoryBreakdown:
    """The memory model's breakdown (a paged optimizer's states paged as VRAM runs short) with the parts in.

    A paged optimizer pages every state it holds: the main transformer's as the GPU runs short with the parts
    resident (their bytes leave it less room), then a trained vision encoder's for what is still short."""
    if is_text(c):
        return memory_with_paging(inputs, c.recipe.paged_optimizer, c.gpu.vram_bytes)
    b = with_side_bytes(c, memory_with_paging(inputs, c.recipe.paged_optimizer, room_bytes(c)))
    short = (b.reserved_peak_bytes + b.overhead_bytes - c.gpu.vram_bytes) / (
        1.0 + c.layout.fragmentation_frac
    )
    paged = np.clip(short, 0.0, _vision_optimizer_bytes(c)) * (np.asarray(c.recipe.paged_optimizer) > 0)
    if not any_row(paged > 0):
        return b
    slack = paged * c.layout.fragmentation_frac
    return replace(
        b,
        host_paged_bytes=b.host_paged_bytes + paged,
        host_offload_bytes=b.host_offload_bytes + paged,
        fragmentation_bytes=b.fragmentation_bytes - slack,
        allocated_peak_bytes=b.allocated_peak_bytes - paged,
        reserved_peak_bytes=b.reserved_peak_bytes - paged - slack,
        peak_bytes=b.peak_bytes - paged - slack,
    )


def with_side_bytes(c: Columns, b: MemoryBreakdown) -> MemoryBreakdown:
    """The memory model's breakdown with the parts added to the allocated, reserved and device peaks (with the
    allocator's slack over them), so the plan search's memory pass and the estimate judge the same peak."""
    if is_text(c):
        return b
    # Offloaded text encoders visit the GPU before each forward, beside the weights and states but before any
    # activation exists: that moment is the peak when an encoder outweighs the step's activations and logits.
    visit = b.allocated_peak_bytes - b.activations_bytes - b.logits_bytes + c.mm.text_encoder_stream_bytes
    added = side_bytes(c) + np.maximum(visit - b.allocated_peak_bytes, 0.0)
    slack = added * c.layout.fragmentation_frac
    return replace(
        b,
        fragmentation_bytes=b.fragmentation_bytes + slack,
        allocated_peak_bytes=b.allocated_peak_bytes + added,
        reserved_peak_bytes=b.reserved_peak_bytes + added + slack,
        peak_bytes=b.peak_bytes + added + slack,
    )


def with_side_parts(c: Columns, out: Outputs) -> Outputs:
    """`out` with the multimodal figures (NaN for a text model); the peaks already hold the parts."""
    mm, lay = c.mm, c.layout
    if is_text(c):
        return {**out, **dict.fromkeys(NEW_KEYS, np.nan)}
    vision = _vision_bytes(c)
    epoch_s = out["wall_clock_s"] / mm.n_epochs
    # NaN on a text model's rows where a sheet or search evaluates them beside multimodal ones
    zero = np.where(np.asarray(mm.multimodal_kind) == TEXT, np.nan, 0.0 * vision)
    return {
        **out,
        "vision_encoder_bytes": vision + zero,
        "text_encoders_bytes": mm.text_encoder_bytes + zero,
        "vae_bytes": mm.vae_bytes + zero,
        "image_tokens_per_example": mm.n_image_tokens_per_example + zero,
        "sequence_tokens_per_example": c.workload.tokens_per_example + zero,
        "images_per_s": out["tokens_per_s"] / c.workload.tokens_per_example * mm.n_images_per_example + zero,
        "epoch_wall_clock_s": epoch_s + zero,
        # one pass of this run at its price (the experiments multiplier and failures left out)
        "epoch_cost_usd": epoch_s * lay.n_gpus * c.gpu.usd_per_gpu_hour / SECONDS_PER_HOUR + zero,
        "n_params_all_parts": c.model.n_params + mm.n_side_params + zero,
        "side_transfer_s": side_step_s(c) * out["n_steps"] + zero,
    }


NEW_KEYS = (
    "vision_encoder_bytes", "text_encoders_bytes", "vae_bytes", "image_tokens_per_example",
    "sequence_tokens_per_example", "images_per_s", "epoch_wall_clock_s", "n_params_all_parts", "side_transfer_s",
    "epoch_cost_usd",
)  # fmt: skip
