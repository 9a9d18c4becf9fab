"""Plan search: every layout × GPU type, evaluated by the one `planner.evaluate`, filtered and ranked.

For each GPU type the scenario is resolved once (as `estimate` would resolve it on that GPU), the layout grid
(`planner.decide.sweep_grid`) is broadcast over those columns in chunks, and only the rows that fit in memory are
kept, with the four figures the objectives and constraints need (`planner.decide.sweep_pass`, which evaluates
the memory model once for all GPUs that share it). The winners are evaluated again in full
for the result tables, so a result row and `estimate(scenario_for(row, base))` give the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.catalogue.catalog import Catalogs, precision_problem
from planner.decide.sweep_generation import searches_generation, split_pairs, training_space, with_generation
from planner.decide.sweep_grid import SearchSpace
from planner.decide.sweep_pass import Pass, Progress, evaluate_all
from planner.decide.sweep_rank import Kept, feasible_mask, pareto_order, rank_order, result_frame
from planner.decide.sweep_space import fixed_words, freed, mode_grid, offload_passes
from planner.decide.sweep_types import OBJECTIVES, Constraints, Objective, SearchResult
from planner.decide.sweep_words import explain, fallback_note, freed_words, shortfall_words
from planner.errors import PlannerError
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

# Measured here (bench/sweep_bench.py's large search, CPU time, one core, GPUs sharing one memory evaluation
# per chunk: planner.decide.sweep_pass): 20k rows per chunk evaluate 1.93 M rows/s, 40k 2.32-2.35 M, 60k 2.26 M,
# 80k 2.42 M but twice the buffers. A 40k-row column is 320 kB, so one formula step's working set stays near
# the core's L2 cache and freed buffers are reused instead of freshly mapped.
DEFAULT_CHUNK_ROWS = 40_000
# Figures typed for the scenario's own GPU; planner/decide/compare.py applies the same rule (OVERRIDE_FIELDS).
GPU_SPECIFIC_OVERRIDES = ("peak_tflops", "vram_gib", "usd_per_gpu_hour", "power_limit_w")
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
        cp=int(row.get("cp", 1)),  # a row from before context parallelism was searched: none
        pp_virtual_stages=int(row.get("pp_virtual_stages", 1)),  # a row from before the column: 1F1B
        ep=int(row.get("ep", 1)),  # a row from before expert parallelism: every GPU holds every expert
        zero_stage=int(row["zero_stage"]),
        hybrid_shard=bool(row.get("hybrid_shard", base.hybrid_shard)),  # searched since HSDP became a choice
        recompute=str(row["recompute"]),
        micro_batch=int(row["micro_batch"]),
        grad_accum=int(row["grad_accum"]),
        offload_optimizer=bool(row.get("offload_optimizer", base.offload_optimizer)),
        offload_params=bool(row.get("offload_params", base.offload_params)),
        generation_gpus=int(row.get("generation_gpus", base.generation_gpus)),  # searched for PPO/GRPO
    )


def _resolve_gpus(
    base: Scenario, names: tuple[str, ...], cats: Catalogs
) -> tuple[list[Resolved], dict[str, str]]:
    base_name = _base_gpu_name(base, cats)
    canonical = [str(cats.gpu(n)["name"]) for n in names]
    resolved, skipped = [], {}
    for name in dict.fromkeys(canonical):
        refused = precision_problem(cats.gpu(name), base.precision)
        if refused is not None:  # the one rule of planner.catalogue.precisions, said as resolve says it
            skipped[name] = f"{refused.problem}; it runs {refused.allowed}"
            continue
        resolved.append(resolve(_on_gpu(base, name, base_name), cats))
    return resolved, skipped


def search(
    base: Scenario,
    constraints: Constraints | None = None,
    space: SearchSpace | None = None,
    *,
    catalogs: Catalogs,
    top_n: int = 10,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Progress | None = None,
    explain_misses: bool = True,
) -> SearchResult:
    """The best configurations for the scenario's model, data and method under `constraints`.

    `explain_misses`: when nothing is found, search again with each fixed choice freed to say which one
    excludes everything (off for those searches themselves, so they never multiply)."""
    if top_n < 1:
        raise PlannerError("top_n", "must be >= 1", value=top_n, allowed=">= 1")
    started = time.perf_counter()
    constraints = constraints or Constraints()
    space = space or SearchSpace()
    cats = catalogs
    base_resolved = resolve(base, cats)
    model = base_resolved.columns.model
    n_experts = float(base_resolved.shape.n_experts) if base_resolved.shape is not None else None
    shaped = model.has_shape > 0
    names = constraints.gpus or priced_gpus(base, cats)
    resolved, skipped = _resolve_gpus(base, names, cats)
    shape = (float(model.n_layers), float(model.n_heads)) if shaped else (None, None)
    seq_len = float(base_resolved.columns.workload.seq_len_tokens)  # context parallelism splits it
    first_mode, fallback_modes = offload_passes(base, space)

    pairs = split_pairs(base, space, constraints.max_gpus) if searches_generation(base) else None

    def one_pass(modes: tuple[tuple[bool, bool], ...]) -> Pass:
        layouts = space if pairs is None else training_space(space, pairs)
        grid = mode_grid(base, layouts, modes, constraints.max_gpus, shape[0], shape[1], n_experts, seq_len)
        if pairs is not None:  # PPO/GRPO: each layout colocated or beside dedicated generation GPUs
            grid = with_generation(grid, pairs, base)
        return evaluate_all(resolved, grid, max(1, chunk_rows), progress)

    passes = [one_pass((first_mode,))]
    if fallback_modes and not feasible_mask(passes[0].kept, constraints).any():
        passes.append(one_pass(fallback_modes))  # offload only when nothing else meets the constraints
    chosen = _chosen(passes, constraints)
    kept, grid = chosen.kept, chosen.grid
    feasible = feasible_mask(kept, constraints)
    order = rank_order(kept, feasible, constraints.objective, grid, top_n, constraints.tight_last)
    frontier = pareto_order(kept, feasible)
    top = result_frame(resolved, grid, kept, order)
    frontier_frame = result_frame(resolved, grid, kept, frontier)
    notes = [] if shaped else [NO_SHAPE_NOTE]
    if len(passes) > 1:
        notes.append(fallback_note(found=bool(top.height)))
    reason = explain(top, frontier_frame, kept, constraints, space)
    if not resolved and skipped:  # every GPU was left out: say why instead of "nothing fits"
        reason = f"No GPU searched can run this plan: {'; '.join(skipped.values())}."
    elif not top.height and explain_misses:
        reason = " ".join([reason, *_why_nothing(base, constraints, space, passes, resolved, cats)])
    return SearchResult(
        top=top,
        frontier=frontier_frame,
        reason=reason,
        constraints=constraints,
        gpus=tuple(str(one.gpu["name"]) for one in resolved),
        skipped_gpus=skipped,
        target_batch_sequences=grid.target_sequences,
        n_candidates=sum(p.grid.n_candidates for p in passes) * len(resolved),
        n_evaluated=sum(p.n_evaluated for p in passes),
        n_fit=sum(len(p.kept) for p in passes),
        n_feasible=int(np.count_nonzero(feasible)),
        elapsed_s=time.perf_counter() - started,
        notes=notes,
        offload_explored=len(passes) > 1,
        fixed_choices=fixed_words(space),
    )


def _chosen(passes: list[Pass], constraints: Constraints) -> Pass:
    """The offload pass when it found what the first did not (a feasible plan, or at least one that fits)."""
    first, last = passes[0], passes[-1]
    if feasible_mask(last.kept, constraints).any() or (not len(first.kept) and len(last.kept)):
        return last
    return first


def _why_nothing(
    base: Scenario,
    constraints: Constraints,
    space: SearchSpace,
    passes: list[Pass],
    resolved: list[Resolved],
    cats: Catalogs,
) -> list[str]:
    """Sentences after "nothing meets the constraints": the smallest memory shortfall when nothing fits, and
    each fixed choice that, freed alone, lets plans through (a search per fixed choice, only in this case)."""
    words = []
    misses = [(p.closest, p.grid) for p in passes if p.closest is not None]
    if not any(len(p.kept) for p in passes) and misses:
        (over, gpu_index, layout_index), grid = min(misses, key=lambda miss: miss[0][0])  # type: ignore[index]
        one = Kept(np.array([gpu_index]), np.array([layout_index]), {})
        row = result_frame(resolved, grid, one, np.array([0])).row(0, named=True)
        words.append(shortfall_words(row, over))
    names = [name for name, _ in space.fixed]
    if names:
        opened = {}
        for name in names:
            freer = freed(base, space, name)
            again = search(base, constraints, freer, catalogs=cats, top_n=1, explain_misses=False)
            if again.top.height:
                opened[name] = again.top.row(0, named=True)
        words.append(freed_words(space, opened))
    return words
