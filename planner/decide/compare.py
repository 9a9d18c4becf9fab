"""Every catalogue GPU under the same scenario, side by side, in one pass over `planner.evaluate`.

Each GPU contributes its own columns (`resolve.gpu_columns`: peak, memory, power, links, utilisation and price
band); the model, data and layout columns are the scenario's. The rows are a grid of GPU × candidate GPU count
(the scenario's own count among them), so the comparison and "the fewest GPUs of this type that fit" come from
ONE `evaluate` call — the same function the single estimate runs.

Overrides entered for the scenario's GPU (a price quote, peak TFLOP/s, VRAM) describe that GPU only, so every
other GPU is evaluated with its catalogue figures; the MFU override stays on every GPU (it is a fraction of
each GPU's own peak, not a property of one card).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from planner.catalogue.catalog import Catalogs
from planner.columns import Columns, GpuColumns, map_columns, stack
from planner.decide.bound_by import bound_by_rows
from planner.decide.sheet_multimodal import compare_columns
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import PEAK_PHASE_NAMES
from planner.formulas.memory.verdict import verdict_names
from planner.inputs.scenario import Scenario
from planner.resolve import GpuProvenance, gpu_columns, resolve
from planner.results import shown

# Largest GPU count searched for "fewest that fit"; the same ceiling as the scaling view (planner/decide/explore.py).
MAX_GPUS = 4096
EXACT_NODES = 32  # up to 32 nodes every node count is tried; past it the grid thins (candidate_gpu_counts)
STEPS_PER_DOUBLING = 8
OVERRIDE_FIELDS = ("usd_per_gpu_hour", "peak_tflops", "vram_gib", "power_limit_w")
NO_RATE, NO_PRICE, YOUR_FIGURES = "no rate", "no price", "your overrides"
# A GPU without a rate at the scenario's precision cannot run it (planner.catalogue.precisions): its status
# says so instead of a figure, e.g. "no rate: cannot run fp8_mixed".
CANNOT_RUN = "cannot run"
# The frame's figures, in the units of the table of outputs (planner.results.OUTPUTS); `memory_gib` keeps the
# catalogue's column name for the GPU's memory.
FIGURES = (
    "memory_gib",
    "peak_tflops",
    "peak_gib_per_device",
    "peak_gib_high",
    "wall_clock_h",
    "wall_clock_h_low",
    "wall_clock_h_high",
    "device_hours",
    "usd_per_gpu_hour",
    "cost_usd",
    "cost_usd_low",
    "cost_usd_high",
    "usd_per_million_tokens",
    "energy_kwh",
    "co2e_kg",
    "tokens_per_s",
    "mfu",
    "wall_clock_with_failures_h",
    "gpu_hours_with_failures",
    "cost_with_failures_usd",
    "expected_failures",
)

# Post-training figures, carried only for a post-training scenario so a supervised fine-tuning
# comparison keeps its columns; each GPU's own engine share of its memory and its own bandwidth drive them.
POST_TRAINING_FIGURES = (
    "reference_model_gib",
    "reward_model_gib",
    "value_model_gib",
    "kv_cache_gib",
    "generation_time_h",
    "training_time_h",
    "generation_frac",
)

# label -> (column, descending): the orderings offered by the page and the CLI.
SORT_METRICS: dict[str, tuple[str, bool]] = {
    "Cost": ("cost_usd", False),
    "Wall clock": ("wall_clock_h", False),
    "GPU-hours": ("device_hours", False),
    "$ per million tokens": ("usd_per_million_tokens", False),
    "Energy": ("energy_kwh", False),
    "CO2e": ("co2e_kg", False),
    "Fewest GPUs that fit": ("min_gpus_to_fit", False),
    "Memory per GPU": ("memory_gib", True),
    "Throughput": ("tokens_per_s", True),
}


def candidate_gpu_counts(s: Scenario, max_gpus: int = MAX_GPUS) -> np.ndarray:
    """GPU counts tried for "fewest that fit": multiples of tp·pp·cp, as powers of two and as whole nodes.

    A node holds lcm(node size, tp·pp·cp) GPUs here so every candidate keeps the model-parallel layout. Every
    node count up to EXACT_NODES is tried; beyond it, node counts at most 1/8 of a doubling apart (so the
    answer is within 12.5 % above that size) — this keeps the grid near 100 counts even for one-GPU nodes.
    The scenario's own count is always included (it may lie above `max_gpus`).
    """
    model_parallel = s.tp * s.pp * s.cp
    node = math.lcm(model_parallel, s.gpus_per_node)
    powers = {model_parallel * 2**k for k in range(64) if model_parallel * 2**k <= max_gpus}
    nodes = {node * k for k in range(1, EXACT_NODES + 1)}
    start = node * EXACT_NODES
    while start < max_gpus:
        nodes |= {
            node * math.ceil(start * (1 + i / STEPS_PER_DOUBLING) / node) for i in range(STEPS_PER_DOUBLING)
        }
        start *= 2
    counts = {c for c in powers | nodes if c <= max_gpus}
    return np.array(sorted({model_parallel, s.n_gpus, *counts}), dtype=float)


def compare_gpus(s: Scenario, cats: Catalogs, max_gpus: int = MAX_GPUS) -> pl.DataFrame:
    """One row per catalogue GPU: fit, fewest GPUs that fit, time, GPU-hours, cost band, energy, CO2e, $/Mtok.

    Raises ValueError (naming the field) when the scenario itself cannot be resolved.
    """
    resolved = resolve(s, cats)
    n_active_params = float(resolved.columns.model.n_active_params)
    per_gpu = _stack_gpu_columns(s, cats, str(resolved.gpu["name"]), n_active_params)
    counts = candidate_gpu_counts(s, max_gpus)
    n_gpu_types, n_counts = len(per_gpu.names), len(counts)
    out = evaluate(_grid_columns(resolved.columns, per_gpu.columns, counts))
    grid = {key: _matrix(value, n_gpu_types, n_counts) for key, value in out.items()}
    fits = grid["fits_vram"]  # evaluate's verdict, the same one the single estimate reports
    current = int(np.flatnonzero(counts == s.n_gpus)[0])
    at_current = {key: value[:, current] for key, value in grid.items()}
    frame = _frame(s, per_gpu, at_current, fits[:, current], _fewest(fits, counts))
    words = bound_by_rows(
        at_current, resolved.columns.layout, len(per_gpu.names)
    )  # why each step takes what it does
    return frame.with_columns(pl.Series("bound_by", words, dtype=pl.String))


@dataclass(frozen=True)
class GpuRows:
    """Every catalogue GPU's columns stacked into arrays (one element per GPU, catalogue order)."""

    scenario_gpu: str
    names: list[str]
    vendors: list[str]
    origins: list[str | None] | None  # team / upload / bundled, where the catalogue says
    columns: GpuColumns
    provenance: list[GpuProvenance]


