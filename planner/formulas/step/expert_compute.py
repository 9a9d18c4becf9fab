"""Routed experts' compute: the small matmuls of many experts, and the busiest rank's extra load.

Small expert matmuls. Each routed expert multiplies only the tokens routed to it: per micro-batch an M × h by
h × F matmul (and its F × h partner), with M = tokens per expert, far fewer rows than a dense layer's. On the
roofline (Williams, Waterman & Patterson 2009) a matmul takes max(FLOPs / peak, bytes / memory bandwidth),
with, per matrix in e-byte elements,

    FLOPs = 2·M·h·F        bytes = e·(h·F + M·(h + F))   (the weights read once, the input and output once)

so its arithmetic intensity is 2·M·h·F / (e·(h·F + M·(h + F))), about M FLOP per byte in bf16 while M is
small next to h and F (and h·F/(h + F) once M is large). Below the GPU's ridge point (peak / bandwidth, 295
FLOP/B for an H100 SXM's 989 TFLOP/s over 3.35 TB/s) the matmul is memory bound and reaches

    achieved fraction = (FLOPs / peak) / max(FLOPs / peak, bytes / bandwidth) = min(1, intensity / ridge)

of the rate a large matmul reaches. The efficiency presets were measured on large matmuls, so the routed
experts' time is their FLOP time at the preset's utilisation divided by this fraction. A grouped GEMM (one
kernel for all local experts, Megatron-Core's GroupedMLP) removes the launch overhead but not the weight
reads, so the roofline holds for it too. Tokens per expert per micro-batch: the tokens of the expert group
(etp·ep ranks of b·s / (cp·tp) tokens each) × top-k / routed experts, the uniform-routing average; with etp = tp
that is ep ranks of b·s / cp tokens. Expert tensor parallelism (`planner.formulas.step.moe`) also splits the
expert's width F over etp GPUs, so each GPU's matmul is M × h by h × F/etp.

Busiest rank. With expert parallelism every rank waits at the combine for the slowest one, whose experts
process the capacity factor C times the average tokens (`planner.formulas.step.moe` for its all-to-all); with
ep = 1 one GPU holds every expert and processes all routed tokens whatever their split, so C does not apply.

Every function takes floats or numpy arrays.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number


def tokens_per_expert(
    tokens_per_microbatch: Number, top_k: Number, ep: Number, n_experts: Number, etp_over_tp: Number = 1.0
) -> Number:
    """Average tokens one routed expert multiplies per micro-batch: b·s/cp · ep · (etp / tp) · top-k / experts
    (the etp ranks of an expert gather each other's b·s/(cp·tp) routed tokens; `etp_over_tp` 1 at etp = tp)."""
    return as_number(tokens_per_microbatch * etp_over_tp * ep * top_k / np.maximum(n_experts, 1.0))


def expert_matmul_efficiency_frac(
    tokens_per_expert_: Number,
    hidden_size: Number,
    expert_ffn_hidden: Number,
    element_bytes: Number,
    peak_flops_per_s: Number,
    memory_bytes_per_s: Number,
) -> Number:
    """Share of a large matmul's rate an M × h by h × F expert matmul reaches on the roofline (module
    docstring): min(1, intensity / ridge); 1 where there is no expert (F = 0)."""
    m, h, f = tokens_per_expert_, hidden_size, expert_ffn_hidden
    flops = 2.0 * m * h * f
    moved = element_bytes * (h * f + m * (h + f))
    compute_s = flops / peak_flops_per_s
    memory_s = moved / memory_bytes_per_s
    frac = compute_s / np.maximum(np.maximum(compute_s, memory_s), 1e-300)
    return as_number(np.where(f > 0, frac, 1.0))


def busiest_rank_load(ep: Number, capacity_factor: Number) -> Number:
    """Routed tokens the slowest expert-parallel rank processes over the average: C with ep > 1, else 1."""
    return as_number(np.where(ep > 1, capacity_factor, 1.0))


def routed_expert_extra_s(
    routed_flops_per_step: Number,
    peak_flops_per_s: Number,
    utilisation_frac: Number,
    efficiency_frac: Number,
    busiest_load: Number,
) -> Number:
    """Seconds per step the routed experts take beyond their FLOP time at the preset's utilisation:
    FLOP time × (busiest load / achieved fraction − 1); 0 for balanced, large expert matmuls."""
    flop_time_s = routed_flops_per_step / (peak_flops_per_s * utilisation_frac)
    return as_number(flop_time_s * (busiest_load / efficiency_frac - 1.0))
