"""Expert parallelism: the all-to-all token exchange of mixture-of-experts layers, and its time.

With expert parallelism of degree ep the routed experts of a layer are spread over ep GPUs. Each MoE layer
sends every token's hidden state to the GPUs holding its top-k experts (dispatch) and brings the expert
outputs back (combine): two all-to-alls in the forward pass, and two more of the same size in the backward
pass for the gradients (GShard, Lepikhin et al. 2020, §2.2; DeepSpeed-MoE, Rajbhandari et al. 2022, §5;
Megatron-Core MoE's "alltoall" token dispatcher). Full recomputation runs the forward's pair once more.

Per GPU, per MoE layer and micro-batch, the bytes sent are

    tokens × top_k × hidden × activation_bytes × (ep − 1)/ep × 2 (dispatch + combine) × passes

where `tokens` are the tokens on that GPU (micro-batch × sequence / (cp · tp): Megatron-Core requires
sequence parallelism with MoE and tensor parallelism, so each tensor-parallel rank dispatches its 1/tp share),
(ep − 1)/ep is the share of uniformly routed copies whose expert lives on another GPU (1/ep stays local), and
passes = 2 (forward + backward), 3 under full recompute. Uniform routing is the balanced-load case the
auxiliary-loss and bias balancing of these models aims at; a capacity factor above 1 is not modelled here.

The expert-parallel group is the tp·ep consecutive ranks of Megatron-Core's expert layout (tensor ranks
innermost, expert ranks next), so it stays inside a node while tp·ep ≤ GPUs per node and otherwise runs at the
per-GPU network bandwidth, as every other collective of `planner.formulas.comm` does.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.compute import Number, as_number

DISPATCH_AND_COMBINE = 2.0  # two all-to-alls per MoE layer and pass (GShard §2.2)


def all_to_all_passes(full_recompute: Number) -> Number:
    """Passes that exchange tokens: forward and backward, plus the recomputed forward under full recompute."""
    return 2.0 + full_recompute


def all_to_all_bytes(
    tokens: Number, top_k: Number, hidden_size: Number, activation_bytes: Number, ep: Number, passes: Number
) -> Number:
    """Bytes one GPU sends in one MoE layer for one micro-batch (module docstring's formula)."""
    remote_frac = (ep - 1.0) / ep
    return tokens * top_k * hidden_size * activation_bytes * remote_frac * DISPATCH_AND_COMBINE * passes


def expert_parallel_comm_s(
    ep: Number,
    n_moe_layers_per_stage: Number,
    tokens_per_microbatch: Number,
    top_k: Number,
    hidden_size: Number,
    activation_bytes: Number,
    grad_accum: Number,
    full_recompute: Number,
    link_gb_per_s: Number,
) -> Number:
    """All-to-all time per optimizer step, in seconds (before any overlap): every MoE layer of the stage,
    every micro-batch. 0 without expert parallelism (ep 1) or without MoE layers."""
    per_layer = all_to_all_bytes(
        tokens_per_microbatch, top_k, hidden_size, activation_bytes, ep, all_to_all_passes(full_recompute)
    )
    per_step = per_layer * n_moe_layers_per_stage * grad_accum
    return as_number(np.where(ep > 1, per_step / (link_gb_per_s * 1e9), 0.0))
