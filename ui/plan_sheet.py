"""The plan sheet's session state and callbacks: the rows (the current plan first, then plans from the team
library and rows added here), one-cell edits validated as every other input, and saving rows to the library.

The grid is a `st.data_editor` whose edits arrive in its widget state; `on_sheet_edit` applies them to the rows
kept here and bumps the editor's generation, so the next run draws a fresh grid with every result recomputed.
A refused cell keeps its previous value and queues a message naming the row and the column.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import streamlit as st

from planner import (
    LibraryUnavailable,
    PlannerError,
    Scenario,
    StalePlanError,
    copy_name,
    name_problem,
    with_cell,
)
from ui.data import catalogs
from ui.library import LOADED_KEY, LoadedPlan, flash, forget_loaded, library
from ui.state import scenario, set_scenario

ROWS_KEY = "sheet.rows"  # list[SheetRow]: the rows after the current plan
GEN_KEY = "sheet.gen"  # bumped after every applied edit: a new editor key redraws the grid from the rows
UPLOAD_GEN_KEY = "sheet.upload_gen"  # bumped after an import so the uploader starts empty again
CURRENT_NAME = "Current plan"
NAME_LABEL = "Name"
# The sheet is a working set; 100 rows recompute in one pass (bench/run.py, sheet_100_rows_ms).
MAX_ROWS = 100


@dataclass(frozen=True)
class SheetRow:
    name: str
    scenario: Scenario
    plan_id: int | None = None  # the library plan it came from, for a version-checked save
    version: int | None = None
    changed: bool = False  # edited here since it was loaded or saved


def editor_key() -> str:
    return f"sheet.editor.{st.session_state.get(GEN_KEY, 0)}"


def rows() -> list[SheetRow]:
    """The current plan, then the other rows (loaded from the library on the sheet's first view)."""
    ss = st.session_state
    if ROWS_KEY not in ss:
        ss[ROWS_KEY] = _library_rows()
    return [SheetRow(CURRENT_NAME, scenario()), *ss[ROWS_KEY]]


def _library_rows() -> list[SheetRow]:
    try:
        found = library().plans(limit=MAX_ROWS - 1)
    except LibraryUnavailable as err:
        flash("warning", f"The sheet starts without the team library's plans: {err.describe('')}")
        return []
    return [SheetRow(p.name, p.scenario, p.id, p.version) for p in found if p.scenario is not None]


def _store(all_rows: list[SheetRow]) -> None:
    set_scenario(all_rows[0].scenario)
    st.session_state[ROWS_KEY] = all_rows[1:]
    st.session_state[GEN_KEY] = st.session_state.get(GEN_KEY, 0) + 1


def has_edits(edits: Any) -> bool:
    return bool(edits) and any(edits.get(part) for part in ("edited_rows", "added_rows", "deleted_rows"))


def on_sheet_edit() -> None:
    """Apply the grid's edits (changed cells, added rows, deleted rows) to the sheet."""
    edits = st.session_state.get(editor_key()) or {}
    all_rows = rows()
    for index, cells in sorted((int(i), c) for i, c in edits.get("edited_rows", {}).items()):
        if index < len(all_rows):
            all_rows[index] = _edited(all_rows[index], index, cells, all_rows)
    for cells in edits.get("added_rows", []):
        if len(all_rows) >= MAX_ROWS:
            flash("error", f"The sheet holds at most {MAX_ROWS} rows; delete some first.")
            break
        start = SheetRow(copy_name("New plan", {r.name for r in all_rows}), scenario(), changed=True)
        all_rows.append(_edited(start, len(all_rows), cells, all_rows))
    deleted = set(edits.get("deleted_rows", []))
    if 0 in deleted:
        flash("error", "Row 1 is the current plan and stays; make another row current first.")
    _store([r for i, r in enumerate(all_rows) if i == 0 or i not in deleted])


def _edited(row: SheetRow, index: int, cells: dict[str, Any], all_rows: list[SheetRow]) -> SheetRow:
    for label, value in cells.items():
        where = f"Row {index + 1} ({row.name}), column “{label}”"
        if label == NAME_LABEL:
            row = _renamed(row, index, str(value or "").strip(), where, all_rows)
            continue
        try:
            row = replace(row, scenario=with_cell(row.scenario, label, value, catalogs()), changed=True)
        except PlannerError as err:
            flash("error", f"{where}: {err.describe('').lstrip(': ')}. The previous value stays.")
    return row


def _renamed(row: SheetRow, index: int, name: str, where: str, all_rows: list[SheetRow]) -> SheetRow:
    if index == 0:
        flash("error", f"{where}: the current plan's row keeps its name; duplicate it to name a copy.")
        return row
    problem = name_problem(name) or (
        "another row has this name" if name in {r.name for r in all_rows if r is not row} else None
    )
    if problem:
        flash("error", f"{where}: {problem}. The previous name stays.")
        return row
    return replace(row, name=name, changed=True)


def make_current(index: int) -> None:
    all_rows = rows()
    chosen = all_rows[index]
    set_scenario(chosen.scenario)
    # A library row made current can be saved back from the Scenarios page with its version check.
    if chosen.plan_id is not None and chosen.version is not None and not chosen.changed:
        st.session_state[LOADED_KEY] = LoadedPlan(chosen.plan_id, chosen.version, chosen.name)
    else:
        forget_loaded()
    st.session_state[GEN_KEY] = st.session_state.get(GEN_KEY, 0) + 1
    flash("success", f"“{all_rows[index].name}” is now the current plan: every page shows it.")


def duplicate(index: int) -> None:
    all_rows = rows()
    if len(all_rows) >= MAX_ROWS:
        flash("error", f"The sheet holds at most {MAX_ROWS} rows; delete some first.")
        return
    source = all_rows[index]
    name = copy_name(source.name, {r.name for r in all_rows})
    _store([*all_rows, SheetRow(name, source.scenario, changed=True)])


def save_changed(author: str) -> None:
    """Save every changed row to the team library: a new plan, or a new version of the plan it came from."""
    all_rows = rows()
    try:
        opened = library()
    except LibraryUnavailable as err:
        flash("error", f"Nothing was saved: {err.describe('')}")
        return
    saved = 0
    for index, row in enumerate(all_rows[1:], start=1):
        if row.changed:
            all_rows[index] = _save_row(opened, row, author)
            saved += not all_rows[index].changed
    _store(all_rows)
    flash("success" if saved else "info", f"Saved {saved} row{'s' * (saved != 1)} to the team library.")


def _save_row(library: Any, row: SheetRow, author: str) -> SheetRow:
    try:
        if row.plan_id is None:
            plan = library.create(row.name, row.scenario, author=author)
        else:
            plan = library.update(
                row.plan_id, row.scenario, expected_version=row.version, author=author, name=row.name
            )
    except StalePlanError as err:
        flash("error", f"“{row.name}”: {err.problem}.")
        return replace(row, name=err.kept.name, plan_id=err.kept.id, version=err.kept.version, changed=False)
    except PlannerError as err:
        flash("error", f"“{row.name}” was not saved: {err.describe('')}")
        return row
    return replace(row, plan_id=plan.id, version=plan.version, changed=False)


def reload_from_library() -> None:
    st.session_state.pop(ROWS_KEY, None)
    st.session_state[GEN_KEY] = st.session_state.get(GEN_KEY, 0) + 1


def add_rows(named: dict[str, Scenario]) -> None:
    """Rows from a CSV: a name already in the sheet takes the file's inputs (the current plan's row included),
    other names are appended while the sheet has room."""
    all_rows = rows()
    index_of = {row.name: index for index, row in enumerate(all_rows)}
    added = replaced = 0
    for name, item in named.items():
        if name in index_of:
            all_rows[index_of[name]] = replace(
                all_rows[index_of[name]], scenario=item, changed=index_of[name] > 0
            )
            replaced += 1
        elif len(all_rows) < MAX_ROWS:
            all_rows.append(SheetRow(name, item, changed=True))
            added += 1
    left_out = len(named) - added - replaced
    _store(all_rows)
    st.session_state[UPLOAD_GEN_KEY] = st.session_state.get(UPLOAD_GEN_KEY, 0) + 1
    more = f"; {left_out} left out: the sheet holds at most {MAX_ROWS} rows" if left_out else ""
    flash("success", f"Added {added} row{'s' * (added != 1)} and updated {replaced} from the file{more}.")
