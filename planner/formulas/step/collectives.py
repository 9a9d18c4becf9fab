"""Communication as frameworks run it: per-collective latency and how much compute the traffic can hide behind.

Latency. Each collective costs a fixed start-up plus a latency per ring step on top of its
bytes / bandwidth (the alpha-beta model, Thakur, Rabenseifner & Gropp 2005). The figures are NCCL's own cost
model for the Simple protocol, the one large training messages use (NVIDIA/nccl `src/graph/tuning.cc`,
`baseLat` and `hwLat`): 8.4 µs to start a ring, then 3.4 µs per step over NVLink, 5.7 µs over PCIe and 9.6 µs
per step that crosses the network. A ring of n ranks over k nodes takes n−1 steps per phase (2 phases for an
all-reduce), k−1 of them across nodes (the same file's `nsteps` / `nInterSteps`). At megabyte messages this is
noise; it is what many small per-layer collectives at scale pay (Hu et al. 2025, "Demystifying NCCL",
arXiv:2507.04786, §5: latency dominates below about 1 MB).

Overlap windows. The data-parallel traffic can hide only behind compute that runs while it
is in flight: the DDP gradient sync behind the last micro-batch's backward (no_sync before it), ZeRO-2's
reduce-scatters behind every micro-batch's backward, ZeRO-3's prefetched gathers behind the forward and backward
of the layer before. Some of it cannot hide at all: the last gradient bucket is launched when the backward ends,
and ZeRO-3's first gather of each forward and last reduce-scatter of each backward have no layer beside them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.scalars import all_rows, any_row
from planner.formulas.step.compute import Number, as_number

# NCCL tuning.cc, Ring / Simple protocol (see the module docstring), converted from µs to s.
NCCL_BASE_LATENCY_S = 8.4e-6
NCCL_NVLINK_STEP_S = 3.4e-6
NCCL_PCIE_STEP_S = 5.7e-6
NCCL_NETWORK_STEP_S = 9.6e-6
# PyTorch DDP's default bucket_cap_mb = 25 (torch.nn.parallel.DistributedDataParallel); FSDP reduces per layer.
DDP_BUCKET_BYTES = 25 * 1024**2
# Backward FLOPs are twice the forward's (Kaplan et al. 2020: 2N forward, 4N backward per token): 2/3 of a
# step; full recomputation adds one forward to the backward: 3/4.
BACKWARD_SHARE = 2.0 / 3.0
BACKWARD_SHARE_RECOMPUTED = 3.0 / 4.0


def reduce_bytes(reduce_bytes_per_param: Number, master_bytes: Number, grad_bytes: Number) -> Number:
    """Bytes per gradient element the data-parallel reduction moves (the scenario's reduce_dtype).

    0 = "auto": fp32 when mixed precision keeps an fp32 master copy (PyTorch AMP, Composer; Megatron's
    grad_reduce_in_fp32), else the gradients' own dtype (pure bf16 or fp32 recipes).
    """
    return as_number(
        np.where(
            reduce_bytes_per_param > 0, reduce_bytes_per_param, np.where(master_bytes > 0, 4.0, grad_bytes)
        )
    )


def ring_steps_s(n_ranks: Number, group_span: Number, gpus_per_node: Number, intra_step_s: Number) -> Number:
    """Latency of the n−1 steps of one ring phase over `n_ranks` whose consecutive-rank span is `group_span`.

    The ranks sit on ceil(span / GPUs per node) nodes (at most one node per rank); nodes−1 of the steps cross
    the network, the rest take the node's link (`intra_step_s`). 0 for one rank.
    """
    within_node = (n_ranks - 1) * intra_step_s
    if all_rows(group_span <= gpus_per_node):  # the usual TP group: no network step (and no work for it)
        return within_node
    n_nodes = np.minimum(np.ceil(group_span / gpus_per_node), n_ranks)
    return within_node + (n_nodes - 1) * (NCCL_NETWORK_STEP_S - intra_step_s)


def ring_latency_s(
    n_ranks: Number, group_span: Number, gpus_per_node: Number, phases: Number, nvlink: Number
) -> Number:
    """Latency of one ring collective: the start-up + `phases` × `ring_steps_s` (0 s for one rank).

    `phases` = 2 for an all-reduce (reduce-scatter + all-gather), 1 for an all-gather or a reduce-scatter.
    """
    steps = ring_steps_s(n_ranks, group_span, gpus_per_node, intra_step_time_s(nvlink))
    return as_number((n_ranks > 1) * (NCCL_BASE_LATENCY_S + phases * steps))


def intra_step_time_s(nvlink: Number) -> Number:
    """One ring step inside a node: NVLink where the GPU has it, PCIe otherwise."""
    return as_number(np.where(nvlink, NCCL_NVLINK_STEP_S, NCCL_PCIE_STEP_S))


def shard_group_ranks(dp: Number, tp_cp: Number, gpus_per_node: Number, hybrid_shard: Number) -> Number:
    """Ranks a ZeRO shard spans: all dp, or under a hybrid shard the replicas that fit in one node."""
    if not any_row(hybrid_shard):  # the usual case, and most of a plan search: no per-row work
        return dp
    return as_number(np.where(hybrid_shard, np.clip(np.floor(gpus_per_node / tp_cp), 1, dp), dp))


def n_gradient_buckets(grad_payload_bytes: Number) -> Number:
    """DDP-style gradient buckets of one reduction: ceil(payload / 25 MiB), at least one."""
    return as_number(np.maximum(np.ceil(grad_payload_bytes / DDP_BUCKET_BYTES), 1.0))


# Sharded collectives per layer and step by ZeRO stage 0-3 (`data_parallel_collectives`): a fixed count + one per
# gradient reduce-scatter round + one per ZeRO-3 gather round. Stage 1: a reduce-scatter and a gather (2);
# stage 2: rounds reduce-scatters + the gather after the step; stage 3: rounds + gathers. DDP has none.
PER_LAYER_FIXED = np.array([0.0, 2.0, 1.0, 0.0])
PER_LAYER_PER_ROUND = np.array([0.0, 0.0, 1.0, 1.0])
PER_LAYER_PER_GATHER = np.array([0.0, 0.0, 0.0, 1.0])


def data_parallel_collectives(
    zero_stage: Number, rounds: Number, gathers: Number, n_buckets: Number, n_layers: Number
) -> tuple[Number, Number]:
    """(all-reduces, all-gathers + reduce-scatters) the data-parallel group runs per optimizer step.

    Stage 0 (DDP): one all-reduce per 25 MiB bucket after the last micro-batch. Sharded stages reduce and gather
    per layer, as FSDP does per wrapped block (Megatron's distributed-optimizer buckets, at least 40 M
    parameters, are of a layer's order). `rounds` and `gathers` are `planner.formulas.step.pipeline.
    data_parallel_rounds`: without a pipeline m reduce-scatter rounds and 2·m ZeRO-3 gathers (before each
    forward and backward), with one 1 and 1.
    """
    stage = np.asarray(zero_stage).astype(np.intp)
    # table lookups cost the plan search less than nested conditions over every row
    per_layer = (
        PER_LAYER_FIXED[stage] + PER_LAYER_PER_ROUND[stage] * rounds + PER_LAYER_PER_GATHER[stage] * gathers
    )
    return as_number((stage == 0) * n_buckets), as_number(per_layer * n_layers)


def backward_share(full_recompute: Number) -> Number:
    """Share of a micro-batch's compute spent in the backward (recomputation included)."""
    return as_number(np.where(full_recompute, BACKWARD_SHARE_RECOMPUTED, BACKWARD_SHARE))


def data_parallel_window(
    zero_stage: Number,
    grad_accum: Number,
    n_buckets: Number,
    n_layers: Number,
    full_recompute: Number,
    rounds: Number | None = None,
    gathers: Number | None = None,
) -> tuple[Number, Number]:
    """(window share of the step's compute, share of the traffic that cannot hide) for the data-parallel sync.

    Window: DDP syncs behind the last micro-batch's backward only (backward share / accumulation); stages 1-2
    also gather the weights behind the first micro-batch's forward (FSDP's prefetch, Megatron's
    --overlap-param-gather), and stage 2 reduce-scatters behind every backward; stage 3 prefetches behind the
    whole forward and backward. Never hidden: the last of the collectives (the final bucket or layer, launched
    when the backward ends); stage 3: each micro-batch's first gather and last reduce-scatter, 2 of 3·layers.
    """
    backward = backward_share(full_recompute)
    last = 1.0 / grad_accum
    sharded = np.where(zero_stage == 2, backward + (1.0 - backward) * last, last)
    window = np.where(zero_stage >= 3, 1.0, np.where(zero_stage == 0, backward * last, sharded))
    rounds = grad_accum if rounds is None else rounds  # `data_parallel_collectives`: no pipeline by default
    gathers = 2.0 * grad_accum if gathers is None else gathers
    all_reduces, sharded = data_parallel_collectives(zero_stage, rounds, gathers, n_buckets, n_layers)
    unhidden = np.where(zero_stage >= 3, 2.0 / (3.0 * n_layers), 1.0 / (all_reduces + sharded))
    return as_number(window), as_number(np.minimum(unhidden, 1.0))


def hidden_data_parallel_s(
    data_parallel_s: Number, unhidden_frac: Number, window_s: Number, budget_s: Number, overlap_frac: Number
) -> Number:
    """Data-parallel seconds hidden: min(the hideable traffic, overlap × window, what the compute has left).

    `budget_s` is overlap × compute less what the in-pipeline traffic already hid (compute hides traffic only
    once). `overlap_frac` is the share of a window the traffic really runs beside (kernels and NCCL share the
    GPU's streaming multiprocessors, so not all of it).
    """
    hideable = data_parallel_s * (1.0 - unhidden_frac)  # all three terms are >= 0: no floor needed
    return as_number(np.minimum(np.minimum(hideable, overlap_frac * window_s), budget_s))


def layout_latency_s(
    *,
    tp: Number,
    pp: Number,
    cp: Number,
    dp: Number,
    shard_ranks: Number,
    zero_stage: Number,
    grad_accum: Number,
    n_layers_per_stage: Number,
    full_recompute: Number,
    n_buckets: Number,
    gpus_per_node: Number,
    nvlink: Number,
    n_virtual_stages: Number = 1,
    rounds: Number | None = None,
    gathers: Number | None = None,
) -> tuple[Number, Number]:
    """(in-pipeline, data-parallel) collective latency per optimizer step, in seconds.

    Counts: TP all-reduces 4 per layer per micro-batch (2 forward, 2 backward; +2 with full recomputation), over
    tp ranks; pipeline sends 2 per model chunk per micro-batch (an activation forward, a gradient back); the
    data-parallel collectives of `data_parallel_collectives` over the DP group (stride tp·cp), the sharded ones
    over the `shard_ranks` of a hybrid shard; context parallelism's ring attention passes K and V cp−1 times per
    layer and micro-batch in the forward and twice that in the backward (K, V and their gradients), each pass a
    send/receive pair over the link its tp·cp ranks span. Left out: the expert all-to-alls and the cross-node
    replica all-reduce of a hybrid shard (far fewer, larger messages).
    """
    # Written for the plan search, which runs this on every fitting row: each term is skipped where no row has
    # it, and the DP group's one ring serves both the DDP all-reduces and (without a hybrid shard) ZeRO's.
    intra = intra_step_time_s(nvlink)
    span = tp * cp * dp  # the DP group spans tp·cp·dp consecutive ranks
    in_pipeline: Number = 0.0
    if any_row(tp > 1):
        tp_ring = NCCL_BASE_LATENCY_S + 2.0 * ring_steps_s(tp, tp, gpus_per_node, intra)
        tp_count = (4.0 + 2.0 * full_recompute) * (n_layers_per_stage * grad_accum)
        in_pipeline = (tp > 1) * tp_count * tp_ring
    if any_row(pp > 1):
        p2p = NCCL_BASE_LATENCY_S + np.where(2.0 * span > gpus_per_node, NCCL_NETWORK_STEP_S, intra)
        in_pipeline = in_pipeline + (pp > 1) * (2.0 * n_virtual_stages * grad_accum) * p2p
    if any_row(cp > 1):
        pass_s = NCCL_BASE_LATENCY_S + np.where(tp * cp > gpus_per_node, NCCL_NETWORK_STEP_S, intra)
        in_pipeline = in_pipeline + 3.0 * (cp - 1) * (n_layers_per_stage * grad_accum) * pass_s
    dp_steps = ring_steps_s(dp, span, gpus_per_node, intra)
    # The sweep rarely shards within a node: the shard group is then the DP group (one latency, not two).
    shard_s = NCCL_BASE_LATENCY_S + dp_steps
    if any_row(shard_ranks != dp):  # a hybrid shard: its own, smaller group (none at all when it is one rank)
        shard_steps = ring_steps_s(shard_ranks, tp * cp * shard_ranks, gpus_per_node, intra)
        shard_s = (shard_ranks > 1) * (NCCL_BASE_LATENCY_S + shard_steps)
    rounds = grad_accum if rounds is None else rounds  # `data_parallel_collectives`: no pipeline by default
    gathers = 2.0 * grad_accum if gathers is None else gathers
    all_reduces, sharded = data_parallel_collectives(
        zero_stage, rounds, gathers, n_buckets, n_layers_per_stage
    )
    # all_reduces is 0 for the sharded stages, sharded 0 for DDP: a sum of products, no conditions
    data_parallel = (dp > 1) * (all_reduces * (NCCL_BASE_LATENCY_S + 2.0 * dp_steps) + sharded * shard_s)
    tensor, pipeline = in_pipeline, 0.0
    return as_number(tensor + pipeline), as_number(data_parallel)


@dataclass(frozen=True)
class StepComm:
    """Communication per optimizer step, in seconds, before overlap, and where the data-parallel part can hide."""

    pipelined_s: Number  # tensor + context + pipeline point-to-point, inside the micro-batches
    data_parallel_s: Number  # gradient sync and ZeRO gathers, once per step
    # Share of the step's compute the data-parallel traffic runs beside, and the share of that traffic that
    # cannot hide (`data_parallel_window`), used where `windows` is 1 (overlap_model "windows"); where it is 0
    # (the default, "constant") all compute hides overlap × the traffic, as `planner.formulas.step.timing` says.
    data_parallel_window_frac: Number = 1.0
    data_parallel_unhidden_frac: Number = 0.0
    windows: Number = 0.0
    # the tensor-parallel share of `pipelined_s` that no compute hides (0 with tp_comm_overlap)
    exposed_tensor_s: Number = 0.0

    @property
    def total_s(self) -> Number:
        return self.pipelined_s + self.data_parallel_s
