"""`python -m planner recommend`: the best configurations for a scenario under a deadline, budget and GPU limit."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from planner.cli.cli_args import InputError
from planner.cli.cli_common import load_scenario, render_records

AddFlags = Callable[[argparse.ArgumentParser], None]
DEFAULT_TOP = 10


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    """Register `recommend`. Its `--gpus` names GPU types, so it replaces the `--gpus` alias of `--n-gpus`."""
    parser = commands.add_parser(
        "recommend",
        help="search GPU types and layouts for the cheapest (or fastest) plan that fits",
        epilog="Exit status 1 when no configuration meets the constraints. The sentence saying why the winner "
        "won follows the table; with --format json or csv it goes to standard error.",
        conflict_handler="resolve",
    )
    add_scenario_flags(parser)
    add_format(parser)
    from planner.decide.sweep import OBJECTIVES
    from planner.decide.sweep_grid import DEFAULT_MAX_GPUS

    parser.add_argument("--deadline-h", type=float, metavar="HOURS", help="finish within this wall clock")
    parser.add_argument("--budget-usd", type=float, metavar="USD", help="cost at most this")
    parser.add_argument(
        "--max-gpus",
        type=int,
        default=DEFAULT_MAX_GPUS,
        metavar="N",
        help=f"largest GPU count tried (default {DEFAULT_MAX_GPUS})",
    )
    parser.add_argument(
        "--gpus",
        dest="search_gpus",
        metavar="NAME,NAME",
        help="GPU types to try (default: every GPU with a catalogue price)",
    )
    parser.add_argument(
        "--objective", choices=OBJECTIVES, default="cost", help="what best means (default: cost)"
    )
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N", help="rows to print")
    parser.add_argument("--frontier", action="store_true", help="print the cost-versus-time frontier instead")


def _constraints(args: argparse.Namespace) -> Any:
    from planner.decide.sweep import Constraints

    names = None
    if args.search_gpus:
        names = tuple(name.strip() for name in args.search_gpus.split(",") if name.strip())
        if not names:
            raise InputError("--gpus", "give GPU names separated by commas")
    if args.top < 1:
        raise InputError("--top", "must be >= 1", value=args.top, allowed=">= 1")
    return Constraints(
        deadline_h=args.deadline_h,
        budget_usd=args.budget_usd,
        max_gpus=args.max_gpus,
        gpus=names,
        objective=args.objective,
    )


def run(args: argparse.Namespace) -> int:
    from planner.catalogue.catalog import catalogs_from_environment
    from planner.decide.sweep import search

    constraints = _constraints(args)
    result = search(load_scenario(args), constraints, catalogs=catalogs_from_environment(), top_n=args.top)
    frame = result.frontier if args.frontier else result.top
    print(render_records(frame.to_dicts(), args.format))
    if args.format == "table":
        print(f"\n{result.reason}")
        print(
            f"{result.n_evaluated:,} configurations evaluated in {result.elapsed_s:.2f} s; "
            f"{result.n_fit:,} fit, {result.n_feasible:,} meet the constraints."
        )
    else:
        print(result.reason, file=sys.stderr)
    return 0 if result.top.height else 1
