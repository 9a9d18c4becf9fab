"""`python -m planner trace`: one training step of the plan on fake tensors, beside the formulas' peak.

Takes the same scenario flags as `estimate`. A plan the trace cannot follow (QLoRA, MoE, several GPUs, ...)
and a machine without the optional extra end with exit status 2 and one line saying why
(`planner.trace.scope`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from planner.cli.cli_common import load_scenario, render_records
from planner.cli.cli_labels import worded

AddFlags = Callable[[argparse.ArgumentParser], None]


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    parser = commands.add_parser(
        "trace",
        help="trace one training step on fake tensors: allocated peak by phase and module",
        description="Build the plan's model from its shape and run one forward, backward and optimizer step "
        "on PyTorch fake tensors (nothing is allocated or downloaded); print the traced allocated peak by "
        "phase and by module beside the formulas' allocated peak. Needs pip install '.[trace]'.",
    )
    add_scenario_flags(parser)
    add_format(parser)


def run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args)
    from planner.catalogue.catalog import catalogs_from_environment
    from planner.trace.scope import require_packages
    from planner.trace.traced import trace_plan

    require_packages()  # before the catalogues load: a machine without the extra is told at once
    report = trace_plan(scenario, catalogs_from_environment())
    flat = report.to_flat()
    if args.format != "table":
        print(render_records([flat], args.format, single=True))
        return 0
    modules = flat.pop("by_module_gib")
    notes = flat.pop("notes")
    print(render_records(worded([flat]), "table", single=True))
    print("\nAt the traced peak, by module (GiB):")
    width = max(len(name) for name in modules)
    for name, gib in modules.items():
        print(f"  {name:<{width}}  {gib:8.3f}")
    print("\nNotes:")
    for note in notes:
        print(f"  - {note}")
    return 0
