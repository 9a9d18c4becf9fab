"""The commands beyond `estimate` and `schema`: compare, recommend, validate."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

AddFlags = Callable[[argparse.ArgumentParser], None]


def add_commands(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    """Register the extra sub-commands on the CLI's sub-parser group."""


def dispatch(args: argparse.Namespace) -> int:
    raise ValueError(f"unknown command {args.command!r}")
