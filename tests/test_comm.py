"""Communication volumes, link choice, overlap and the pipeline bubble (planner/formulas/step/comm.py)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.formulas.step import comm

H100_NVLINK = 450.0  # GB/s per direction (data/gpus.csv)
IB_PER_GPU = 50.0  # GB/s, 8 × 400 Gb/s per 8-GPU node
# What NCCL reaches on them (planner.formulas.step.links): 370 GB/s bus bandwidth on H100 NVLink, 47 GB/s per NDR NIC
NVLINK_ACHIEVED = 370.0
IB_ACHIEVED = 47.0


def test_ring_volumes():
    # 4 ranks, 1 GB: all-reduce sends 2·3/4 = 1.5 GB per rank; all-gather 3/4 = 0.75 GB.
    assert comm.ring_all_reduce_bytes(4, 1e9) == pytest.approx(1.5e9, rel=1e-12)
    assert comm.ring_all_gather_bytes(4, 1e9) == pytest.approx(0.75e9, rel=1e-12)
    # One rank talks to nobody.
    assert comm.ring_all_reduce_bytes(1, 1e9) == 0.0


@pytest.mark.parametrize(
    ("intra", "pcie", "expected"),
    [
        (450.0, 63.0, 370.0),  # NVLink when the GPU has it, at NCCL's 370 of 450 GB/s
        (0.0, 63.0, 63.0 * 0.88),  # otherwise PCIe at the measured 88 % (55.4 GB/s on Gen5)
        (0.0, 31.5, 31.5 * 0.88),
    ],
)
def test_intra_node_link(intra, pcie, expected):
    assert comm.intra_node_link_gb_per_s(intra, pcie) == pytest.approx(expected, rel=1e-12)


def test_group_link_inside_and_across_nodes():
    assert comm.group_link_gb_per_s(8, 8, H100_NVLINK, IB_PER_GPU) == H100_NVLINK
    assert comm.group_link_gb_per_s(16, 8, H100_NVLINK, IB_PER_GPU) == pytest.approx(IB_ACHIEVED, rel=1e-12)
    spans = np.array([1, 8, 9, 64])
    links = comm.group_link_gb_per_s(spans, 8, H100_NVLINK, IB_PER_GPU)
    assert links == pytest.approx([450, 450, 47, 47], rel=1e-12)


def test_ddp_all_reduce_in_one_node():
    # 8B params, bf16 grads = 16 GB; dp 8 in one node: 2·7/8·16e9 = 28e9 B over 450 GB/s = 0.06222 s.
    seconds = comm.data_parallel_comm_s(8, 0, 4, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU)
    assert seconds == pytest.approx(28e9 / 450e9, rel=1e-12)


def test_ddp_across_nodes_uses_the_network():
    # dp 16 over two nodes: 2·15/16·16e9 = 30e9 B over the NIC's achieved 47 GB/s = 0.6383 s.
    seconds = comm.data_parallel_comm_s(16, 0, 1, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU)
    assert seconds == pytest.approx(30e9 / 47e9, rel=1e-12)


def test_zero_stages_volumes():
    grads, weights, dp, accum = 32e9, 16e9, 8, 4
    share = 7 / 8
    expected_bytes = {
        1: share * (grads + weights),  # reduce-scatter once + all-gather once
        2: share * (accum * grads + weights),  # reduce-scatter every micro-batch
        3: share * (accum * grads + 2 * accum * weights),  # + gathers before forward and backward
    }
    for stage, n_bytes in expected_bytes.items():
        seconds = comm.data_parallel_comm_s(dp, stage, accum, grads, weights, 1, 8, H100_NVLINK, IB_PER_GPU)
        assert seconds == pytest.approx(n_bytes / 450e9, rel=1e-12), stage


def test_zero3_is_one_and_a_half_ddp_at_one_micro_batch():
    # ZeRO paper §7: reduce-scatter + 2 all-gathers = 3·(d−1)/d against DDP's 2·(d−1)/d.
    ddp = comm.data_parallel_comm_s(64, 0, 1, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU)
    zero3 = comm.data_parallel_comm_s(64, 3, 1, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU)
    assert zero3 / ddp == pytest.approx(1.5, rel=1e-12)


def test_hybrid_shard_keeps_gathers_in_the_node():
    # dp 16 on 8-GPU nodes, ZeRO-3 hybrid: shard group 8 (NVLink), replica group 2 (network).
    # Shard: 7/8·(16e9 + 2·16e9) = 42e9 B at 450 GB/s (the link as passed); replica all-reduce of
    # 16e9/8 = 2e9 B: 2·1/2·2e9 at the NIC's achieved 47 GB/s.
    seconds = comm.data_parallel_comm_s(16, 3, 1, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU, hybrid_shard=1)
    assert seconds == pytest.approx(42e9 / 450e9 + 2e9 / 47e9, rel=1e-12)
    flat = comm.data_parallel_comm_s(16, 3, 1, 16e9, 16e9, 1, 8, H100_NVLINK, IB_PER_GPU)
    # The flat ring of 16 sends 15/16 · 48e9 = 45e9 B, all at the network's 47 GB/s: 0.957 s.
    assert flat == pytest.approx(45e9 / 47e9, rel=1e-12)
    assert seconds < flat


def test_tensor_parallel_toy():
    # Korthikanti et al. 22B: tp 8, 48 layers, micro-batch 4 × 2048 tokens, h 6144, bf16, full recompute.
    # Payload 4·2048·6144·2 = 100,663,296 B; ring all-reduce 2·7/8 of it = 176,160,768 B;
    # 6 per layer (4 + 2 recomputed) × 48 layers = 288 → 50,734,301,184 B at 300 GB/s = 0.16911 s.
    seconds = comm.tensor_parallel_comm_s(8, 48, 4 * 2048, 6144, 2, 1, 1, 300.0)
    assert seconds == pytest.approx(288 * 176_160_768 / 300e9, rel=1e-12)
    without_recompute = comm.tensor_parallel_comm_s(8, 48, 4 * 2048, 6144, 2, 1, 0, 300.0)
    assert seconds / without_recompute == pytest.approx(6 / 4, rel=1e-12)
    assert comm.tensor_parallel_comm_s(1, 48, 4 * 2048, 6144, 2, 1, 1, 300.0) == 0.0


def test_context_parallel_toy():
    # cp 4, 1 layer, 1,000 tokens per rank, kv_dim 1,024, bf16: forward passes K and V 3 times:
    # 3 · 2 · 1000 · 1024 · 2 = 12,288,000 B; backward twice that: 36,864,000 B at 100 GB/s.
    assert comm.context_parallel_comm_s(4, 1, 1000, 1024, 2, 1, 100.0) == pytest.approx(36_864e3 / 100e9)
    assert comm.context_parallel_comm_s(1, 32, 1000, 1024, 2, 8, 100.0) == 0.0


def test_pipeline_p2p_toy():
    # pp 4, 2048 tokens, h 4096, bf16, tp 2, 8 micro-batches: 2 · 2048 · 4096 · 2 / 2 = 16.8 MB each,
    # × 8 = 134,217,728 B at 50 GB/s.
    assert comm.pipeline_p2p_comm_s(4, 2048, 4096, 2, 2, 8, 50.0) == pytest.approx(134_217_728 / 50e9)
    assert comm.pipeline_p2p_comm_s(1, 2048, 4096, 2, 2, 8, 50.0) == 0.0


@pytest.mark.parametrize(
    ("pp", "micro_batches", "virtual", "expected"),
    [
        (1, 8, 1, 0.0),  # no pipeline, no bubble
        (8, 64, 1, 7 / 71),  # Korthikanti 175B: 8 stages, 64 micro-batches
        (4, 4, 1, 3 / 7),  # as many micro-batches as stages: almost half idle
        (8, 64, 3, 7 / 199),  # interleaving 3 stages per GPU divides the bubble time by 3
    ],
)
def test_pipeline_bubble(pp, micro_batches, virtual, expected):
    assert comm.pipeline_bubble_frac(pp, micro_batches, virtual) == pytest.approx(expected, rel=1e-12)


def test_bubble_shrinks_with_more_micro_batches():
    bubbles = comm.pipeline_bubble_frac(8, np.array([1, 2, 8, 64, 512]))
    assert np.all(np.diff(bubbles) < 0)


@pytest.mark.parametrize(
    ("comm_s", "compute_s", "overlap", "expected"),
    [
        (1.0, 5.0, 1.0, 0.0),  # fully hidden under longer compute
        (1.0, 5.0, 0.0, 1.0),  # nothing hidden
        (1.0, 5.0, 0.9, 0.1),
        (4.0, 1.0, 1.0, 3.0),  # only as much as the compute lasts can hide: step = max(compute, comm)
        (4.0, 1.0, 0.5, 3.5),
    ],
)
def test_exposed_comm(comm_s, compute_s, overlap, expected):
    assert comm.exposed_comm_s(comm_s, compute_s, overlap) == pytest.approx(expected, rel=1e-12)


def _layout(**changes):
    base = dict(
        n_params=8e9, n_trainable_params=8e9, n_layers=32, hidden_size=4096, kv_dim=1024, seq_len=4096,
        micro_batch=1, grad_accum=4, tp=1, pp=1, cp=1, dp=8, zero_stage=0, hybrid_shard=0, full_recompute=0,
        grad_comm_bytes=2.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=8,
        intra_node_gb_per_s=H100_NVLINK, pcie_gb_per_s=63.0, inter_node_gb_per_s=IB_PER_GPU,
    )  # fmt: skip
    return comm.layout_comm(**{**base, **changes})


def test_layout_comm_pure_data_parallel():
    traffic = _layout()
    assert traffic.pipelined_s == 0.0
    # Bytes as in the DDP toy above at NVLink's achieved 370 GB/s, plus each bucket's latency: 16e9 B of bf16 gradients in
    # ceil(16e9 / 25 MiB) = 611 buckets, each a ring all-reduce over 8 NVLink ranks: 8.4 + 2 · 7 · 3.4 = 56 µs.
    latency_s = 611 * (8.4 + 2 * 7 * 3.4) * 1e-6
    assert traffic.data_parallel_s == pytest.approx(28e9 / 370e9 + latency_s, rel=1e-12)
    assert traffic.total_s == traffic.data_parallel_s


def test_layout_comm_is_vectorised():
    dps = np.array([1, 2, 4, 8, 16, 64])
    traffic = _layout(dp=dps)
    one_by_one = [_layout(dp=int(d)).data_parallel_s for d in dps]
    assert np.allclose(traffic.data_parallel_s, one_by_one, rtol=1e-12)
    assert traffic.data_parallel_s[0] == 0.0
    # Leaving the node costs: 16 ranks over the network take longer than 8 over NVLink.
    assert traffic.data_parallel_s[4] > traffic.data_parallel_s[3]


def test_layout_comm_model_parallel_shards_the_gradients():
    # tp 2 × pp 2 leaves each rank a quarter of the gradients (8e9/4 · 2 B = 4e9 B); dp 2 inside the node
    # all-reduces 2 · 1/2 of that over NVLink (370 GB/s achieved).
    # Latency: ceil(4e9 / 25 MiB) = 153 buckets, each 8.4 + 2 · 1 · 3.4 = 15.2 µs over 2 NVLink ranks.
    traffic = _layout(tp=2, pp=2, dp=2)
    latency_s = 153 * (8.4 + 2 * 1 * 3.4) * 1e-6
    assert traffic.data_parallel_s == pytest.approx(2 * 0.5 * (8e9 / 4 * 2) / 370e9 + latency_s, rel=1e-12)
    assert traffic.pipelined_s > 0  # tensor all-reduces and stage-to-stage sends
