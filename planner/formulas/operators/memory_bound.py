"""Operations bound by memory bandwidth: their bytes, moved at the achievable share of the datasheet bandwidth.

Norms, residual adds, activation functions, rotary embeddings and dropout do a few FLOPs per element, so they take
as long as reading and writing their tensors (the roofline's memory side). The achievable bandwidth is
`memory_frac` (data/microbench: a device-to-device copy reaches about 90 % of an H100's 3.35 TB/s) of the
datasheet figure. Counts are in elements per token of one transformer layer (Llama-style: pre-norm, gated or
plain MLP), forward pass; the backward reads the saved input and the output gradient and writes the input
gradient, about twice the forward's traffic (BACKWARD_OVER_FORWARD).
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

BACKWARD_OVER_FORWARD = 2.0
# Per token, forward: two norms (read h, write h each: 4h) and two residual adds (read 2h, write h each: 6h)
NORM_RESIDUAL_ELEMENTS_PER_HIDDEN = 10.0
# dropout after attention and after the MLP: read h, write h, write a one-byte mask (≈ half an element), twice
DROPOUT_ELEMENTS_PER_HIDDEN = 5.0
# The loss over the vocabulary, bytes per logit, forward + backward: unfused, the bf16 logits are written, read
# and upcast to fp32 (write 4, read 4), the log-softmax writes and reads fp32 again, the backward writes a
# gradient: about 16 bytes; a fused (chunked) cross-entropy reads the logits once per pass and writes the
# gradient in place: about 6 bytes (Liger-Kernel's fused linear cross-entropy notes; Wijmans et al. 2024, "Cut
# your losses", count the logits' memory the same way).
LOSS_BYTES_PER_LOGIT = 16.0
FUSED_LOSS_BYTES_PER_LOGIT = 6.0
# FP8 recipes (Transformer Engine's delayed or current scaling): every GEMM input is cast from BF16 to FP8
# (read 2 bytes, write 1) with its amax taken in the same kernel: 3 bytes per element cast.
FP8_CAST_BYTES_PER_ELEMENT = 3.0


def layer_elements_per_token(
    hidden: Number,
    q_dim: Number,
    kv_dim: Number,
    ffn_hidden: Number,
    n_mlp_matrices: Number,
    tp: Number,
    sequence_parallel: Number,
    dropout: Number,
) -> Number:
    """Elements one GPU reads and writes per token of its micro-batch in one layer's element-wise ops (forward).

    Norms, residuals and dropout act on the full hidden vector; tensor parallelism replicates them on every
    rank unless sequence parallelism splits the tokens (Korthikanti et al. 2022, §4.2.2). Rotary reads and writes
    the local query and key heads; the activation reads the up (and gate) output and writes one.
    Worked: h = 4,096, q 4,096, kv 1,024, ffn 14,336 gated, tp 1: 40,960 + 2·5,120 + 3·14,336 = 94,208.
    """
    hidden_share = np.where(sequence_parallel, 1.0 / tp, 1.0)
    wide = (NORM_RESIDUAL_ELEMENTS_PER_HIDDEN + DROPOUT_ELEMENTS_PER_HIDDEN * dropout) * hidden * hidden_share
    rotary = 2.0 * (q_dim + kv_dim) / tp
    activation = np.where(n_mlp_matrices >= 3, 3.0, 2.0) * ffn_hidden / tp
    return as_number(wide + rotary + activation)


def fp8_cast_elements_per_token(
    hidden: Number, q_dim: Number, kv_dim: Number, ffn_hidden: Number, n_mlp_matrices: Number, tp: Number
) -> Number:
    """Elements cast to FP8 per token in one layer, forward + backward: each GEMM's activation input forward
    (QKV and up read h, out q/tp, down f/tp), each GEMM's output gradient backward."""
    forward = 2.0 * hidden + (q_dim + ffn_hidden) / tp
    backward = (q_dim + 2.0 * kv_dim + (n_mlp_matrices - 1.0) * ffn_hidden) / tp + 2.0 * hidden
    return as_number(forward + backward)


def optimizer_step_bytes_per_param(
    grad_bytes: Number, master_bytes: Number, optimizer_bytes: Number, weight_bytes: Number
) -> Number:
    """Bytes one trainable parameter moves in the optimizer step and gradient clipping.

    Clipping reads every gradient once for the global norm and once more to scale it; the update reads the
    gradient, reads and writes the master copy and the optimizer states, and writes the working weight.
    Worked, Adam in mixed precision (bf16 gradients 2, fp32 master 4, two fp32 moments 8, bf16 weight 2):
    2·2 + 2 + 2·(4 + 8) + 2 = 32 bytes (fused AdamW in PyTorch moves the same tensors in one kernel).
    """
    return 2.0 * grad_bytes + grad_bytes + 2.0 * (master_bytes + optimizer_bytes) + weight_bytes


def memory_time_s(n_bytes: Number, memory_gb_per_s: Number, memory_frac: Number) -> Number:
    """Seconds to move `n_bytes` at the achievable bandwidth (datasheet GB/s × memory_frac)."""
    return n_bytes / (memory_gb_per_s * 1e9 * memory_frac)
