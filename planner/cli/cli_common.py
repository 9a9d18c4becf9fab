"""What every command shares: the output formats, loading the scenario, and naming bad input as the user typed it.

Imported by `planner.cli.main` and each command module; it imports no command, so imports point one way.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from typing import Any

from pydantic import ValidationError

from planner.cli.cli_args import INPUT_NAMES, flag_name, scenario_from_args
from planner.errors import PlannerError
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import Scenario


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["table", "json", "csv"], default="table")


def load_scenario(args: argparse.Namespace, base: Scenario | None = None) -> Scenario:
    """The scenario the arguments describe, over `base` when given (its fields, the arguments winning);
    a rejected one raises `PlannerError` (field, range, value)."""
    fields = base.model_dump() if base is not None else {}
    try:
        return Scenario.model_validate({**fields, **scenario_from_args(args)})
    except ValidationError as err:
        raise scenario_error(err) from None


def describe_for_cli(error: PlannerError, args: argparse.Namespace | None) -> str:
    """One line naming what the user typed: the flag (`--devices`), `--set n_gpus`, or the file's key.

    A rule over several fields (n_gpus a multiple of tp x pp x cp) names the first of them the user gave;
    a field the user did not give is named by its own flag.
    """
    typed: dict[str, str] = getattr(args, INPUT_NAMES, None) or {}
    given = next((field for field in error.fields if field in typed), None)
    if given is None:
        if not error.field or error.field.isupper():  # no field, or an environment variable named as set
            return str(error)
        return error.describe(error.field if error.field.startswith("-") else flag_name(error.field))
    subject = "" if given == error.field else typed.get(error.field, flag_name(error.field))
    return error.describe(typed[given], subject=subject)


def render_records(rows: list[dict[str, Any]], fmt: str, *, single: bool = False) -> str:
    """Print rows as aligned text, JSON (one object for a single row, full precision) or CSV (4 s.f.)."""
    if fmt == "json":
        return json.dumps(rows[0] if single else rows, indent=2, allow_nan=False, default=str)
    if fmt == "csv":
        from planner.inputs.safe_csv import csv_cell

        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
        writer.writeheader()
        writer.writerows([{k: csv_cell(_flat_cell(v)) for k, v in row.items()} for row in rows])
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
