"""An imported run as rows of the `validate` case format (the columns of data/calibration.csv).

One row per measured figure, each under the `measured_unit` that names it exactly (memory by its statistic).
The configuration columns come from what the log or its config files stated plus what the user sets
(`--set gpu="H100 80GB SXM"`); a column nobody stated stays blank, and `missing_for_prediction` lists the ones
`validate` needs before it can predict the row, so nothing is filled in silently.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.cases.case_file import CASE_FILE_COLUMNS, checked_rows
from planner.runs.record import RunLogError, RunRecord

# figure -> (case category, measured_unit, multiplier to that unit)
FIGURE_UNITS: dict[str, tuple[str, str, float]] = {
    "step_time_s": ("throughput", "s_per_iteration", 1.0),
    "tokens_per_s_per_gpu": ("throughput", "tokens_per_s_per_gpu", 1.0),
    "samples_per_s_total": ("throughput", "samples_per_s_total", 1.0),
    "tflops_per_gpu_model": ("throughput", "tflops_per_gpu_model", 1.0),
    "peak_allocated_gib": ("memory", "gib_peak_allocated_per_gpu", 1.0),
    "peak_reserved_gib": ("memory", "gib_peak_reserved_per_gpu", 1.0),
    "wall_clock_s": ("time", "days", 1 / 86_400),
}
# What a case row needs before `validate` predicts it (the model's size and shape — validate reads the shape
# columns, not the model's name —, the GPU, the layout and the batch shape); the rest have documented
# blank-cell defaults (planner/cases/case_defaults.py).
NEEDED_FOR_PREDICTION = (
    "params_b", "n_layers", "hidden", "n_heads", "gpu", "n_gpus", "seq_len", "micro_batch", "method", "precision",
)  # fmt: skip


def case_rows(record: RunRecord, settings: Mapping[str, str], run_id: str) -> list[dict[str, str]]:
    """The run's case rows, checked like a case file (a bad --set value names its column)."""
    unknown = [column for column in settings if column not in CASE_FILE_COLUMNS]
    if unknown:
        raise RunLogError(f"--set {unknown[0]}: not a case-file column (see data/calibration.csv's header)")
    base = dict.fromkeys(CASE_FILE_COLUMNS, "")
    base.update(record.config)
    base.update(settings)
    base["source"] = base["source"] or f"imported {record.log_format} log {record.path}"
    rows = []
    for figure, (category, unit, scale) in FIGURE_UNITS.items():
        if figure in record.figures:
            row = {**base, "case_id": f"{run_id}-{unit}", "category": category, "measured_unit": unit}
            row["measured_value"] = f"{record.figures[figure] * scale:.6g}"
            rows.append(row)
    try:
        return checked_rows([(f"{record.path} ({row['measured_unit']})", row) for row in rows])
    except ValueError as err:
        raise RunLogError(str(err).splitlines()[0]) from None


def missing_for_prediction(record: RunRecord, settings: Mapping[str, str]) -> list[str]:
    stated = {**record.config, **settings}
    return [column for column in NEEDED_FOR_PREDICTION if not stated.get(column)]
