"""Plan search: every layout × GPU type, evaluated by the one `planner.evaluate`, filtered and ranked.

For each GPU type the scenario is resolved once (as `estimate` would resolve it on that GPU), the layout grid
(`planner.decide.sweep_grid`) is broadcast over those columns in chunks, and only the rows that fit in memory are
kept, with the four figures the objectives and constraints need. The winners are evaluated again in full
for the result tables, so a result row and `estimate(scenario_for(row, base))` give the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from planner.catalogue.catalog import Catalogs
from planner.decide.sweep_grid import LayoutGrid, SearchSpace, layout_grid
from planner.decide.sweep_rank import (
    Kept,
    feasible_mask,
    pareto_order,
    rank_order,
    result_frame,
)
from planner.decide.sweep_types import OBJECTIVES, Constraints, Objective, SearchResult
from planner.decide.sweep_words import explain
from planner.errors import PlannerError
from planner.evaluate import evaluate
from planner.inputs.scenario import Scenario
from planner.resolve import Resolved, resolve

__all__ = [
    "OBJECTIVES",
    "Constraints",
    "Objective",
    "SearchResult",
    "SearchSpace",
    "priced_gpus",
    "scenario_for",
    "search",
]

Progress = Callable[[int, int], None]  # (rows evaluated so far, rows in the whole search)
# Measured here (bench/sweep_bench.py's large search, CPU time, one core): 16k-32k rows per chunk evaluate
# 2.0-2.2 M rows/s, 100k rows 1.4 M/s, 4k rows 1.5 M/s. A 20k-row column is 160 kB, so the working set of
# one formula step stays in the core's L2 cache and freed buffers are reused instead of freshly mapped.
DEFAULT_CHUNK_ROWS = 20_000
# Figures typed for the scenario's own GPU; planner/decide/compare.py applies the same rule (OVERRIDE_FIELDS).
GPU_SPECIFIC_OVERRIDES = ("peak_tflops", "vram_gib", "usd_per_gpu_hour")
NO_SHAPE_NOTE = (
    "The model has no shape (a bare parameter count), so its peak memory is unknown and no configuration can be "
    "shown to fit; choose a preset or import a config.json."
)


def priced_gpus(base: Scenario, catalogs: Catalogs) -> tuple[str, ...]:
    """GPUs with a catalogue price in the scenario's snapshot (or an earlier one), catalogue order."""
    names = catalogs.gpu_names()
    return tuple(name for name in names if catalogs.price(name, base.snapshot or None) is not None)


def _on_gpu(base: Scenario, gpu_name: str, base_gpu_name: str | None) -> Scenario:
    """The scenario on another GPU. Figures typed for the scenario's own GPU (peak, VRAM, price quote)
    describe that GPU only, so on any other they give way to the catalogue's."""
    if gpu_name == base_gpu_name:
        return base.updated(gpu=gpu_name)
    return base.updated(gpu=gpu_name, **dict.fromkeys(GPU_SPECIFIC_OVERRIDES))


def _base_gpu_name(base: Scenario, cats: Catalogs) -> str | None:
    try:
        return str(cats.gpu(base.gpu)["name"])
    except ValueError:
        return None


def scenario_for(row: Mapping[str, Any], base: Scenario, catalogs: Catalogs) -> Scenario:
    """The full scenario of a result row: the base scenario on the row's GPU with the row's layout."""
    on_gpu = _on_gpu(base, str(row["gpu"]), _base_gpu_name(base, catalogs))
    return on_gpu.updated(
        n_gpus=int(row["n_gpus"]),
        tp=int(row["tp"]),
        pp=int(row["pp"]),
        zero_stage=int(row["zero_stage"]),
        recompute=str(row["recompute"]),
        micro_batch=int(row["micro_batch"]),
        grad_accum=int(row["grad_accum"]),
    )


def _resolve_gpus(
    base: Scenario, names: tuple[str, ...], cats: Catalogs
) -> tuple[list[Resolved], dict[str, str]]:
    base_name = _base_gpu_name(base, cats)
    canonical = [str(cats.gpu(n)["name"]) for n in names]
    resolved, skipped = [], {}
    for name in dict.fromkeys(canonical):
        one = resolve(_on_gpu(base, name, base_name), cats)
        if np.isnan(one.columns.gpu.peak_flops_per_s):
            skipped[name] = f"no peak rate for {base.precision} in the catalogue"
            continue
        resolved.append(one)
    return resolved, skipped


def _evaluate_all(
    resolved: list[Resolved], grid: LayoutGrid, chunk_rows: int, progress: Progress | None
) -> tuple[Kept, int]:
    """Evaluate every (GPU, layout) row; keep those that fit, with the figures ranking needs."""
    total, done = len(resolved) * len(grid), 0
    parts: list[Kept] = []
    for gpu_index, one in enumerate(resolved):
        for start in range(0, len(grid), chunk_rows):
            rows = slice(start, min(start + chunk_rows, len(grid)))
            # Without the figures with failures: ranking needs none, and the shown plans are evaluated again.
            out = evaluate(one.columns.replace(**grid.take(rows)), failures=False)
            fits = np.asarray(out["peak_bytes"] <= one.columns.gpu.vram_bytes)  # NaN (no shape) never fits
            layout_index = np.arange(rows.start, rows.stop)[fits]
            parts.append(Kept.from_output(gpu_index, layout_index, out, fits))
            done += rows.stop - rows.start
            if progress is not None:
                progress(done, total)
    return Kept.concat(parts), done


def search(
    base: Scenario,
    constraints: Constraints | None = None,
    space: SearchSpace | None = None,
    *,
    catalogs: Catalogs,
    top_n: int = 10,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
) -> SearchResult:
    """The best configurations for the scenario's model, data and method under `constraints`."""
    if top_n < 1:
        raise PlannerError("top_n", "must be >= 1", value=top_n, allowed=">= 1")
    started = time.perf_counter()
    constraints = constraints or Constraints()
    space = space or SearchSpace()
    cats = catalogs
    model = resolve(base, cats).columns.model
    shaped = model.has_shape > 0
    names = constraints.gpus or priced_gpus(base, cats)
    resolved, skipped = _resolve_gpus(base, names, cats)
    grid = layout_grid(
        base,
        space,
        constraints.max_gpus,
        float(model.n_layers) if shaped else None,
        float(model.n_heads) if shaped else None,
    )
    kept, n_evaluated = _evaluate_all(resolved, grid, max(1, chunk_rows), progress)
    feasible = feasible_mask(kept, constraints)
    order = rank_order(kept, feasible, constraints.objective, grid, top_n)
    frontier = pareto_order(kept, feasible)
    gpus = tuple(str(one.gpu["name"]) for one in resolved)
    top = result_frame(resolved, grid, kept, order)
    frontier_frame = result_frame(resolved, grid, kept, frontier)
    notes = [] if shaped else [NO_SHAPE_NOTE]
    return SearchResult(
        top=top,
        frontier=frontier_frame,
        reason=explain(top, frontier_frame, kept, constraints),
        constraints=constraints,
        gpus=gpus,
        skipped_gpus=skipped,
        target_batch_sequences=grid.target_sequences,
        n_candidates=grid.n_candidates * len(resolved),
        n_evaluated=n_evaluated,
        n_fit=len(kept),
        n_feasible=int(np.count_nonzero(feasible)),
        elapsed_s=time.perf_counter() - started,
        notes=notes,
    )
