"""NCCL's kernels and the compute they overlap share the GPU's SMs: hidden traffic still slows the step.

A collective that overlaps compute (the data-parallel sync behind the backward, tensor-parallel traffic with
`tp_comm_overlap`) runs as CUDA blocks beside the compute's kernels; each of its blocks holds an SM for the
collective's duration, so the compute running beside it has only the other SMs.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.comm import StepComm
from planner.formulas.step.compute import Number, as_number

# SMs a collective holds while it runs: NCCL launches one CTA per channel (NVIDIA/nccl src/enqueue.cc, grid =
# {nChannels, 1, 1}, at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027) and on Hopper across nodes raises a
# smaller channel count to 16 (src/graph/connect.cc: "Use 4 compute channels per search channel", "We won't
# automatically double past 16 channels"). 16 is taken for every GPU and topology (not measured here; NCCL's
# topology search sets the count, and NCCL_MAX_CTAS / NCCL_MAX_NCHANNELS cap it).
NCCL_CHANNELS = 16.0


def nccl_sm_frac(n_sms: Number) -> Number:
    """Share of the GPU's SMs a collective's channels hold (0 where the SM count is unknown)."""
    sms = np.asarray(n_sms, dtype=float)
    return as_number(np.where(sms > NCCL_CHANNELS, NCCL_CHANNELS / np.maximum(sms, NCCL_CHANNELS), 0.0))


def contended_s(
    comm: StepComm, pipelined_s: Number, data_parallel_s: Number, sm_frac: Number
) -> tuple[Number, Number]:
    """(in-pipeline, data-parallel) exposed seconds with the compute that NCCL's kernels slow while they overlap
    it: a collective runs one CTA per channel, each holding an SM (`sm_frac` of them), so the compute beside
    hidden traffic of t seconds runs on the other SMs and takes t · sm_frac / (1 − sm_frac) longer."""
    slower = sm_frac / (1.0 - sm_frac)
    hidden_pipelined, hidden_dp = comm.pipelined_s - pipelined_s, comm.data_parallel_s - data_parallel_s
    return pipelined_s + hidden_pipelined * slower, data_parallel_s + hidden_dp * slower
