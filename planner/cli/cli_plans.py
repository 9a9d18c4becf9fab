"""`python -m planner plans list|show|save|delete`: the team plan library from a terminal.

The same database as the dashboard's Scenarios page (`PLANNER_DB_URL`, or `--db`), so a plan saved in the app is
listed here and the other way round.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from planner.cli.cli_args import InputError
from planner.cli.cli_common import load_scenario, render_records
from planner.cli.cli_labels import worded

if TYPE_CHECKING:
    from planner.library.records import StoredPlan
    from planner.library.store import PlanLibrary

AddFlags = Callable[[argparse.ArgumentParser], None]
TABLE_COLUMNS = ("id", "name", "version", "model", "gpu", "tags", "updated_by", "updated_at", "problem")


def add_command(commands: Any, add_scenario_flags: AddFlags, add_format: AddFlags) -> None:
    parser = commands.add_parser(
        "plans",
        help="the team plan library: list, show, save, delete",
        description="Plans saved in the team library (PLANNER_DB_URL, default an SQLite file in your data "
        "folder): the same plans the dashboard's Scenarios page shows.",
    )
    actions = parser.add_subparsers(dest="plans_action", required=True, parser_class=type(parser))
    listing = _action(actions, "list", "list live plans (newest change first)", add_format)
    listing.add_argument(
        "--search", default="", help="words that must all appear in name, tag, model, GPU or author"
    )
    listing.add_argument(
        "--deleted", action="store_true", help="list deleted plans instead (undo with delete --undo)"
    )
    show = _action(actions, "show", "one plan with its whole scenario", add_format)
    show.add_argument("plan", metavar="PLAN", help="a plan's name or id")
    save = _action(actions, "save", "save the scenario the flags describe under a name", add_format)
    save.add_argument("--name", required=True, help="the plan's name (at most 80 characters)")
    save.add_argument("--tags", default=None, help='comma-separated tags, e.g. "8b, lora, q3"')
    save.add_argument("--replace", action="store_true", help="save a new version over the plan of that name")
    save.add_argument(
        "--expect-version",
        type=_version_number,
        default=None,
        metavar="N",
        help="with --replace: refuse unless the plan is still at version N",
    )
    add_scenario_flags(save)
    delete = _action(actions, "delete", "delete a plan (softly: --undo brings it back)", add_format)
    delete.add_argument("plan", metavar="PLAN", help="a plan's name or id")
    delete.add_argument("--undo", action="store_true", help="bring back a deleted plan of that name or id")


def _version_number(text: str) -> int:
    """--expect-version: a whole number a plan's version can be (it starts at 1; the column holds 2^31 - 1)."""
    from planner.library.tables import MAX_PLAN_ID

    digits = text.strip()
    if (
        not (digits.isascii() and digits.isdigit() and len(digits) <= 10)
        or not 1 <= int(digits) <= MAX_PLAN_ID
    ):
        raise argparse.ArgumentTypeError(
            f"a version is a whole number from 1 to {MAX_PLAN_ID} (got {text[:40]!r})"
        )
    return int(text)


def _action(actions: Any, name: str, helptext: str, add_format: AddFlags) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = actions.add_parser(name, help=helptext, description=helptext)
    parser.add_argument("--db", default=None, metavar="URL", help="database URL (default: PLANNER_DB_URL)")
    parser.add_argument("--author", default="", help="your name, recorded on what you save or delete")
    add_format(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    # The library (SQLAlchemy, Alembic: about 0.3 s of imports) loads here, for the plans commands only, so the
    # other commands start without it.
    from planner.library.connect import LibraryUnavailable
    from planner.library.refusals import NameTaken, PlanNotFound

    try:
        return _run(args)
    except PlanNotFound as err:
        raise InputError("", err.describe("PLAN")) from None
    except NameTaken as err:
        raise InputError(
            "--name", f"{err.problem}; add --replace to save a new version over it", value=err.value
        ) from None
    except LibraryUnavailable as err:
        if args.db:
            raise InputError("--db", err.problem, value=err.value, allowed=err.allowed) from None
        raise


def _run(args: argparse.Namespace) -> int:
    from planner.library.opening import open_library

    library = open_library(args.db)
    action = args.plans_action
    if action == "list":
        found = library.plans(args.search, deleted=args.deleted)
        _print_plans(found, args.format)
        return 0
    if action == "show":
        plan = library.find(args.plan)
        print(_render([plan.to_record()], args.format, single=True))
        return 0
    if action == "save":
        return _save(library, args)
    plan = library.find(args.plan, deleted=args.undo)
    changed = (
        library.undo_delete(plan.id, author=args.author)
        if args.undo
        else library.delete(plan.id, author=args.author)
    )
    print(_render([_summary(changed)], args.format, single=True))
    return 0


def _save(library: PlanLibrary, args: argparse.Namespace) -> int:
    if args.expect_version is not None and not args.replace:
        raise InputError("--expect-version", "only applies with --replace")
    from planner.library.records import split_tags

    tags = split_tags(args.tags) if args.tags is not None else None
    plan = library.save(
        args.name,
        load_scenario(args),
        author=args.author,
        tags=tags,
        replace=args.replace,
        expected_version=args.expect_version,
    )
    print(_render([_summary(plan)], args.format, single=True))
    return 0


def _print_plans(found: list[StoredPlan], fmt: str) -> None:
    if fmt == "table":
        print(_render([_summary(plan) for plan in found], fmt))
    else:  # JSON and CSV carry every field, the scenario included
        print(render_records([plan.to_record() for plan in found], fmt))


def _render(rows: list[dict[str, Any]], fmt: str, single: bool = False) -> str:
    """A text table with headers in words (planner.cli.cli_labels); JSON and CSV keep the record keys."""
    return render_records(worded(rows) if fmt == "table" else rows, fmt, single=single)


def _summary(plan: StoredPlan) -> dict[str, Any]:
    record = plan.to_record()
    shown = {key: record[key] for key in TABLE_COLUMNS}
    shown["tags"] = ", ".join(plan.tags)
    shown["updated_at"] = plan.updated_at.strftime("%Y-%m-%d %H:%M")
    if plan.deleted:
        shown["deleted_at"] = plan.deleted_at.strftime("%Y-%m-%d %H:%M") if plan.deleted_at else None
    return shown
