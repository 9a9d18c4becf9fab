"""Plan versus actual for one saved plan, as the Scenarios page shows it under the chosen plan (the Runs page
imports and attaches the runs, and fits the team calibration)."""

from __future__ import annotations

import streamlit as st

from planner import RunLogError, StoredPlan, compare_plan
from ui.data import catalogs
from ui.library import library


def plan_versus_actual_box(plan: StoredPlan) -> None:
    """The runs attached to `plan` beside its estimate, or a line saying where to attach some."""
    if plan.scenario is None:
        return  # a plan that needs repair has no estimate to compare with
    with st.expander("Plan versus actual (runs attached to this plan)"):
        try:
            rows = compare_plan(library(), plan.id, catalogs())
        except RunLogError:
            st.caption("No runs attached to this plan yet: import training logs on the Runs page.")
            return
        st.dataframe(rows, hide_index=True)
        st.caption("Error = predicted / measured - 1; memory compared statistic for statistic, in GiB.")
