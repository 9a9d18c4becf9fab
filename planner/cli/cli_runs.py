"""`python -m planner runs import FILE...`: real training logs to case rows, with what was found and missing.

Reads Hugging Face trainer_state.json (+ config.json / training_args.json), torchtune metric logs, torchtitan,
Megatron-LM and DeepSpeed console logs, and W&B / MLflow CSV exports through `--columns`. A foreign or torn
file ends with exit status 2 and one line saying what was seen (planner.runs.reading).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.cli.cli_common import load_scenario, render_records
from planner.cli.cli_labels import worded

AddFlags = Callable[[argparse.ArgumentParser], None]


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    parser = commands.add_parser("runs", help="import real training logs (plan versus actual)")
    actions = parser.add_subparsers(dest="runs_action", required=True, parser_class=type(parser))
    imp = actions.add_parser(
        "import",
        help="read training logs into case rows",
        description="Read each log's step time, throughput, TFLOP/s, MFU and peak memory (by the statistic "
        "the trainer reports), print what was found and what is missing, and with --cases-out write them as "
        "rows of the validate case format.",
    )
    imp.add_argument("files", nargs="+", type=Path, metavar="FILE")
    imp.add_argument(
        "--columns", default="", metavar="FIGURE=COLUMN[*SCALE],...", help="column map for a W&B/MLflow CSV"
    )
    imp.add_argument(
        "--set", action="append", default=[], metavar="COLUMN=VALUE", help="a case-file column the log lacks"
    )
    imp.add_argument("--cases-out", type=Path, default=None, metavar="FILE.csv", help="write case rows here")
    imp.add_argument("--format", choices=("table", "json"), default="table")
    imp.add_argument(
        "--attach", default=None, metavar="PLAN", help="store the runs in the library under a plan"
    )
    imp.add_argument("--db", default=None, metavar="URL", help="database URL (default: PLANNER_DB_URL)")
    imp.add_argument("--author", default="", help="your name, recorded on the stored runs")
    compare = actions.add_parser(
        "compare",
        help="predicted versus measured for a saved plan's runs, or for log files against a scenario",
        description="Step time, throughput, peak memory (by the statistic each log reports) and wall clock: "
        "the estimate beside what the runs measured, the error (predicted / measured - 1) and the part of the "
        "model nearest to the gap. Give PLAN (runs attached with import --attach), or --files and the "
        "scenario flags of estimate.",
    )
    compare.add_argument("plan", nargs="?", default=None, metavar="PLAN", help="a saved plan's name or id")
    compare.add_argument("--files", nargs="+", type=Path, default=[], metavar="FILE")
    compare.add_argument("--columns", default="", metavar="FIGURE=COLUMN[*SCALE],...")
    compare.add_argument("--db", default=None, metavar="URL", help="database URL (default: PLANNER_DB_URL)")
    add_scenario_flags(compare)
    compare.add_argument("--format", choices=("table", "json"), default="table")
    compare.add_argument(
        "--calibrated", action="store_true", help="apply the team calibration of the plan's GPU and regime"
    )
    calibrate = actions.add_parser(
        "calibrate",
        help="fit the team's scale factors from the runs attached to plans (per GPU and regime)",
        description="One time scale and one memory scale per GPU and regime from the runs attached to saved "
        "plans, stored in the library; prints the leave-one-run-out error before and after. Needs at least "
        "3 runs of one GPU and regime.",
    )
    calibrate.add_argument("--db", default=None, metavar="URL", help="database URL (default: PLANNER_DB_URL)")
    calibrate.add_argument("--author", default="", help="your name, recorded on the calibration")
    calibrate.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    if args.runs_action == "compare":
        return _compare(args)
    if args.runs_action == "calibrate":
        return _calibrate(args)
    from planner.runs.case_rows import case_rows, missing_for_prediction
    from planner.runs.column_map import parse_column_map
    from planner.runs.importer import import_runs
    from planner.runs.record import RunLogError

    settings = {}
    for item in args.set:
        column, sep, value = item.partition("=")
        if not sep:
            raise RunLogError(f"--set {item!r}: expected COLUMN=VALUE")
        settings[column.strip()] = value.strip()
    records = import_runs(args.files, parse_column_map(args.columns))
    reports, rows = [], []
    for number, record in enumerate(records, start=1):
        run_rows = case_rows(record, settings, f"RUN{number}-{Path(record.path).stem}")
        rows += run_rows
        flat = record.to_flat()
        flat["case_rows"] = len(run_rows)
        flat["missing_for_prediction"] = ", ".join(missing_for_prediction(record, settings))
        reports.append(flat)
    if args.cases_out is not None:
        _write(args.cases_out, rows)
    if args.attach is not None:
        _attach(args, records, reports)
    print(_render(reports, args.format))
    return 0


def _attach(args: argparse.Namespace, records: list[Any], reports: list[dict[str, Any]]) -> None:
    from planner.library.opening import open_library
    from planner.runs.run_store import save_run

    library = open_library(args.db)
    plan = library.find(args.attach)
    for record, report in zip(records, reports, strict=True):
        report["run_id"] = save_run(library, record, plan_id=plan.id, author=args.author)
        report["plan"] = plan.name


def _compare(args: argparse.Namespace) -> int:
    from planner.cli.cli_args import InputError
    from planner.runs.api import compare_plan, compare_runs, import_runs, parse_column_map

    if (args.plan is None) == (not args.files):
        raise InputError("", "runs compare: give either PLAN or --files FILE... (with scenario flags)")
    if args.plan is not None:
        from planner.library.opening import open_library

        rows = compare_plan(open_library(args.db), args.plan, use_calibration=args.calibrated)
    else:
        if args.calibrated:
            raise InputError(
                "--calibrated", "applies to a saved PLAN (its GPU and regime pick the calibration)"
            )
        records = import_runs(args.files, parse_column_map(args.columns))
        rows = compare_runs(load_scenario(args), records)
    print(_render(rows, args.format))
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from planner.library.opening import open_library
    from planner.runs.api import fit_team_calibration

    fitted = fit_team_calibration(open_library(args.db), args.author)
    print(_render([c.to_flat() for c in fitted], args.format))
    return 0


def _render(rows: list[dict[str, Any]], fmt: str) -> str:
    """JSON with the record keys, or a text table with headers in words (planner.cli.cli_labels)."""
    return render_records(rows, "json") if fmt == "json" else render_records(worded(rows), "table")


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    from planner.cases.case_file import CASE_FILE_COLUMNS

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CASE_FILE_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} case rows to {path}", file=sys.stderr)
