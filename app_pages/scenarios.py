"""Scenarios: the team plan library. Save the current plan (new, or changes to the plan it was loaded from),
search, load, repair, duplicate, rename, tag, delete with undo, compare side by side, CSV out and in; the share
link and the current plan's CSV work without any database.

The page lays out the sections; opening the library and the session's memory are `ui.library`, the button
callbacks `ui.library_actions`, the tables `ui.library_tables`.
"""

from __future__ import annotations

import streamlit as st

from planner import MAX_NAME_CHARS, LibraryUnavailable, PlanLibrary, StoredPlan, saved_scenarios_csv
from ui.data import catalogs
from ui.export_box import render_export_box
from ui.library import (
    AUTHOR_KEY,
    AUTHOR_MAX_CHARS,
    author,
    library,
    loaded,
    location_label,
    plain,
    take_flash,
    unavailable_message,
    updated_label,
)
from ui.library_actions import (
    on_author,
    on_delete,
    on_duplicate,
    on_load,
    on_rename,
    on_repair,
    on_save_changes,
    on_save_new,
    on_set_tags,
    on_undo_delete,
)
from ui.library_tables import compare_section, csv_section, library_table
from ui.runs_view import plan_versus_actual_box
from ui.share import share_popover
from ui.state import scenario

TABLE_MAX = 200  # rows shown (and estimated) at once; a search narrows the rest
DELETED_SHOWN = 50


# --------------------------------------------------------------------------------------------- sections


def show_flash() -> None:
    for kind, text, undo in take_flash():
        if undo is None:
            getattr(st, kind)(plain(text))
            continue
        message, button = st.columns([6, 1], vertical_alignment="center")
        getattr(message, kind)(plain(text))
        button.button("Undo", key=f"scn.undo_flash.{undo}", on_click=on_undo_delete, args=(undo,))


def open_or_report() -> PlanLibrary | None:
    try:
        return library()
    except LibraryUnavailable as err:
        st.error(plain(unavailable_message(err)), icon=":material/cloud_off:")
        return None


def current_section(lib: PlanLibrary | None) -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Save the current plan")
        if lib is None:
            st.caption("Saving needs the team library (see above). Download the current plan as CSV instead.")
        else:
            save_box(lib)
    with right:
        st.subheader("Share the current plan")
        share_popover("Show the share link", key="scn.share")
        current = loaded()
        name = current.name if current else "current plan"
        st.download_button(
            "Download the current plan as CSV",
            data=saved_scenarios_csv({name: scenario()}, catalogs()),
            file_name="plan.csv",
            mime="text/csv",
            on_click="ignore",
            key="scn.download_current",
        )
        render_export_box(scenario(), key="scn.export")


def save_box(lib: PlanLibrary) -> None:
    ss = st.session_state
    ss["scn.author"] = ss.get(AUTHOR_KEY, "")  # the view of the session's name, seeded before it renders
    st.text_input(
        "Your name",
        key="scn.author",
        max_chars=AUTHOR_MAX_CHARS,
        on_change=on_author,
        placeholder="shown as author of what you save",
        help="Typed once per browser session; stored with every plan you save, change or delete.",
    )
    current = loaded()
    if current is not None:
        stale_note(lib, current.id, current.version)
        st.button(
            plain(f"Save changes to '{current.name}' (version {current.version})"),
            key="scn.save_changes",
            on_click=on_save_changes,
            type="primary",
        )
    name, tags = st.columns(2)
    name.text_input("Name", key="scn.name", max_chars=MAX_NAME_CHARS, placeholder="e.g. 8B LoRA on 4×H100")
    tags.text_input("Tags", key="scn.tags", placeholder="comma-separated, e.g. project-x, lora")
    st.button(
        "Save as a new plan",
        key="scn.save",
        on_click=on_save_new,
        type="secondary" if current else "primary",
    )
    if not author():
        st.caption("Tip: type your name above so the team sees who saved what.")


def stale_note(lib: PlanLibrary, plan_id: int, version: int) -> None:
    try:
        stored = lib.get(plan_id)
    except (LibraryUnavailable, LookupError, ValueError):
        return
    if stored.deleted:
        st.warning(plain(f"'{stored.name}' was deleted; “Save changes” keeps your version as a new plan."))
    elif stored.version != version:
        who = f" by {stored.updated_by}" if stored.updated_by else ""
        st.warning(
            plain(
                f"'{stored.name}' changed{who} since you loaded it (now version {stored.version}). "
                "“Save changes” will keep your version as a copy instead of overwriting theirs."
            )
        )


