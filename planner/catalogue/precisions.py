"""Which training precisions a GPU can run, and its dense peak rate at each: the one rule, read from the
GPU catalogue's rate columns.

A precision runs on a GPU when the catalogue lists a dense rate for the datatype its matmuls run in (the
columns below). There is no fallback to another datatype's rate: an fp8 recipe cannot run without FP8 tensor
cores (A100, V100, TPU v4), and a bf16 one not without BF16 (V100, T4), so planning such a run at another
rate would describe a run nobody can launch. A blank cell can also mean "no figure was
found" (data/README.md); the refusal says so, and a team catalogue row that gives the rate makes it runnable.

Every path asks here: `resolve` (estimate, CLI, app, sheet rows, case rows) refuses the pair, the GPU
comparison marks the row, the plan search leaves the GPU out, and the app refuses the widget change.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from planner.errors import PlannerError

# Columns tried in order for each training precision (Scenario.precision, in its order). Mixed precision runs
# its matmuls in the low-precision type; fp32 training uses TF32 tensor cores where the chip has them
# (PyTorch's allow_tf32 / torch.set_float32_matmul_precision("high")), else plain FP32: both are fp32 training.
PRECISION_COLUMNS: dict[str, tuple[str, ...]] = {
    "bf16_mixed": ("tflops_bf16",),
    "fp16_mixed": ("tflops_fp16",),
    "bf16_pure": ("tflops_bf16",),
    "fp8_mixed": ("tflops_fp8",),
    "fp32": ("tflops_tf32", "tflops_fp32"),
}
# The rate a precision needs, in the words of a refusal ("lists no FP8 tensor-core rate").
_NEEDED_RATE = {
    "tflops_bf16": "BF16 tensor-core",
    "tflops_fp16": "FP16 tensor-core",
    "tflops_fp8": "FP8 tensor-core",
    "tflops_tf32": "TF32 or FP32",
}


class PeakRate(NamedTuple):
    """A dense peak rate, the catalogue column it came from, and a sentence about it (or why there is none)."""

    tflops: float | None
    column: str | None
    note: str


def _known(precision: str) -> tuple[str, ...]:
    if precision not in PRECISION_COLUMNS:
        raise PlannerError(
            "precision",
            f"unknown precision {precision!r}",
            allowed=", ".join(PRECISION_COLUMNS),
            closest=list(PRECISION_COLUMNS),
        )
    return PRECISION_COLUMNS[precision]


def _column(gpu_row: dict[str, Any], precision: str) -> str | None:
    """The first of the precision's columns the GPU lists a rate in, or None."""
    return next((column for column in _known(precision) if gpu_row.get(column) is not None), None)


def supported_precisions(gpu_row: dict[str, Any]) -> list[str]:
    """The training precisions the GPU can run (Scenario.precision's order)."""
    return [precision for precision in PRECISION_COLUMNS if _column(gpu_row, precision) is not None]


def precision_problem(gpu_row: dict[str, Any], precision: str) -> PlannerError | None:
    """Why the GPU cannot run `precision` (field "precision", the GPU its related input), or None if it can.

    The problem starts with the precision so it reads after either input's name: "--precision: fp8_mixed
    cannot run on ..." or "--gpu: --precision fp8_mixed cannot run on ..."; `allowed` lists what it runs.
    """
    if _column(gpu_row, precision) is not None:
        return None
    gpu = str(gpu_row["name"])
    needed = _NEEDED_RATE[PRECISION_COLUMNS[precision][0]]
    runs = supported_precisions(gpu_row)
    return PlannerError(
        "precision",
        f"{precision} cannot run on {gpu}: the GPU catalogue lists no {needed} rate for it",
        allowed=", ".join(runs) if runs else f"none (the catalogue lists no training rate for {gpu})",
        related=("gpu",),
    )


def check_precision(gpu_row: dict[str, Any], precision: str) -> None:
    """Raise `precision_problem` when the GPU cannot run the precision."""
    problem = precision_problem(gpu_row, precision)
    if problem is not None:
        raise problem


def peak_rate(gpu_row: dict[str, Any], precision: str) -> PeakRate:
    """The dense peak TFLOP/s for `precision` and the column it came from; (None, None, why) when the GPU
    cannot run it. fp32 on a chip with TF32 tensor cores is rated at TF32, and the note says so."""
    column = _column(gpu_row, precision)
    if column is None:
        problem = precision_problem(gpu_row, precision)
        assert problem is not None
        return PeakRate(None, None, f"{problem.problem}; it runs {problem.allowed}")
    note = "fp32 training at the TF32 tensor-core rate (matmuls in TF32)" if column == "tflops_tf32" else ""
    return PeakRate(float(gpu_row[column]), column, note)


def peak_tflops(gpu_row: dict[str, Any], precision: str) -> float | None:
    """Dense peak TFLOP/s at the training precision; None when the GPU cannot run it."""
    return peak_rate(gpu_row, precision).tflops
