"""The fit verdict: "fits", "tight — may run out of memory" or "does not fit", from the device total and the
memory model's measured error band.

A peak estimate is a central figure; on published runs it misses by a measured amount (scripts/memory_scores.py
scores the memory rows of data/calibration.csv under source holdout). The band is stored per regime in
data/memory_error_band.csv, written by that script, never typed in: `ratio_high` is the 90th percentile of
measured / predicted over the regime's rows (`HIGH_QUANTILE`), so nine runs in ten of that kind peaked at or below
estimate × ratio_high. That product is the plan's `peak_gib_high` (never below the estimate itself).

- fits: the high end, `peak_high_bytes`, is within the GPU's memory;
- tight — may run out of memory: the estimate is within the GPU's memory, its high end is not;
- does not fit: the estimate itself is over the GPU's memory (or a colocated rollout engine has no room).

The band is read on the device total (what nvidia-smi shows, the statistic a run runs out of), while each row
that measured it was scored on the statistic it published (allocated, reserved or device): the relative miss is
taken to carry over between statistics, since they differ by an additive allocator and context overhead that is
small beside the model states and activations the misses come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from pydantic import BaseModel

from planner.formulas.memory.recipes import Method
from planner.formulas.scalars import nan_to_zero

FITS: Final = 0.0
TIGHT: Final = 1.0
DOES_NOT_FIT: Final = 2.0
VERDICT_NAMES: Final = {0: "fits", 1: "tight — may run out of memory", 2: "does not fit"}
# quantiles of measured / predicted that bound the band (scripts/memory_scores.py computes them)
LOW_QUANTILE: Final = 0.1
HIGH_QUANTILE: Final = 0.9
# Regimes that may have their own band: every parameter trained, or adapters (LoRA, QLoRA) on a frozen base,
# whose activations, adapter copies and frozen-base handling differ; "all" pools every row.
REGIMES: Final = ("full", "adapters")
# A regime gets its own band only with at least this many scored rows. The 90th percentile of n rows is set by
# the n/10 rows above it: below 20 rows that is one row, so one unusual reading (a reserved pool on a GPU with
# room to spare, read as allocated) would set the band of every plan in the regime. Fewer rows: "all".
MIN_REGIME_ROWS: Final = 20


@dataclass(frozen=True)
class MemoryBand:
    """measured / predicted at the band's high end and the rows behind it, per regime (`REGIMES` and "all");
    from data/memory_error_band.csv."""

    ratio_high: dict[str, float]
    n_rows: dict[str, int]
    source: str = ""

    def high(self, regime: str) -> float:
        """The regime's ratio when enough rows back it, else the pooled one; never below 1 (the high end is
        never under the estimate)."""
        own = self.n_rows.get(regime, 0) >= MIN_REGIME_ROWS
        return max(1.0, self.ratio_high[regime] if own else self.ratio_high["all"])


def regime_of_method(method: str) -> str:
    """The band's regime of a Scenario method ("full", "lora", "qlora")."""
    return "full" if method == "full" else "adapters"


def verdict_names(codes: Any) -> list[str | None]:
    """VERDICT_NAMES of an array of codes; None where unknown (NaN)."""
    return [None if np.isnan(code) else VERDICT_NAMES[int(code)] for code in np.atleast_1d(codes)]


def band_ratio(method: Any, band: MemoryBand) -> Any:
    """measured / predicted at the band's high end for each row's regime (a Method code)."""
    return np.where(np.asarray(method) != Method.FULL, band.high("adapters"), band.high("full"))


def peak_high_bytes(peak_bytes: Any, method: Any, band: MemoryBand) -> Any:
    """The high end of the device total: estimate × the regime's ratio (module docstring)."""
    return peak_bytes * band_ratio(method, band)


def peak_high_with_engine_bytes(
    judged_bytes: Any, generation_phase_bytes: Any, engine_bytes: Any, other_phases_bytes: Any, ratio: Any
) -> Any:
    """`peak_high_bytes` when a colocated rollout engine may set the peak: the engine's share is a pool sized by
    its memory-fraction setting, not an estimate, so the band widens only the estimated rest of that phase;
    the other phases (training, loading) widen whole. Without an engine (generation phase 0) it is
    judged × ratio."""
    engine = np.where(generation_phase_bytes > 0, engine_bytes, 0.0)
    generating = (generation_phase_bytes - engine) * ratio + engine
    others = np.where(generation_phase_bytes > 0, other_phases_bytes, judged_bytes) * ratio
    return np.where(generation_phase_bytes > 0, np.maximum(generating, others), others)


