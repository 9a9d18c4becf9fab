"""Print the step-time model's validation figures as JSON: throughput + time together, each category alone,
and the memory rows' share predicted low, for the shipped catalogues (in-sample where presets are derived from
the file) and under source holdout (`--refit source`); then, under source holdout, how well the layouts of one
setup are ordered (Kendall τ within each group of rows of the same model, GPU, GPU count, global batch, sequence
and unit) and the rows with the largest errors.

Usage: PYTHONPATH=. .venv/bin/python scripts/step_time_score.py [--cases FILE.csv] [--worst N]
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from planner.cases.validate import default_case_file, load_case_file, validate_cases  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402

STEP_CATEGORIES = ("throughput", "time")
GROUP_COLUMNS = ("model", "gpu", "n_gpus", "global_batch", "seq_len", "measured_unit")


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


def kendall_tau(measured: list[float], predicted: list[float]) -> float:
    """Kendall's τ-b of two orderings (ties in either count as neither agreeing nor disagreeing)."""
    agree = disagree = tied_m = tied_p = 0
    for i, j in combinations(range(len(measured)), 2):
        dm, dp = np.sign(measured[i] - measured[j]), np.sign(predicted[i] - predicted[j])
        tied_m, tied_p = tied_m + (dm == 0), tied_p + (dp == 0)
        agree, disagree = agree + (dm * dp > 0), disagree + (dm * dp < 0)
    pairs = len(measured) * (len(measured) - 1) // 2
    denominator = np.sqrt(float(pairs - tied_m) * float(pairs - tied_p))
    return float((agree - disagree) / denominator) if denominator > 0 else float("nan")


def layout_order(cases: list[dict[str, str]], rows: list[dict[str, Any]], min_rows: int) -> dict[str, Any]:
    """Median Kendall τ over the groups of `min_rows` or more predicted rows that differ in layout only, and in how many
    groups the predicted best (fastest; shortest for a time unit) is the measured best."""
    by_id = {c["case_id"]: c for c in cases}
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r["category"] in STEP_CATEGORIES and r["rel_error"] is not None:
            groups.setdefault(tuple(by_id[r["case_id"]][k] for k in GROUP_COLUMNS), []).append(r)
    taus, best_agrees = [], 0
    for members in (m for m in groups.values() if len(m) >= min_rows):
        measured, predicted = [m["measured"] for m in members], [m["predicted"] for m in members]
        taus.append(kendall_tau(measured, predicted))
        slower_is_larger = members[0]["measured_unit"] in ("s_per_iteration", "days", "gpu_hours")
        pick = np.argmin if slower_is_larger else np.argmax
        best_agrees += int(pick(measured) == pick(predicted))
    return {
        "n_groups": len(taus),
        "median_tau": round(float(np.nanmedian(taus)), 3) if taus else None,
        "predicted_best_is_measured_best": best_agrees,
    }


def scores(cases: list[dict[str, str]], refit: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = validate_cases(cases, default_catalogs(), refit=refit)["rows"]
    out = {cat: _stats([r for r in rows if r["category"] == cat]) for cat in ("throughput", "time", "memory")}
    out["throughput+time"] = _stats([r for r in rows if r["category"] in STEP_CATEGORIES])
    return out, rows


def worst(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    scored = [r for r in rows if r["category"] in STEP_CATEGORIES and r["rel_error"] is not None]
    scored.sort(key=lambda r: -abs(r["rel_error"]))
    return [{"case_id": r["case_id"], "rel_error": round(r["rel_error"], 3)} for r in scored[:n]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=default_case_file())
    parser.add_argument("--worst", type=int, default=15, help="rows listed by |error| (source holdout)")
    args = parser.parse_args()
    cases = load_case_file(args.cases)
    in_sample, _ = scores(cases, None)
    held_out, rows = scores(cases, "source")
    report = {
        "in_sample": in_sample,
        "source_holdout": held_out,
        # pairs already have an order to get right; groups of 3+ say more per group
        "layout_order_source_holdout": {f"groups_of_{k}+": layout_order(cases, rows, k) for k in (2, 3)},
        "worst_source_holdout": worst(rows, args.worst),
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
