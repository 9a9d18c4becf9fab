"""`python -m planner compare`: the GPU comparison table of the dashboard's Compare page, on the command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from planner.catalogue.catalog import catalogs_from_environment
from planner.cli.cli_args import InputError
from planner.cli.cli_common import load_scenario, render_records
from planner.decide.compare import (
    POST_TRAINING_FIGURES,
    SORT_METRICS,
    compare_gpus,
    filter_rows,
    sort_rows,
)
from planner.decide.frontier import pareto_frontier

AddFlags = Callable[[argparse.ArgumentParser], None]
SORT_BY_COLUMN = {column: label for label, (column, _) in SORT_METRICS.items()}
# The text table keeps the columns a person reads first; JSON and CSV carry every column.
TABLE_COLUMNS = (
    "gpu",
    "vendor",
    "fits_vram",
    "min_gpus_to_fit",
    "memory_gib",
    "wall_clock_h",
    "device_hours",
    "cost_usd",
    "usd_per_million_tokens",
    "energy_kwh",
    "co2e_kg",
    "on_frontier",
    "bound_by",  # the largest part of each GPU's step, in words
    "status",
)
# A post-training comparison's table adds the models beside the policy, the KV cache and the time by part
# before the status (an SFT one has none of these columns, so its table is unchanged).
POST_TABLE_COLUMNS = (*POST_TRAINING_FIGURES, "peak_phase")


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    parser = commands.add_parser(
        "compare",
        help="every catalogue GPU under one scenario, side by side",
        description="Evaluate the scenario on every catalogue GPU (same count, layout and batch). A price "
        "quote, peak TFLOP/s or VRAM given applies to the scenario's GPU only.",
    )
    add_scenario_flags(parser)
    parser.add_argument(
        "--vendor",
        action="append",
        default=[],
        metavar="NAME",
        help="keep this vendor (repeatable; default: every vendor)",
    )
    parser.add_argument(
        "--min-memory-gib",
        type=float,
        default=0.0,
        metavar="GIB",
        help="keep GPUs with at least this much memory",
    )
    parser.add_argument(
        "--priced-only", action="store_true", help="keep GPUs with a catalogue price or quote"
    )
    parser.add_argument("--fitting-only", action="store_true", help="keep GPUs that fit at this GPU count")
    parser.add_argument("--sort", choices=list(SORT_BY_COLUMN), default="cost_usd", help="order of the rows")
    add_format(parser)


def comparison_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    frame = compare_gpus(load_scenario(args), catalogs_from_environment())
    vendors = _known_vendors(args.vendor, frame["vendor"].unique().to_list())
    frame = filter_rows(frame, vendors, args.min_memory_gib, args.priced_only, args.fitting_only)
    frame = sort_rows(pareto_frontier(frame, among="fits_vram"), SORT_BY_COLUMN[args.sort])
    return frame.to_dicts()


def _known_vendors(asked: list[str], known: list[str]) -> list[str]:
    """Vendor names matched without regard to case; an unknown one is an input error, not an empty table."""
    by_key = {name.lower(): name for name in known}
    unknown = [name for name in asked if name.lower() not in by_key]
    if unknown:
        raise InputError("--vendor", f"unknown vendor {unknown[0]!r}", allowed=", ".join(sorted(known)))
    return [by_key[name.lower()] for name in asked]


def run(args: argparse.Namespace) -> int:
    rows = comparison_rows(args)
    if args.format == "table":
        post = POST_TABLE_COLUMNS if rows and POST_TABLE_COLUMNS[0] in rows[0] else ()
        keys = (*TABLE_COLUMNS[:-1], *post, TABLE_COLUMNS[-1])
        rows = [{key: row[key] for key in keys} for row in rows]
    print(render_records(rows, args.format))
    return 0