def _stack_gpu_columns(s: Scenario, cats: Catalogs, scenario_gpu: str, n_active_params: float) -> GpuRows:
    catalogue_only = s.updated(**dict.fromkeys(OVERRIDE_FIELDS))
    rows = list(cats.gpus.iter_rows(named=True))
    each = [
        gpu_columns(s if row["name"] == scenario_gpu else catalogue_only, row, cats, n_active_params)
        for row in rows
    ]
    return GpuRows(
        scenario_gpu=scenario_gpu,
        names=[str(row["name"]) for row in rows],
        vendors=[str(row["vendor"]) for row in rows],
        origins=[row.get("origin") for row in rows] if "origin" in cats.gpus.columns else None,
        columns=stack([columns for columns, _ in each]),
        provenance=[provenance for _, provenance in each],
    )


def _grid_columns(scenario: Columns, gpu: GpuColumns, counts: np.ndarray) -> Columns:
    """GPU-major grid: row g·n_counts + j is GPU g at counts[j], the global batch held fixed."""
    n_gpu_types = len(np.atleast_1d(gpu.vram_bytes))
    layout = scenario.layout
    n_gpus = np.tile(counts, n_gpu_types)
    dp = n_gpus / (layout.tp * layout.pp * layout.cp)
    # As in explore.scaling_curve: accumulation shrinks as replicas grow (never below one micro-batch), and at
    # the scenario's own count it is exactly the scenario's.
    accum = np.maximum(1.0, np.round(layout.n_micro_batches * layout.dp / dp))
    repeated = map_columns(gpu, lambda column: np.repeat(column, len(counts)))
    return scenario.replace(gpu=repeated, n_gpus=n_gpus, dp=dp, n_micro_batches=accum)


def _matrix(value: Any, n_rows: int, n_cols: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, dtype=float), (n_rows * n_cols,)).reshape(n_rows, n_cols)


def _fewest(fits: np.ndarray, counts: np.ndarray) -> np.ndarray:
    fitting = fits == 1.0
    first = np.argmax(fitting, axis=1)
    return np.where(fitting.any(axis=1), counts[first], np.nan)


