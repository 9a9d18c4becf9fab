"""Communication time per optimizer step and the pipeline bubble.

Ring collectives over a group of n ranks move, per rank, 2·(n−1)/n of the payload for an all-reduce and
(n−1)/n for an all-gather or a reduce-scatter (Patarasuk & Yuan 2009; NCCL's nccl-tests "bus bandwidth"
convention). A group uses the intra-node link when all its ranks sit in one node and the per-GPU inter-node
bandwidth otherwise, each at the share NCCL achieves (`planner.formulas.step.links`). Rank order is Megatron-LM's: tensor-parallel ranks innermost, then context, then data,
then pipeline (`initialize_model_parallel`, order "tp-cp-dp-pp"), so a group of stride k and size n spans
k·n consecutive ranks.

Bandwidths are per direction in GB/s (1e9 bytes/s), as `data/gpus.csv` records them. Each collective's latency
and the compute each part can hide behind come from `planner.formulas.step.collectives`. All functions take floats or
numpy arrays; categorical choices arrive as numbers (ZeRO stage 0-3, flags 0/1).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.formulas.scalars import any_row
from planner.formulas.step import collectives, links
from planner.formulas.step.collectives import StepComm, shard_group_ranks
from planner.formulas.step.compute import Number, as_number
from planner.formulas.step.moe import NO_MOE, MoeLayout
from planner.formulas.step.pipeline import data_parallel_rounds

BYTES_PER_GB = 1e9
# Links and their achieved bandwidths live in `links`; the names stay importable from here.
effective_pcie_gb_per_s = links.effective_pcie_gb_per_s
intra_node_link_gb_per_s = links.intra_node_link_gb_per_s
group_link_gb_per_s = links.group_link_gb_per_s
PCIE_PRACTICAL_FRAC = links.PCIE_PRACTICAL_FRAC


def ring_all_reduce_bytes(n_ranks: Number, payload_bytes: Number) -> Number:
    """Bytes each rank sends in a ring all-reduce: 2·(n−1)/n · payload (reduce-scatter + all-gather)."""
    return 2.0 * (n_ranks - 1) / n_ranks * payload_bytes


def ring_all_gather_bytes(n_ranks: Number, payload_bytes: Number) -> Number:
    """Bytes each rank sends in a ring all-gather or reduce-scatter of a `payload_bytes` tensor: (n−1)/n."""
    return (n_ranks - 1) / n_ranks * payload_bytes


def seconds(n_bytes: Number, gb_per_s: Number) -> Number:
    return n_bytes / (gb_per_s * BYTES_PER_GB)


def data_parallel_comm_s(
    dp: Number,
    zero_stage: Number,
    grad_accum: Number,
    grad_payload_bytes: Number,
    param_payload_bytes: Number,
    tp_cp: Number,
    gpus_per_node: Number,
    intra_link_gb_per_s: Number,
    inter_node_gb_per_s: Number,
    hybrid_shard: Number = 0,
    zero3_gathers: Number | None = None,
) -> Number:
    """Data-parallel communication per optimizer step, in seconds (before any overlap).

    Payloads are one model-parallel shard: gradients of the trainable parameters held by a rank and its
    weights, both before ZeRO sharding. Volumes per step (Rajbhandari et al. 2020, ZeRO, §7):
    - stage 0 (DDP): one all-reduce of the gradients, after the last micro-batch (no_sync before it);
    - stage 1: reduce-scatter of the gradients, then all-gather of the updated weights: the same 2·(d−1)/d;
    - stage 2: gradients are sharded as they are produced, so the reduce-scatter runs every micro-batch;
    - stage 3: in addition the weights are all-gathered before the forward and again before the backward of
      every micro-batch (FSDP FULL_SHARD; ZeRO-3's 1.5× the DDP volume at one micro-batch).
    `hybrid_shard` = 1 shards within a node (FSDP HYBRID_SHARD): the gathers and reduce-scatters stay inside
    the node and a replica all-reduce of the 1/d_shard gradient shard crosses nodes.
    The DP group has stride tp·cp, so it spans tp·cp·d ranks.
    """
    shard_ranks = shard_group_ranks(dp, tp_cp, gpus_per_node, hybrid_shard)
    links_of = (gpus_per_node, intra_link_gb_per_s, inter_node_gb_per_s)
    shard_link = group_link_gb_per_s(tp_cp * shard_ranks, *links_of)
    full_link = group_link_gb_per_s(tp_cp * dp, *links_of)
    replica_link = links.network_gb_per_s(inter_node_gb_per_s)  # the replicas sit in different nodes

    reduce_scatters = np.where(zero_stage >= 2, grad_accum, 1.0)
    gathers = 2.0 * grad_accum if zero3_gathers is None else zero3_gathers  # a pipeline gathers once per step
    all_gathers = np.where(zero_stage >= 3, gathers, 1.0)
    sharded_bytes = ring_all_gather_bytes(
        shard_ranks, reduce_scatters * grad_payload_bytes + all_gathers * param_payload_bytes
    )
    # Hybrid: each of the dp/shard replicas all-reduces its 1/shard gradient slice across nodes.
    replica_bytes = ring_all_reduce_bytes(
        dp / shard_ranks, reduce_scatters * grad_payload_bytes / shard_ranks
    )
    sharded_s = seconds(sharded_bytes, shard_link) + seconds(replica_bytes, replica_link)
    ddp_s = seconds(ring_all_reduce_bytes(dp, grad_payload_bytes), full_link)
    return as_number(np.where(zero_stage == 0, ddp_s, sharded_s))


def tensor_parallel_comm_s(
    tp: Number,
    n_layers_per_stage: Number,
    tokens_per_microbatch: Number,
    hidden_size: Number,
    activation_bytes: Number,
    grad_accum: Number,
    full_recompute: Number,
    link_gb_per_s: Number,
) -> Number:
    """Tensor-parallel communication per optimizer step, in seconds (before any overlap).

    Megatron-style TP all-reduces the b·s·h activations twice per layer in the forward (after attention and
    after the MLP) and twice in the backward: 4 per layer per micro-batch; full recomputation repeats the
    forward's 2 (Narayanan et al. 2021, §3.2; Korthikanti et al. 2022, §4.2.2). Sequence parallelism swaps
    each all-reduce for an all-gather + reduce-scatter of the same total volume, so it needs no flag.
    `tokens_per_microbatch` is b·s on one context-parallel rank (s / cp).
    """
    n_collectives = 4 + 2 * full_recompute
    payload = tokens_per_microbatch * hidden_size * activation_bytes
    per_step = grad_accum * n_collectives * n_layers_per_stage * ring_all_reduce_bytes(tp, payload)
    return seconds(per_step, link_gb_per_s)


def context_parallel_comm_s(
    cp: Number,
    n_layers_per_stage: Number,
    tokens_per_microbatch: Number,
    kv_dim: Number,
    activation_bytes: Number,
    grad_accum: Number,
    link_gb_per_s: Number,
) -> Number:
    """Context-parallel (ring attention) communication per optimizer step, in seconds.

    Each rank passes its K and V blocks (2 · tokens · kv_dim values) around the ring cp−1 times in the
    forward; the backward passes K, V and their gradients, twice the forward's volume (Liu et al. 2023,
    "Ring Attention"; Megatron-LM context parallelism). `kv_dim` = n_kv_heads · head_dim.
    """
    forward = (cp - 1) * 2 * tokens_per_microbatch * kv_dim * activation_bytes
    return seconds(3 * forward * n_layers_per_stage * grad_accum, link_gb_per_s)


def pipeline_p2p_comm_s(
    pp: Number,
    tokens_per_microbatch: Number,
    hidden_size: Number,
    activation_bytes: Number,
    tp: Number,
    grad_accum: Number,
    link_gb_per_s: Number,
    n_virtual_stages: Number = 1,
) -> Number:
    """Pipeline point-to-point traffic per optimizer step, in seconds.

    Each stage sends one b·s·h activation forward and one gradient backward per micro-batch; with the
    scatter/gather optimisation every tensor-parallel rank sends 1/t of it (Narayanan et al. 2021, §4.1).
    With v interleaved chunks per GPU every chunk sends its own pair, v times the traffic (§2.2.2). The hop from
    the last stage back to the first chunk of the next round runs on the same link class here (a simplification:
    when the stages of a node pair fit in one node, that wrap-around hop may still cross nodes).
    """
    per_micro = 2 * n_virtual_stages * tokens_per_microbatch * hidden_size * activation_bytes / tp
    return as_number(np.where(pp > 1, seconds(per_micro * grad_accum, link_gb_per_s), 0.0))


def pipeline_bubble_frac(pp: Number, n_microbatches: Number, n_virtual_stages: Number = 1) -> Number:
    """Share of a pipelined step the GPUs sit idle: (p−1) / (v·m + p−1).

    Narayanan et al. 2021, §2.2: the bubble is (p−1)/m of the ideal time for 1F1B with m micro-batches,
    divided by v with v interleaved stages per GPU (§2.2.2); as a share of the whole step, ideal + bubble,
    that is ((p−1)/(v·m)) / (1 + (p−1)/(v·m)) = (p−1)/(v·m + p−1). The one bubble formula of the planner
    (`planner.formulas.step.pipeline` holds the rest of the schedule).
    """
    return (pp - 1) / (n_virtual_stages * n_microbatches + pp - 1)


def exposed_comm_s(comm_s: Number, compute_s: Number, overlap_frac: Number) -> Number:
    """Communication left on the critical path: comm − overlap × min(compute, comm).

    Traffic can only hide under compute that runs at the same time, so at most `overlap_frac` of the
    shorter of the two disappears: with full overlap a step costs max(compute, comm), with none their sum
    (the overlapped-step model of Calculon, Isaev et al. 2023, §III; reference/peers.md §3.2).
    """
    return comm_s - overlap_frac * np.minimum(compute_s, comm_s)


def layout_comm(
    *,
    n_params: Number,
    n_trainable_params: Number,
    n_layers: Number,
    hidden_size: Number,
    kv_dim: Number,
    seq_len: Number,
    micro_batch: Number,
    grad_accum: Number,
    tp: Number,
    pp: Number,
    cp: Number,
    dp: Number,
    zero_stage: Number,
    hybrid_shard: Number,
    full_recompute: Number,
    grad_comm_bytes: Number,
    weight_comm_bytes: Number,
    activation_bytes: Number,
    gpus_per_node: Number,
    intra_node_gb_per_s: Number,
    pcie_gb_per_s: Number,
    inter_node_gb_per_s: Number,
    n_virtual_stages: Number = 1,
    moe: MoeLayout | None = None,
    overlap_windows: Number = 0.0,
) -> StepComm:
    """All communication of one optimizer step for a parallel layout, each group on the link it spans.

    Groups (Megatron rank order tp-cp-dp-pp): TP spans tp ranks, CP tp·cp, DP tp·cp·dp, and two adjacent
    pipeline stages 2·tp·cp·dp. Each rank holds 1/(tp·pp) of the weights; `grad_comm_bytes` and
    `weight_comm_bytes` are the bytes per parameter the gradient reduction and the weight gathers move.
    With `moe`, the routed experts sync over the expert data-parallel group (tp·dp / (etp·ep) ranks of stride
    cp·etp·ep, each holding 1/(etp·ep) of them; with etp = tp, dp / ep ranks of stride tp·cp·ep), and the MLP
    half of the MoE layers' tensor collectives runs over the etp ranks (`planner.formulas.step.moe`). The all-to-all
    is not here: it sits on the critical path of every micro-batch and no compute hides it (`planner.formulas.step.moe`,
    composed by `planner.step_parts`). Sharded
    gathers and reduce-scatters run once per step under a pipeline (`planner.formulas.step.pipeline`).
    `overlap_windows` (the scenario's overlap_model "windows") adds where the data-parallel part
    can hide (`planner.formulas.step.collectives.data_parallel_window`); without it all compute hides all traffic.
    """
    intra = intra_node_link_gb_per_s(intra_node_gb_per_s, pcie_gb_per_s)

    def link(span: Number) -> Number:
        return group_link_gb_per_s(span, gpus_per_node, intra, inter_node_gb_per_s)

    shard = tp * pp
    tokens = micro_batch * seq_len / cp  # per context-parallel rank
    layers = n_layers / pp
    moe = NO_MOE if moe is None else moe
    grad_payload = (n_trainable_params - moe.n_expert_trainable_params) / shard * grad_comm_bytes
    weight_payload = (n_params - moe.n_expert_params) / shard * weight_comm_bytes
    rounds, gathers = data_parallel_rounds(pp, grad_accum)  # sharded reduce-scatters and gathers per step
    data_parallel = data_parallel_comm_s(
        dp, zero_stage, rounds, grad_payload, weight_payload,
        tp * cp, gpus_per_node, intra, inter_node_gb_per_s, hybrid_shard, gathers,
    )  # fmt: skip
    tensor = tensor_parallel_comm_s(
        tp, layers, tokens, hidden_size, activation_bytes, grad_accum, full_recompute, link(tp)
    )
    context = context_parallel_comm_s(cp, layers, tokens, kv_dim, activation_bytes, grad_accum, link(tp * cp))
    pipeline = pipeline_p2p_comm_s(
        pp, tokens, hidden_size, activation_bytes, tp, grad_accum, link(2 * tp * cp * dp), n_virtual_stages
    )
    if moe is not NO_MOE:  # a dense model skips the expert terms (the dense search pays nothing for them)
        etp = tp if moe.etp is None else moe.etp
        split = pp * etp * moe.ep  # GPUs one copy of the routed experts is split over
        data_parallel = data_parallel + data_parallel_comm_s(
            dp * tp / (etp * moe.ep), zero_stage, rounds,
            moe.n_expert_trainable_params / split * grad_comm_bytes, moe.n_expert_params / split * weight_comm_bytes,
            cp * etp * moe.ep, gpus_per_node, intra, inter_node_gb_per_s, hybrid_shard, gathers,
        )  # fmt: skip
        # the MLP half of the MoE layers' tensor collectives runs over etp ranks, not tp (+0 at etp = tp)
        half = (moe.n_moe_layers / pp / 2, tokens, hidden_size, activation_bytes, grad_accum, full_recompute)
        moved = tensor_parallel_comm_s(etp, *half, link(etp)) - tensor_parallel_comm_s(tp, *half, link(tp))
        tensor = tensor + moved
    pipelined = tensor + context + pipeline
    buckets = collectives.n_gradient_buckets(grad_payload)
    latency_pipelined, latency_dp = collectives.layout_latency_s(
        tp=tp, pp=pp, cp=cp, dp=dp, shard_ranks=shard_group_ranks(dp, tp * cp, gpus_per_node, hybrid_shard),
        zero_stage=zero_stage, grad_accum=grad_accum, n_layers_per_stage=layers, full_recompute=full_recompute,
        n_buckets=buckets, gpus_per_node=gpus_per_node, nvlink=intra_node_gb_per_s > 0,
        n_virtual_stages=n_virtual_stages, rounds=rounds, gathers=gathers,
    )  # fmt: skip
    step = StepComm(as_number(pipelined + latency_pipelined), as_number(data_parallel + latency_dp))
    if not any_row(overlap_windows):  # the default constant overlap: no windows to work out
        return replace(step, exposed_tensor_s=as_number(tensor))
    window, unhidden = collectives.data_parallel_window(
        zero_stage, grad_accum, buckets, layers, full_recompute, rounds, gathers
    )
    windows = as_number(overlap_windows)
    return StepComm(step.pipelined_s, step.data_parallel_s, window, unhidden, windows, as_number(tensor))
