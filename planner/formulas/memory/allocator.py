"""Reserved over allocated: the caching allocator's slack, in bytes per GPU (the second statistic).

PyTorch's allocator (c10/cuda/CUDACachingAllocator.cpp at pytorch eb42ad6e) rounds every request up to 512 B
(kMinBlockSize), packs requests up to 1 MiB into 2 MiB segments (kSmallBuffer), serves 1-10 MiB requests from
20 MiB segments (kLargeBuffer) and rounds larger ones to 2 MiB (kRoundLarge). A freed block serves a later
request only when it is large enough, so the slack has two parts:
- a steady part, `fragmentation_frac` × allocated (10 % by default: `memory_inputs.DEFAULT_FRAGMENTATION_FRAC`,
  which also covers the rounding: 512 B and 2 MiB roundings are below 0.1 % of the tensors that set a peak);
- growth with sequence lengths that vary from step to step (unpacked batches): the activations and logits of a
  step scale with its length, and a longer step's requests do not fit in the blocks a shorter one freed, so new
  segments are mapped while the old ones stay cached. With lengths spread over a share s of the longest, the
  cached blocks of shorter steps can hold up to s of the longest step's activation bytes beside them:
  growth = s × (activations + logits at the peak). `expandable_segments:True` maps pages into one growing
  segment per stream, so freed pages are reused for longer requests (the allocator's Note [Expandable
  Segments]): no growth. An upper bound, not a measurement: the allocator also frees its cached blocks and
  retries before reporting out of memory, so a run near the limit grows less. Off (s = 0) by default.
"""

from __future__ import annotations

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.memory.memory_inputs import MemoryInputs


def growth_frac(seq_len_spread_frac: float, expandable_segments: bool) -> float:
    """The share of the transient bytes that varying lengths add to reserved memory (module docstring)."""
    return 0.0 if expandable_segments else float(seq_len_spread_frac)


def allocator_slack_bytes(p: MemoryInputs, allocated: FloatOrArray, transient: FloatOrArray) -> FloatOrArray:
    """Reserved − allocated: the steady slack plus the growth over `transient` (activations and logits)."""
    return p.fragmentation_frac * allocated + p.allocator_growth_frac * transient
