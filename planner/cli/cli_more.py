"""The commands beyond `estimate` and `schema`: compare, recommend, validate.

Each lives in its own module exposing `add_command(commands, add_scenario_flags, add_format)` and `run(args)`.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

AddFlags = Callable[[argparse.ArgumentParser], None]

COMMAND_MODULES: dict[str, str] = {
    "compare": "planner.cli.cli_compare",
    "recommend": "planner.cli.cli_recommend",
    "validate": "planner.cli.cli_validate",
}


def add_commands(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    """Register the extra sub-commands on the CLI's sub-parser group."""
    for module in COMMAND_MODULES.values():
        importlib.import_module(module).add_command(commands, add_scenario_flags, add_format)


def dispatch(args: argparse.Namespace) -> int:
    if args.command not in COMMAND_MODULES:
        raise ValueError(f"unknown command {args.command!r}")
    result: int = importlib.import_module(COMMAND_MODULES[args.command]).run(args)
    return result
