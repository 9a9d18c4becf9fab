"""Predicted vs measured peak memory for the memory rows of a case file (default: reference/calibration.csv).

Usage: python scripts/check_memory_rows.py [CASES.csv] [--detail]
Every row becomes a Scenario (`planner.cases.case_row.case_scenario`) and goes through resolve -> evaluate,
the path of `planner.estimate`; skipped rows are listed with the reason. Prints the table, then the median,
90th percentile and largest |error| over the predicted rows. `--detail` adds evaluate's memory components.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cases.case_file import load_case_file  # noqa: E402
from planner.cases.case_gpu import GpuMatcher  # noqa: E402
from planner.cases.case_predict import evaluated, read_out  # noqa: E402
from planner.cases.case_row import case_scenario  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402
from planner.formulas.units import GIB_BYTES  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/
COMPONENTS = ("weights", "gradients", "optimizer", "master", "activations", "logits", "prefetch")


def main(argv: list[str]) -> int:
    paths = [arg for arg in argv if not arg.startswith("--")]
    rows = [
        row
        for row in load_case_file(Path(paths[0]) if paths else DEFAULT_CASES)
        if row["category"] == "memory"
    ]
    cats = default_catalogs()
    gpus = GpuMatcher(cats)
    errors, skipped = [], []
    print(f"{'case':14} {'statistic':10} {'measured':>9} {'predicted':>9} {'error':>7}  unit")
    for row in rows:
        case = case_scenario(row, cats, gpus)
        if isinstance(case, str):
            skipped.append(f"{row['case_id']}: {case}")
            continue
        scenario, facts = case
        columns, out = evaluated(scenario, cats)
        predicted = read_out(columns, out, facts)
        error = predicted / facts.measured_value - 1
        errors.append(abs(error))
        detail = ""
        if "--detail" in argv:
            parts = [f"{name[:4]} {float(out[name + '_bytes']) / GIB_BYTES:5.1f}" for name in COMPONENTS]
            detail = "  [" + ", ".join(parts) + f"; phase {int(out['peak_phase'])}]"
        print(
            f"{facts.case_id:14} {facts.statistic:10} {facts.measured_value:9.2f} {predicted:9.2f} "
            f"{error:+7.1%}  {facts.measured_unit}{detail}"
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
