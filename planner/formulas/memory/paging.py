"""A paged optimizer's states on the host as the GPU runs short of memory (bitsandbytes' paged optimizers)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.formulas.memory.memory_inputs import MemoryBreakdown, MemoryInputs
from planner.formulas.memory.peak import memory_per_gpu
from planner.formulas.scalars import any_row


def memory_with_paging(p: MemoryInputs, paged_optimizer, vram_bytes) -> MemoryBreakdown:
    """`memory_per_gpu`, with as much of a paged optimizer's states on the host as the GPU runs short by.

    bitsandbytes' paged optimizers keep their states in CUDA unified memory: pages stay on the GPU while it
    has room and are evicted to the host when it does not (bitsandbytes docs, "Paged optimizers"). So a plan
    that would not fit with its states on the GPU is evaluated with the shortfall, (peak − VRAM) in allocated
    bytes (÷ (1 + fragmentation)), up to all of the states, on the host, and pays the paging traffic
    (`planner.formulas.step.offload`) instead of being refused. Fixed-size terms (weights, activations) never page.
    """
    resident = memory_per_gpu(p)
    if not any_row(np.asarray(paged_optimizer) > 0):  # the usual case: skip the per-row work
        return resident
    states = np.asarray(resident.optimizer_bytes)
    training_bytes = np.asarray(resident.reserved_peak_bytes + resident.overhead_bytes)  # loading never pages
    short_bytes = (training_bytes - vram_bytes) / (1.0 + p.fragmentation_frac)
    share = np.clip(short_bytes / np.maximum(states, 1.0), 0.0, 1.0) * (np.asarray(paged_optimizer) > 0)
    if not any_row(share > 0):
        return resident
    return memory_per_gpu(replace(p, page_optimizer=share))
