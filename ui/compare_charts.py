"""Altair builders for the GPU comparison page (kept apart from ui/charts.py, which another page set owns).

The chart is built with altair once per axis kind and turned into a Vega-Lite spec that every rerun reuses with
fresh data: altair's `to_dict` validates the whole spec against the Vega-Lite JSON schema on every call, which
cost about 30 ms a rerun on a 2-core machine — half of this page's rerun time (bench/run.py).
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import altair as alt
import polars as pl

from ui import format as fmt
from ui.chart_labels import label_sides, text_layers

FIT_LABELS = {True: "fits", False: "does not fit", None: "unknown"}
FIT_COLOURS = alt.Scale(domain=["fits", "does not fit", "unknown"], range=["#1f77b4", "#d62728", "#7f7f7f"])
FRONTIER_LABELS = {True: "on the frontier", False: "off the frontier"}
DATASET = "gpus"
DATA_COLUMNS = (
    "gpu",
    "vendor",
    "wall_clock_h",
    "wall_clock",
    "cost_usd",
    "min_gpus_to_fit",
    "fit",
    "frontier",
    "on_frontier",
    "is_scenario_gpu",
)


def cost_vs_time_data(frame: pl.DataFrame) -> pl.DataFrame:
    """The columns the chart reads, from comparison rows that have a time and a cost and an `on_frontier`."""
    return frame.with_columns(
        pl.col("fits_vram")
        .replace_strict(FIT_LABELS, default="unknown", return_dtype=pl.String)
        .alias("fit"),
        pl.col("on_frontier").replace_strict(FRONTIER_LABELS, return_dtype=pl.String).alias("frontier"),
        pl.Series("wall_clock", [fmt.hours(h) for h in frame["wall_clock_h"]], dtype=pl.String),
    ).select(DATA_COLUMNS)


def cost_vs_time_chart(log_axes: bool = True) -> alt.LayerChart:
    """Cost against wall clock, one point per GPU (diamonds on the Pareto frontier, joined by a dashed step line
    when it has two or more); every GPU that fits, and every frontier GPU, labelled with its name.

    No data is attached: the layers read the named dataset `DATASET` (rows from `cost_vs_time_data`).
    """
    scale = alt.Scale(type="log", padding=12) if log_axes else alt.Scale(zero=True, padding=12)
    x = alt.X("wall_clock_h:Q", title="Wall clock (h)", scale=scale)
    y = alt.Y("cost_usd:Q", title="Cost (USD)", scale=scale)
    points = (
        alt.Chart()
        .mark_point(filled=True, size=70, opacity=0.85)
        .encode(
            x=x,
            y=y,
            color=alt.Color("fit:N", scale=FIT_COLOURS, title="At this GPU count"),
            shape=alt.Shape(
                "frontier:N",
                title="Pareto",
                scale=alt.Scale(domain=list(FRONTIER_LABELS.values()), range=["diamond", "circle"]),
            ),
            tooltip=[
                alt.Tooltip("gpu:N", title="GPU"),
                alt.Tooltip("vendor:N", title="Vendor"),
                alt.Tooltip("wall_clock:N", title="Wall clock"),
                alt.Tooltip("cost_usd:Q", title="Cost (USD)", format="$,.2f"),
                alt.Tooltip("fit:N", title="Fits"),
                alt.Tooltip("min_gpus_to_fit:Q", title="Fewest GPUs that fit"),
            ],
        )
    )
    front = alt.Chart().transform_filter("datum.on_frontier")
    line = front.mark_line(interpolate="step-after", color="orange", strokeDash=[4, 2]).encode(x=x, y=y)
    # Named: the frontier (a staircase, so its names do not collide) and your own GPU. Naming every GPU that fits
    # put a dozen names on top of each other in the cluster of fast datacentre GPUs; the rest are in the
    # tooltip and the table.
    named = alt.Chart().transform_filter("datum.on_frontier || datum.is_scenario_gpu")
    labels = text_layers(named.encode(x=x, y=y), 10, "gpu:N")  # each at its `label_side` (ui/chart_labels.py)
    return alt.layer(line, points, *labels, data=alt.NamedData(name=DATASET)).properties(height=380)


@lru_cache(maxsize=2)
def _spec(log_axes: bool) -> dict[str, Any]:
    spec = cost_vs_time_chart(log_axes).to_dict()
    # altair's default theme adds a fixed 300 px view size; Streamlit drops it for its own altair charts too.
    spec.get("config", {}).pop("view", None)
    if not spec.get("config"):
        spec.pop("config", None)
    return spec


def cost_vs_time_spec(data: pl.DataFrame) -> dict[str, Any]:
    """The Vega-Lite spec with `data` (from `cost_vs_time_data`) as its dataset, for `st.vega_lite_chart`.

    Log axes, since the catalogue spans a T4 to a GB200 (one to two orders of magnitude on both axes); a zero
    (a free quote) has no logarithm, so such data gets linear axes.
    """
    positive = bool((data["cost_usd"].min() or 0) > 0 and (data["wall_clock_h"].min() or 0) > 0)
    # named as before: the frontier GPUs and your own; each name where it overlaps nothing
    named = [
        gpu if frontier or own else None
        for gpu, frontier, own in data.select("gpu", "on_frontier", "is_scenario_gpu").iter_rows()
    ]
    sides = label_sides(data["wall_clock_h"].to_list(), data["cost_usd"].to_list(), named, log=positive)
    data = data.with_columns(label_side=pl.Series(sides, dtype=pl.String))
    return {**copy.deepcopy(_spec(positive)), "datasets": {DATASET: data}}
