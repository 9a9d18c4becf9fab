"""Small rendering blocks the pages share: headline metrics, breakdown tables, assumption notes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from planner import Estimate
from ui import format as fmt
from ui.safe_text import plain

_BREAKDOWN_HEAD = "| Quantity | How | Value |\n|:--|:--|--:|\n"  # values right-aligned, so the digits line up


def small_table(frame: Any) -> None:
    """A small table (a polars frame) as one markdown table, its keys in words: "as_of" reads "date" and a
    value such as "on_demand" reads "on demand" (file names and paths are kept as written).

    Why not st.dataframe or st.table: either makes a page load Streamlit's Arrow code in the browser (0.7 MB of
    script for st.table, 1.2 MB with the data grid; Chromium's resource timings), which a page opened by its URL
    waits for; Methods & data drew three such tables on arrival."""
    head = [plain(name.replace("as_of", "date").replace("_", " ")) for name in frame.columns]
    rows = ["| " + " | ".join(plain(_cell(value)) for value in row) + " |" for row in frame.iter_rows()]
    header = "| " + " | ".join(head) + " |\n|" + "".join(":--|" for _ in head)
    st.markdown(header + "\n" + "\n".join(rows))


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    text = str(value)
    return text if "/" in text or "." in text else text.replace("_", " ")


def breakdown_table(rows: Sequence[tuple[str, str, str]]) -> None:
    """A three-column table: quantity, how it is computed, value."""
    # One markdown table, not st.table: a 13-row st.table cost about 25 ms of every rerun in the browser against
    # about 7 ms for the same rows in markdown (Chromium's script time per edit, bench/browser_bench.py's method);
    # the interactive data grid was slower still (it redraws its canvas on every rerun). `plain` escapes each
    # cell, "|" included, and keeps it on one line, so no cell can end its row or add markup.
    body = "\n".join(
        f"| {plain(quantity)} | {plain(how)} | {plain(value)} |" for quantity, how, value in rows
    )
    st.markdown(_BREAKDOWN_HEAD + body)


TIGHT = "tight — may run out of memory"  # planner.formulas.memory.verdict.VERDICT_NAMES[1]
# the metric's arrow colour per verdict: green fits, grey tight (it may or may not run out), red does not fit
VERDICT_COLOURS = {"fits": "normal", "does not fit": "inverse"}


def fit_verdict(est: Estimate) -> str:
    """The memory verdict in words: fits / tight — may run out of memory / does NOT fit / unknown."""
    if est.fit_verdict is None:
        return "unknown"
    return "does NOT fit" if est.fit_verdict == "does not fit" else est.fit_verdict


def band_words(est: Estimate) -> str:
    """The verdict's reason: the device total and the high end of the memory model's measured error band."""
    return (
        f"device total {fmt.gib(est.device_total_gib)}, up to {fmt.gib(est.peak_gib_high)} at the high end of "
        f"the memory model's error band on published runs, against {est.vram_gib:,.1f} GiB"
    )


def memory_metric(est: Estimate) -> None:
    peak = est.peak_gib_per_device
    shown = peak if peak is not None else est.model_state_gib_per_device
    label = "Peak memory per GPU" if peak is not None else "Model state per GPU"
    st.metric(
        label,
        fmt.gib(shown),
        f"{fit_verdict(est)} in {est.vram_gib:,.1f} GiB",
        delta_color=VERDICT_COLOURS.get(est.fit_verdict or "", "off"),
        help=plain(band_words(est)) if est.peak_gib_high is not None else None,
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
    if est.n_params_all_parts:  # a vision-language or diffusion model: its main transformer and the parts
        size = f" ({est.n_params / 1e9:,.2f} B + {(est.n_params_all_parts - est.n_params) / 1e9:,.2f} B in its other parts)"
    st.caption(f"{plain(model_label)}{size} on {plain(est.gpu)} × {n_gpus:d}")


def loading_row(est: Estimate) -> tuple[str, str, str]:
    """The breakdown row of the model-loading peak: its figure when the whole model lands on
    each GPU before sharding, a word when it loads sharded (then it stays below the training peak)."""
    if est.loading_peak_gib:
        how = "whole model at its load dtype on each GPU before sharding, one layer flattened, overhead"
        return ("Peak while loading", how, fmt.gib(est.loading_peak_gib))
    return ("Peak while loading", "loaded sharded: each GPU holds its shard, below the training peak", "—")