def library_section(lib: PlanLibrary) -> None:
    try:
        total = lib.count()
    except LibraryUnavailable as err:
        st.error(plain(unavailable_message(err)), icon=":material/cloud_off:")
        return
    st.subheader(plain(f"Team library ({total:,} plan{'s' * (total != 1)}) · {location_label(lib)}"))
    search = st.text_input(
        "Search the team library",
        key="scn.search",
        placeholder="words in a name, tag, model, GPU or author",
    ).strip()
    try:
        shown = lib.plans(search, limit=TABLE_MAX)
        matching = len(shown) if len(shown) < TABLE_MAX else total if not search else len(lib.plans(search))
        deleted = lib.plans(deleted=True, limit=DELETED_SHOWN)
    except LibraryUnavailable as err:
        st.error(plain(unavailable_message(err)), icon=":material/cloud_off:")
        return
    if shown:
        library_table(shown)
        if len(shown) < matching:
            st.caption(f"Showing {len(shown)} of {matching:,}; search to narrow.")
        manage_section(shown)
    elif search:
        st.info(plain(f"No plan matches '{search}'."))
    else:
        st.info("The team library is empty. Name the current plan above and save it, or import a CSV below.")
    deleted_section(deleted)
    if shown:
        compare_section(shown)
    csv_section(search)


def manage_section(shown: list[StoredPlan]) -> None:
    ss = st.session_state
    by_id = {plan.id: plan for plan in shown}
    if ss.get("scn.pick") not in by_id:
        ss.pop("scn.pick", None)
    st.subheader("A plan")
    picked_id = st.selectbox(
        "Plan",
        list(by_id),
        key="scn.pick",
        format_func=lambda i: by_id[i].name + (" (needs repair)" if by_id[i].problem else ""),
    )
    plan = by_id[picked_id]
    if ss.get("scn.tags_for") != plan.id or "scn.tags_to" not in ss:  # the picked plan's tags, to edit
        ss["scn.tags_to"], ss["scn.tags_for"] = ", ".join(plan.tags), plan.id
    st.caption(
        plain(
            f"Created by {plan.author or 'someone'} at {updated_label(plan.created_at)} UTC; version "
            f"{plan.version} saved by {plan.updated_by or 'someone'} at {updated_label(plan.updated_at)} UTC "
            f"with planner {plan.planner_version}."
        )
    )
    broken = plan.scenario is None
    if broken:
        st.warning(
            plain(f"'{plan.name}' no longer validates: {plan.problem}. Repair loads the closest valid plan.")
        )
        st.button("Repair", key="scn.repair", on_click=on_repair, type="primary")
    load, copy, delete = st.columns(3)
    load.button("Load into the planner", key="scn.load", on_click=on_load, type="primary", disabled=broken)
    copy.button("Duplicate", key="scn.duplicate", on_click=on_duplicate, disabled=broken)
    delete.button("Delete", key="scn.delete", on_click=on_delete)
    new_name, go = st.columns([3, 1], vertical_alignment="bottom")
    new_name.text_input("Rename to", key="scn.rename_to", max_chars=MAX_NAME_CHARS, disabled=broken)
    go.button("Rename", key="scn.rename", on_click=on_rename, disabled=broken)
    tags, retag = st.columns([3, 1], vertical_alignment="bottom")
    tags.text_input("Tags of the chosen plan", key="scn.tags_to", disabled=broken)
    retag.button("Set tags", key="scn.set_tags", on_click=on_set_tags, disabled=broken)
    plan_versus_actual_box(plan)


def deleted_section(deleted: list[StoredPlan]) -> None:
    if not deleted:
        return
    with st.expander(f"Recently deleted ({len(deleted)}{'+' if len(deleted) >= DELETED_SHOWN else ''})"):
        for plan in deleted:
            text, undo = st.columns([5, 1], vertical_alignment="center")
            when = updated_label(plan.deleted_at) if plan.deleted_at else ""
            text.markdown(plain(f"'{plan.name}' · deleted {when} UTC by {plan.updated_by or 'someone'}"))
            undo.button("Undo", key=f"scn.undo.{plan.id}", on_click=on_undo_delete, args=(plan.id,))


# --------------------------------------------------------------------------------------------- page

st.title("Scenarios")
show_flash()
opened = open_or_report()
current_section(opened)
if opened is not None:
    library_section(opened)
