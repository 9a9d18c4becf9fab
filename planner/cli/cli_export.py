"""`python -m planner export --to TARGET`: the plan as DeepSpeed, accelerate, torchtune, torchtitan, Megatron-LM or TRL
configuration.

The configuration goes to stdout (or `--output FILE`) and stays parseable; what the target cannot express goes
to stderr as `note:` lines.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.catalogue.catalog import catalogs_from_environment
from planner.cli.cli_args import InputError
from planner.cli.cli_common import load_scenario
from planner.errors import PlannerError
from planner.export.export_types import TARGET_VERSIONS
from planner.export.exporters import EXPORT_TARGETS, export_plan
from planner.inputs.scenario import Scenario

AddFlags = Callable[[argparse.ArgumentParser], None]


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    parser = commands.add_parser(
        "export",
        help="the plan as a DeepSpeed, accelerate, torchtune, torchtitan, Megatron-LM or TRL configuration",
        description="Write the scenario as another framework's configuration. Targets: "
        + "; ".join(f"{name} ({TARGET_VERSIONS[name]})" for name in EXPORT_TARGETS)
        + ". What the target cannot express is printed to stderr as note: lines.",
    )
    # Checked in run(), not by argparse choices, so a bad value gets the planner's one-line message.
    parser.add_argument("--to", required=True, metavar="TARGET", help=" | ".join(EXPORT_TARGETS))
    parser.add_argument("--output", metavar="FILE", help="write the configuration to FILE instead of stdout")
    parser.add_argument(
        "--plan",
        metavar="NAME",
        help="start from this team-library plan (name or id); flags given override it",
    )
    parser.add_argument("--db", metavar="URL", help="the library's database URL (default: PLANNER_DB_URL)")
    add_scenario_flags(parser)


def run(args: argparse.Namespace) -> int:
    target = args.to.strip().lower()
    if target not in EXPORT_TARGETS:
        raise InputError("--to", "unknown export target", value=args.to, allowed=", ".join(EXPORT_TARGETS))
    result = export_plan(_scenario(args), catalogs_from_environment(), target)
    if args.output:
        _write(Path(args.output), result.text)
    else:
        sys.stdout.write(result.text)
    for sentence in (*result.not_expressed, *result.notes):
        print(f"note: {sentence}", file=sys.stderr)
    return 0


def _scenario(args: argparse.Namespace) -> Scenario:
    """The scenario the flags describe, over the library plan `--plan` names when given."""
    if not args.plan:
        return load_scenario(args)
    try:
        from planner.library.opening import open_library  # the database only for --plan (0.3 s of imports)

        plan = open_library(args.db).find(args.plan)
    except PlannerError as err:
        raise InputError("--plan", err.problem, value=args.plan, closest=err.closest) from None
    if plan.scenario is None:
        raise InputError(
            "--plan", f"{plan.name!r} no longer validates ({plan.problem}); repair it in the app first"
        )
    return load_scenario(args, base=plan.scenario)


def _write(path: Path, text: str) -> None:
    """Write to a regular file (created when new); anything else is refused before a byte is written.

    Opened without blocking, so a FIFO with no reader is refused (ENXIO) instead of hanging, and checked
    with fstat on the opened file itself (not a name that could be swapped in between); truncated only then.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags, 0o666)
    except OSError as err:
        raise InputError("--output", f"cannot write {path}: {_reason(err)}") from None
    with os.fdopen(descriptor, "wb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise InputError(
                "--output", f"{path} is not a regular file; give a new path or a file to replace"
            )
        try:
            os.set_blocking(descriptor, True)
            handle.truncate(0)
            handle.write(text.encode("utf-8"))
        except OSError as err:
            raise InputError("--output", f"cannot write {path}: {_reason(err)}") from None


def _reason(err: OSError) -> str:
    if err.errno == errno.ENXIO:  # a FIFO or socket no process reads
        return "it is a pipe or device no program is reading; give a new path or a regular file"
    return err.strerror or type(err).__name__
