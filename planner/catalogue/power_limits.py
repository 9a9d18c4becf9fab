"""The power limit a GPU runs at: the scenario's, else the catalogue variant's, else its TDP.

The rule from a limit to the dense rate is `planner.formulas.energy.power_cap`; this module only says which limit
applies and whether a typed one is allowed for the GPU (a range relative to its TDP, so it needs the row).
"""

from __future__ import annotations

from typing import Any

from planner.catalogue.precisions import PeakRate, peak_rate
from planner.errors import PlannerError
from planner.formulas.energy.power_cap import MIN_POWER_LIMIT_FRAC, capped_rate_frac


def catalogue_power_limit_w(gpu_row: dict[str, Any]) -> float:
    """The limit the catalogue row runs at: its `power_limit_w` (a capped variant), else its TDP."""
    limit = gpu_row.get("power_limit_w")
    return float(gpu_row["tdp_w"]) if limit is None else float(limit)


def power_limit_w(gpu_row: dict[str, Any], typed_w: float | None) -> float:
    """The limit that applies: the one typed for the scenario's GPU, else the catalogue's."""
    return catalogue_power_limit_w(gpu_row) if typed_w is None else float(typed_w)


def rate_frac(gpu_row: dict[str, Any], typed_w: float | None) -> float:
    """The share of the datasheet dense rate the GPU reaches at the limit that applies (1 at its TDP)."""
    return float(capped_rate_frac(power_limit_w(gpu_row, typed_w), float(gpu_row["tdp_w"])))


def capped_peak_rate(gpu_row: dict[str, Any], precision: str, typed_w: float | None) -> PeakRate:
    """The datasheet dense rate (`peak_rate`) at the power limit that applies, its note saying so."""
    rate, frac = peak_rate(gpu_row, precision), rate_frac(gpu_row, typed_w)
    if rate.tflops is None or frac == 1.0:
        return rate
    limit_w, tdp_w = power_limit_w(gpu_row, typed_w), float(gpu_row["tdp_w"])
    note = f"at a {limit_w:g} W power limit ({tdp_w:g} W TDP): {frac:.1%} of the datasheet {rate.tflops:g}"
    return PeakRate(rate.tflops * frac, rate.column, f"{rate.note}; {note}" if rate.note else note)


def power_limit_problem(gpu_row: dict[str, Any], typed_w: float | None) -> PlannerError | None:
    """Why a typed limit is outside [MIN_POWER_LIMIT_FRAC x TDP, TDP] for this GPU, or None."""
    if typed_w is None:
        return None
    tdp_w = float(gpu_row["tdp_w"])
    low_w = MIN_POWER_LIMIT_FRAC * tdp_w
    if low_w <= typed_w <= tdp_w:
        return None
    return PlannerError(
        "power_limit_w",
        f"is outside what the {gpu_row['name']} accepts (TDP {tdp_w:g} W)",
        value=typed_w,
        allowed=f"{low_w:g} to {tdp_w:g} W ({MIN_POWER_LIMIT_FRAC:g} x TDP to TDP), or empty for the catalogue's",
        related=("gpu",),
    )
