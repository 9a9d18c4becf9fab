"""Command-line interface: `python -m planner estimate|schema|...`.

The only module in planner/ that prints. Bad input ends with exit status 2 and one line naming what the user
typed (the flag, `--set FIELD`, or the scenario file's key) and the allowed range; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from planner.cli import cli_more
from planner.cli.cli_args import InputError, add_scenario_flags
from planner.cli.cli_common import add_format, describe_for_cli, load_scenario, render_records
from planner.errors import PlannerError
from planner.inputs.scenario import Scenario

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, never the usage dump
        raise InputError("", message)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser: every command, or only those `argv` needs (see `cli_more.add_commands`)."""
    parser = _Parser(prog="planner", description="Plan a training or fine-tuning run.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    estimate = commands.add_parser("estimate", help="estimate one scenario")
    add_scenario_flags(estimate)
    add_format(estimate)
    estimate.add_argument(
        "--all", action="store_true", help="table: every figure under its key, not the grouped summary"
    )
    commands.add_parser("schema", help="print the scenario's JSON Schema")
    cli_more.add_commands(commands, add_scenario_flags, add_format, argv)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args: argparse.Namespace | None = None
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser(words).parse_args(words)
        return _dispatch(args)
    except PlannerError as err:
        return _fail(describe_for_cli(err, args))
    except ValueError as err:  # a catalogue or case file that cannot be read: its message names file and row
        return _fail(str(err).splitlines()[0] if str(err) else type(err).__name__)
    except (
        BrokenPipeError
    ):  # the reader went away (`planner estimate | head`): what it read is what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "schema":
        print(json.dumps(Scenario.model_json_schema(), indent=2))
        return 0
    if args.command == "estimate":
        return _estimate(args)
    return cli_more.dispatch(args)


# The table format lists this many fixes (the best first); JSON carries them all.
TABLE_FIXES = 5


def _estimate(args: argparse.Namespace) -> int:
    """One scenario's figures; a plan that does not fit also gets its ways to make it fit (`fixes`)."""
    scenario = load_scenario(args)  # a bad flag or file is refused before the catalogues are even imported
    from planner.catalogue.catalog import catalogs_from_environment
    from planner.decide.fixes import suggest_fixes
    from planner.decide.plan_words import human_duration
    from planner.estimate import estimate_resolved
    from planner.multimodal.outputs import MultimodalFigures
    from planner.post.outputs import PostTrainingFigures
    from planner.resolve import resolve

    post_training_keys = frozenset(PostTrainingFigures.model_fields)

    cats = catalogs_from_environment()
    resolved = resolve(scenario, cats)
    result = estimate_resolved(resolved)
    flat = result.to_flat()
    if args.format == "table" and scenario.post_training == "sft":  # its post-training figures are all 0
        flat = {key: value for key, value in flat.items() if key not in post_training_keys}
    if args.format == "table" and not result.token_rule:  # a text model: no image figures to show
        flat = {key: value for key, value in flat.items() if key not in MultimodalFigures.model_fields}
    short = result.fit_verdict not in (None, "fits")  # tight or does not fit: fixes that leave a margin
    fixes = suggest_fixes(resolved, cats) if short else []
    if args.format == "json" and short:
        flat["fixes"] = [fix.to_flat() for fix in fixes]
    if args.format == "table" and not args.all:
        from planner.cli.cli_summary import summary

        print(summary(resolved, result))
    else:
        print(render_records([flat], args.format, single=True))
    if args.format == "table" and short:
        print("\nWays to make it fit (best first):" if fixes else "\nNo single change makes it fit.")
        for fix in fixes[:TABLE_FIXES]:
            verdict = "fits with margin" if fix.fits else "still tight or too big"
            print(
                f"  - {fix.label}: {fix.peak_gib:.2f} GiB per GPU, {verdict}, {human_duration(fix.wall_clock_h)}. "
                f"{fix.note[:1].upper()}{fix.note[1:]}."
            )
        if len(fixes) > TABLE_FIXES:
            print(f"  ... {len(fixes) - TABLE_FIXES} more with --format json")
    return 0
