"""The Compute page's "Where the step goes": one stacked bar of the step's parts and the part that bounds it.

The parts are the Estimate's per-step seconds from the operator step model (planner.formulas.operators.outputs):
they add up to the step time. A plan timed from your own end-to-end MFU has no split, and the section says so.
"""

from __future__ import annotations

from functools import lru_cache

import altair as alt
import polars as pl
import streamlit as st

from planner import Estimate
from ui.charts import Spec, _to_spec, _with_data
from ui.safe_text import plain

PARTS_DATASET = "step_parts"
# (Estimate field, label), in the bar's order: compute first, then what waits on the network, the schedule, the host
PARTS = (
    ("gemm_time_s", "Matrix multiplies"),
    ("attention_time_s", "Attention"),
    ("memory_bound_time_s", "Memory-bound ops"),
    ("launch_overhead_s", "Kernel launches"),
    ("residual_time_s", "Residual (unexplained)"),
    ("adapter_memory_time_s", "LoRA/QLoRA adapters"),
    ("exposed_pipelined_comm_s", "TP/CP/PP communication"),
    ("exposed_data_parallel_comm_s", "Data-parallel sync"),
    ("bubble_time_s", "Pipeline bubble"),
    ("offload_time_s", "Offload"),
)


def step_parts_frame(est: Estimate) -> pl.DataFrame:
    """One row per part with its seconds and share of the step (parts of 0 s left out)."""
    rows = [(label, float(getattr(est, field))) for field, label in PARTS]
    rows = [(label, seconds) for label, seconds in rows if seconds > 0]
    total = sum(seconds for _, seconds in rows) or 1.0
    return pl.DataFrame(
        {
            "part": [label for label, _ in rows],
            "seconds": [seconds for _, seconds in rows],
            "share_frac": [seconds / total for _, seconds in rows],
            "order": list(range(len(rows))),
            "label": ["Step"] * len(rows),
        },
        schema={
            "part": pl.String,
            "seconds": pl.Float64,
            "share_frac": pl.Float64,
            "order": pl.Int64,
            "label": pl.String,
        },
    )


def step_parts_chart(frame: pl.DataFrame) -> Spec:
    return _with_data(_step_parts_spec(), **{PARTS_DATASET: frame})


@lru_cache(maxsize=1)
def _step_parts_spec() -> Spec:
    chart = (
        alt.Chart(alt.NamedData(name=PARTS_DATASET))
        .mark_bar()
        .encode(
            x=alt.X("sum(seconds):Q", title="Seconds per optimizer step, one GPU"),
            y=alt.Y("label:N", title=None),
            color=alt.Color("part:N", sort=[label for _, label in PARTS], title="Part of the step"),
            order=alt.Order("order:Q"),
            tooltip=[
                "part:N",
                alt.Tooltip("seconds:Q", format=",.4f", title="Seconds"),
                alt.Tooltip("share_frac:Q", format=".1%", title="Share of the step"),
            ],
        )
        .properties(height=90)
    )
    return _to_spec(chart)


def render_step_parts(est: Estimate) -> None:
    st.subheader("Where the step goes")
    frame = step_parts_frame(est)
    if not est.gemm_time_s or frame.is_empty():
        st.caption(f"No split: {plain(est.bound_by or 'the time comes from an end-to-end utilisation')}.")
        return
    st.vega_lite_chart(spec=step_parts_chart(frame), width="stretch")
    st.caption(
        f"Bound by: {plain(est.bound_by)}. The parts add up to the {est.step_time_s:,.3f} s step: the operators each "
        "GPU runs (matrix multiplies at their shapes, attention, memory-bound operations, launches the GPU waits "
        "for), the residual the operators leave unexplained on published runs of this GPU generation, and the "
        "communication, bubble and offload the compute does not hide."
    )
