"""Print the README's accuracy section (markdown) from `planner.cases.validate.validate_file`.

One summary table per category (cases, skipped, median / 90th percentile / largest |error|), the throughput
and time categories together (the acceptance target), then per category the rows with the largest errors and
what their prediction rests on, and every skipped row with its reason.

Usage: .venv/bin/python scripts/accuracy_table.py [--cases FILE.csv] [--worst N] > docs/accuracy.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cases.validate import default_case_file, error_summary, load_case_file, validate_cases  # noqa: E402

COMBINED = ("throughput", "time")  # the compute acceptance target covers both together


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=default_case_file())
    parser.add_argument("--worst", type=int, default=3, help="rows with the largest |error| per category")
    args = parser.parse_args(argv)
    try:
        cases = load_case_file(args.cases)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(accuracy_markdown(cases, args.cases, args.worst))
    return 0


def accuracy_markdown(cases: list[dict[str, str]], path: Path, n_worst: int) -> str:
    report = validate_cases(cases, include_basis=True)
    models = {case["case_id"]: case["model"] for case in cases}
    rows = report["rows"]
    summary = dict(report["summary"])
    together = [{**row, "category": " + ".join(COMBINED)} for row in rows if row["category"] in COMBINED]
    summary.update(error_summary(together, [" + ".join(COMBINED)]))
    name = path.name if path == default_case_file() else str(path)
    lines = [
        "## Accuracy against published measurements",
        "",
        f"`python -m planner validate` predicts each of the {len(rows)} published measurements in `{name}` "
        "from the configuration that produced it and compares: error = predicted / published − 1. "
        "Throughput and time rows use efficiency presets rebuilt without the row itself (leave-one-out); "
        "energy rows go through the same time model to GPU-hours, then the power, PUE and grid intensity the "
        "source states. Regenerate this section with `.venv/bin/python scripts/accuracy_table.py`.",
        "",
        *summary_table(summary),
    ]
    for category in report["summary"]:
        of_category = [row for row in rows if row["category"] == category]
        lines += ["", f"### {category.capitalize()}", ""]
        lines += worst_rows(of_category, models, n_worst)
        lines += skipped_rows(of_category)
    return "\n".join(lines)


def summary_table(summary: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [
        "| Category | Cases | Skipped | Median \\|error\\| | 90th percentile \\|error\\| | Largest \\|error\\| |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for category, stats in summary.items():
        cells = [
            category,
            str(stats["n"]),
            str(stats["n_skipped"]),
            *(
                percent(stats[key])
                for key in ("median_abs_rel_error", "p90_abs_rel_error", "max_abs_rel_error")
            ),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def worst_rows(rows: Sequence[Mapping[str, Any]], models: Mapping[str, str], n_worst: int) -> list[str]:
    scored = sorted((r for r in rows if r["rel_error"] is not None), key=lambda r: -abs(r["rel_error"]))
    if not scored:
        return ["No row of this category could be predicted."]
    lines = [
        f"Largest errors ({min(n_worst, len(scored))} of {len(scored)} predicted rows):",
        "",
        "| Case | Model | Unit | Published | Predicted | Error | Prediction rests on |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for row in scored[:n_worst]:
        cells = [
            row["case_id"],
            models.get(row["case_id"], ""),
            row["measured_unit"],
            number(row["measured"]),
            number(row["predicted"]),
            percent(row["rel_error"], signed=True),
            row.get("basis") or "",
        ]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return lines


def skipped_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    skipped = [row for row in rows if row["rel_error"] is None]
    if not skipped:
        return []
    return ["", "Skipped:", "", *(f"- {row['case_id']}: {row['skipped_reason']}" for row in skipped)]


def percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def number(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


if __name__ == "__main__":
    raise SystemExit(main())
