"""The per-step timeline of a post-training plan: one bar of one step, part after part.

Built like `ui.charts`: the altair chart once (cached as a Vega-Lite spec with named data), fresh data on
every rerun, no network needed (Vega-Lite renders in the browser from the spec and the attached rows).
"""

from __future__ import annotations

from functools import lru_cache

import altair as alt
import polars as pl

from ui.charts import Spec, _to_spec, _with_data

TIMELINE_DATASET = "timeline"
# Generation in the colour of "waiting for the engine", training in the trainer's; a fixed order, so the four
# parts keep their colours from one plan to the next.
PART_COLOURS = alt.Scale(
    domain=["Generation", "Scoring (frozen forwards)", "Training", "Weight hand-over"],
    range=["#e15759", "#f28e2b", "#4e79a7", "#76b7b2"],
)


def step_timeline(frame: pl.DataFrame) -> Spec:
    """A Gantt-like bar of one step: each part from its start to its end, in seconds."""
    return _with_data(_step_timeline_spec(), **{TIMELINE_DATASET: frame})


@lru_cache(maxsize=1)
def _step_timeline_spec() -> Spec:
    chart = (
        alt.Chart(alt.NamedData(name=TIMELINE_DATASET))
        .mark_bar()
        .encode(
            x=alt.X("start_s:Q", title="Seconds into the step"),
            x2="end_s:Q",
            y=alt.Y("label:N", title=None),
            color=alt.Color("part:N", scale=PART_COLOURS, sort=None, title="Part of the step"),
            tooltip=[
                "part:N",
                alt.Tooltip("seconds:Q", format=",.3f", title="Seconds"),
                alt.Tooltip("share_frac:Q", format=".1%", title="Share of the step"),
            ],
        )
        .properties(height=120)
    )
    return _to_spec(chart)
