"""Predict the energy rows of a case file (published GPU-hours, MWh, tCO2e) to compare with the published.

A row of `reference/calibration.csv` with `measured_unit` gpu_hours, mwh or tco2eq gives the model size, the
token count and the hardware. GPU-hours follow from the model FLOPs at a stated utilisation of the GPU's peak;
MWh and tCO2e then follow with the assumptions the row records (power per GPU, PUE, grid intensity), through
the same `planner.formulas.energy.footprint` formulas the planner uses. Rows that lack an input get a reason instead of a number.

Passing the run's published GPU-hours (`gpu_hours=`) checks only the energy arithmetic, which is how BLOOM's
and Meta's figures were produced (calibration-sources.md, "Derived energy").

`python -m planner validate` does not use the 6ND GPU-hours here: it takes GPU-hours from resolve -> evaluate
(the row's Scenario, `planner.cases.case_row`, the same path as the throughput rows) and hands them to
`energy_from_gpu_hours`, so one chain serves every energy row. The 6ND path stays as a quick cross-check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner.cases.rel_error import relative_error
from planner.formulas.energy.footprint import FloatOrArray, co2e_kg, model_card_energy_kwh
from planner.formulas.units import SECONDS_PER_HOUR

ENERGY_UNITS = ("gpu_hours", "mwh", "tco2eq")

# Dense forward and backward pass: 2 + 2 + 2 FLOPs per parameter per token (seed 000, the 6ND form).
# Attention's quadratic term is left out; at these runs' 2-4k sequence lengths it adds roughly 5-10 %.
FLOPS_PER_PARAM_TOKEN = 6.0
# Model FLOPs utilisation assumed for the published runs until data/efficiency.csv supplies presets. 0.40 is
# the middle of the 0.3-0.5 range that seed 000 gives for well-tuned large runs, shaded down from the 0.45
# steady-state figure of seed 002 because model-card GPU-hours include restarts, evaluation and downtime
# (5-20 % above steady-state arithmetic, calibration-sources.md pitfall 4).
DEFAULT_CASE_MFU = 0.40

KWH_PER_MWH = 1000.0
KG_PER_TONNE = 1000.0
G_PER_KG = 1000.0
TFLOPS = 1e12
BILLION = 1e9


@dataclass(frozen=True)
class CasePrediction:
    """One case row predicted: the figure in the row's unit, or the reason it could not be predicted."""

    case_id: str
    category: str
    measured_unit: str
    measured: float | None
    predicted: float | None
    gpu_hours: float | None
    basis: str
    skipped_reason: str | None = None

    @property
    def rel_error(self) -> float | None:
        return relative_error(self.predicted, self.measured)

    def as_row(self) -> dict[str, Any]:
        """The row format of `python -m planner validate`."""
        return {
            "case_id": self.case_id,
            "category": self.category,
            "predicted": self.predicted,
            "measured": self.measured,
            "measured_unit": self.measured_unit,
            "rel_error": self.rel_error,
            "skipped_reason": self.skipped_reason,
        }


def gpu_hours_from_model_flops(
    n_params: FloatOrArray,
    n_tokens: FloatOrArray,
    peak_flops_per_s: FloatOrArray,
    mfu: FloatOrArray,
    flops_per_param_token: FloatOrArray = FLOPS_PER_PARAM_TOKEN,
) -> FloatOrArray:
    """GPU-hours = FLOPs per param-token x N x T / (peak x MFU) / 3600 (seed 000; Kaplan et al. 2020, 6ND)."""
    return flops_per_param_token * n_params * n_tokens / (peak_flops_per_s * mfu) / SECONDS_PER_HOUR


def energy_prediction_from_case(
    row: Mapping[str, Any],
    gpu_peak_tflops: float | None,
    mfu: float = DEFAULT_CASE_MFU,
    *,
    gpu_hours: float | None = None,
    flops_per_param_token: float = FLOPS_PER_PARAM_TOKEN,
) -> CasePrediction:
    """Predict an energy row in its own unit; `gpu_hours` (published) skips the FLOP step.

    `gpu_peak_tflops` is the dense peak at the run's precision (None when the GPU is not in the catalogue).
    MoE rows use the active parameter count. MWh = GPU-hours x stated W x stated PUE; tCO2e = MWh x stated
    kg/kWh: the convention of the published figures (`planner.formulas.energy.footprint.model_card_energy_kwh`).
    """
    base = _base(row)
    if base.measured_unit not in ENERGY_UNITS:
        return _not_energy(base)
    if gpu_hours is not None:
        return energy_from_gpu_hours(row, gpu_hours, f"published {gpu_hours:,.0f} GPU-hours")
    predicted_hours, basis = _predict_gpu_hours(row, gpu_peak_tflops, mfu, flops_per_param_token)
    if predicted_hours is None:
        return _skip(base, basis)
    return energy_from_gpu_hours(row, predicted_hours, basis)


