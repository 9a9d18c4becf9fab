"""One scenario in, one typed `Estimate` out: resolve the inputs, evaluate the formulas, label the result."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.catalogue.catalog import Catalogs
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import PEAK_PHASE_NAMES
from planner.formulas.memory.verdict import VERDICT_NAMES
from planner.formulas.operators.outputs import bound_by_words
from planner.formulas.scalars import SCALAR_TYPES
from planner.inputs.scenario import Scenario
from planner.resolve import Resolved, resolve
from planner.results import Estimate, estimate_figures

BOUND_BY_LAYOUT = ("tp", "cp", "pp", "n_gpus_per_node")  # what `bound_by_words` names
__all__ = ["Estimate", "Resolved", "estimate", "estimate_resolved", "resolve", "row"]


def row(columns: dict[str, Any], index: int) -> dict[str, float]:
    """One row of evaluated columns as plain floats (scalars broadcast to every row)."""
    return {key: _element(value, index) for key, value in columns.items()}


def _element(value: Any, index: int) -> float:
    if isinstance(value, SCALAR_TYPES):  # a scalar: the same for every row (no array built)
        return float(value)
    return float(np.asarray(value).reshape(-1)[index] if np.ndim(value) else value)


def estimate(scenario: Scenario, catalogs: Catalogs) -> Estimate:
    return estimate_resolved(resolve(scenario, catalogs))


def estimate_resolved(resolved: Resolved) -> Estimate:
    out = row(evaluate(resolved.columns), 0)
    return to_estimate(resolved, out)


def to_estimate(resolved: Resolved, out: dict[str, float]) -> Estimate:
    """The Estimate of one evaluated row: the table's figures (`planner.results.OUTPUTS`) and the few that are
    not numbers (the fit verdict, the peak's phase, the largest micro-batch, the provenance)."""
    fits, phase, largest = out["fits_vram"], out["peak_phase"], out["max_micro_batch"]
    lay = resolved.columns.layout
    return Estimate(
        **estimate_figures(out),
        fits_vram=None if math.isnan(fits) else bool(fits),
        peak_phase=None if math.isnan(phase) else PEAK_PHASE_NAMES[int(phase)],
        fit_verdict=None if math.isnan(out["fit_verdict"]) else VERDICT_NAMES[int(out["fit_verdict"])],
        max_micro_batch=None if math.isnan(largest) else int(min(largest, 1e9)),
        gpu=str(resolved.gpu["name"]),
        price_basis=resolved.price_basis,
        price_snapshot=resolved.price_snapshot,
        seq_len=resolved.seq_len,
        seq_len_rule=resolved.seq_len_rule,
        token_rule=resolved.token_rule,
        unavailable={**resolved.unavailable, **_goodput_notes(out)},
        bound_by=bound_by_words(
            int(out["bound_by_code"]), *(float(getattr(lay, n)) for n in BOUND_BY_LAYOUT)
        ),
    )


def _goodput_notes(out: dict[str, float]) -> dict[str, str]:
    """Why figures with failures are missing: goodput is off, or failures come faster than the run progresses."""
    if math.isnan(out["checkpoint_interval_s"]) and out["expected_failures"] == 0:
        return {
            "checkpoint_interval_min": "failure rate 0: no failures, no checkpoint interval (goodput off)"
        }
    if out["goodput_frac"] != 0:
        return {}
    why = (
        f"the job fails every {out['job_mtbf_s'] / 60:.3g} min on average, less than a restart, reload and half "
        "a checkpoint interval take: the run never finishes (fewer GPUs, a lower failure rate or a shorter "
        "restart)"
    )
    return {"wall_clock_with_failures_h": why}  # one note: GPU-hours, cost and energy follow from it
