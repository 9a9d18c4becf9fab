"""The host side: the CPU launches every kernel, so a pass lasts at least as long as its launches.

The GPU runs kernels asynchronously while the CPU queues the next ones; when the kernels are short (a small
model, a micro-batch of few tokens) the GPU waits for the CPU. So a pass (forward or backward of one
micro-batch) takes max(kernels × host cost per kernel, GPU time). The cost is a property of how the
framework runs the model, not of the GPU: eager PyTorch spends about 5-25 µs of CPU per operation before its
kernel is queued (Python, argument parsing, autograd recording, the dispatcher, cudaLaunchKernel; J. Huang-Lin,
"From PyTorch op to kernel launch", gpu_kernel_serving lesson 18); CUDA graphs replay a whole pass for a few
µs in all. The default below is eager PyTorch's lower middle; the backward's kernels are queued by autograd's
C++ engine (no Python), which is why they share the same figure rather than a higher one.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.step.compute import Number, as_number

HOST_S_PER_KERNEL = 8e-6
# Kernels of one Llama-style layer in eager PyTorch (Hugging Face modelling code): RMSNorm as 7 element-wise
# kernels twice, 3 projections, rotary about 8, attention 1, output projection 1, residual add twice, gate,
# up, activation, multiply and down projection 5: about 33; the backward runs one or two kernels per forward
# op, about twice as many.
KERNELS_PER_LAYER_FORWARD = 33.0
KERNELS_PER_LAYER_BACKWARD = 66.0


def pass_time_s(gpu_s: Number, n_kernels: Number, host_s_per_kernel: Number) -> Number:
    """A pass's seconds: the GPU's work or the host's launches, whichever is longer."""
    return as_number(np.maximum(gpu_s, n_kernels * host_s_per_kernel))
