"""The commands beyond `estimate` and `schema`: compare, recommend, validate, plans, export, trace, runs.

Each lives in its own module exposing `add_command(commands, add_scenario_flags, add_format)` and `run(args)`;
they share `planner.cli.cli_common` and never import `planner.cli.main`, so imports point one way.

A command module is imported only when its command runs (or when the whole list is needed: `planner --help`,
a misspelled command). Registering a command imports what its flags offer (the search objectives, the export
targets, the case categories), and those pull in polars and the catalogues; `estimate` needs none of them, so
a refused `estimate` input exits at start-up (tests/test_bounded_inputs.py).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from planner.cli.cli_args import InputError

AddFlags = Callable[[argparse.ArgumentParser], None]

# Commands registered by planner.cli.main itself (no module here).
MAIN_COMMANDS = ("estimate", "schema")
COMMAND_MODULES = {
    "compare": "planner.cli.cli_compare",
    "recommend": "planner.cli.cli_recommend",
    "validate": "planner.cli.cli_validate",
    "plans": "planner.cli.cli_plans",
    "export": "planner.cli.cli_export",
    "trace": "planner.cli.cli_trace",
    "runs": "planner.cli.cli_runs",
}


def add_commands(
    commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags, argv: Sequence[str] | None = None
) -> None:
    """Register the extra sub-commands on the CLI's sub-parser group: the one `argv` names, or all of them."""
    for name in _commands_needed(argv):
        _module(name).add_command(commands, add_scenario_flags, add_format)


def dispatch(args: argparse.Namespace) -> int:
    if args.command not in COMMAND_MODULES:
        raise InputError("", f"unknown command {args.command!r}", closest=list(COMMAND_MODULES))
    result: int = _module(args.command).run(args)
    return result


def _commands_needed(argv: Sequence[str] | None) -> list[str]:
    # The top-level parser has no option but --help, so the command is the first word when it is not an option.
    chosen = argv[0] if argv else None
    if chosen in MAIN_COMMANDS:
        return []
    if chosen in COMMAND_MODULES:
        return [chosen]
    return list(COMMAND_MODULES)  # --help, no command, or a misspelling: argparse lists every command


def _module(name: str) -> ModuleType:
    return importlib.import_module(COMMAND_MODULES[name])
