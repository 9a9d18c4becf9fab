"""The team plan library as the app sees it: opened lazily and cached per URL, the user's name, the stored plan
the current scenario came from, one-shot messages, and headline results remembered per scenario.

Plans live in the database `PLANNER_DB_URL` names (an SQLite file by default), shared by every session, every
app process on that database and the CLI. Only the Scenarios page opens it, so a library that cannot be reached
never stops another page. What stays in the browser session: the current plan (`ui.state`), the user's name
and which stored plan (id, version, name) the current plan was loaded from, for "Save changes".
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import streamlit as st

from planner import (
    MAX_AUTHOR_CHARS,
    MAX_SAVED,
    LibraryUnavailable,
    PlanLibrary,
    Scenario,
    StoredPlan,
    headline_results,
    library_url,
    open_library,
)
from ui.data import catalogs
from ui.safe_text import plain as plain  # re-exported: pages import the escaping with the library helpers

AUTHOR_KEY = "library.author"  # the user's name, typed once per session (never in the URL)
LOADED_KEY = "library.loaded"  # LoadedPlan: the stored plan the current scenario was loaded (or saved) as
FLASH = "scn.flash"  # (kind, text, undo plan id or None) from callbacks, shown once on the next run
RESULTS = "scn.results"  # {"catalogs": Catalogs, "by_scenario": {Scenario: headline results}}
UPLOAD_GEN = "scn.upload_gen"  # bumped after an import so the uploader starts empty again
PARSED = "scn.parsed"  # (file_id, ScenarioImport): parse an uploaded file once, not on every rerun
AUTHOR_MAX_CHARS = MAX_AUTHOR_CHARS  # the library's own limit, so the box and the check never drift apart

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class LoadedPlan:
    """Which stored plan the current scenario came from, and the version it had then (the stale-save check)."""

    id: int
    version: int
    name: str


# --------------------------------------------------------------------------------------------- opening


def library() -> PlanLibrary:
    """The library `PLANNER_DB_URL` names, opened (and migrated) on first use. Raises LibraryUnavailable,
    which is not remembered: the next run tries again. The planner keeps one engine per URL and process and
    opens a replaced SQLite file anew, so a restored backup is read on the next page run."""
    return open_library(library_url())


def location_label(lib: PlanLibrary) -> str:
    """ "SQLite at /path/plans.sqlite3" or "PostgreSQL at host/db" (never a password)."""
    if lib.backend == "sqlite":
        return f"SQLite at {lib.location.split(':///', 1)[-1] or 'memory'}"
    parts = urlsplit(lib.location)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"PostgreSQL at {host}{port}{parts.path or '/'}"


def unavailable_message(err: LibraryUnavailable) -> str:
    return (
        f"The team plan library cannot be used, so saved plans are not shown. {err}. Then reload the page. "
        "Your current plan is not affected: every other page, the share link and the current plan's CSV "
        "still work."
    )


# --------------------------------------------------------------------------------------------- session


def author() -> str:
    return str(st.session_state.get(AUTHOR_KEY, ""))


def loaded() -> LoadedPlan | None:
    found = st.session_state.get(LOADED_KEY)
    return found if isinstance(found, LoadedPlan) else None


def remember(plan: StoredPlan) -> None:
    st.session_state[LOADED_KEY] = LoadedPlan(plan.id, plan.version, plan.name)


def forget_loaded() -> None:
    st.session_state.pop(LOADED_KEY, None)


def flash(kind: str, text: str, *, undo: int | None = None) -> None:
    st.session_state.setdefault(FLASH, []).append((kind, text, undo))


def take_flash() -> list[tuple[str, str, int | None]]:
    return list(st.session_state.pop(FLASH, []))


def updated_label(moment: datetime) -> str:
    """ISO minutes in UTC ("2026-12-01 14:03"); the column header says UTC."""
    return moment.strftime("%Y-%m-%d %H:%M")


# --------------------------------------------------------------------------------------------- results


def results_for(named: Mapping[K, Scenario]) -> dict[K, dict[str, Any]]:
    """Headline results per key, remembered per scenario for as long as the session's catalogues stay put."""
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
    return {key: known[item] for key, item in named.items()}
