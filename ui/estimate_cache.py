"""The current scenario's estimate, computed through the planner for whichever page asks."""

from __future__ import annotations

from typing import Any

import streamlit as st

from planner.estimate import Resolved, estimate_resolved, resolve
from planner.results import Estimate
from ui.data import catalogs
from ui.state import scenario


def current() -> tuple[Estimate, Resolved]:
    """Estimate of the session's scenario; errors in the data surface as a message, not a traceback."""
    resolved = resolve(scenario(), catalogs())
    return estimate_resolved(resolved), resolved


def derived_values() -> dict[str, Any]:
    """Catalogue and preset values that an empty override box falls back to."""
    try:
        return resolve(scenario(), catalogs()).derived
    except ValueError:
        return {}


def current_or_stop() -> tuple[Estimate, Resolved]:
    try:
        return current()
    except ValueError as err:
        st.error(f"Cannot estimate this scenario: {err}", icon=":material/error:")
        st.stop()
        raise  # unreachable: st.stop ends the run
