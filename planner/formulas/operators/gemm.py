"""Matrix-multiply time at its real shape: FLOPs / (dense peak × ceiling × quantisation), or its bytes / bandwidth.

A GEMM C[M×N] = A[M×K]·B[K×N] is cut into output tiles of TILE_M × TILE_N; each SM computes one tile at a
time, so the tiles run in waves of n_sms. The last wave is partly idle, and tiles at the matrix edge are partly
padding: the share of useful work is M·N / (waves · n_sms · TILE_M · TILE_N) (NVIDIA, "Matrix Multiplication
Background User's Guide", Deep Learning Performance documentation: tile and wave quantisation, with 256×128
tiles on an A100's 108 SMs as its example). The best rate over many shapes, the matmul ceiling
(`gemm_peak_frac`, data/microbench), already contains whatever a well-shaped GEMM loses. A thin GEMM (a small
M, N or K: LoRA's rank, a micro-batch of a few tokens) is bound by memory instead: it cannot go faster than
reading A and B and writing C at the achievable bandwidth (the roofline model, Williams et al. 2009). Its time
is the larger of the two.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

# CUTLASS/cuBLAS's large BF16 tile on Ampere and Hopper tensor cores: 128 × 256 outputs per thread block
# (NVIDIA's guide above uses 256 × 128; CUTLASS's default Hopper warp-specialised GEMM tile is 128 × 256).
TILE_M = 128.0
TILE_N = 256.0


def gemm_flops(m: Number, n: Number, k: Number) -> Number:
    """2·M·N·K: one multiply and one add per term."""
    return 2.0 * m * n * k


def gemm_bytes(m: Number, n: Number, k: Number, bytes_per_element: Number) -> Number:
    """A and B read once and C written once: the least traffic any kernel of this shape moves."""
    return (m * k + k * n + m * n) * bytes_per_element


def quantisation_frac(m: Number, n: Number, n_sms: Number) -> Number:
    """Useful share of the tile slots the SMs run: M·N / (waves · n_sms · TILE_M · TILE_N).

    Worked: M = 4,096 tokens, N = 1,024 (a 4,096-wide output split 4 ways) on 132 SMs: 32 × 4 = 128 tiles, one
    wave of 132 slots, 128/132 = 0.970. N = 1,280 instead: 32 × 5 = 160 tiles, two waves (264 slots), 0.606.
    n_sms 0 (no SM grid to fill) gives 1.
    """
    tiles = np.ceil(m / TILE_M) * np.ceil(n / TILE_N)
    sms = np.maximum(n_sms, 1.0)
    waves = np.ceil(tiles / sms)
    frac = m * n / (waves * sms * TILE_M * TILE_N)
    return as_number(np.where(n_sms > 0, np.minimum(frac, 1.0), 1.0))


def gemm_time_s(
    m: Number,
    n: Number,
    k: Number,
    peak_flops_per_s: Number,
    gemm_peak_frac: Number,
    n_sms: Number,
    memory_bytes_per_s: Number,
    bytes_per_element: Number,
) -> Number:
    """Seconds for one GEMM: max(FLOPs / (peak · ceiling · quantisation), bytes / achievable bandwidth)."""
    rate = peak_flops_per_s * gemm_peak_frac * quantisation_frac(m, n, n_sms)
    compute_s = gemm_flops(m, n, k) / rate
    memory_s = gemm_bytes(m, n, k, bytes_per_element) / memory_bytes_per_s
    return as_number(np.maximum(compute_s, memory_s))
