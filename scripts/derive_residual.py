"""Write data/microbench/residual.csv: the operator step model's residual per GPU generation.

Each supervised or pre-training throughput/time row of the case file is predicted with no residual; a
generation's residual is the median of measured speed / predicted speed over its rows
(`planner.cases.residual`). Prints, per generation, the spread of the figure when each source in turn is
left out (what `validate --refit source` uses for that source's rows).

Usage: PYTHONPATH=. .venv/bin/python scripts/derive_residual.py [--cases FILE.csv] [--dry-run]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cases.case_gpu import GpuMatcher  # noqa: E402
from planner.cases.case_scoring import feeds_presets, source_of  # noqa: E402
from planner.cases.residual import residual_from, residual_records  # noqa: E402
from planner.cases.validate import _case, default_case_file, load_case_file  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402
from planner.catalogue.microbench import RESIDUAL_CSV  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=default_case_file())
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    rows, cats = load_case_file(args.cases), default_catalogs()
    gpus = GpuMatcher(cats)
    cases = {row["case_id"]: _case(row, cats, gpus) for row in rows}
    found = residual_records(rows, cases, cats, feeds_presets)
    table = residual_from([(generation, source_of(row), ratio) for row, generation, ratio in found])
    sources = sorted({source_of(row) for row, _, _ in found})
    spread: dict[str, list[float]] = {}
    for source in sources:
        held = residual_from([(g, source_of(row), r) for row, g, r in found if source_of(row) != source])
        for generation, value in held.items():
            spread.setdefault(generation, []).append(value)
    report = {
        g: {"residual_frac": round(v, 4), "n_rows": sum(1 for _, gen, _ in found if gen == g or g == "default"),
            "source_holdout_range": [round(min(spread[g]), 4), round(max(spread[g]), 4)]}
        for g, v in sorted(table.items())
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    if not args.dry_run:
        with RESIDUAL_CSV.open("w", newline="", encoding="utf-8") as handle:
            out = csv.writer(handle)
            out.writerow(["generation", "residual_frac", "n_rows", "source", "as_of"])
            for generation, figures in report.items():
                source = f"scripts/derive_residual.py over {args.cases.name} (supervised/pre-training throughput and time rows)"
                out.writerow(
                    [
                        generation,
                        figures["residual_frac"],
                        figures["n_rows"],
                        source,
                        date.today().isoformat(),
                    ]
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
