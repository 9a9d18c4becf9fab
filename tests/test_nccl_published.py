"""The model's collectives against published nccl-tests bus bandwidths (NVIDIA's own maintainers' figures).

nccl-tests reports a bus bandwidth: busbw = algbw × 2(n−1)/n for an all-reduce and × (n−1)/n for an all-gather,
"the bandwidth going through wires on a flat system" (S. Jeaugey, NVIDIA/nccl-tests issue 153 and its
doc/PERFORMANCE.md), so a ring that moves B bytes per rank in t seconds has busbw = B / t. Here the model's time
for one collective is its ring bytes over the link the planner picks plus NCCL's Ring/Simple latency
(`planner.formulas.step.collectives.ring_latency_s`), and its busbw is the same B / t.

Published figures used (NVIDIA maintainers answering nccl-tests results, not the reserved sources):
- 8× H100 SXM NVLink, NCCL_ALGO=RING (or any non-all-reduce collective): ~370 GB/s peak busbw, "450GB/s is the
  line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s"
  (S. Jeaugey, NVIDIA/nccl-tests issue "H100 all reduce performance is poor", 2024-05-06); "256M is too small
  to reach peak bandwidth" (same answer).
- Across nodes over NDR InfiniBand: "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (D. Addison,
  NVIDIA/nccl-tests issue "Single-node and multi-node performance of H100 nodes", 2025-03-03).
"""

from __future__ import annotations

import pytest

from planner.formulas.step import collectives, comm

GIB = 1024**3
H100_NVLINK_LINE = 450.0  # GB/s per direction, data/gpus.csv
H100_PCIE = 63.0
NDR_PER_GPU = 50.0  # 400 Gb/s per GPU (DGX H100: 8 NICs per 8 GPUs), the planner's default
NVLINK_PUBLISHED_BUSBW = 370.0
NDR_PUBLISHED_PER_NIC = (46.0, 48.0)


def model_busbw(n_ranks: int, span: int, size_bytes: float, phases: int, gpus_per_node: int = 8) -> float:
    """GB/s of bus bandwidth the model gives one ring collective of `size_bytes` (all-reduce: 2 phases)."""
    intra = comm.intra_node_link_gb_per_s(H100_NVLINK_LINE, H100_PCIE)
    link = comm.group_link_gb_per_s(span, gpus_per_node, intra, NDR_PER_GPU)
    if phases == 2:
        ring_bytes = comm.ring_all_reduce_bytes(n_ranks, size_bytes)
    else:
        ring_bytes = comm.ring_all_gather_bytes(n_ranks, size_bytes)
    seconds = comm.seconds(ring_bytes, link) + collectives.ring_latency_s(
        n_ranks, span, gpus_per_node, phases, 1
    )
    return float(ring_bytes / seconds / 1e9)


@pytest.mark.parametrize("size", [1 * GIB, 4 * GIB, 16 * GIB])
@pytest.mark.parametrize("phases", [2, 1])  # all-reduce, all-gather
def test_nvlink_peak_matches_nccl_ring(size, phases):
    """8 H100s in one node, 1-16 GiB: within 2 % of the ~370 GB/s NCCL reaches (latency is < 0.1 % there)."""
    assert model_busbw(8, 8, size, phases) == pytest.approx(NVLINK_PUBLISHED_BUSBW, rel=0.02)


def test_nvlink_256_mib_is_below_peak():
    """At 256 MiB the start-up and 2·7 ring steps of 3.4 µs (56 µs) are about 4 % of an all-reduce: the model
    is below the peak, as the maintainers say of that size, and above 90 % of it.
    Arithmetic: 2·7/8·268,435,456 B = 469.8 MB at 370 GB/s = 1.2697 ms, + 56 µs: busbw 354.4 GB/s."""
    busbw = model_busbw(8, 8, 256 * 1024**2, 2)
    assert busbw == pytest.approx(469.762e6 / (469.762e6 / 370e9 + 56e-6) / 1e9, rel=1e-3)
    assert 0.9 * NVLINK_PUBLISHED_BUSBW < busbw < NVLINK_PUBLISHED_BUSBW


@pytest.mark.parametrize("size", [1 * GIB, 4 * GIB, 16 * GIB])
def test_one_rank_per_node_runs_at_one_nic(size):
    """A group with one rank in each of 2 nodes (the data-parallel groups of TP 8) drives one NIC per rank:
    the model's busbw sits in the 46-48 GB/s NVIDIA gives for one NDR card."""
    low, high = NDR_PUBLISHED_PER_NIC
    assert low <= model_busbw(2, 16, size, 2) <= high


def test_full_nodes_across_the_network_is_the_known_gap():
    """A 16-rank ring over two full 8-GPU nodes: NCCL puts one ring per NIC, so nccl-tests can reach about
    8 NICs × 46-48 GB/s (capped by NVLink's 370); the planner still gives one NIC's 47 GB/s, 7.9-8.2× below.
    Counting every NIC moved multi-node FSDP calibration rows from within 7 % to 30 % too fast under source
    holdout (the one-NIC figure stands in for costs of large sharded runs the step model does not hold), so
    this gap is kept and pinned here: a change to it must revisit those rows."""
    published_low = min(8 * NDR_PUBLISHED_PER_NIC[0], NVLINK_PUBLISHED_BUSBW)
    published_high = min(8 * NDR_PUBLISHED_PER_NIC[1], NVLINK_PUBLISHED_BUSBW)
    busbw = model_busbw(16, 16, 4 * GIB, 2)
    assert busbw == pytest.approx(47.0, rel=0.01)
    assert published_low / busbw > 7.5 and published_high / busbw < 8.5
