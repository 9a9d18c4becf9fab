"""Plan versus actual: an Estimate's figures beside what imported runs measured, and what explains the gap.

Each measured figure is compared with the estimate's figure for the same statistic (allocated with allocated,
reserved with reserved; torchtune's "active" with allocated, the closest statistic the model has). The
explanation names the model's parts: for time, the step breakdown (every `*_s` part of the step the Estimate
exposes); for memory, its components (weights, gradients, optimizer, activations, ...): the largest part, and
the part whose size is nearest to the gap (a part the model may have wrong or the run did not have).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.runs.record import FIGURES, RunRecord

SECONDS_PER_HOUR = 3600
# measured figure -> (estimate key or rule, the model's part list to explain it with)
TIME, MEMORY = "time", "memory"
COMPARED: dict[str, tuple[str, str]] = {
    "step_time_s": ("step_time_s", TIME),
    "tokens_per_s_per_gpu": ("tokens_per_s_per_gpu", TIME),
    "samples_per_s_total": ("samples_per_s_total", TIME),
    "tflops_per_gpu_model": ("tflops_per_gpu_model", TIME),
    "mfu_frac": ("mfu", TIME),
    "peak_allocated_gib": ("peak_allocated_gib", MEMORY),
    "peak_reserved_gib": ("peak_reserved_gib", MEMORY),
    "peak_active_gib": ("peak_allocated_gib", MEMORY),
    "wall_clock_s": ("wall_clock_s", TIME),
}
MEMORY_PARTS = (
    "weights_gib", "gradients_gib", "optimizer_gib", "master_gib", "activations_gib", "logits_gib",
    "prefetch_gib", "optimizer_step_temp_gib", "overhead_gib", "fragmentation_gib",
)  # fmt: skip
# The Estimate's step breakdown (operator model): these add up to step_time_s; comm_time_s is the whole
# communication, mostly hidden under compute, so it is not a part (its exposed share is).
STEP_PARTS = (
    "gemm_time_s", "attention_time_s", "memory_bound_time_s", "launch_overhead_s", "residual_time_s",
    "exposed_pipelined_comm_s", "exposed_data_parallel_comm_s", "bubble_time_s", "offload_time_s",
    "adapter_memory_time_s",
)  # fmt: skip
STEP_SUM_TOLERANCE = 0.01  # rounding: the parts are summed in float64


def derived(flat: Mapping[str, Any], tokens_per_sample: float) -> dict[str, float]:
    """The estimate's figures under the names the logs use (those not already in the flat Estimate)."""
    return {
        "samples_per_s_total": float(flat["tokens_per_s"]) / tokens_per_sample,
        "tflops_per_gpu_model": float(flat["mfu"]) * float(flat["peak_tflops"]),
        "wall_clock_s": float(flat["wall_clock_h"]) * SECONDS_PER_HOUR,
    }


def plan_versus_actual(
    flat: Mapping[str, Any], record: RunRecord, tokens_per_sample: float
) -> list[dict[str, Any]]:
    """One row per figure the run measured: predicted, measured, error (predicted / measured - 1), why."""
    figures = {**flat, **derived(flat, tokens_per_sample)}
    rows = []
    for figure, (key, kind) in COMPARED.items():
        measured = record.figures.get(figure)
        predicted = figures.get(key)
        if measured is None or predicted is None or measured <= 0:
            continue
        predicted = float(predicted)
        rows.append(
            {
                "run": record.path,
                "figure": FIGURES[figure],
                "predicted": predicted,
                "measured": measured,
                "rel_error": predicted / measured - 1,
                "explained_by": _explain(flat, kind, figure, predicted, measured),
            }
        )
    return rows


def _explain(flat: Mapping[str, Any], kind: str, figure: str, predicted: float, measured: float) -> str:
    if kind == MEMORY:
        parts = {key.removesuffix("_gib"): float(flat.get(key) or 0.0) for key in MEMORY_PARTS}
        gap, unit = abs(measured - predicted), "GiB"
    else:
        parts = {key.removesuffix("_s"): float(flat.get(key) or 0.0) for key in STEP_PARTS}
        step_s = float(flat.get("step_time_s") or 0.0)
        rest = step_s - sum(parts.values())  # a part the breakdown does not name (none when it adds up)
        if rest > STEP_SUM_TOLERANCE * step_s:
            parts["unnamed_rest"] = rest
        # a rate's or the wall clock's gap as seconds of one planned step, to set beside the step's parts
        gap = (
            abs(measured - predicted) if figure == "step_time_s" else abs(step_s * (predicted / measured - 1))
        )
        unit = "s per step"
    parts = {name: size for name, size in parts.items() if size > 0}
    if not parts:
        return "the estimate exposes no parts for this figure"
    largest = max(parts, key=lambda name: parts[name])
    if gap > sum(parts.values()):  # no part of the model is that big: the run is not the plan's configuration
        return (
            f"gap {gap:.3g} {unit} exceeds the whole modelled total ({sum(parts.values()):.3g} {unit}): check "
            f"that the plan matches the run (model, GPU, batch, layout); largest part {largest}"
        )
    nearest = min(parts, key=lambda name: abs(parts[name] - gap))
    bound = f"; step bound by {flat['bound_by']}" if kind == TIME and flat.get("bound_by") else ""
    return (
        f"gap {gap:.3g} {unit}; nearest part {nearest} ({parts[nearest]:.3g} {unit}); "
        f"largest part {largest} ({parts[largest]:.3g} {unit}){bound}"
    )