def judged_peak_bytes(peak_bytes: Any, state_bytes_total: Any, overhead_bytes: Any, n_gpus: Any) -> Any:
    """The device total a plan is judged on: the step's peak when the model's shape is known; otherwise the
    evenly split model state plus the fixed overhead (the only memory figures a bare parameter count allows,
    as in the seed)."""
    return np.where(np.isnan(peak_bytes), state_bytes_total / n_gpus + overhead_bytes, peak_bytes)


def fits_vram(judged_bytes: Any, vram_bytes: Any) -> Any:
    """1.0 the estimate fits, 0.0 it does not, NaN unknown."""
    return np.where(np.isnan(judged_bytes), np.nan, (judged_bytes <= vram_bytes).astype(float))


def fit_verdict(judged_bytes: Any, high_bytes: Any, vram_bytes: Any, room_for_rest: Any = 1.0) -> Any:
    """FITS, TIGHT or DOES_NOT_FIT (module docstring); NaN unknown. `room_for_rest` 0: something else that
    must share the GPU (a colocated rollout engine) has no room, so the plan does not fit."""
    verdict = np.where(
        judged_bytes > vram_bytes, DOES_NOT_FIT, np.where(high_bytes > vram_bytes, TIGHT, FITS)
    )
    verdict = np.where(np.asarray(room_for_rest) > 0, verdict, DOES_NOT_FIT)
    return np.where(np.isnan(judged_bytes), np.nan, verdict)


class MemoryStatisticFigures(BaseModel):
    """The three named statistics an estimate reports per GPU, the verdict's high end and the verdict itself
    (`planner.results.Estimate` inherits these fields; `MEMORY_STATISTIC_ROWS` are their output-table rows)."""

    peak_allocated_gib: float | None  # torch.cuda.max_memory_allocated: the tensors alive at the worst moment
    peak_reserved_gib: float | None  # torch.cuda.max_memory_reserved: the caching allocator's segments
    device_total_gib: float | None  # what nvidia-smi shows: reserved + CUDA context and library workspaces
    peak_gib_high: float | None  # the device total at the high end of the measured error band
    fit_verdict: str | None  # VERDICT_NAMES; None when the peak cannot be computed


# (key, unit, label, evaluate's output); units convert as in planner.results.SCALE
MEMORY_STATISTIC_ROWS: Final = (
    ("peak_allocated_gib", "GiB", "Allocated peak per GPU (GiB)", "allocated_peak_bytes"),
    ("peak_reserved_gib", "GiB", "Reserved peak per GPU (GiB)", "reserved_peak_bytes"),
    ("device_total_gib", "GiB", "Device total per GPU (GiB)", "peak_bytes"),
    ("peak_gib_high", "GiB", "Device total, high end of the error band (GiB)", "peak_high_bytes"),
)


def verdict_outputs(
    out: dict[str, Any], method: Any, n_gpus: Any, vram_bytes: Any, band: MemoryBand, room_for_rest: Any
) -> dict[str, Any]:
    """`evaluate`'s fit figures from its memory outputs: whether the estimate fits (`fits_vram`), the band's
    high end (`peak_high_bytes`, with a colocated engine's pool left unwidened) and the verdict."""
    judged = judged_peak_bytes(
        out["peak_bytes"], out["model_state_bytes_total"], out["overhead_bytes"], n_gpus
    )
    generating = out.get("generation_phase_bytes", 0.0)
    others = np.maximum(out.get("training_phase_bytes", 0.0), nan_to_zero(out["loading_peak_bytes"]))
    engine = out.get("generation_engine_bytes", 0.0)
    high = peak_high_with_engine_bytes(judged, generating, engine, others, band_ratio(method, band))
    return {
        "fits_vram": np.where(np.asarray(room_for_rest) > 0, fits_vram(judged, vram_bytes), 0.0),
        "peak_high_bytes": high,
        "fit_verdict": fit_verdict(judged, high, vram_bytes, room_for_rest),
    }
