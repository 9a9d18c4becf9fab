"""One pass of the plan search: every (GPU, layout) row evaluated, the rows that fit kept with their figures.

Memory first, and only once for GPUs that share it. The memory model reads the model, the recipe, the
workload and the layout, never the GPU, except a paged optimizer, whose states page out as VRAM runs short
(`planner.formulas.memory.paging.memory_with_paging`). So GPUs whose memory inputs are equal (most of a catalogue:
every GPU type runs the same layouts of the same model) share one memory evaluation per chunk, and each
compares the peak with its own VRAM. The rest of `evaluate` (compute, communication, time, cost, energy)
runs per GPU, on the rows that fit that GPU. Results are bit-identical to evaluating each GPU on its own
(tests/test_sweep_fast_path.py): the same formulas on the same inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from planner.columns import memory_inputs
from planner.decide.sweep_grid import LayoutGrid
from planner.decide.sweep_rank import Kept
from planner.evaluate import Memory, device_peak_bytes, evaluate, policy_memory
from planner.post.step import is_sft
from planner.resolve import Resolved

Progress = Callable[[int, int], None]  # (rows evaluated so far, rows in the whole search)
Closest = tuple[float, int, int]  # (bytes over the device memory, GPU index, layout index)
# Picking the fitting rows out of a chunk (every memory column and layout column) costs about a sixth of
# evaluating the rest of a row (measured on the Mixtral 8x7B large search: ~0.15 vs ~0.85 µs per row), so
# when at least 80 % of a chunk fits, the whole chunk is evaluated and the misses dropped afterwards.
WHOLE_CHUNK_FIT_FRAC = 0.8


@dataclass(frozen=True)
class Pass:
    """One evaluation of a grid: the rows that fit, and the closest miss (least bytes over the device memory)."""

    grid: LayoutGrid
    kept: Kept
    n_evaluated: int
    closest: Closest | None


def evaluate_all(
    resolved: list[Resolved], grid: LayoutGrid, chunk_rows: int, progress: Progress | None
) -> Pass:
    """Evaluate every (GPU, layout) row; keep those that fit, with the figures ranking needs.

    Chunk by chunk (`chunk_rows` layouts), each group of GPUs sharing a memory model evaluated together. The
    kept rows come out GPU by GPU, in layout order, as a GPU-by-GPU loop would give them."""
    total, done = len(resolved) * len(grid), 0
    parts: list[list[Kept]] = [[] for _ in resolved]
    closest: Closest | None = None
    groups = memory_groups(resolved)
    for start in range(0, len(grid), chunk_rows):
        rows = slice(start, min(start + chunk_rows, len(grid)))
        taken = grid.take(rows)
        for group in groups:
            for gpu_index, over, kept in _group_rows(resolved, group, grid, taken, rows):
                if len(kept):
                    parts[gpu_index].append(kept)
                closest = _closer(closest, over, gpu_index, rows.start)
                done += rows.stop - rows.start
                if progress is not None:
                    progress(done, total)
    return Pass(grid, Kept.concat([kept for per_gpu in parts for kept in per_gpu]), done, closest)


def memory_groups(resolved: list[Resolved]) -> list[list[int]]:
    """Indices of the GPUs whose memory model has the same inputs, first-seen order. A paged optimizer's
    states depend on the VRAM, so it groups by VRAM as well; post-training rows are evaluated whole (their
    generation phase reads the GPU), one GPU at a time."""
    if not resolved or not is_sft(resolved[0].columns):
        return [[i] for i in range(len(resolved))]
    groups: list[tuple[list[Any], list[int]]] = []
    for index, one in enumerate(resolved):
        key = _memory_key(one)
        for seen, members in groups:
            if _same_values(seen, key):
                members.append(index)
                break
        else:
            groups.append((key, [index]))
    return [members for _, members in groups]


def _memory_key(one: Resolved) -> list[Any]:
    inputs = memory_inputs(one.columns)
    key = [getattr(inputs, field.name) for field in fields(inputs)]
    if np.any(np.asarray(one.columns.recipe.paged_optimizer) > 0):
        key.append(one.columns.gpu.vram_bytes)
    return key


def _same_values(a: list[Any], b: list[Any]) -> bool:
    """Equal element by element, NaN equal to NaN (a bare parameter count's unknown shape)."""
    return len(a) == len(b) and all(
        np.shape(x) == np.shape(y) and bool(np.array_equal(x, y, equal_nan=True))
        for x, y in zip(a, b, strict=True)
    )


def _group_rows(
    resolved: list[Resolved], group: list[int], grid: LayoutGrid, taken: dict[str, np.ndarray], rows: slice
):
    """(GPU index, bytes over its memory per row, its kept rows) for each GPU of one memory group and chunk."""
    first = resolved[group[0]].columns.replace(**taken)
    n_rows = rows.stop - rows.start
    if not is_sft(first):  # one GPU per group (memory_groups)
        over, kept = _whole_rows(first, rows, group[0], "n_generation_gpus" in grid.columns)
        yield group[0], over, kept
        return
    memory = policy_memory(first)
    peak = np.broadcast_to(
        np.asarray(device_peak_bytes(first, memory[1]), dtype=float).reshape(-1), (n_rows,)
    )
    for gpu_index in group:
        one = resolved[gpu_index]
        over = peak - one.columns.gpu.vram_bytes
        fits = over <= 0  # NaN (no shape) never fits
        layout_index = np.arange(rows.start, rows.stop)[fits]
        if not len(layout_index):
            yield gpu_index, over, Kept.concat([])
            continue
        if len(layout_index) >= WHOLE_CHUNK_FIT_FRAC * n_rows:  # the rest costs less than picking the rows
            columns, own, picked = (
                (first if gpu_index == group[0] else one.columns.replace(**taken)),
                memory,
                fits,
            )
        else:
            columns, own = one.columns.replace(**grid.take(layout_index)), _memory_rows(memory, fits)
            picked = np.ones(len(layout_index), dtype=bool)
        out = evaluate(columns, everything=False, memory=own)
        yield gpu_index, over, Kept.from_output(gpu_index, layout_index, out, picked)


def _whole_rows(columns, rows: slice, gpu_index: int, generation: bool) -> tuple[np.ndarray, Kept]:  # type: ignore[no-untyped-def]
    """Post-training: `evaluate` whole, then filtered; with generation GPUs searched (PPO/GRPO) the engine
    must hold a sequence too."""
    out = evaluate(columns, everything=False)
    over = np.asarray(out["peak_bytes"] - columns.gpu.vram_bytes, dtype=float).reshape(-1)
    fits = over <= 0  # NaN (no shape) never fits
    if generation:
        fits &= np.asarray(out["fits_vram"], dtype=float).reshape(-1) > 0
    return over, Kept.from_output(gpu_index, np.arange(rows.start, rows.stop)[fits], out, fits)


def _memory_rows(memory: Memory, keep: np.ndarray) -> Memory:
    """The memory inputs and breakdown of the kept rows only (a column that is one value stays one). The
    mask becomes row numbers once: taking by index skips a boolean mask's count for every column."""
    index = np.flatnonzero(keep)

    def rows(item):  # type: ignore[no-untyped-def]
        changes = {}
        for field in fields(item):
            value = getattr(item, field.name)
            if np.ndim(value):
                changes[field.name] = np.broadcast_to(value, keep.shape).take(index)
        return replace(item, **changes)

    return rows(memory[0]), rows(memory[1])


def _closer(closest: Closest | None, over: np.ndarray, gpu_index: int, first_row: int) -> Closest | None:
    """The smaller miss of `closest` and this chunk's least positive overshoot; ties go to the lower GPU
    index, then the lower layout, as a GPU-by-GPU loop keeps its first find."""
    misses = np.where(over > 0, over, np.inf)  # NaN (no shape) is no miss to report either
    if not misses.size:
        return closest
    at = int(np.argmin(misses))
    if not math.isfinite(misses[at]):
        return closest
    found = (float(misses[at]), gpu_index, first_row + at)
    return found if closest is None or found < closest else closest
