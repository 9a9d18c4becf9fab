"""`python -m planner validate`: the planner's predictions against published measurements (a case file).

`--format json` prints the object of DESIGN.md §4 (`rows` and a `summary` per category); the table prints
one line per case, then the summary. Every row is predicted from the shipped catalogues and presets unless
`--refit row|source` asks for cross-validation. A bad case file ends with exit status 2 and one line per
malformed cell (row and column), all at once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.cases.case_file import CATEGORIES, REFIT_MODES, CaseFileError, default_case_file, load_case_file
from planner.cli.cli_common import render_records
from planner.cli.cli_labels import worded

AddFlags = Callable[[argparse.ArgumentParser], None]


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    """Register `validate`. It takes no scenario, and its formats are table and JSON (no CSV of a summary)."""
    parser = commands.add_parser(
        "validate",
        help="score the planner against published measurements",
        description="Predict every case of a case file (the columns of reference/calibration.csv) and compare "
        "with the published figure: error = predicted / published - 1. Every row is predicted from the "
        "shipped catalogues and efficiency presets alone (black-box); --refit rebuilds the presets from the "
        "case file for cross-validation.",
    )
    parser.add_argument(
        "--cases",
        type=Path,
        default=None,
        metavar="FILE.csv",
        help="case file (default: the bundled data/calibration.csv)",
    )
    parser.add_argument("--category", choices=CATEGORIES, default=None, help="keep the cases of one category")
    parser.add_argument(
        "--refit",
        choices=REFIT_MODES,
        default=None,
        help="cross-validation: presets rebuilt from the case file without each row (row) or without every "
        "row of its source document (source); default: the shipped presets",
    )
    parser.add_argument("--format", choices=["table", "json"], default="table")


def run(args: argparse.Namespace) -> int:
    try:
        rows = load_case_file(args.cases or default_case_file())
    except CaseFileError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2  # bad input (planner.cli.main's exit status for it)
    # Loaded only once the file is accepted, so a refused file is refused before polars and the catalogues load.
    from planner.cases.validate import validate_cases
    from planner.catalogue.catalog import default_catalogs

    report = validate_cases(rows, default_catalogs(), args.category, refit=args.refit)
    if args.format == "json":
        print(json.dumps(report, indent=2, allow_nan=False))
    else:
        print(render_table(report))
    return 0


def render_table(report: dict[str, Any]) -> str:
    """The cases, one per line, then one summary line per category (errors in %)."""
    cases = [
        {
            "case_id": row["case_id"],
            "category": row["category"],
            "measured_unit": row["measured_unit"],
            "measured": row["measured"],
            "predicted": row["predicted"],
            "error": _percent(row["rel_error"], signed=True),
            "skipped_reason": row["skipped_reason"],
        }
        for row in report["rows"]
    ]
    summary = [
        {
            "category": category,
            "n": stats["n"],
            "n_skipped": stats["n_skipped"],
            "median_abs_error": _percent(stats["median_abs_rel_error"]),
            "p90_abs_error": _percent(stats["p90_abs_rel_error"]),
            "max_abs_error": _percent(stats["max_abs_rel_error"]),
        }
        for category, stats in report["summary"].items()
    ]
    return f"{render_records(worded(cases), 'table')}\n\n{render_records(worded(summary), 'table')}"


def _percent(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"
