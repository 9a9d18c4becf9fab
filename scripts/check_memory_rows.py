"""Predicted vs measured peak memory for the memory rows of a case file (default: reference/calibration.csv).

Usage: python scripts/check_memory_rows.py [CASES.csv] [--detail]
Every row goes through the same `planner.cases.memory_cases.predict_memory_case`; skipped rows are listed with the
reason. Prints the table, then the median, 90th percentile and largest |error| over the predicted rows.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from planner.cases.memory_cases import memory_inputs_from_case, predict_memory_case
from planner.formulas.memory import GIB, memory_per_gpu

DEFAULT_CASES = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"  # copy of shared/reference/
COMPONENTS = ("weights", "gradients", "optimizer", "master", "activations", "logits", "prefetch")


def _detail(row: dict[str, str]) -> str:
    inputs = memory_inputs_from_case(row)
    if isinstance(inputs, str):
        return ""
    breakdown = memory_per_gpu(inputs)
    parts = [f"{name[:4]} {float(getattr(breakdown, name + '_bytes')) / GIB:5.1f}" for name in COMPONENTS]
    return "  [" + ", ".join(parts) + f"; phase {int(breakdown.peak_phase)}]"


def main(argv: list[str]) -> int:
    paths = [arg for arg in argv if not arg.startswith("--")]
    path = Path(paths[0]) if paths else DEFAULT_CASES
    with path.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row.get("category") == "memory"]
    errors, skipped = [], []
    print(f"{'case':14} {'statistic':10} {'measured':>9} {'predicted':>9} {'error':>7}  unit")
    for row in rows:
        case = predict_memory_case(row)
        if case.skipped_reason:
            skipped.append(f"{case.case_id}: {case.skipped_reason}")
            continue
        error = case.rel_error or 0.0
        errors.append(abs(error))
        detail = _detail(row) if "--detail" in argv else ""
        print(
            f"{case.case_id:14} {case.statistic:10} {case.measured:9.2f} {case.predicted:9.2f} "
            f"{error:+7.1%}  {case.measured_unit}{detail}"
        )
    print(f"\nskipped {len(skipped)}:")
    for line in skipped:
        print("  " + line)
    if errors:
        values = np.array(errors)
        print(
            f"\npredicted {len(values)} rows: median |error| {np.median(values):.1%}, "
            f"p90 {np.percentile(values, 90):.1%}, max {values.max():.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
