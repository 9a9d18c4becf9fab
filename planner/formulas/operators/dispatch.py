"""The host side: the CPU launches every kernel, so a pass lasts at least as long as its launches.

The GPU runs kernels asynchronously while the CPU queues the next ones; when the kernels are short (a small
model, a micro-batch of few tokens) the GPU waits for the CPU. So a pass (forward or backward of one
micro-batch) takes max(kernels × host cost per kernel, GPU time). The cost is a property of how the
framework runs the model, not of the GPU: eager PyTorch spends about 5-25 µs of CPU per operation before its
kernel is queued (Python, argument parsing, autograd recording, the dispatcher, cudaLaunchKernel; J. Huang-Lin,
"From PyTorch op to kernel launch", gpu_kernel_serving lesson 18); CUDA graphs replay a whole pass for a few
µs in all. The cost per launch is measured on the lent H200 (data/microbench/h200.csv, bench/gpu_micro.py,
2026-12-04): an eager tiny op costs 9.0 µs of host time (a CUDA graph replay 1.0 µs). The kernel count below is
a framework with fused kernels (torchtitan, Megatron, compiled torchtune); Hugging Face's eager modelling code
dispatches about 220 operations per layer at ~21 µs each, which `eager` counts instead for such plans.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

HOST_S_PER_KERNEL = 9.0e-6  # h200.csv, launch_add_tiny, eager: 8.99 µs per op
# Kernels of one Llama-style layer in a fused-kernel framework: the two norms, three projections (or one fused
# QKV), rotary, attention, the output projection, two residual adds, gate, up, the activation product and the
# down projection, with their casts and views: about 33; the backward runs one or two kernels per forward op,
# about twice as many.
KERNELS_PER_LAYER_FORWARD = 33.0
KERNELS_PER_LAYER_BACKWARD = 66.0


def pass_time_s(gpu_s: Number, n_kernels: Number, host_s_per_kernel: Number) -> Number:
    """A pass's seconds: the GPU's work or the host's launches, whichever is longer."""
    return host_or_gpu_s(gpu_s, n_kernels * host_s_per_kernel)


def host_or_gpu_s(gpu_s: Number, host_s: Number) -> Number:
    """A pass's seconds from the host's dispatch seconds (kernels × cost, or `eager`'s operation count)."""
    return as_number(np.maximum(gpu_s, host_s))
