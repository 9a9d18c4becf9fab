"""Predict every published throughput, time and GPU-hour measurement and print predicted vs measured.

Each row is predicted through resolve -> evaluate (`planner.cases.validate`) with the efficiency presets:
the shipped data/efficiency.csv (default, black-box), or presets rebuilt from the case file without the row
(`--refit row`) or without every row of its source document (`--refit source`), so no row leaks into its own
prediction in the refit modes. Target: median |error| ≤ 15 % and ≤ 10 % of rows skipped for the throughput
and time categories together.

Usage: python scripts/check_throughput_rows.py [--cases CSV] [--refit row|source] [--format table|json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.cases.case_file import REFIT_MODES, load_case_file  # noqa: E402
from planner.cases.case_scoring import PRESET_CATEGORIES, summarise  # noqa: E402
from planner.cases.validate import validate_cases  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/calibration.csv


def _table(results: list[dict]) -> str:
    lines = [
        f"{'case':14} {'category':10} {'unit':22} {'measured':>12} {'predicted':>12} {'error':>8}  basis"
    ]
    for r in results:
        if r["rel_error"] is None:
            lines.append(f"{r['case_id']:14} {r['category']:10} skipped: {r['skipped_reason']}")
            continue
        lines.append(
            f"{r['case_id']:14} {r['category']:10} {r['measured_unit']:22} {r['measured']:12.4g} "
            f"{r['predicted']:12.4g} {r['rel_error']:+8.1%}  {r['basis'].split(';')[0]}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--refit", choices=REFIT_MODES, default=None)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)

    rows = [row for row in load_case_file(args.cases) if row["category"] != "memory"]
    results = validate_cases(rows, default_catalogs(), refit=args.refit, include_basis=True)["rows"]
    target = [r for r in results if r["category"] in PRESET_CATEGORIES]
    summary = summarise(results)
    summary["throughput+time"] = summarise([{**r, "category": "all"} for r in target])["all"]
    if args.format == "json":
        print(json.dumps({"rows": results, "summary": summary}, indent=1))
        return 0
    print(_table(results))
    print(f"\npresets: {'refit without the ' + args.refit if args.refit else 'shipped'}")
    for category, stats in summary.items():
        median_text = (
            "n/a" if stats["median_abs_rel_error"] is None else f"{stats['median_abs_rel_error']:.1%}"
        )
        p90_text = "n/a" if stats["p90_abs_rel_error"] is None else f"{stats['p90_abs_rel_error']:.1%}"
        print(
            f"{category:16} n={stats['n']:3}  skipped={stats['n_skipped']:2} "
            f"({stats['n_skipped'] / stats['n']:.0%})  median |err| {median_text}  p90 {p90_text}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
