"""The host side: the CPU launches every kernel, so a pass lasts at least as long as its launches.

The GPU runs kernels asynchronously while the CPU queues the next ones; when the kernels are short (a small
model, a micro-batch of few tokens) the GPU waits for the CPU. So a pass (forward or backward of one
micro-batch) takes max(kernels × host cost per kernel, GPU time). The cost is a property of how the
framework runs the model, not of the GPU: eager PyTorch spends about 5-25 µs of CPU per operation before its
kernel is queued (Python, argument parsing, autograd recording, the dispatcher, cudaLaunchKernel; J. Huang-Lin,
"From PyTorch op to kernel launch", gpu_kernel_serving lesson 18); CUDA graphs replay a whole pass for a few
µs in all. The defaults below are measured on the lent H200 (data/microbench/h200.csv and h200_run_phases.csv,
bench/gpu_micro.py and bench/gpu_run_phases.py, 2026-12-04): an eager tiny op costs 9.0 µs of host time (a CUDA
graph replay 1.0 µs), and a profiled Hugging Face Llama training step issues about 230 host operations per layer
(2,763 for 12 layers, 3,649 for 16, 987 for 4 cut layers of an 8B model, forward + backward + optimizer).
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

HOST_S_PER_KERNEL = 9.0e-6  # h200.csv, launch_add_tiny, eager: 8.99 µs per op
# Host operations of one Llama-style layer per micro-batch in eager PyTorch (Hugging Face modelling code):
# about 230 in the profiles above, split a third forward and two thirds backward (the backward runs one or two
# kernels per forward op, and the optimizer's per-parameter ops fall on the last pass).
KERNELS_PER_LAYER_FORWARD = 77.0
KERNELS_PER_LAYER_BACKWARD = 153.0


def pass_time_s(gpu_s: Number, n_kernels: Number, host_s_per_kernel: Number) -> Number:
    """A pass's seconds: the GPU's work or the host's launches, whichever is longer."""
    return as_number(np.maximum(gpu_s, n_kernels * host_s_per_kernel))
