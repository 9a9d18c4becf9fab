"""Print the step-time model's validation figures as JSON: throughput + time together, each category alone,
and the memory rows' share predicted low, for the shipped catalogues (in-sample where presets are derived from
the file) and under source holdout (`--refit source`).

Usage: PYTHONPATH=. .venv/bin/python scripts/step_time_score.py [--cases FILE.csv] [--rows]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from planner.cases.validate import default_case_file, load_case_file, validate_cases  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errors = np.array([r["rel_error"] for r in rows if r["rel_error"] is not None], dtype=float)
    if errors.size == 0:
        return {"n": 0}
    return {
        "n": int(errors.size),
        "median_abs": round(float(np.median(np.abs(errors))), 4),
        "p90_abs": round(float(np.quantile(np.abs(errors), 0.9)), 4),
        "share_low": round(float(np.mean(errors < 0)), 3),
    }


def scores(cases: list[dict[str, str]], refit: str | None) -> dict[str, Any]:
    rows = validate_cases(cases, default_catalogs(), refit=refit)["rows"]
    out = {cat: _stats([r for r in rows if r["category"] == cat]) for cat in ("throughput", "time", "memory")}
    out["throughput+time"] = _stats([r for r in rows if r["category"] in ("throughput", "time")])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=default_case_file())
    args = parser.parse_args()
    cases = load_case_file(args.cases)
    report = {"in_sample": scores(cases, None), "source_holdout": scores(cases, "source")}
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
