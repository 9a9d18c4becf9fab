"""Derive the compute-efficiency presets (data/efficiency.csv) from published throughput and time rows.

Each throughput or time row of the case file (reference/calibration.csv) is turned into the formulas' inputs
(`planner.cases.compute_cases`); its measured tokens/s, samples/s, TFLOP/s or s/iteration becomes a step time, from
which the modelled exposed communication and pipeline bubble are taken out (`planner.cases.case_model`). What is
left is the compute-only efficiency on hardware FLOPs against the GPU's dense peak (BF16, or FP8 for FP8
recipes), with peaks from data/gpus.csv. Rows are grouped by GPU generation × model size × method ×
precision; empty combinations are filled by the rules of `planner.catalogue.efficiency.fill_missing`.

Usage: python scripts/derive_efficiency.py [--cases CSV] [--gpus CSV] [--out CSV] [--as-of YYYY-MM-DD]
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner.cases.case_model import efficiency_record  # noqa: E402
from planner.cases.case_scoring import PRESET_CATEGORIES, case_inputs, read_case_file  # noqa: E402
from planner.cases.compute_cases import load_case_gpus  # noqa: E402
from planner.catalogue.efficiency import EFFICIENCY_CSV, build_efficiency_table  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/calibration.csv
SOURCE = "scripts/derive_efficiency.py over reference/calibration.csv (throughput and time rows)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--gpus", type=Path, default=ROOT / "data" / "gpus.csv")
    parser.add_argument("--out", type=Path, default=EFFICIENCY_CSV)
    parser.add_argument("--as-of", default=date.today().isoformat())
    args = parser.parse_args(argv)

    gpus = load_case_gpus(args.gpus) if args.gpus.exists() else None
    records = []
    for row, case in case_inputs(read_case_file(args.cases), gpus):
        if row["category"] not in PRESET_CATEGORIES:
            continue
        record = efficiency_record(case) if isinstance(case, dict) else case
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
