"""The commands beyond `estimate` and `schema`: compare, recommend, validate, plans, export.

Each lives in its own module exposing `add_command(commands, add_scenario_flags, add_format)` and `run(args)`;
they share `planner.cli.cli_common` and never import `planner.cli.main`, so imports point one way.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import ModuleType
from typing import Any

from planner.cli import cli_compare, cli_export, cli_plans, cli_recommend, cli_validate
from planner.cli.cli_args import InputError

AddFlags = Callable[[argparse.ArgumentParser], None]

COMMAND_MODULES: dict[str, ModuleType] = {
    "compare": cli_compare,
    "recommend": cli_recommend,
    "validate": cli_validate,
    "plans": cli_plans,
    "export": cli_export,
}


def add_commands(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    """Register the extra sub-commands on the CLI's sub-parser group."""
    for module in COMMAND_MODULES.values():
        module.add_command(commands, add_scenario_flags, add_format)


def dispatch(args: argparse.Namespace) -> int:
    if args.command not in COMMAND_MODULES:
        raise InputError("", f"unknown command {args.command!r}", closest=list(COMMAND_MODULES))
    result: int = COMMAND_MODULES[args.command].run(args)
    return result
