"""Print the README's accuracy section (markdown) from `planner.cases.validate.validate_cases`.

Three scores per category (and for throughput + time together, the acceptance target): the shipped presets
(black-box, what a user gets), source holdout (presets rebuilt without every row of the scored row's source
document) and row holdout (without the row itself); then per category the rows with the largest errors on the
shipped presets and what their prediction rests on, and every skipped row with its reason.

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

from planner.cases.validate import (  # noqa: E402
    POST_GROUP,
    default_case_file,
    error_summary,
    load_case_file,
    post_training_summary,
    validate_cases,
)
from planner.catalogue.catalog import default_catalogs  # noqa: E402

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


MODES = (("shipped presets", None), ("source holdout", "source"), ("row holdout", "row"))


def accuracy_markdown(cases: list[dict[str, str]], path: Path, n_worst: int) -> str:
    reports = {
        label: validate_cases(cases, default_catalogs(), refit=refit, include_basis=True)
        for label, refit in MODES
    }
    shipped = reports["shipped presets"]
    models = {case["case_id"]: case["model"] for case in cases}
    rows = shipped["rows"]
    name = path.name if path == default_case_file() else str(path)
    lines = [
        "## Accuracy against published measurements",
        "",
        f"`python -m planner validate` predicts each of the {len(rows)} published measurements in `{name}` "
        "from the configuration that produced it, through the same resolve → evaluate path as an estimate, "
        "and compares: error = predicted / published − 1. Energy rows go through the same time model to "
        "GPU-hours, then the power, PUE and grid intensity the source states. Three scores per category:",
        "",
        "- **shipped presets** (`validate`, the default): every row predicted from the shipped catalogues and "
        "efficiency presets alone, as a user's plan is. The presets were derived from these throughput and "
        "time rows, so for those two categories this score is in-sample.",
        "- **source holdout** (`validate --refit source`): presets rebuilt without every row of the scored "
        "row's source document.",
        "- **row holdout** (`validate --refit row`): presets rebuilt without the scored row only; its siblings "
        "from the same document (same harness, same cluster) stay in.",
        "",
        "**Which to trust for a new setup:** the source-holdout figures. A setup of your own is a source the "
        "presets have not seen, which is exactly what that score measures; the shipped score is what the "
        "published rows themselves get, and row holdout usually sits between the two (holding out a whole "
        "source can instead move a row to a broader efficiency cell that happens to fit it better, so the two "
        "holdouts can swap places). Memory predictions use no "
        "presets, and energy rows never feed them (nor does any source of theirs), so for those two "
        "categories the three scores agree and are all out-of-sample. Regenerate this section with "
        "`.venv/bin/python scripts/accuracy_table.py`.",
        "",
        *summary_table(reports, cases),
        "",
        f"The `{POST_GROUP}` line gathers the post-training rows of every category (a preference or RL "
        "objective in `method`; their own target is a median |error| of 25 %). They feed no preset, so their "
        "three scores differ only through the presets of the policy's training.",
    ]
    for category in shipped["summary"]:
        of_category = [row for row in rows if row["category"] == category]
        lines += ["", f"### {category.capitalize()}", ""]
        lines += worst_rows(of_category, models, n_worst)
        lines += skipped_rows(of_category)
    return "\n".join(lines)


def summary_table(reports: Mapping[str, Mapping[str, Any]], cases: Sequence[Mapping[str, str]]) -> list[str]:
    """One line per category (then throughput + time, then the post-training rows of every category): cases,
    skipped, then median / p90 |error| for each mode, largest on shipped."""
    together = " + ".join(COMBINED)
    summaries = {}
    for label, report in reports.items():
        summary = dict(report["summary"])
        rows = [{**row, "category": together} for row in report["rows"] if row["category"] in COMBINED]
        summary.update(error_summary(rows, [together]))
        summary[POST_GROUP] = post_training_summary(report["rows"], cases)
        summaries[label] = summary
    labels = list(reports)
    lines = [
        "| Category | Cases | Skipped | "
        + " | ".join(f"Median / p90 \\|error\\|, {label}" for label in labels)
        + " | Largest \\|error\\|, shipped |",
        "|---|---:|---:|" + "---:|" * (len(labels) + 1),
    ]
    for category, stats in summaries[labels[0]].items():
        scores = [
            f"{percent(summaries[label][category]['median_abs_rel_error'])} / "
            f"{percent(summaries[label][category]['p90_abs_rel_error'])}"
            for label in labels
        ]
        cells = [
            category,
            str(stats["n"]),
            str(stats["n_skipped"]),
            *scores,
            percent(stats["max_abs_rel_error"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def worst_rows(rows: Sequence[Mapping[str, Any]], models: Mapping[str, str], n_worst: int) -> list[str]:
    scored = sorted((r for r in rows if r["rel_error"] is not None), key=lambda r: -abs(r["rel_error"]))
    if not scored:
        return ["No row of this category could be predicted."]
    lines = [
        f"Largest errors on the shipped presets ({min(n_worst, len(scored))} of {len(scored)} predicted rows):",
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
