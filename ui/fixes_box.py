"""The "Ways to make it fit" box: the planner's ranked fixes, each with an Apply button (Overview and Memory)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from planner import Resolved, suggest_fixes
from ui import format as fmt
from ui.data import catalogs
from ui.safe_text import plain
from ui.state import apply_changes

# Overview shows the best few; the Memory page lists them all.
OVERVIEW_FIXES = 5


def _apply(change: dict[str, Any], label: str) -> None:
    apply_changes(labels=dict.fromkeys(change, label), **change)


def render_fixes(resolved: Resolved, *, key: str, limit: int | None = None) -> None:
    """The fixes for a plan that does not fit, best first (fitting, then the least time and money)."""
    fixes = suggest_fixes(resolved, catalogs())
    if not fixes:
        st.info(
            "No single change brings the peak down; try a bigger GPU or more GPUs on the Plan search page."
        )
        return
    for index, fix in enumerate(fixes[:limit]):
        icon = ":material/check_circle:" if fix.fits else ":material/cancel:"
        cost = "" if fix.cost_usd is None else f", {fmt.usd(fix.cost_usd)}"
        quality = " May affect quality." if fix.affects_quality else ""
        text, button = st.columns([5, 1], vertical_alignment="center")
        text.markdown(
            f"{icon} **{plain(fix.label)}**: {fmt.gib(fix.peak_gib)} per GPU, "
            f"{'fits' if fix.fits else 'still too big'}; {fmt.hours(fix.wall_clock_h)}{cost}. "
            f"{plain(fix.note[:1].upper() + fix.note[1:])}.{quality}"
        )
        button.button("Apply", key=f"fix.{key}.{index}", on_click=_apply, args=(fix.change, fix.label))
