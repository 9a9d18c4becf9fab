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
auxiliary-loss and bias balancing of these models aims at.

Load imbalance: the all-to-all finishes when the busiest rank has received its tokens, and the combine waits
for the busiest rank's experts, so both scale with the capacity factor C, the busiest rank's load over the
average (`planner.inputs.moe_inputs`). Switch Transformer (Fedus et al. 2022, §2.1) defines expert capacity as
tokens per batch / experts × C and pads every expert's buffer to it; GShard (Lepikhin et al. 2020, §2.2) does
the same with C = 2. A dropless router without padding has C = 1 when the routing is balanced.

The expert-parallel group is the tp·ep consecutive ranks of Megatron-Core's expert layout (tensor ranks
innermost, expert ranks next). Of a GPU's ep − 1 peers, those in its own node (GPUs per node / tp of the group,
itself included) are reached over the node's link and the rest over its network adapter; the two run at once,
so an all-to-all takes the longer of (copies to other nodes / network bandwidth) and (copies inside the node /
node link). While tp·ep fits one node that is all node link, as before; at ep 64 over 8-GPU nodes 56 of the
63 remote copies cross nodes (7/8 of the group lives elsewhere), not all 63.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.compute import Number, as_number

DISPATCH_AND_COMBINE = 2.0  # two all-to-alls per MoE layer and pass (GShard §2.2)


@dataclass(frozen=True)
class ExpertLinks:
    """Where an expert-parallel group's ranks sit: tensor degree, GPUs per node and the two links (GB/s)."""

    tp: Number
    gpus_per_node: Number
    intra_node_gb_per_s: Number  # NVLink/xGMI, or usable PCIe without them
    inter_node_gb_per_s: Number  # per-GPU network bandwidth


def all_to_all_passes(full_recompute: Number) -> Number:
    """Passes that exchange tokens: forward and backward, plus the recomputed forward under full recompute."""
    return 2.0 + full_recompute


def all_to_all_bytes(
    tokens: Number,
    top_k: Number,
    hidden_size: Number,
    activation_bytes: Number,
    ep: Number,
    passes: Number,
    capacity_factor: Number = 1.0,
) -> Number:
    """Bytes the busiest GPU exchanges in one MoE layer for one micro-batch (module docstring's formula):
    the average rank's volume × the capacity factor."""
    remote_frac = (ep - 1.0) / ep
    copies = tokens * top_k * capacity_factor
    return copies * hidden_size * activation_bytes * remote_frac * DISPATCH_AND_COMBINE * passes


def expert_ranks_in_node(ep: Number, tp: Number, gpus_per_node: Number) -> Number:
    """Ranks of a GPU's expert-parallel group inside its node, itself included: GPUs per node / tp of the
    tp·ep consecutive ranks, at least 1 and at most ep."""
    return as_number(np.clip(np.floor(gpus_per_node / tp), 1.0, ep))


def cross_node_share(ep: Number, tp: Number, gpus_per_node: Number) -> Number:
    """Share of the remote copies that go to another node: (ep − in-node ranks) / (ep − 1); 0 at ep 1."""
    beyond = ep - expert_ranks_in_node(ep, tp, gpus_per_node)
    return as_number(np.where(ep > 1, beyond / np.maximum(ep - 1.0, 1.0), 0.0))


def expert_parallel_comm_s(
    ep: Number,
    n_moe_layers_per_stage: Number,
    tokens_per_microbatch: Number,
    top_k: Number,
    hidden_size: Number,
    activation_bytes: Number,
    grad_accum: Number,
    full_recompute: Number,
    links: ExpertLinks,
    capacity_factor: Number = 1.0,
) -> Number:
    """All-to-all time per optimizer step, in seconds (before any overlap): every MoE layer of the stage,
    every micro-batch, the node-link and network parts at once. 0 without expert parallelism (ep 1) or
    without MoE layers."""
    per_layer = all_to_all_bytes(
        tokens_per_microbatch, top_k, hidden_size, activation_bytes, ep, all_to_all_passes(full_recompute),
        capacity_factor,
    )  # fmt: skip
    per_step = per_layer * n_moe_layers_per_stage * grad_accum
    across = cross_node_share(ep, links.tp, links.gpus_per_node)
    network_s = per_step * across / (links.inter_node_gb_per_s * 1e9)
    node_s = per_step * (1.0 - across) / (links.intra_node_gb_per_s * 1e9)
    return as_number(np.where(ep > 1, np.maximum(network_s, node_s), 0.0))
