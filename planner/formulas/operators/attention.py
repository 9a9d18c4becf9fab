"""Attention's core (QKᵀ, softmax, A·V) by kernel: a fused FlashAttention kernel, or the unfused path.

A fused kernel's rate depends on the kernel, the GPU, the sequence and the head dim. `attention_frac` (per
GPU, data/microbench) is FlashAttention-2's forward + backward rate at long causal sequences and head dim 128
over the BF16 peak: 203 TFLOP/s of an A100's 312 (0.65), 335 of an H100's 989 (0.34) (Dao 2023,
arXiv:2307.08691, Fig. 4 and §4.1; PyTorch's SDPA flash backend is this kernel). Shorter sequences give each
thread block fewer key blocks to stream, so the rate saturates as s / (s + SEQ_HALF_TOKENS); a head dim
below 128 does less work per loaded tile, d / (d + HEAD_DIM_HALF) relative to 128 (both read off the same
paper's sweeps: at 512 tokens the kernel runs at about two thirds of its 16k rate, at head dim 64 at about
0.85 of its head-dim-128 rate). Attention runs in BF16 even in FP8 recipes (Transformer Engine keeps
dot-product attention in BF16 unless told otherwise), so its peak is the BF16 one.

The unfused path (`flash_attention` off) materialises the full s × s scores: its two products run as
batched GEMMs at the matmul ceiling on the whole (unmasked) matrix, and the softmax, mask and dropout read
and write the score matrix at memory bandwidth.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

SEQ_HALF_TOKENS = 256.0
HEAD_DIM_HALF = 32.0
REFERENCE_HEAD_DIM = 128.0
# Unfused softmax over the scores, forward + backward, in element passes: the forward writes the scores,
# the softmax reads them and writes the probabilities, the mask/scale one more read and write; the backward
# reads scores, probabilities and their gradient and writes one gradient. 8 passes of fp32/bf16 elements.
UNFUSED_SCORE_PASSES = 8.0
# A FlashAttention-1-era kernel (flash-attn 1.x; its Triton port, flash_attn_triton.py, which MPT ran as
# `attn_impl: triton`) over FlashAttention-2's rate: FlashAttention-2 gives "around 2x speedup compared to
# FlashAttention" (Dao 2023, arXiv:2307.08691, abstract), and the Triton port's header says its "forward +
# backward is slightly slower than CUDA forward + backward" (flash-attention commit eff9fe6b,
# flash_attn/flash_attn_triton.py), so 1/2. Both run Ampere-style mma.sync on an H100, as FlashAttention-2
# does, so the ratio measured on an A100 carries over.
FLASH1_OVER_FLASH2_RATE = 0.5


def fused_attention_frac(
    attention_frac: Number, seq_len: Number, head_dim: Number, flash1: Number = 0.0
) -> Number:
    """The fused kernel's share of the BF16 peak at this sequence and head dim (`flash1`: a
    FlashAttention-1-era kernel, at FLASH1_OVER_FLASH2_RATE of FlashAttention-2's rate).

    Worked: an H100 (0.34) at 4,096 tokens and head dim 128: 0.34 × 4096 / 4352 = 0.320; flash1: 0.160.
    """
    seq = seq_len / (seq_len + SEQ_HALF_TOKENS)
    dim = np.minimum(
        1.0,
        (head_dim / (head_dim + HEAD_DIM_HALF)) / (REFERENCE_HEAD_DIM / (REFERENCE_HEAD_DIM + HEAD_DIM_HALF)),
    )
    kernel = np.where(flash1, FLASH1_OVER_FLASH2_RATE, 1.0)
    return as_number(attention_frac * seq * dim * kernel)


def attention_time_s(
    executed_flops: Number,
    flash_attention: Number,
    bf16_flops_per_s: Number,
    attention_frac: Number,
    gemm_peak_frac: Number,
    seq_len: Number,
    head_dim: Number,
    score_elements: Number,
    memory_bytes_per_s: Number,
    score_bytes_per_element: Number,
    flash1: Number = 0.0,
) -> Number:
    """Seconds of attention core: FLOPs at the fused kernel's rate, or (unfused) GEMM rate plus score traffic.

    `executed_flops` are the FLOPs the kernel does (causal half for the fused kernel, the full matrix
    unfused); `score_elements` is the s × s × heads matrix the unfused path writes and reads (per pass).
    """
    fused_frac = fused_attention_frac(attention_frac, seq_len, head_dim, flash1)
    fused_s = executed_flops / (bf16_flops_per_s * fused_frac)
    unfused_s = executed_flops / (bf16_flops_per_s * gemm_peak_frac) + (
        UNFUSED_SCORE_PASSES * score_elements * score_bytes_per_element / memory_bytes_per_s
    )
    return as_number(np.where(flash_attention, fused_s, unfused_s))
