"""Device memory outside the tensors the memory model counts: the third statistic's extra, in bytes per GPU.

device total = reserved peak + CUDA context + cuBLAS workspaces + NCCL communicator buffers. What nvidia-smi (or
cudaMemGetInfo) shows, and what the fit verdict judges. A plan that states `overhead_gib` uses that figure
instead (a NaN `overhead_bytes` asks for this model).
"""

from __future__ import annotations

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.units import GIB_BYTES

MIB_BYTES = GIB_BYTES / 1024.0

# CUDA context with lazily loaded kernel modules (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2), the
# CUDA runtime's and the libraries' own state, outside PyTorch's caching allocator: measured 0.75-0.76 GiB in
# every one of the 147 runs on the lent H200 (data/microbench/h200_runs*.csv, column non_pytorch_gib =
# device used by the process less torch.cuda.max_memory_reserved; CUDA 13.0, torch 2.11; one GPU, so no NCCL).
CUDA_CONTEXT_BYTES = 0.75 * GIB_BYTES
# cuBLAS and cuBLASLt workspaces: torch gives each (handle, stream) pair its own workspace, allocated from the
# caching allocator (`getNewWorkspace` in aten/src/ATen/cuda/CublasHandlePool.cpp), sized by
# CUBLAS_WORKSPACE_CONFIG, whose default `:4096:8` is 4096 KiB × 8 = 32 MiB on Hopper. Training uses one
# compute stream, so two workspaces (cuBLAS and cuBLASLt). They sit in the allocator's reserved pool, which the
# memory model builds from the tensors alone, so they are charged once here.
CUBLAS_WORKSPACES = 2.0
CUBLAS_WORKSPACE_BYTES = 32.0 * MIB_BYTES
# NCCL communicator buffers: NCCL_BUFFSIZE, 4 MiB by default ("NCCL_BUFFSIZE ... Default 4194304", NCCL
# environment-variable documentation), per channel and per connected peer; a ring connects each rank to two
# peers and NCCL opens up to 32 channels on NVLink-connected Hopper GPUs (NCCL_MAX_NCHANNELS): 4 MiB × 32 × 2
# = 256 MiB per communicator. One communicator per parallel dimension that spans more than one GPU.
NCCL_BUFFER_BYTES = 4.0 * MIB_BYTES
NCCL_CHANNELS = 32.0
NCCL_PEERS = 2.0


def nccl_groups(p: MemoryInputs) -> FloatOrArray:
    """Communicators a GPU holds: one per parallel dimension (data, tensor, pipeline, context, expert) > 1."""
    degrees = (p.dp, p.tp, p.pp, p.cp, p.ep)
    return sum((np.asarray(d, dtype=float) > 1).astype(float) for d in degrees)


def modelled_overhead_bytes(p: MemoryInputs) -> FloatOrArray:
    """CUDA context + cuBLAS workspaces + NCCL buffers of one GPU (module constants)."""
    nccl = NCCL_BUFFER_BYTES * NCCL_CHANNELS * NCCL_PEERS * nccl_groups(p)
    return CUDA_CONTEXT_BYTES + CUBLAS_WORKSPACES * CUBLAS_WORKSPACE_BYTES + nccl


def overhead_bytes(p: MemoryInputs) -> FloatOrArray:
    """The plan's stated overhead where it gives one, the modelled one where `overhead_bytes` is NaN."""
    stated = np.asarray(p.overhead_bytes, dtype=float)
    if np.ndim(stated) == 0 and np.isfinite(stated):  # a stated figure: nothing to model
        return float(stated)
    return np.where(np.isnan(stated), modelled_overhead_bytes(p), stated)
