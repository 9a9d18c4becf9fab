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
TARGET_KEY = "target_batch_sequences"  # JSON/CSV key on every row: the global batch every plan must reach


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
    parser.add_argument(
        "--global-batch-sequences",
        "--global-batch-seqs",
        type=int,
        metavar="N",
        help="sequences every plan trains per optimizer step (default: the scenario's micro-batch x "
        "accumulation x data-parallel replicas); accumulation is rounded up to reach it",
    )
    parser.add_argument(
        "--fsdp-only",
        action="store_true",
        help="only plans plain FSDP can run: TP 1, PP 1, ZeRO stage 0, 2 or 3 (NO_SHARD, SHARD_GRAD_OP, "
        "FULL_SHARD), parameters and optimizer offloaded together",
    )
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N", help="rows to print")
    parser.add_argument("--frontier", action="store_true", help="print the cost-versus-time frontier instead")
    parser.description = (
        "Every searched choice given as a flag (--n-gpus, --tp, --pp, --pp-virtual-stages, --ep, --zero, --recompute, "
        "--micro-batch, --offload-optimizer, --offload-params, --generation-gpus, or --set FIELD=VALUE) is kept fixed; the value "
        "'any' frees it (--tp any, --set offload_params=any). A scenario file's values are only the starting point. For PPO "
        "and GRPO the search also splits the GPUs between training and dedicated generation (--generation-gpus 0 keeps "
        "generation colocated); --max-gpus then counts both. An --etp (expert tensor parallelism) is kept in every "
        "plan; without it the experts' tensor degree follows each plan's TP."
    )


def _fixed_fields(args: argparse.Namespace) -> set[str]:
    """The searched fields the user fixed on the command line; 'any' frees one (and is taken off `args`)."""
    from planner.decide.sweep_space import ANY, SEARCHED_FIELDS

    def is_any(value: Any) -> bool:
        return isinstance(value, str) and value.strip().lower() == ANY

    fixed: set[str] = set()
    kept_pairs: list[str] = []

    def without(pairs: list[str], key: str) -> list[str]:
        return [pair for pair in pairs if pair.partition("=")[0].strip() != key]

    for pair in args.set:  # in order, as the scenario reads them: a later pair wins
        key, _, value = (part.strip() for part in pair.partition("="))
        if key in SEARCHED_FIELDS and is_any(value):
            fixed.discard(key)
            kept_pairs = without(kept_pairs, key)
            continue
        if key in SEARCHED_FIELDS:
            fixed.add(key)
        kept_pairs.append(pair)
    for name in SEARCHED_FIELDS:  # a flag wins over --set, as it does for the scenario's values
        value = getattr(args, name, None)
        if is_any(value):
            setattr(args, name, None)
            fixed.discard(name)
            kept_pairs = without(kept_pairs, name)
        elif value is not None:
            fixed.add(name)
    args.set = kept_pairs
    return fixed


def _space(args: argparse.Namespace, base: Any, fixed: set[str]) -> Any:
    from planner.decide.sweep_space import obeying_space

    target = args.global_batch_sequences
    if target is not None and target < 1:
        raise InputError("--global-batch-sequences", "must be >= 1", value=target, allowed=">= 1 sequences")
    values = {name: getattr(base, name) for name in fixed}
    return obeying_space(base, values, fsdp_only=args.fsdp_only, target_batch_sequences=target)


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
    fixed = _fixed_fields(args)
    base = load_scenario(args)
    space = _space(args, base, fixed)
    result = search(base, constraints, space, catalogs=catalogs_from_environment(), top_n=args.top)
    frame = result.frontier if args.frontier else result.top
    rows = [{**row, TARGET_KEY: result.target_batch_sequences} for row in frame.to_dicts()]
    if args.format == "table":
        print(_header(base, space, result.target_batch_sequences, args.global_batch_sequences is not None))
    print(render_records(rows, args.format))
    if args.format == "table":
        for note in result.notes:
            print(f"\n{note}")
        print(f"\n{result.reason}")
        print(
            f"{result.n_evaluated:,} configurations evaluated in {result.elapsed_s:.2f} s; "
            f"{result.n_fit:,} fit, {result.n_feasible:,} meet the constraints."
        )
    else:
        print(result.reason, file=sys.stderr)
    return 0 if result.top.height else 1


def _header(base: Any, space: Any, target: int, given: bool) -> str:
    """What the search kept: the global-batch target (and where it came from) and the fixed choices."""
    from planner.decide.sweep_space import fixed_words

    source = (
        "--global-batch-sequences"
        if given
        else f"the scenario's micro-batch {base.micro_batch} x accumulation {base.grad_accum} x "
        f"{base.dp} data-parallel replicas; set --global-batch-sequences to change it"
    )
    lines = [f"Global batch target: {target:,} sequences per optimizer step ({source})."]
    if space.fixed:
        lines.append(f"Fixed: {fixed_words(space)} (give 'any' to free one, e.g. --tp any).")
    if base.etp is not None:  # not a searched dimension: every plan keeps the scenario's expert tensor degree
        lines.append(
            f"Expert tensor parallelism: {base.etp} in every plan (--etp; leave it out to follow TP)."
        )
    return "\n".join(lines) + "\n"