def energy_from_gpu_hours(row: Mapping[str, Any], gpu_hours: float, basis: str) -> CasePrediction:
    """An energy row in its own unit from GPU-hours obtained elsewhere (published, or a time model's).

    `basis` says where the GPU-hours came from; the row's stated power, PUE and grid intensity do the rest.
    """
    base = _base(row)
    if base.measured_unit not in ENERGY_UNITS:
        return _not_energy(base)
    if base.measured_unit == "gpu_hours":
        return replace(base, predicted=gpu_hours, gpu_hours=gpu_hours, basis=basis)
    return _predict_energy(base, row, gpu_hours, basis)


def _base(row: Mapping[str, Any]) -> CasePrediction:
    return CasePrediction(
        case_id=str(row.get("case_id") or ""),
        category=str(row.get("category") or ""),
        measured_unit=str(row.get("measured_unit") or ""),
        measured=_number(row, "measured_value"),
        predicted=None,
        gpu_hours=None,
        basis="",
    )


def _not_energy(base: CasePrediction) -> CasePrediction:
    return _skip(base, f"not an energy row (measured_unit {base.measured_unit!r})")


def _predict_gpu_hours(
    row: Mapping[str, Any], gpu_peak_tflops: float | None, mfu: float, flops_per_param_token: float
) -> tuple[float | None, str]:
    """(GPU-hours, basis) or (None, why not)."""
    n_params_b = _number(row, "active_params_b") or _number(row, "params_b")
    n_tokens_b = _number(row, "n_tokens_b")
    if n_params_b is None:
        return None, "no parameter count in the row"
    if n_tokens_b is None:
        return None, "no training token count (n_tokens_b) in the row"
    if gpu_peak_tflops is None:
        return None, f"no peak TFLOP/s for GPU {row.get('gpu')!r} (not in the catalogue)"
    hours = gpu_hours_from_model_flops(
        n_params_b * BILLION, n_tokens_b * BILLION, gpu_peak_tflops * TFLOPS, mfu, flops_per_param_token
    )
    basis = (
        f"{flops_per_param_token:g} x {n_params_b:g}B params x {n_tokens_b:g}B tokens at "
        f"{gpu_peak_tflops:g} TFLOP/s x MFU {mfu:g}"
    )
    return float(hours), basis


def _predict_energy(base: CasePrediction, row: Mapping[str, Any], hours: float, basis: str) -> CasePrediction:
    power_w = _number(row, "power_w_per_gpu")
    pue = _number(row, "pue")
    if power_w is None or pue is None:
        return _skip(base, "the source states no power per GPU or no PUE, so its method cannot be reproduced")
    energy_kwh = float(model_card_energy_kwh(hours, power_w, pue))
    basis = f"{basis}; x {power_w:g} W x PUE {pue:g}"
    if base.measured_unit == "mwh":
        return replace(base, predicted=energy_kwh / KWH_PER_MWH, gpu_hours=hours, basis=basis)
    grid_kg_per_kwh = _number(row, "grid_kg_co2e_per_kwh")
    if grid_kg_per_kwh is None:
        return _skip(base, "the source states no grid carbon intensity")
    tonnes = float(co2e_kg(energy_kwh, grid_kg_per_kwh * G_PER_KG)) / KG_PER_TONNE
    basis = f"{basis} x {grid_kg_per_kwh:g} kg/kWh"
    return replace(base, predicted=tonnes, gpu_hours=hours, basis=basis)


def _skip(base: CasePrediction, reason: str) -> CasePrediction:
    return replace(base, skipped_reason=reason)


def _number(row: Mapping[str, Any], key: str) -> float | None:
    """A CSV cell as a float; empty, missing or non-finite cells are None (they mean "not published")."""
    raw = row.get(key)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if np.isfinite(value) else None
