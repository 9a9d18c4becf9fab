"""The bandwidth a collective really runs at: which link a group uses, at NCCL's achieved share of its line rate,
and how many of a node's network cards a group that crosses nodes drives at once.

Bandwidths are per direction in GB/s (1e9 bytes/s), as `data/gpus.csv` and the Scenario's per-GPU network
bandwidth record them. The achieved shares come from NCCL's maintainers on nccl-tests results:
- NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink
  bandwidth of 370GB/s, which you can observe as BusBw when running non-allreduce operations, or when running
  with NCCL_ALGO=RING" (S. Jeaugey, NVIDIA/nccl-tests issue "H100 all reduce performance is poor", 2024-05-06):
  370 / 450 = 0.822 of the line rate, applied to every NVLink/xGMI generation (the protocol, not the wire).
- Network: "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (D. Addison, NVIDIA/nccl-tests issue
  "Single-node and multi-node performance of H100 nodes", 2025-03-03): 47 / 50 = 0.94 of the line rate.
- PCIe: host-to-GPU copies reach ~88 % of the theoretical per-direction rate, 55.4 GB/s of 63 on Gen5 x16
  (8× H200, nvbandwidth; reference/hardware-and-prices.md §3.1).

One NIC per GPU. A ring that crosses nodes runs at one GPU's card, its per-GPU share of the node's network.
NCCL can drive every card of a node at once (one ring per card: a group with r ranks in each node runs r rings),
which measures up to the node's whole network in nccl-tests; the planner does not count that yet, although the
multi-node rows of MosaicML's llm-foundry benchmark tables (scripts/train/benchmarking/README.md at commit
495218376830947dce625efabc4d86be7c47cc45: 40 rows of 16-512 GPUs and one 8-GPU sibling, none of them in the
calibration file) show the one-card figure is wrong where compute is short:
- 'H100 80GB BF16', MPT-13B, FSDP FULL_SHARD, micro-batch 2: 4,792, 4,767, 4,811 and 4,800 tokens/s per GPU on
  8, 16, 32 and 64 GPUs. One card predicts 6,218 on one node, then 1,869, 1,807 and 1,768 (−61 to −63 %); r cards
  predicts 6,263-6,274 at every size, +30 % like the one-node row.
- 'A100 40GB (1600 Gbps RoCE)', 30B, 13B and 7B on 16-128 GPUs: one card −5 to −18 %, r cards −1 to −5 %.
- 'H100 80GB BF16 (Large Scale)', 128-512 GPUs: one card −17 to +28 %, within 6 % for 70B, 30B and 13B; r cards
  +11 to +38 %.
With r cards every H100 row of those tables is too fast, and the rows without activation checkpointing are
10-20 % faster in the model than their checkpointed siblings on both GPUs: the error left is on the GPU side,
and the one-card figure is what holds it in check on the calibration rows. Shipped alone, r cards moved the
calibration's source-holdout score from 7.8 % / 25.9 % to 8.6 % / 30.7 % (median / p90; LF-02 and LF-03 28-42 %
too fast). It waits for that GPU-side mechanism.

Ruled out as that mechanism: backward all-gathers left exposed by FSDP's prefetch order. Composer's FSDPConfig
defaults to backward_prefetch BACKWARD_POST (docs.mosaicml.com, composer.utils.FSDPConfig), which PyTorch's
BackwardPrefetch documents as issuing the next unit's all-gather only after the current unit's gradient
computation (it overlaps the current reduce-scatter instead). Those all-gathers move 2 of the 8 bytes per
parameter FULL_SHARD moves per step with an fp32 reduction, so charging them in full adds at most 0.032 s to
LF-08's step (7B, micro-batch 6, one H100 node: 0.129 s of FSDP traffic), which is predicted 0.17 s short. The
same rows on one node make the point alone: with no network in play, the H100 rows without checkpointing at
sequence 2048 are +16 to +23 % in-sample (LF-08, LF-12, LF-13, LF-14) while their A100 siblings are within 9 %
(LF-17, LF-18, LF-20, LF-21, LF-25, LF-26).
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

PCIE_PRACTICAL_FRAC = 0.88
NVLINK_ACHIEVED_FRAC = 370.0 / 450.0
NETWORK_ACHIEVED_FRAC = 47.0 / 50.0


def effective_pcie_gb_per_s(pcie_gb_per_s: Number) -> Number:
    """Usable PCIe bandwidth per direction: theoretical × the measured 88 % (hardware-and-prices.md §3.1)."""
    return pcie_gb_per_s * PCIE_PRACTICAL_FRAC


def intra_node_link_gb_per_s(intra_node_gb_per_s: Number, pcie_gb_per_s: Number) -> Number:
    """GPU-to-GPU bandwidth NCCL reaches inside a node: NVLink/xGMI at its achieved share when the GPU has it
    (> 0), otherwise PCIe at its practical share."""
    return as_number(
        np.where(
            intra_node_gb_per_s > 0,
            intra_node_gb_per_s * NVLINK_ACHIEVED_FRAC,
            effective_pcie_gb_per_s(pcie_gb_per_s),
        )
    )


def network_gb_per_s(inter_node_gb_per_s: Number) -> Number:
    """One GPU's network card at the share NCCL reaches (0.94 of the line rate)."""
    return inter_node_gb_per_s * NETWORK_ACHIEVED_FRAC


def group_link_gb_per_s(
    group_span: Number, gpus_per_node: Number, intra_link_gb_per_s: Number, inter_node_gb_per_s: Number
) -> Number:
    """Bandwidth a collective runs at: the node's link if the group's `group_span` ranks fit in one node.

    A ring that crosses nodes runs at the pace of its slowest hop: one GPU's network card at its achieved rate
    (`network_gb_per_s`), or the node's own link where that is slower (a PCIe node beside a fast network: the
    ring still passes GPU to GPU inside each node). `intra_link_gb_per_s` is already at its achieved share.
    """
    across = np.minimum(network_gb_per_s(inter_node_gb_per_s), intra_link_gb_per_s)
    return as_number(np.where(group_span <= gpus_per_node, intra_link_gb_per_s, across))
