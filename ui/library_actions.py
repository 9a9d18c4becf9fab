"""The Scenarios page's button callbacks: save new or save changes (stale saves refused, both versions kept),
load, repair, duplicate, rename, retag, delete and undo, import a CSV.

Every change happens in a callback, so it is in place before the script (sidebar included) renders again; the
outcome is a one-shot message (`ui.library.flash`). Nothing here raises into the page: a library that cannot be
reached, a bad name or tag becomes a message naming the widget and what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from planner import (
    LibraryUnavailable,
    NameTaken,
    PlannerError,
    ScenarioImport,
    StalePlanError,
    StoredPlan,
    repaired,
    split_tags,
)
from ui.library import (
    AUTHOR_KEY,
    LOADED_KEY,
    PARSED,
    UPLOAD_GEN,
    LoadedPlan,
    author,
    flash,
    library,
    loaded,
    remember,
    unavailable_message,
)
from ui.state import scenario, set_scenario

# The widgets a library error's field is typed into, by the label on screen.
SAVE_LABELS = {"name": "Name", "tags": "Tags", "author": "Your name"}
RENAME_LABELS = {"name": "Rename to", "tags": "Tags", "author": "Your name"}
TAG_LABELS = {"tags": "Tags of the chosen plan", "author": "Your name"}


def _guarded(action: Callable[[], None], refused: str, labels: Mapping[str, str]) -> None:
    """Run `action`; a library that cannot be reached or a refused input becomes one message."""
    try:
        action()
    except LibraryUnavailable as err:
        flash("error", unavailable_message(err))
    except StalePlanError as err:
        _stale(err)
    except PlannerError as err:
        flash("error", f"{refused}: {err.describe(labels.get(err.field, err.field))}.")


def _stale(err: StalePlanError) -> None:
    remember(err.kept)  # the user goes on editing their own version, now a plan of its own
    sentence = err.problem.rstrip(".")  # str(err) starts with the field ("name: ...")
    flash(
        "error",
        f"{sentence[:1].upper()}{sentence[1:]}, tagged “conflict”; both versions are in the team library. "
        f"Compare them below, then keep one. “Save changes” now writes to '{err.kept.name}'.",
    )


def _picked() -> StoredPlan:
    return library().get(int(st.session_state["scn.pick"]))


# --------------------------------------------------------------------------------------------- saving


def on_author() -> None:
    st.session_state[AUTHOR_KEY] = st.session_state["scn.author"].strip()


def on_save_new() -> None:
    ss = st.session_state
    name = ss.get("scn.name", "").strip()

    def save() -> None:
        try:
            plan = library().create(
                name, scenario(), author=author(), tags=split_tags(ss.get("scn.tags", ""))
            )
        except NameTaken as err:
            twin = err.problem.partition("name")[2]  # " ('x' looks the same)" for a lookalike, else ""
            flash(
                "error",
                f"Not saved: a plan called '{name}'{twin} is already in the team library. Load it and use "
                "“Save changes” to write a new version of it, or choose another name.",
            )
            return
        remember(plan)
        ss["scn.name"], ss["scn.tags"], ss["scn.pick"] = "", "", plan.id
        flash("success", f"Saved '{plan.name}' to the team library (version {plan.version}).")

    _guarded(save, "Not saved", SAVE_LABELS)


def on_save_changes() -> None:
    current = loaded()
    if current is None:
        flash(
            "error",
            "Not saved: the current plan was not loaded from the team library. Save it as a new plan.",
        )
        return
    target = current

    def save() -> None:
        plan = library().update(target.id, scenario(), expected_version=target.version, author=author())
        remember(plan)
        flash("success", f"Saved changes to '{plan.name}' (now version {plan.version}).")

    _guarded(save, "Not saved", SAVE_LABELS)


# --------------------------------------------------------------------------------------------- a picked plan


def on_load() -> None:
    def load() -> None:
        plan = _picked()
        if plan.scenario is None:
            flash("error", f"'{plan.name}' no longer validates ({plan.problem}). Use “Repair” to load it.")
            return
        set_scenario(plan.scenario)
        remember(plan)
        flash("success", f"Loaded '{plan.name}' (version {plan.version}): every page now shows it.")

    _guarded(load, "Not loaded", SAVE_LABELS)


def on_repair() -> None:
    def repair() -> None:
        plan = _picked()
        fixed, notices = repaired(plan) if plan.scenario is None else (plan.scenario, [])
        set_scenario(fixed)
        remember(plan)
        for notice in notices:
            flash("warning", notice)
        flash(
            "success",
            f"Loaded a repaired '{plan.name}': the inputs today's planner refuses are at their defaults. Check "
            f"them, then use “Save changes” to store it as version {plan.version + 1}; until then the stored "
            "original is kept as it is.",
        )

    _guarded(repair, "Not repaired", SAVE_LABELS)


def on_duplicate() -> None:
    def duplicate() -> None:
        plan = _picked()
        copy = library().duplicate(plan.id, author=author())
        st.session_state["scn.pick"] = copy.id
        flash("success", f"Copied '{plan.name}' to '{copy.name}'.")

    _guarded(duplicate, "Not copied", SAVE_LABELS)


def on_delete() -> None:
    def delete() -> None:
        plan = library().delete(int(st.session_state["scn.pick"]), author=author())
        st.session_state.pop("scn.pick", None)
        flash("success", f"Deleted '{plan.name}'.", undo=plan.id)

    _guarded(delete, "Not deleted", SAVE_LABELS)


def on_undo_delete(plan_id: int) -> None:
    def undo() -> None:
        lib = library()
        before = lib.get(plan_id)
        plan = lib.undo_delete(plan_id, author=author())
        st.session_state["scn.pick"] = plan.id
        renamed = (
            f" as '{plan.name}' (another plan took its name meanwhile)" if plan.name != before.name else ""
        )
        flash("success", f"Restored '{before.name}'{renamed}.")

    _guarded(undo, "Not restored", SAVE_LABELS)


def _rewrite(plan: StoredPlan, *, name: str | None = None, tags: tuple[str, ...] | None = None) -> StoredPlan:
    """The picked plan with a new name or tags, its scenario unchanged (a plan to repair cannot be rewritten)."""
    if plan.scenario is None:
        raise PlannerError("plan", f"repair '{plan.name}' first: {plan.problem}")
    new = library().update(
        plan.id, plan.scenario, expected_version=plan.version, author=author(), name=name, tags=tags
    )
    current = loaded()
    if current is not None and current.id == plan.id:
        # Still "Save changes" over this plan; a version someone else wrote meanwhile stays unseen-by-us.
        version = new.version if current.version == plan.version else current.version
        st.session_state[LOADED_KEY] = LoadedPlan(plan.id, version, new.name)
    return new


def on_rename() -> None:
    ss = st.session_state

    def rename() -> None:
        plan = _picked()
        new = _rewrite(plan, name=ss.get("scn.rename_to", "").strip())
        ss["scn.rename_to"] = ""
        flash("success", f"Renamed '{plan.name}' to '{new.name}'.")

    def refused_name() -> None:
        try:
            rename()
        except NameTaken:
            flash("error", f"Not renamed: another plan is called '{ss.get('scn.rename_to', '').strip()}'.")

    _guarded(refused_name, "Not renamed", RENAME_LABELS)


def on_set_tags() -> None:
    def retag() -> None:
        plan = _picked()
        new = _rewrite(plan, tags=split_tags(st.session_state.get("scn.tags_to", "")))
        shown = ", ".join(new.tags) or "none"
        flash("success", f"Tags of '{new.name}': {shown}.")

    _guarded(retag, "Tags not changed", TAG_LABELS)


# --------------------------------------------------------------------------------------------- files


def on_import(parsed: ScenarioImport) -> None:
    def restore() -> None:
        report = library().import_plans(parsed.scenarios, author=author())
        st.session_state.pop(PARSED, None)
        st.session_state[UPLOAD_GEN] = st.session_state.get(UPLOAD_GEN, 0) + 1
        replaced = f", {len(report.replaced)} replaced" if report.replaced else ""
        flash(
            "success",
            f"Imported {len(parsed.scenarios)} plan(s) from the file into the team library: "
            f"{len(report.created)} new{replaced}.",
        )

    _guarded(restore, "Nothing was imported", SAVE_LABELS)
