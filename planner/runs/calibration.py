"""Team calibration: two scale factors per (GPU, regime) fitted from a team's own runs, checked leave-one-run-out.

The planner's time and memory models are built from microbenchmark constants (DESIGN.md §2); a team whose
stack differs (kernels, allocator settings, framework version) sees a steady ratio between its runs and the
plan. The calibration is that ratio, never a per-row fudge: one `time_scale` (measured step time over
predicted; a throughput counts as its inverse) and one `memory_scale` (measured peak over predicted, the same
statistic) per GPU and regime (full, LoRA, QLoRA ...), the geometric mean over the runs (the least-squares fit
of log-ratios, so 2x too slow and 2x too fast weigh the same). Applied only when asked ("calibrated to your
runs").

Leave-one-run-out: each run is predicted with the factors fitted from the other runs of its group; the median
absolute error before and after is reported. A factor that does not lower that error is not applied (set to
1 with the reason), so a calibration is never worse than the model on the runs it was fitted from. Fewer than
`MIN_RUNS` runs in a group: refused, saying how many there are.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from planner.runs.record import RunLogError

# Leave-one-run-out needs at least two runs left to fit from, so a fitted factor is never one run's ratio.
MIN_RUNS = 3
# measured figure -> (estimate key, model, +1: the figure grows with the factor, -1: it is a rate)
TIME_FIGURES = {"step_time_s": ("step_time_s", 1), "tokens_per_s_per_gpu": ("tokens_per_s_per_gpu", -1)}
MEMORY_FIGURES = {"peak_allocated_gib": "peak_allocated_gib", "peak_reserved_gib": "peak_reserved_gib"}
SCALED_TIME_KEYS = ("step_time_s", "wall_clock_h")
SCALED_RATE_KEYS = ("tokens_per_s_per_gpu", "tokens_per_s", "mfu")
SCALED_MEMORY_KEYS = ("peak_allocated_gib", "peak_reserved_gib", "device_total_gib", "peak_gib_per_device")


@dataclass(frozen=True)
class RunRatio:
    """One run's measured / predicted ratios (None: the run did not measure that model's figure)."""

    run_id: int
    gpu: str
    regime: str
    time_ratio: float | None
    memory_ratio: float | None


@dataclass
class Calibration:
    gpu: str
    regime: str
    time_scale: float
    memory_scale: float
    run_ids: list[int]
    loo: dict[str, float] = field(default_factory=dict)  # {time,memory}_{before,after}: median |error|
    notes: list[str] = field(default_factory=list)

    def to_flat(self) -> dict[str, Any]:
        return {"gpu": self.gpu, "regime": self.regime, "time_scale": self.time_scale,
                "memory_scale": self.memory_scale, "n_runs": len(self.run_ids),
                "run_ids": ",".join(map(str, self.run_ids)), **self.loo, "notes": "; ".join(self.notes)}  # fmt: skip


def run_ratio(
    run_id: int, gpu: str, regime: str, flat: Mapping[str, Any], figures: Mapping[str, float]
) -> RunRatio:
    time_ratio = next(
        ((figures[f] / float(flat[key])) ** sign for f, (key, sign) in TIME_FIGURES.items() if f in figures),
        None,
    )
    memory_ratio = next(
        (figures[f] / float(flat[key]) for f, key in MEMORY_FIGURES.items() if f in figures), None
    )
    return RunRatio(run_id, gpu, regime, time_ratio, memory_ratio)


def fit(ratios: Sequence[RunRatio]) -> list[Calibration]:
    """One calibration per (GPU, regime) with at least MIN_RUNS runs; refused when no group has enough."""
    groups: dict[tuple[str, str], list[RunRatio]] = {}
    for ratio in ratios:
        groups.setdefault((ratio.gpu, ratio.regime), []).append(ratio)
    fitted = [
        _fit_group(gpu, regime, runs) for (gpu, regime), runs in groups.items() if len(runs) >= MIN_RUNS
    ]
    if not fitted:
        counts = ", ".join(f"{gpu} {regime}: {len(runs)}" for (gpu, regime), runs in groups.items()) or "none"
        raise RunLogError(
            f"a calibration needs at least {MIN_RUNS} runs on one GPU and regime (runs attached to plans: {counts})"
        )
    return fitted


def _fit_group(gpu: str, regime: str, runs: Sequence[RunRatio]) -> Calibration:
    calibration = Calibration(gpu, regime, 1.0, 1.0, [run.run_id for run in runs])
    for kind in ("time", "memory"):
        values = [r for r in (getattr(run, f"{kind}_ratio") for run in runs) if r is not None and r > 0]
        if len(values) < MIN_RUNS:
            calibration.notes.append(f"{kind}: {len(values)} runs measured it, {MIN_RUNS} needed; scale 1")
            continue
        before = statistics.median(abs(1 / value - 1) for value in values)  # predicted / measured - 1
        after = statistics.median(
            abs(_geomean(values[:i] + values[i + 1 :]) / value - 1) for i, value in enumerate(values)
        )
        calibration.loo[f"{kind}_error_before"] = before
        if after < before:
            setattr(calibration, f"{kind}_scale", _geomean(values))
            calibration.loo[f"{kind}_error_after"] = after
        else:
            calibration.loo[f"{kind}_error_after"] = before
            calibration.notes.append(
                f"{kind}: no better leave-one-run-out ({after:.3f} vs {before:.3f}); scale 1"
            )
    return calibration


def _geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


def calibrated(flat: Mapping[str, Any], calibration: Calibration) -> dict[str, Any]:
    """The estimate's figures with the team's factors applied ("calibrated to your runs")."""
    out = dict(flat)
    for key in SCALED_TIME_KEYS:
        if isinstance(out.get(key), int | float):
            out[key] = float(out[key]) * calibration.time_scale
    for key in SCALED_RATE_KEYS:
        if isinstance(out.get(key), int | float):
            out[key] = float(out[key]) / calibration.time_scale
    for key in SCALED_MEMORY_KEYS:
        if isinstance(out.get(key), int | float):
            out[key] = float(out[key]) * calibration.memory_scale
    return out
