"""The current scenario's estimate, computed through the planner for whichever page asks.

The sidebar's four override hints and the page itself all need the same resolved inputs, so each browser
session keeps its last scenario's (Resolved, Estimate) in `st.session_state` and recomputes only when the
scenario object or the catalogues it was resolved against are no longer the same objects. A scenario is
frozen and every change makes a new object (`ui.state.set_scenario`), so identity is an exact key; holding
the objects in the memo keeps their ids from being reused. Nothing is shared between sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from planner import Catalogs, Estimate, PlannerError, Resolved, Scenario, estimate_resolved, resolve
from ui.data import catalogs
from ui.safe_text import plain
from ui.state import LABELS_KEY, scenario

MEMO_KEY = "estimate_cache.memo"  # no widget uses the key


@dataclass
class _Memo:
    """One session's last scenario, the catalogues it was resolved against, and what came out."""

    scenario: Scenario
    catalogs: Catalogs
    resolved: Resolved | None = None
    error: ValueError | None = None
    estimate: Estimate | None = None


def _memo() -> _Memo:
    s, cats = scenario(), catalogs()
    memo = st.session_state.get(MEMO_KEY)
    if memo is not None and memo.scenario is s and memo.catalogs is cats:
        return memo
    memo = _Memo(s, cats)
    try:
        memo.resolved = resolve(s, cats)
    except ValueError as err:
        memo.error = err
    st.session_state[MEMO_KEY] = memo
    return memo


def current_resolved() -> Resolved:
    """The session's scenario resolved against its catalogues; raises ValueError for unknown names."""
    memo = _memo()
    if memo.resolved is None:
        assert memo.error is not None
        raise memo.error
    return memo.resolved


def current() -> tuple[Estimate, Resolved]:
    """Estimate of the session's scenario; errors in the data surface as a message, not a traceback."""
    memo = _memo()
    resolved = current_resolved()
    if memo.estimate is None:
        memo.estimate = estimate_resolved(resolved)
    return memo.estimate, resolved


def derived_values() -> dict[str, Any]:
    """Catalogue and preset values that an empty override box falls back to."""
    try:
        return current_resolved().derived
    except ValueError:
        return {}


def _named(err: ValueError) -> str:
    """The message, naming the field by the label of its widget on screen (a rule the plan checks against
    the model, such as the pipeline's layer split, is only known once the model is looked up)."""
    if isinstance(err, PlannerError):
        return err.describe(st.session_state.get(LABELS_KEY, {}).get(err.field, err.field))
    return str(err)


def current_or_stop() -> tuple[Estimate, Resolved]:
    try:
        return current()
    except ValueError as err:
        st.error(f"Cannot estimate this scenario: {plain(_named(err))}", icon=":material/error:")
        st.stop()
        raise  # unreachable: st.stop ends the run
