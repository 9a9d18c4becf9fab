"""Small rendering blocks the pages share: headline metrics, breakdown tables, assumption notes."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import streamlit as st

from planner import Estimate
from ui import format as fmt
from ui.safe_text import plain


def breakdown_table(rows: Sequence[tuple[str, str, str]]) -> None:
    """A three-column table: quantity, how it is computed, value."""
    frame = pl.DataFrame(
        {"Quantity": [r[0] for r in rows], "How": [r[1] for r in rows], "Value": [r[2] for r in rows]}
    )
    # A static table, not the interactive data grid: the grid redraws its canvas on every rerun, which on Overview
    # more than doubled the time from an edit to the new figures in a real browser (bench/browser_bench.py:
    # 590 -> 409 ms, against a 130-175 ms floor, measured in one sitting); a static table also wraps long "How"
    # texts instead of cutting them off. Arrow: Streamlit sends an Arrow table as it is, polars goes via pandas.
    st.table(frame.to_arrow(), border="horizontal")


def fit_verdict(est: Estimate) -> str:
    if est.fits_vram is None:
        return "unknown"
    return "fits" if est.fits_vram else "does NOT fit"


def memory_metric(est: Estimate) -> None:
    peak = est.peak_gib_per_device
    shown = peak if peak is not None else est.model_state_gib_per_device
    label = "Peak memory per GPU" if peak is not None else "Model state per GPU"
    st.metric(
        label,
        fmt.gib(shown),
        f"{fit_verdict(est)} in {est.vram_gib:,.1f} GiB",
        delta_color="normal" if est.fits_vram else "inverse",
    )


def unavailable_notes(est: Estimate) -> None:
    for figure, reason in est.unavailable.items():
        st.caption(f":grey[{plain(figure)}: unavailable — {plain(reason)}]")


def assumptions(lines: Sequence[str]) -> None:
    # Drawn only while open: a closed section's text is still a message on every rerun. One key for every page
    # (a run draws one page), so the section stays open or closed as the user moves between pages.
    section = st.expander("What this assumes", key="assumptions.open", on_change="rerun")
    if section.open:
        section.markdown("\n".join(f"- {line}" for line in lines))


def model_note(est: Estimate, is_moe: bool) -> None:
    """Say which parameter count each figure uses; for mixture-of-experts models the two differ."""
    if is_moe:
        st.info(
            f"Mixture of experts: memory holds all {est.n_params / 1e9:,.1f} B parameters, while compute "
            f"counts the {est.n_active_params / 1e9:,.1f} B active per token.",
            icon=":material/hub:",
        )


def context_caption(est: Estimate, model_label: str, n_gpus: int) -> None:
    """Which model and hardware the page's figures are for."""
    size = "" if "bare count" in model_label else f" ({est.n_params / 1e9:,.2f} B parameters)"
    st.caption(f"{plain(model_label)}{size} on {plain(est.gpu)} × {n_gpus:d}")