def _frame(
    s: Scenario, per_gpu: GpuRows, out: dict[str, np.ndarray], fits: np.ndarray, fewest: np.ndarray
) -> pl.DataFrame:
    current = np.array([name == per_gpu.scenario_gpu for name in per_gpu.names])
    # A GPU that cannot run the precision (no peak rate) runs no plan: it neither fits nor has a fewest count.
    cannot_run = np.isnan(np.atleast_1d(per_gpu.columns.peak_flops_per_s))
    fits = np.where(cannot_run, np.nan, fits)
    fewest = np.where(cannot_run, np.nan, fewest)
    out = {**out, **{k: np.where(cannot_run, np.nan, out[k]) for k in ("peak_bytes", "peak_high_bytes")}}
    columns: dict[str, pl.Series] = {
        "gpu": pl.Series(per_gpu.names, dtype=pl.String),
        "vendor": pl.Series(per_gpu.vendors, dtype=pl.String),
        "fits_vram": pl.Series([None if math.isnan(f) else bool(f) for f in fits], dtype=pl.Boolean),
        "fit_verdict": pl.Series(
            verdict_names(np.where(cannot_run, np.nan, out["fit_verdict"])), dtype=pl.String
        ),
        "min_gpus_to_fit": pl.Series([None if math.isnan(n) else int(n) for n in fewest], dtype=pl.Int64),
        **{
            name: pl.Series(np.asarray(values, dtype=float), dtype=pl.Float64, nan_to_null=True)
            for name, values in shown(out, FIGURES).items()
        },
        **(_post_training(out, cannot_run) if s.post_training != "sft" else {}),
        **compare_columns(s, out, cannot_run),  # the parts' memory and images/s of a multimodal plan
        "price_basis": pl.Series([p.price_basis for p in per_gpu.provenance], dtype=pl.String),
        "price_snapshot": pl.Series([p.price_snapshot for p in per_gpu.provenance], dtype=pl.String),
        "status": pl.Series(_status(per_gpu.columns, current, s), dtype=pl.String),
        "is_scenario_gpu": pl.Series(current, dtype=pl.Boolean),
    }
    if per_gpu.origins is not None:
        columns["origin"] = pl.Series(per_gpu.origins, dtype=pl.String)
    return pl.DataFrame(columns)


def _post_training(out: dict[str, np.ndarray], cannot_run: np.ndarray) -> dict[str, pl.Series]:
    """The post-training columns and the phase that peaks ("generation (rollouts)" or a training phase)."""
    figures = {
        name: pl.Series(np.where(cannot_run, np.nan, values), dtype=pl.Float64, nan_to_null=True)
        for name, values in shown(out, POST_TRAINING_FIGURES).items()
    }
    codes = np.where(cannot_run, np.nan, np.asarray(out["peak_phase"], dtype=float))
    phases = [None if math.isnan(code) else PEAK_PHASE_NAMES[int(code)] for code in codes]
    return {**figures, "peak_phase": pl.Series(phases, dtype=pl.String)}


def _status(gpu: GpuColumns, current: np.ndarray, s: Scenario) -> list[str]:
    """Why a row lacks figures, and which row carries the user's own figures.

    A peak rate is missing only where the GPU cannot run the precision (`gpu_columns`), so "no rate" says so.
    """
    overridden = any(getattr(s, name) is not None for name in OVERRIDE_FIELDS)
    rates, prices = np.atleast_1d(gpu.peak_flops_per_s), np.atleast_1d(gpu.usd_per_gpu_hour)
    notes = []
    for i in range(len(current)):
        parts = [f"{NO_RATE}: {CANNOT_RUN} {s.precision}"] if math.isnan(rates[i]) else []
        parts += [NO_PRICE] if math.isnan(prices[i]) else []
        parts += [YOUR_FIGURES] if current[i] and overridden else []
        notes.append("; ".join(parts))
    return notes


def filter_rows(
    frame: pl.DataFrame,
    vendors: list[str] | None = None,
    min_memory_gib: float = 0.0,
    priced_only: bool = False,
    fitting_only: bool = False,
) -> pl.DataFrame:
    """The rows a user asked to see; empty `vendors` means every vendor."""
    keep = pl.col("memory_gib") >= min_memory_gib
    if vendors:
        keep &= pl.col("vendor").is_in(vendors)
    if priced_only:
        keep &= pl.col("cost_usd").is_not_null()
    if fitting_only:
        keep &= pl.col("fits_vram").fill_null(False)
    return frame.filter(keep)


def sort_rows(frame: pl.DataFrame, metric: str) -> pl.DataFrame:
    """Order by a SORT_METRICS label, GPUs that fit first under every metric. A GPU that does not fit at this count cannot run the plan, however cheap or fast its figures look, so the
    rows that fit come first (those with the band's margin before the tight ones), each group in metric order.
    """
    column, descending = SORT_METRICS[metric]
    fits = pl.col("fits_vram").fill_null(False)
    has_verdict = "fit_verdict" in frame.columns  # a tight fit after those with margin
    margin = pl.col("fit_verdict").fill_null("") == "fits" if has_verdict else fits
    return frame.sort(
        [fits, margin, pl.col(column)],
        descending=[True, True, descending],
        nulls_last=True,
        maintain_order=True,
    )
