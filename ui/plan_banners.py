"""The banners above a plan's figures: the plan's own warnings (planner.plan_warnings) and, for a plan that does
not fit, the figures it would have greyed out."""

from __future__ import annotations

import streamlit as st

from planner import Estimate, Resolved, plan_warnings
from ui.safe_text import plain

_ICONS = {
    "communication": ":material/swap_horiz:",
    "few_prompts": ":material/playlist_add:",
    "more_gpus_slower": ":material/trending_down:",
}


def render_plan_warnings(resolved: Resolved, est: Estimate) -> None:
    """One warning box each: communication-bound, a rollout of very few prompts, more GPUs being slower."""
    for warning in plan_warnings(resolved, est):
        st.warning(plain(warning.message), icon=_ICONS.get(warning.kind, ":material/warning:"))


def greyed(text: str, est: Estimate) -> str:
    """A time or cost figure as shown: grey when the plan does not fit, since such a run never gets that far."""
    return f":grey[{plain(text)}]" if est.fits_vram is False else text
