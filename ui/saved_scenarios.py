"""The Scenarios page's session store: saved scenarios by name, their headline results (remembered per
scenario), one-shot messages, and the button callbacks that change them.

Saved scenarios live in `st.session_state[SAVED_KEY]` (name -> Scenario, this browser session only). Every
change happens in a button callback, so it is in place before the script (sidebar included) renders again.
"""

from __future__ import annotations

import re
from typing import Any

import streamlit as st

from planner import MAX_SAVED, Scenario, ScenarioImport, copy_name, headline_results, name_problem, renamed
from ui.data import catalogs
from ui.state import SAVED_KEY, scenario, set_scenario

FLASH = "scn.flash"  # messages from callbacks, shown once on the next run
RESULTS = "scn.results"  # {"catalogs": Catalogs, "by_scenario": {Scenario: headline results}}
UPLOAD_GEN = "scn.upload_gen"  # bumped after an import so the uploader starts empty again
PARSED = "scn.parsed"  # (file_id, ScenarioImport): parse an uploaded file once, not on every rerun


def saved() -> dict[str, Scenario]:
    return st.session_state.setdefault(SAVED_KEY, {})


def flash(kind: str, text: str) -> None:
    st.session_state.setdefault(FLASH, []).append((kind, text))


def show_flash() -> None:
    for kind, text in st.session_state.pop(FLASH, []):
        getattr(st, kind)(plain(text))


def plain(text: str) -> str:
    """User text (names, cells) shown as typed: no markdown emphasis, code, links, strikethrough or LaTeX."""
    return re.sub(r"([\\`*\[\]$~])", r"\\\1", text)


def results_for(named: dict[str, Scenario]) -> dict[str, dict[str, Any]]:
    """Headline results per name, remembered per scenario for as long as the session's catalogues stay put."""
    cats = catalogs()
    memo = st.session_state.get(RESULTS)
    if memo is None or memo["catalogs"] is not cats:
        memo = {"catalogs": cats, "by_scenario": {}}
        st.session_state[RESULTS] = memo
    known = memo["by_scenario"]
    if len(known) > 2 * MAX_SAVED:  # edits leave stale entries behind; start over rather than grow forever
        known.clear()
    for item in named.values():
        if item not in known:
            known[item] = headline_results(item, cats)
    return {name: known[item] for name, item in named.items()}


# --------------------------------------------------------------------------------------------- callbacks


def on_save() -> None:
    ss = st.session_state
    name = ss["scn.name"].strip()
    problem = name_problem(name)
    if problem:
        flash("error", f"Not saved: {problem}.")
    elif name in saved() and not ss.get("scn.overwrite"):
        flash("error", f"'{name}' is already saved. Tick “Replace” to overwrite it, or choose another name.")
    elif name not in saved() and len(saved()) >= MAX_SAVED:
        flash("error", f"Not saved: at most {MAX_SAVED:,} scenarios per session. Delete some first.")
    else:
        replaced = name in saved()
        saved()[name] = scenario()
        ss["scn.name"], ss["scn.overwrite"], ss["scn.pick"] = "", False, name
        flash("success", f"{'Replaced' if replaced else 'Saved'} '{name}'.")


def on_load() -> None:
    name = st.session_state["scn.pick"]
    set_scenario(saved()[name])
    flash("success", f"Loaded '{name}': every page now shows it.")


def on_duplicate() -> None:
    name = st.session_state["scn.pick"]
    if len(saved()) >= MAX_SAVED:
        flash("error", f"At most {MAX_SAVED:,} scenarios per session. Delete some first.")
        return
    new = copy_name(name, set(saved()))
    saved()[new] = saved()[name]
    st.session_state["scn.pick"] = new
    flash("success", f"Copied '{name}' to '{new}'.")


def on_delete() -> None:
    name = st.session_state["scn.pick"]
    saved().pop(name, None)
    _forget_in_compare(name)
    st.session_state.pop("scn.pick", None)
    flash("success", f"Deleted '{name}'.")


def on_rename() -> None:
    ss = st.session_state
    old = ss["scn.pick"]
    new = ss["scn.rename_to"].strip()
    problem = name_problem(new)
    if problem or (new in saved() and new != old):
        flash("error", f"Not renamed: {problem or f'another scenario is called {new!r}'}.")
        return
    ss[SAVED_KEY] = renamed(saved(), old, new)
    ss["scn.compare"] = [new if n == old else n for n in ss.get("scn.compare", [])]
    ss["scn.pick"], ss["scn.rename_to"] = new, ""
    flash("success", f"Renamed '{old}' to '{new}'.")


def on_import(parsed: ScenarioImport) -> None:
    merged = {**saved(), **parsed.scenarios}
    if len(merged) > MAX_SAVED:
        flash("error", f"Not imported: that would make {len(merged):,} scenarios (at most {MAX_SAVED:,}).")
        return
    st.session_state[SAVED_KEY] = merged
    st.session_state.pop(PARSED, None)
    st.session_state[UPLOAD_GEN] = st.session_state.get(UPLOAD_GEN, 0) + 1
    flash("success", f"Imported {len(parsed.scenarios)} scenario(s) from the file.")


def _forget_in_compare(name: str) -> None:
    ss = st.session_state
    ss["scn.compare"] = [n for n in ss.get("scn.compare", []) if n != name]
