"""One scenario per browser session; widgets are views of it.

The scenario lives under a key no widget uses, so Streamlit's widget clean-up on page switches never touches it.
Each widget is keyed `w.<field>`, seeded from the scenario just before it renders and committed back in its
`on_change` callback through full validation; an invalid entry leaves the previous value in place and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from pydantic import ValidationError

from planner.inputs.errors import describe_validation_error
from planner.inputs.query import PAGE_PARAMETERS, drop_unknown_names, scenario_from_query, scenario_to_query
from planner.inputs.scenario import Scenario

SCENARIO_KEY = "scenario"
NOTICES_KEY = "notices"
SAVED_KEY = "saved_scenarios"
WIDGET_PREFIX = "w."


def init_state() -> None:
    """First run of a session: read the share link once; later runs keep the session's own scenario."""
    ss = st.session_state
    if SCENARIO_KEY not in ss:
        scenario, notices = scenario_from_query(st.query_params.to_dict())
        scenario, unknown = drop_unknown_names(scenario, _name_lookups())
        ss[SCENARIO_KEY] = scenario
        ss[NOTICES_KEY] = notices + unknown
        ss.setdefault(SAVED_KEY, {})


def _name_lookups() -> dict[str, Callable[[str], object]]:
    """Lookups that raise ValueError (naming the closest matches) for names the catalogues do not know."""
    from ui.data import catalogs

    cats = catalogs()

    def snapshot(name: str) -> None:
        if name not in cats.snapshot_ids():
            raise ValueError(f"no price snapshot {name!r}; available: {', '.join(cats.snapshot_ids())}")

    return {
        "gpu": cats.gpu,
        "region": cats.region,
        "model": cats.model,
        "snapshot": snapshot,
    }


def scenario() -> Scenario:
    return st.session_state[SCENARIO_KEY]


def set_scenario(new: Scenario) -> None:
    st.session_state[SCENARIO_KEY] = new


def apply_changes(**changes: Any) -> bool:
    """Validate and store a change set; on failure keep the old scenario and queue a notice."""
    try:
        set_scenario(scenario().updated(**changes))
    except ValidationError as err:
        add_notice(describe_validation_error(err))
        return False
    return True


def add_notice(message: str) -> None:
    st.session_state.setdefault(NOTICES_KEY, []).append(message)


def show_notices() -> None:
    """Messages about rejected input, shown once on the next run."""
    for message in st.session_state.get(NOTICES_KEY, []):
        st.warning(message, icon=":material/error:")
    st.session_state[NOTICES_KEY] = []


def _commit(field: str, to_model: Callable[[Any], Any] | None) -> None:
    value = st.session_state[WIDGET_PREFIX + field]
    apply_changes(**{field: to_model(value) if to_model else value})


def bound(
    widget: Callable[..., Any],
    label: str,
    field: str,
    *,
    to_widget: Callable[[Any], Any] | None = None,
    to_model: Callable[[Any], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Render `widget` as a view of `scenario().<field>`. Never pass value=/index=."""
    current = getattr(scenario(), field)
    st.session_state[WIDGET_PREFIX + field] = to_widget(current) if to_widget else current
    widget(label, key=WIDGET_PREFIX + field, on_change=_commit, args=(field, to_model), **kwargs)
    return current


def sync_query_params() -> None:
    """Write the whole scenario into the URL so the link on any page reproduces the plan."""
    current = st.query_params.to_dict()
    # A page's own parameter (the Methods page's topic) stays for that page to read.
    wanted = {**scenario_to_query(scenario()), **{k: v for k, v in current.items() if k in PAGE_PARAMETERS}}
    if current != wanted:
        st.query_params.from_dict(wanted)
