"""Command-line interface: `python -m planner estimate|schema|...`.

The only module in planner/ that prints. Bad input ends with exit status 2 and one line naming the field.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from planner.cli.cli_args import InputError, add_scenario_flags, scenario_from_args
from planner.inputs.errors import describe_validation_error
from planner.inputs.scenario import Scenario

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, never the usage dump
        raise InputError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="planner", description="Plan a training or fine-tuning run.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    estimate = commands.add_parser("estimate", help="estimate one scenario")
    add_scenario_flags(estimate)
    _add_format(estimate)
    commands.add_parser("schema", help="print the scenario's JSON Schema")
    _add_extra_commands(commands)
    return parser


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["table", "json", "csv"], default="table")


def _add_extra_commands(commands: Any) -> None:
    from planner.cli import cli_more

    cli_more.add_commands(commands, add_scenario_flags, _add_format)


def load_scenario(args: argparse.Namespace) -> Scenario:
    return Scenario.model_validate(scenario_from_args(args))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args)
    except ValidationError as err:
        return _fail(describe_validation_error(err))
    except (InputError, ValueError) as err:
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "schema":
        print(json.dumps(Scenario.model_json_schema(), indent=2))
        return 0
    if args.command == "estimate":
        from planner.catalogue.catalog import catalogs_from_environment
        from planner.estimate import estimate

        result = estimate(load_scenario(args), catalogs_from_environment())
        print(render_records([result.to_flat()], args.format, single=True))
        return 0
    from planner.cli import cli_more

    return cli_more.dispatch(args)


def render_records(rows: list[dict[str, Any]], fmt: str, *, single: bool = False) -> str:
    """Print rows as aligned text, JSON (one object for a single row) or CSV."""
    if fmt == "json":
        return json.dumps(rows[0] if single else rows, indent=2, allow_nan=False, default=str)
    if fmt == "csv":
        from planner.inputs.safe_csv import neutralise_cell

        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
        writer.writeheader()
        writer.writerows([{k: neutralise_cell(_flat_cell(v)) for k, v in row.items()} for row in rows])
        return buffer.getvalue().rstrip("\n")
    return _table(rows, single)


def _flat_cell(value: Any) -> Any:
    return _cell(value) if isinstance(value, dict) else value


def _table(rows: list[dict[str, Any]], single: bool) -> str:
    if single and rows:
        width = max(len(key) for key in rows[0])
        return "\n".join(f"{key:<{width}}  {_cell(value)}" for key, value in rows[0].items())
    if not rows:
        return "(no rows)"
    keys = list(rows[0])
    cells = [[_cell(row[k]) for k in keys] for row in rows]
    widths = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    lines = ["  ".join(k.ljust(w) for k, w in zip(keys, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)) for cell in cells]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items()) or "-"
    return str(value)
