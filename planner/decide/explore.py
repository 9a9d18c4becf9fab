"""What-if views of one scenario: scaling with GPU count, memory against micro-batch, fixes for OOM.

Each varies one or two inputs over many rows and runs the same `evaluate` as the single estimate.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from planner.decide.fixes import Fix, suggest_fixes
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import Recompute
from planner.resolve import Resolved
from planner.results import shown

__all__ = ["Fix", "memory_vs_micro_batch", "parameter_breakdown", "scaling_curve", "suggest_fixes"]

MAX_SCALING_GPUS = 4096  # beyond a few thousand GPUs fine-tuning-sized runs are bounded by batch size anyway
# the recompute modes of the memory-versus-micro-batch view, in the order it lists them
MEMORY_VIEW_MODES = (Recompute.NONE, Recompute.SELECTIVE, Recompute.SELECTIVE_OP, Recompute.FULL)


def gpu_counts(resolved: Resolved) -> np.ndarray:
    """GPU counts at which the scenario's global batch is kept exactly: the model-parallel size times every power
    of two that divides the micro-batches per optimizer step (accumulation × replicas), plus the scenario's own.

    Past the point where each replica runs one micro-batch per step the global batch would have to grow; fewer,
    larger steps then amortise per-step costs and the "efficiency" of such a point can exceed 100 %, which is a
    different run, not better scaling. So the curve stops there (the page says so).
    """
    layout = resolved.columns.layout
    model_parallel = int(layout.tp * layout.pp * layout.cp)
    micro_batches_per_step = round(float(layout.n_micro_batches * layout.dp))
    replicas = [2**k for k in range(20) if micro_batches_per_step % 2**k == 0]
    counts = {model_parallel * r for r in replicas if model_parallel * r <= MAX_SCALING_GPUS}
    return np.array(sorted({*counts, resolved.scenario.n_gpus}), dtype=float)


def scaling_curve(resolved: Resolved) -> pl.DataFrame:
    """Wall clock, cost and scaling efficiency against GPU count at the scenario's global batch."""
    layout = resolved.columns.layout
    counts = gpu_counts(resolved)
    dp = counts / (layout.tp * layout.pp * layout.cp)
    # Keep the global batch: accumulation shrinks as replicas grow; every count divides it exactly (gpu_counts).
    accum = np.maximum(1.0, np.round(layout.n_micro_batches * layout.dp / dp))
    out = evaluate(resolved.columns.replace(n_gpus=counts, dp=dp, n_micro_batches=accum))
    figures = shown(out, ("wall_clock_h", "gpu_hours", "cost_usd"))
    gpu_hours = figures["gpu_hours"]
    return pl.DataFrame(
        {
            "n_gpus": counts.astype(int),
            "wall_clock_h": figures["wall_clock_h"],
            "gpu_hours": gpu_hours,
            "cost_usd": np.asarray(figures["cost_usd"], dtype=float),
            "scaling_efficiency_frac": gpu_hours[0] / gpu_hours,
        }
    )


def memory_vs_micro_batch(resolved: Resolved, max_micro_batch: int = 64) -> pl.DataFrame:
    """Peak GiB per GPU for micro-batches 1, 2, 4, ... under each recompute mode."""
    if not resolved.columns.model.has_shape:
        return pl.DataFrame()
    sizes = np.array([2**k for k in range(int(np.log2(max_micro_batch)) + 1)], dtype=float)
    grid_b = np.tile(sizes, len(MEMORY_VIEW_MODES))
    grid_r = np.repeat(np.array(MEMORY_VIEW_MODES, dtype=float), len(sizes))
    out = evaluate(resolved.columns.replace(micro_batch_seqs=grid_b, recompute=grid_r))
    return pl.DataFrame(
        {
            "micro_batch": grid_b.astype(int),
            "recompute": np.repeat([mode.key for mode in MEMORY_VIEW_MODES], len(sizes)),
            **shown(out, ("peak_gib",)),
        }
    )


def parameter_breakdown(resolved: Resolved) -> pl.DataFrame | None:
    counts = resolved.counts
    if counts is None:
        return None
    parts = {
        "Token embedding": counts.embedding,
        "Positional embedding": counts.position,
        "Attention": counts.attention,
        "MLP / experts": counts.mlp,
        "Norms": counts.norms,
        "Router": counts.router,
        "Output head": counts.head,
    }
    frame = pl.DataFrame({"component": list(parts), "n_params": [float(v) for v in parts.values()]})
    frame = frame.filter(pl.col("n_params") > 0).with_columns(
        (pl.col("n_params") / 1e9).round(4).alias("billions"),
        (pl.col("n_params") / counts.total).alias("share_frac"),
    )
    totals = pl.DataFrame(
        {"component": ["Total", "Active per token"], "n_params": [float(counts.total), float(counts.active)]}
    ).with_columns(
        (pl.col("n_params") / 1e9).round(4).alias("billions"),
        (pl.col("n_params") / counts.total).alias("share_frac"),
    )
    return pl.concat([frame, totals])
