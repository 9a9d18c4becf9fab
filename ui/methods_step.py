"""The Methods page's account of the operator step model, with one worked example (a GEMM, a layer, a step)."""

from __future__ import annotations

import streamlit as st


def step_model() -> None:
    st.markdown("""
**How a step's compute is timed** (planner/formulas/operators/). Each GPU runs its share of every micro-batch
as kernels, and each kind of kernel is timed by what limits it:

- **Matrix multiplies** (QKV, attention output, MLP, output head) at their shapes on that GPU after tensor and
  context parallelism split them: FLOPs ÷ (dense peak × the GPU's best measured matmul share × how busy its
  SMs are). A GEMM is cut into 128 × 256 output tiles that run in waves over the SMs; a last, partly empty
  wave and tiles hanging over the edge waste slots (NVIDIA's *Matrix Multiplication Background* guide). A thin
  GEMM (a LoRA rank, a few tokens) cannot go faster than reading its inputs and writing its output. Forward,
  data gradient and weight gradient are timed apart; frozen weights skip the weight gradient.
- **Attention** at FlashAttention-2's measured forward + backward rate for the GPU (0.65 of an A100's BF16
  peak, 0.34 of an H100's, Dao 2023), lower for short sequences and head dims under 128, always in BF16; an
  older FlashAttention-1-era kernel (flash-attn 1.x, or the Triton port MPT ran) at half that rate (FlashAttention-2
  gives "around 2x"); the unfused path computes the whole score matrix and reads and writes it eight times.
- **Memory-bound work** (norms, residual adds, activations, rotary, dropout, the loss over the vocabulary,
  FP8 casts, the optimizer step: 32 bytes per trainable parameter for mixed-precision AdamW) at 90 % of the
  memory bandwidth, what a device-to-device copy reaches.
- **The host**: the CPU launches every kernel, about 9 µs each in eager PyTorch (measured on a lent H200); a
  pass takes at least its launches, so a small model at a small micro-batch waits for the CPU. A framework with
  fused kernels (torchtitan, Megatron, compiled torchtune) launches about 100 per layer. **Hugging Face
  Trainer/PEFT code** ("Training code" in the training setup) runs eagerly: about 220 operations per layer per
  step at ~21 µs each (counted on a lent H200), its RMSNorm and loss as chains of fp32 element-wise kernels (325
  and 304 GB/s measured, against 2,796 for a fused norm), casts around each LoRA adapter, and torch's foreach
  AdamW at 1,214 GB/s; it is never faster than a fused framework running the same plan.
- **A residual per GPU generation** covers what these operators leave out on published runs (0.89 of the
  modelled speed on Hopper, 0.81 on Ampere); it divides the GPU's work only (not the host's launches, not the
  communication), is derived from the accuracy table's rows with one vote per source document, rebuilt without
  a row's source when that row is scored, and never depends on the model's size.

*Worked example*: Llama 3.1 8B on 8 H100s, ZeRO-3, one 4,096-token sequence per GPU. The MLP's gate and up
projection (4,096 × 28,672 × 4,096, 9.62e11 FLOP) fills 3,584 tiles in 28 waves of 132 SMs (97 % busy) and
runs at 989.5 × 0.803 × 0.97 = 770 TFLOP/s: 1.25 ms. A whole layer's forward: 2.3 ms of GEMMs, 0.44 ms of
attention, 0.26 ms of element-wise work, its launches hidden. The step: 239 ms of GEMMs, 42 ms of attention,
38 ms memory-bound (11 ms of it the optimizer), 319 ms in all; divided by Hopper's residual 0.887 that is
360 ms, plus 16 ms of exposed ZeRO-3 traffic and 19 ms for the compute that its hidden 140 ms slows (NCCL's
16 channels hold 16 of the 132 SMs while it runs): 394 ms, 10,390 tokens/s per GPU.
""")
