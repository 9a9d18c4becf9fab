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

from planner.cli.cli_common import render_records

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


def run(args: argparse.Namespace) -> int:
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
    print(render_records(reports, "json" if args.format == "json" else "table"))
    return 0


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    from planner.cases.case_file import CASE_FILE_COLUMNS

    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CASE_FILE_COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} case rows to {path}", file=sys.stderr)
