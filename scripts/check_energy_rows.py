"""Print predicted vs published figures for the energy rows of a case file (GPU-hours, MWh, tCO2e).

Two predictions per row:
  * "model": GPU-hours from 6 x params x tokens at the GPU's dense BF16 peak x MFU, then MWh and tCO2e from
    them with the row's stated power, PUE and grid intensity (tests the whole chain);
  * "arith": the same energy arithmetic on the run's *published* GPU-hours, taken from the gpu_hours row of
    the same model (tests only the energy arithmetic; it should land within rounding of the published one).

Usage: .venv/bin/python scripts/check_energy_rows.py [--cases FILE.csv] [--mfu 0.4] [--format table|json]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cases.energy_cases import DEFAULT_CASE_MFU, ENERGY_UNITS, energy_prediction_from_case  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/calibration.csv
GPU_CATALOGUE = ROOT / "data" / "gpus.csv"


def load_peaks(path: Path) -> dict[str, float]:
    """Lower-case GPU name and aliases -> dense BF16 TFLOP/s (FP16 where the GPU has no BF16)."""
    peaks: dict[str, float] = {}
    with path.open(newline="") as handle:
        for gpu in csv.DictReader(handle):
            peak_text = gpu.get("tflops_bf16") or gpu.get("tflops_fp16") or ""
            if not peak_text.strip():
                continue
            for name in [gpu["name"], *gpu.get("aliases", "").split(";")]:
                if name.strip():
                    peaks.setdefault(name.strip().lower(), float(peak_text))
    return peaks


def peak_for(gpu_text: str, peaks: dict[str, float]) -> float | None:
    """Match a free-text GPU cell ("A100 80GB SXM (Jean Zay)") by its longest known leading words."""
    words = re.sub(r"\(.*?\)", " ", gpu_text).lower().split()
    for end in range(len(words), 0, -1):
        peak = peaks.get(" ".join(words[:end]))
        if peak is not None:
            return peak
    return None


def published_gpu_hours(rows: list[dict[str, str]]) -> dict[str, float]:
    """Model name -> GPU-hours published for its run (the gpu_hours rows)."""
    return {
        row["model"]: float(row["measured_value"])
        for row in rows
        if row["measured_unit"] == "gpu_hours" and row["measured_value"]
    }


def check(cases: Path, mfu: float) -> list[dict[str, Any]]:
    with cases.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["measured_unit"] in ENERGY_UNITS]
    peaks = load_peaks(GPU_CATALOGUE)
    published = published_gpu_hours(rows)
    results = []
    for row in rows:
        model = energy_prediction_from_case(row, peak_for(row.get("gpu", ""), peaks), mfu)
        out = {**model.as_row(), "basis": model.basis}
        hours = published.get(row["model"])
        if row["measured_unit"] != "gpu_hours" and hours is not None:
            arith = energy_prediction_from_case(row, None, mfu, gpu_hours=hours)
            out["arith_predicted"], out["arith_rel_error"] = arith.predicted, arith.rel_error
        results.append(out)
    return results


def summary(results: list[dict[str, Any]], key: str) -> str:
    errors = sorted(abs(row[key]) for row in results if row.get(key) is not None)
    if not errors:
        return f"{key}: no rows"
    return f"{key}: n={len(errors)} median |err| {statistics.median(errors):.1%}, max {errors[-1]:.1%}"


def table(results: list[dict[str, Any]]) -> str:
    def num(value: Any) -> str:
        return "-" if value is None else f"{value:,.4g}"

    def pct(value: Any) -> str:
        return "-" if value is None else f"{value:+.1%}"

    header = ("case", "unit", "published", "model", "err", "arith", "err")
    lines = ["{:16} {:9} {:>11} {:>11} {:>7} {:>11} {:>7}  note".format(*header)]
    for row in results:
        lines.append(
            f"{row['case_id']:16} {row['measured_unit']:9} {num(row['measured']):>11} "
            f"{num(row['predicted']):>11} {pct(row['rel_error']):>7} {num(row.get('arith_predicted')):>11} "
            f"{pct(row.get('arith_rel_error')):>7}  {row['skipped_reason'] or row['basis']}"
        )
    return "\n".join([*lines, summary(results, "rel_error"), summary(results, "arith_rel_error")])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--mfu", type=float, default=DEFAULT_CASE_MFU)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args()
    if not 0 < args.mfu <= 1:
        print(f"mfu: must be > 0 and <= 1 (got {args.mfu})", file=sys.stderr)
        return 2
    results = check(args.cases, args.mfu)
    print(json.dumps(results, indent=1) if args.format == "json" else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
