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

The expert-parallel group is the etp·ep consecutive ranks of Megatron-Core's expert layout (expert tensor
ranks innermost, expert ranks next: MoE Parallel Folding's etp-ep-dp-pp order). Of a GPU's ep − 1 peers, those
in its own node (GPUs per node / etp of the group, itself included) are reached over the node's link and the
rest over its network adapter; the two run at once, so an all-to-all takes the longer of (copies to other
nodes / network bandwidth) and (copies inside the node / node link). While etp·ep fits one node that is all
node link; at ep 64 over 8-GPU nodes 56 of the 63 remote copies cross nodes (7/8 of the group lives elsewhere).

Expert tensor parallelism (etp; Megatron-Core's --expert-tensor-parallel-size, planner/inputs/moe_inputs.py;
empty follows tp, the layout assumed before the input existed). The rule implemented is the one of
Megatron-Core's "alltoall" dispatcher (megatron/core/transformer/moe/token_dispatcher.py,
MoEAlltoAllTokenDispatcher: "permute -> A2A(EP) -> AG(TP) -> sort_chunk" and back "sort_chunk -> RS(TP) ->
A2A(EP) -> unpermute", its TP group being the expert tensor group):
- every GPU dispatches its own b·s/(cp·tp) sequence-parallel tokens over its ep group, whatever etp is: no
  all-gather over attention's tp ranks comes first, so the all-to-all volume above does not depend on etp;
- after the dispatch the etp ranks of an expert all-gather each other's routed tokens (and reduce-scatter the
  outputs before the combine): each expert matmul sees etp·ep·b·s/(cp·tp)·top-k/experts rows and 1/etp of the
  expert's width (`planner.formulas.step.expert_compute`), so a GPU's routed-expert FLOPs stay b·s/(cp·tp) tokens'
  worth at any etp; with etp = 1 there is no collective inside the experts at all;
- the expert layers' tensor-parallel traffic (the MLP half of a MoE layer's collectives) runs over etp ranks
  instead of tp (`planner.formulas.step.comm.layout_comm`); the planner keeps a dense layer's payload, b·s/cp
  tokens × hidden, for it, so etp = tp gives the figures it gave before the input existed;
- each GPU holds 1/(etp·ep) of the routed experts' weights, and ZeRO shards them over the expert
  data-parallel group, tp·dp/(etp·ep) ranks (`planner.formulas.memory.model_states`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.step.compute import Number, as_number

DISPATCH_AND_COMBINE = 2.0  # two all-to-alls per MoE layer and pass (GShard §2.2)


@dataclass(frozen=True)
class MoeLayout:
    """The routed experts a layout spreads over `ep` GPUs (all zero for a dense model), for the communication
    model (`planner.formulas.step.comm.layout_comm`)."""

    n_expert_params: Number = 0.0  # routed experts' weights, all MoE layers
    n_expert_trainable_params: Number = 0.0  # their trainable part (the weights, or their LoRA adapters)
    n_moe_layers: Number = 0.0
    top_k: Number = 0.0  # routed experts per token
    ep: Number = 1.0
    etp: Number | None = None  # expert tensor-parallel degree; None follows the layout's tp


NO_MOE = MoeLayout()


@dataclass(frozen=True)
class ExpertLinks:
    """Where an expert-parallel group's ranks sit: expert tensor degree, GPUs per node and the two links (GB/s)."""

    etp: Number  # the expert group's stride (module docstring): the expert tensor-parallel degree
    gpus_per_node: Number
    intra_node_gb_per_s: Number  # NVLink/xGMI, or usable PCIe without them
    inter_node_gb_per_s: Number  # per-GPU network bandwidth


def expert_tensor_degree(etp: Number, tp: Number) -> Number:
    """The expert tensor-parallel degree a layout runs: its etp, or tp where etp is 0 (follows tp)."""
    return as_number(np.where(np.asarray(etp) > 0, etp, tp))


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


def expert_ranks_in_node(ep: Number, etp: Number, gpus_per_node: Number) -> Number:
    """Ranks of a GPU's expert-parallel group inside its node, itself included: GPUs per node / etp of the
    etp·ep consecutive ranks, at least 1 and at most ep."""
    return as_number(np.clip(np.floor(gpus_per_node / etp), 1.0, ep))


def cross_node_share(ep: Number, etp: Number, gpus_per_node: Number) -> Number:
    """Share of the remote copies that go to another node: (ep − in-node ranks) / (ep − 1); 0 at ep 1."""
    beyond = ep - expert_ranks_in_node(ep, etp, gpus_per_node)
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
    across = cross_node_share(ep, links.etp, links.gpus_per_node)
    network_s = per_step * across / (links.inter_node_gb_per_s * 1e9)
    node_s = per_step * (1.0 - across) / (links.intra_node_gb_per_s * 1e9)
    return as_number(np.where(ep > 1, np.maximum(network_s, node_s), 0.0))
