"""Bytes alive on the traced device, counted per tensor storage as operators create and free them.

A `TorchDispatchMode` sees every operator's outputs; each new storage is counted once (keyed by its
StorageImpl pointer) and uncounted when Python frees it (`weakref.finalize` on the storage object, which
PyTorch keeps alive exactly as long as the storage). Sizes are rounded up to 512 bytes, the smallest block
of PyTorch's CUDA caching allocator (`kMinBlockSize` in c10/cuda/CUDACachingAllocator.cpp), so the total is
what `torch.cuda.memory_allocated` would report.

Why not the stock `torch.distributed._tools.mem_tracker.MemTracker`: it hooks every parameter, frozen ones
too (PEFT's frozen base then fails), and rescans its module tree on each call, a cost that grows with the
square of the module count (an 8B model took minutes). This tracker only counts storages and labels each with
the phase and the module that created it, which is all the report needs.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# PyTorch's CUDA caching allocator rounds every block up to a multiple of 512 bytes (kMinBlockSize).
BLOCK_BYTES = 512


def rounded_bytes(n_bytes: int) -> int:
    return -(-n_bytes // BLOCK_BYTES) * BLOCK_BYTES


def local(tensor: torch.Tensor) -> torch.Tensor:
    """This rank's shard of a sharded (DTensor) parameter or gradient; any other tensor itself."""
    to_local = getattr(tensor, "to_local", None)
    return to_local() if to_local is not None else tensor


class StorageTracker(TorchDispatchMode):
    """Live bytes by label, the peak of each phase and the labels' bytes at that peak."""

    def __init__(self) -> None:
        super().__init__()
        self.label = "parameters"  # what new storages are counted as (a module name, "optimizer state", ...)
        self.phase = "setup"
        self.live_bytes = 0
        self.by_label: dict[str, int] = defaultdict(int)
        self.phase_peak_bytes: dict[str, int] = {}
        self.phase_peak_labels: dict[str, dict[str, int]] = {}
        self._counted: dict[int, tuple[str, int]] = {}

    def start_phase(self, phase: str) -> None:
        """Count from here on as `phase`; a phase entered again (a second micro-batch) keeps its peak."""
        self.phase = phase
        if self.live_bytes > self.phase_peak_bytes.get(phase, -1):
            self.phase_peak_bytes[phase] = self.live_bytes
            self.phase_peak_labels[phase] = {k: v for k, v in self.by_label.items() if v}

    def count(self, tensor: torch.Tensor, label: str | None = None) -> None:
        """Count a tensor's storage once (parameters built before tracing, and every operator output)."""
        storage = local(tensor).untyped_storage()
        key = storage._cdata
        if key in self._counted:
            return
        name = label or self.label
        self._counted[key] = (name, 0)
        weakref.finalize(storage, self._free, key)
        self._resize(key, rounded_bytes(storage.nbytes()))

    def _resize(self, key: int, size: int) -> None:
        """Set a counted storage's size (a new one's, or one resized in place) and follow the peak."""
        name, old = self._counted[key]
        self._counted[key] = (name, size)
        self.live_bytes += size - old
        self.by_label[name] += size - old
        if self.live_bytes > self.phase_peak_bytes.get(self.phase, -1):
            self.phase_peak_bytes[self.phase] = self.live_bytes
            self.phase_peak_labels[self.phase] = {k: v for k, v in self.by_label.items() if v}

    def resized(self, storage: torch.UntypedStorage) -> None:
        """FSDP frees and refills its gathered parameters by resizing their storage in place
        (`storage.resize_(0)`), which no operator shows: `follow_resizes` calls this after each."""
        key = storage._cdata
        if key in self._counted:
            self._resize(key, rounded_bytes(storage.nbytes()))
        elif storage.nbytes():
            self._counted[key] = (self.label, 0)
            weakref.finalize(storage, self._free, key)
            self._resize(key, rounded_bytes(storage.nbytes()))

    def __enter__(self) -> StorageTracker:
        self._original_resize = torch.UntypedStorage.resize_
        original, tracker = self._original_resize, self

        def resize_(storage: torch.UntypedStorage, size: int) -> Any:
            out = original(storage, size)
            tracker.resized(storage)
            return out

        torch.UntypedStorage.resize_ = resize_  # type: ignore[method-assign, assignment]
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        torch.UntypedStorage.resize_ = self._original_resize  # type: ignore[method-assign]
        super().__exit__(*exc)

    def relabel(self, tensor: torch.Tensor, label: str) -> None:
        """Move a counted storage to another label (a gradient is created by backward, kept by the model)."""
        key = local(tensor).untyped_storage()._cdata
        if key not in self._counted:
            self.count(tensor, label)
            return
        old, size = self._counted[key]
        self.by_label[old] -= size
        self.by_label[label] += size
        self._counted[key] = (label, size)

    def _free(self, key: int) -> None:
        name, size = self._counted.pop(key)
        self.live_bytes -= size
        self.by_label[name] -= size

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.count(leaf)
        return out
