"""Plan search bookkeeping: the rows that fit, the constraints, the ranking, the Pareto frontier, the tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from planner.decide.sweep_grid import LayoutGrid
from planner.decide.sweep_types import Constraints
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import Recompute
from planner.formulas.memory.verdict import VERDICT_NAMES
from planner.formulas.operators.outputs import bound_by_words
from planner.formulas.units import SECONDS_PER_HOUR
from planner.resolve import Resolved
from planner.results import shown

# evaluate's output behind each objective, and the tie-breakers after it; equal figures then go to fewer GPUs
# and more memory headroom (a lower peak)
OBJECTIVE_COLUMNS = {
    "cost": "cost_usd",
    "wall_clock": "wall_clock_s",
    "energy": "energy_kwh",
    "co2e": "co2e_kg",
}
_TIE_BREAKS = {
    "cost": ("wall_clock_s",),
    "wall_clock": ("cost_usd",),
    "energy": ("cost_usd", "wall_clock_s"),
    "co2e": ("cost_usd", "wall_clock_s"),
}
_FIGURES = ("wall_clock_s", "cost_usd", "energy_kwh", "co2e_kg", "peak_bytes", "fit_verdict")


@dataclass(frozen=True)
class Kept:
    """The rows that fit: which GPU (index into the resolved list), which layout, and the ranking figures."""

    gpu_index: np.ndarray
    layout_index: np.ndarray
    figures: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.layout_index)

    @staticmethod
    def from_output(gpu_index: int, layout_index: np.ndarray, out: dict[str, Any], fits: np.ndarray) -> Kept:
        def picked(name: str) -> np.ndarray:
            return np.broadcast_to(np.asarray(out[name], dtype=float), fits.shape)[fits]

        return Kept(
            np.full(len(layout_index), gpu_index, dtype=np.int32),
            layout_index.astype(np.int64),
            {name: picked(name) for name in _FIGURES},
        )

    @staticmethod
    def concat(parts: Sequence[Kept]) -> Kept:
        if not parts:
            empty = np.empty(0)
            return Kept(empty.astype(np.int32), empty.astype(np.int64), {n: empty for n in _FIGURES})
        return Kept(
            np.concatenate([p.gpu_index for p in parts]),
            np.concatenate([p.layout_index for p in parts]),
            {name: np.concatenate([p.figures[name] for p in parts]) for name in _FIGURES},
        )


def feasible_mask(kept: Kept, constraints: Constraints) -> np.ndarray:
    """Rows that meet the deadline and the budget and have a finite objective (an unpriced GPU has no cost)."""
    mask = np.isfinite(kept.figures[OBJECTIVE_COLUMNS[constraints.objective]])
    if constraints.deadline_h is not None:
        mask &= kept.figures["wall_clock_s"] <= constraints.deadline_h * SECONDS_PER_HOUR
    if constraints.budget_usd is not None:
        mask &= kept.figures["cost_usd"] <= constraints.budget_usd  # NaN cost fails a budget
    return mask


def rank_order(
    kept: Kept, feasible: np.ndarray, objective: str, grid: LayoutGrid, top_n: int, tight_last: bool = True
) -> np.ndarray:
    """The best `top_n` feasible rows, best first; with `tight_last` every plan whose memory verdict is "fits"
    before any "tight" one; ties go to the tie-breakers, then fewer GPUs, then a lower peak, then layout
    order. Only rows that can reach the top (a partial sort per verdict) are fully sorted."""
    rows = np.flatnonzero(feasible)
    keys = [OBJECTIVE_COLUMNS[objective], *_TIE_BREAKS[objective]]
    verdict = kept.figures["fit_verdict"][rows] if tight_last else np.zeros(len(rows))
    rows = _can_reach_top(rows, kept.figures[keys[0]][rows], verdict, top_n)
    verdict = kept.figures["fit_verdict"][rows] if tight_last else np.zeros(len(rows))
    columns = [np.nan_to_num(kept.figures[k][rows], nan=np.inf) for k in keys]
    n_gpus = grid.columns["n_gpus"][kept.layout_index[rows]]
    if "n_generation_gpus" in grid.columns:  # fewer GPUs in all: the generating ones count too
        n_gpus = n_gpus + grid.columns["n_generation_gpus"][kept.layout_index[rows]]
    peak = kept.figures["peak_bytes"][rows]
    # lexsort sorts by the last key first
    order = np.lexsort(
        (kept.layout_index[rows], kept.gpu_index[rows], peak, n_gpus, *reversed(columns), verdict)
    )
    return rows[order][:top_n]


def _can_reach_top(rows: np.ndarray, primary: np.ndarray, verdict: np.ndarray, top_n: int) -> np.ndarray:
    """The rows that can be among the best `top_n` when better verdicts come first: every verdict group's
    rows up to its share of the places left, ties at the cut kept in."""
    if not len(rows) > top_n > 0:
        return rows
    keep = np.zeros(len(rows), dtype=bool)
    left = top_n
    for code in np.unique(verdict):  # FITS (0) before TIGHT (1)
        group = np.flatnonzero(verdict == code)
        if left <= 0:
            break
        if len(group) > left:
            values = primary[group]
            group = group[values <= np.partition(values, left - 1)[left - 1]]
        keep[group] = True
        left -= len(group)
    return rows[keep]


# Wall-clock buckets of the frontier's pre-filter: 65,536 left 233 of the Mixtral 8x7B large search's 4.2 M
# feasible rows for the exact sweeps (4,096 left 28 k) in 0.08 s.
FRONTIER_BUCKETS = 65_536


def pareto_order(kept: Kept, feasible: np.ndarray) -> np.ndarray:
    """Feasible rows that no other row beats on both wall clock and cost, fastest first.

    A sweep in order of wall clock keeps each row cheaper than every faster one; rows tied on wall clock can
    slip through that sweep, so the few survivors are swept again with cost breaking the ties.
    """
    rows = np.flatnonzero(feasible & np.isfinite(kept.figures["cost_usd"]))
    rows = _not_beaten_by_a_faster_bucket(rows, kept.figures["wall_clock_s"], kept.figures["cost_usd"])
    candidates = _cheaper_than_all_faster(rows, kept.figures["wall_clock_s"], kept.figures["cost_usd"], None)
    return _cheaper_than_all_faster(candidates, kept.figures["wall_clock_s"], kept.figures["cost_usd"], kept)


def _not_beaten_by_a_faster_bucket(rows: np.ndarray, wall: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """`rows` less those a row of a strictly faster wall-clock bucket costs no more than: a necessary condition
    for the frontier, so the exact sweeps after it see every frontier row, but millions of rows shrink to a few
    hundred before they are sorted (a stable sort of 4 M rows took 1.1 s of a 5 s MoE search).

    Buckets split [fastest, slowest] evenly; (w − lo)/(hi − lo)·(B − 1) rounded down never decreases as w grows
    (each IEEE operation is monotonic), so a lower bucket is a strictly faster wall clock. Rows without a finite
    wall clock are left to the sweeps."""
    finite = np.isfinite(wall[rows])
    timed = rows[finite]
    if len(timed) < FRONTIER_BUCKETS:
        return rows
    w, c = wall[timed], cost[timed]
    lo, hi = float(w.min()), float(w.max())
    if not hi > lo:
        return rows
    bucket = ((w - lo) / (hi - lo) * (FRONTIER_BUCKETS - 1)).astype(np.int64)
    cheapest = np.full(FRONTIER_BUCKETS, np.inf)
    np.minimum.at(cheapest, bucket, c)
    cheapest_faster = np.concatenate([[np.inf], np.minimum.accumulate(cheapest)[:-1]])
    keep = np.ones(len(rows), dtype=bool)
    keep[finite] = c < cheapest_faster[bucket]
    return rows[keep]


def _cheaper_than_all_faster(
    rows: np.ndarray, wall: np.ndarray, cost: np.ndarray, kept: Kept | None
) -> np.ndarray:
    if kept is None:
        order = np.argsort(wall[rows], kind="stable")
    else:
        order = np.lexsort((kept.layout_index[rows], cost[rows], wall[rows]))
    cost_sorted = cost[rows][order]
    cheapest_before = np.concatenate([[np.inf], np.minimum.accumulate(cost_sorted)[:-1]])
    return rows[order[cost_sorted < cheapest_before]]


def result_frame(
    resolved: Sequence[Resolved], grid: LayoutGrid, kept: Kept, indices: np.ndarray
) -> pl.DataFrame:
    """Full figures for the chosen rows, in the given order, evaluated again by the same `evaluate`."""
    records: list[dict[str, Any]] = [{} for _ in indices]
    for gpu_index in np.unique(kept.gpu_index[indices]):
        where = np.flatnonzero(kept.gpu_index[indices] == gpu_index)
        one = resolved[int(gpu_index)]
        layout = grid.take(kept.layout_index[indices[where]])
        generating = "n_generation_gpus" in layout
        out = evaluate(one.columns.replace(**layout))
        figures = shown(out, _FLOAT + (GENERATION_FIGURES if generating else ()))
        verdicts = np.broadcast_to(np.asarray(out["fit_verdict"], dtype=float), len(where))
        for name in (
            *OFFLOAD_COLUMNS,
            "ep",
            "hybrid_shard",
        ):  # the scenario's own unless the grid varies them
            layout.setdefault(name, np.full(len(where), float(getattr(one.columns.layout, name))))
        for i, position in enumerate(where):
            records[position] = {
                **_record(str(one.gpu["name"]), layout, figures, i),
                "bound_by": _bound(one, layout, out, i),
                "fit_verdict": VERDICT_NAMES[int(verdicts[i])],
            }
    schema = {**_SCHEMA, **(_GENERATION_SCHEMA if "n_generation_gpus" in grid.columns else {})}
    frame = pl.DataFrame(records, schema=schema, orient="row") if records else pl.DataFrame(schema=schema)
    return frame.with_columns(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias("rank")).select(
        "rank", *schema
    )


def _bound(one: Resolved, layout: dict[str, np.ndarray], out: dict[str, Any], i: int) -> str:
    """Why the plan's step takes what it takes: its largest part in words (planner.formulas.operators.outputs)."""
    tp, cp, pp = (
        _value(layout.get(name, getattr(one.columns.layout, name)), i) for name in ("tp", "cp", "pp")
    )
    per_node = float(one.columns.layout.n_gpus_per_node)
    return bound_by_words(int(_value(out["bound_by_code"], i)), tp, cp, pp, per_node)


