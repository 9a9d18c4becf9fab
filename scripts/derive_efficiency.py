"""Derive the compute-efficiency presets (data/efficiency.csv) from published throughput and time rows.

Each throughput or time row of the case file (reference/calibration.csv) becomes the Scenario a user would
type (`planner.cases.case_row.case_scenario`); its compute-only efficiency is the utilisation at which
resolve -> evaluate (the path of `planner.estimate`) reproduces the measured tokens/s, samples/s, TFLOP/s or
s/iteration (`planner.cases.case_predict.case_efficiency`): exposed communication and the pipeline bubble are
those evaluate models, peaks those of data/gpus.csv (BF16, or FP8 for FP8 recipes). Rows are grouped by GPU
generation × model size (active parameters) × method × precision, as `resolve` looks presets up; empty
combinations are filled by the rules of `planner.catalogue.efficiency.fill_missing`.

Usage: python scripts/derive_efficiency.py [--cases CSV] [--out CSV] [--as-of YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.cases.case_file import load_case_file  # noqa: E402
from planner.cases.case_gpu import GpuMatcher  # noqa: E402
from planner.cases.case_row import case_scenario  # noqa: E402
from planner.cases.case_scoring import efficiency_record, feeds_presets  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402
from planner.catalogue.efficiency import EFFICIENCY_CSV, build_efficiency_table  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/calibration.csv
SOURCE = "scripts/derive_efficiency.py over reference/calibration.csv (throughput and time rows)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--out", type=Path, default=EFFICIENCY_CSV)
    parser.add_argument("--as-of", default=date.today().isoformat())
    args = parser.parse_args(argv)

    cats = default_catalogs()
    gpus = GpuMatcher(cats)
    records = []
    for row in load_case_file(args.cases):
        if not feeds_presets(row):  # memory and energy rows, and post-training rows (see feeds_presets)
            continue
        case = case_scenario(row, cats, gpus)
        if isinstance(case, str):
            print(f"{row['case_id']:14} left out: {case}")
            continue
        scenario, facts = case
        gpu = gpus.match(scenario.gpu)
        generation = str(gpu["generation"]) if isinstance(gpu, dict) else "default"
        record = efficiency_record(scenario, facts, generation, cats)
        if isinstance(record, str):
            print(f"{row['case_id']:14} left out: {record}")
            continue
        records.append(record)
        print(
            f"{row['case_id']:14} {record['generation']:7} {record['precision']:4} {record['method']:5} "
            f"{record['n_params'] / 1e9:7.1f}B  efficiency {record['efficiency']:.3f}"
        )
    table = build_efficiency_table(records, source=SOURCE, as_of=args.as_of)
    table.write_csv(args.out)
    measured = table.filter(table["rule"] == "measured")
    print(
        f"{len(records)} rows → {measured.height} measured cells, {table.height} cells written to {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