def _value(values: Any, i: int) -> float:
    return float(np.asarray(values, dtype=float).reshape(-1)[i] if np.ndim(values) else values)


def _record(gpu: str, layout: dict[str, np.ndarray], figures: dict[str, Any], i: int) -> dict[str, Any]:
    micro_batch, accum, dp = (layout[name][i] for name in ("micro_batch_seqs", "n_micro_batches", "dp"))
    return {
        "gpu": gpu,
        **{name: int(layout[name][i]) for name in ("n_gpus", "tp", "pp", "cp")},
        "pp_virtual_stages": int(layout["n_virtual_stages"][i]),
        "ep": int(layout["ep"][i]),
        **{name: int(layout[name][i]) for name in ("dp", "zero_stage")},
        "recompute": Recompute(int(layout["recompute"][i])).key,
        "micro_batch": int(micro_batch),
        "grad_accum": int(accum),
        "global_batch_sequences": int(micro_batch * accum * dp),
        **{name: bool(layout[name][i]) for name in (*OFFLOAD_COLUMNS, "hybrid_shard")},
        **{name: _value(values, i) for name, values in figures.items()},
        **({"generation_gpus": int(layout["n_generation_gpus"][i])} if "n_generation_gpus" in layout else {}),
    }


OFFLOAD_COLUMNS = ("offload_optimizer", "offload_params")  # layout columns an offload pass varies
_INT = (
    "n_gpus", "tp", "pp", "cp", "pp_virtual_stages", "ep", "dp", "zero_stage", "micro_batch", "grad_accum",
    "global_batch_sequences",
)  # fmt: skip
# the frame's figures, in the units of the table of outputs (planner.results.OUTPUTS)
_FLOAT = (
    "wall_clock_h",
    "cost_usd",
    "energy_kwh",
    "co2e_kg",
    "peak_gib_per_device",
    "peak_gib_high",  # the device total at the high end of the memory model's error band
    "vram_gib",
    "mfu",
    "mfu_low",  # the end-to-end band at the efficiency preset's ends; it brackets `mfu`
    "mfu_high",
    "tokens_per_s",
    "device_hours",
    "usd_per_gpu_hour",
    "wall_clock_h_low",
    "wall_clock_h_high",
    "cost_usd_low",
    "cost_usd_high",
)
# PPO/GRPO searches (planner.decide.sweep_generation) add the dedicated generation GPUs (0: colocated) and the
# share of the time spent generating; the cost already counts every GPU, training and generating.
GENERATION_FIGURES = ("generation_frac",)
_GENERATION_SCHEMA: dict[str, Any] = {"generation_gpus": pl.Int64, "generation_frac": pl.Float64}
_SCHEMA: dict[str, Any] = {
    "gpu": pl.String,
    **dict.fromkeys(_INT[:8], pl.Int64),
    "recompute": pl.String,
    **dict.fromkeys(_INT[8:], pl.Int64),
    **dict.fromkeys(OFFLOAD_COLUMNS, pl.Boolean),
    "hybrid_shard": pl.Boolean,  # HSDP: ZeRO shards inside a node, replicas across nodes
    **dict.fromkeys(_FLOAT, pl.Float64),
    "fit_verdict": pl.String,  # "fits" or "tight — may run out of memory" (planner.formulas.memory.verdict)
    "bound_by": pl.String,
}
