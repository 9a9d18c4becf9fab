"""Vega-Lite charts for the plan pages, written with altair; each takes polars frames the planner produced.

Every builder returns a Vega-Lite spec with its data attached as named datasets, for
`st.vega_lite_chart(spec=..., width="stretch")`. The chart itself is built with altair once per set of
static parameters (titles, column names, the highlighted bar) and kept as a spec; each rerun only attaches
fresh data. Building an altair chart and converting it (`to_dict` validates against the Vega-Lite schema)
cost 25–45 ms per chart on a 2-core machine, most of a page's rerun (bench/run.py); the spec it produces is
the same every time. Cached specs are deep-copied before data is attached, so no caller can change them.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import altair as alt
import polars as pl

from ui.chart_labels import label_sides, text_layers

# One colour per memory component, the same in every plan: a scale over the components present would hand
# "Activations" another colour as soon as a plan gains or loses a component. The names are those of
# planner.memory_components (tests/test_chart_colours.py keeps the two in step); colours from Tableau 20.
MEMORY_COMPONENT_COLOURS = {
    "Weights": "#4e79a7",
    "Gradients": "#f28e2b",
    "Optimizer states": "#e15759",
    "fp32 master copy": "#76b7b2",
    "Activations": "#59a14f",
    "Logits and loss": "#edc948",
    "ZeRO-3 gathered layers": "#b07aa1",
    "fp32 gradient copy": "#ff9da7",
    "Framework overhead": "#9c755f",
    "Allocator fragmentation": "#bab0ac",
    "Reference model": "#a0cbe8",
    "Reward model": "#ffbe7d",
    "Value model (critic)": "#8cd17d",
    "Generation engine (colocated)": "#d4a6c8",
}

LEGEND_ROWS_HEIGHT = (
    270  # px: tall enough for the ten legend rows (at 140 px the last three of nine were cut off)
)
LEGEND_ROW_PX = 27  # the same height per row, for a post-training plan's longer legend (up to 14 rows)
Spec = dict[str, Any]


def _to_spec(chart: alt.TopLevelMixin) -> Spec:
    """The chart as a plain Vega-Lite dict, as Streamlit's own altair path produces it."""
    spec = chart.to_dict()
    # altair's default theme adds a fixed 300 px view size; Streamlit switches that theme off for altair charts.
    spec.get("config", {}).pop("view", None)
    if not spec.get("config"):
        spec.pop("config", None)
    return spec


def _with_data(spec: Spec, **datasets: pl.DataFrame) -> Spec:
    return {**copy.deepcopy(spec), "datasets": datasets}


def memory_stack(components: pl.DataFrame, vram_gib: float) -> Spec:
    """Stacked bar of per-GPU memory components with the GPU's VRAM as a labelled line."""
    vram = pl.DataFrame({"vram_gib": [vram_gib], "text": [f"VRAM {vram_gib:,.1f} GiB"]})
    height = max(LEGEND_ROWS_HEIGHT, LEGEND_ROW_PX * components.height)
    present = tuple(components["component"].to_list())
    return _with_data(_memory_stack_spec(height, present), components=components, vram=vram)


@lru_cache(maxsize=16)
def _memory_stack_spec(height: int, present: tuple[str, ...]) -> Spec:
    # the legend lists the components this plan has, each in its fixed colour (grey for a name not listed)
    colours = alt.Scale(
        domain=list(present), range=[MEMORY_COMPONENT_COLOURS.get(c, "#7f7f7f") for c in present]
    )
    bars = (
        alt.Chart(alt.NamedData(name="components"))
        .mark_bar()
        .encode(
            x=alt.X("gib:Q", title="GiB per GPU (each component at its own largest)", stack="zero"),
            y=alt.Y("label:N", title=None),
            # The chart is as tall as the nine-entry legend beside it: a shorter one cut the last entries off.
            color=alt.Color(
                "component:N",
                scale=colours,
                sort=None,
                title="Component",
                legend=alt.Legend(labelLimit=220),
            ),
            order=alt.Order("order:Q"),
            tooltip=["component:N", alt.Tooltip("gib:Q", format=",.2f", title="GiB")],
        )
    )
    vram = alt.Chart(alt.NamedData(name="vram"))
    line = vram.mark_rule(color="red", strokeDash=[6, 3], size=2).encode(
        x="vram_gib:Q", tooltip=[alt.Tooltip("vram_gib:Q", format=",.2f", title="VRAM GiB")]
    )
    label = vram.mark_text(color="red", align="left", dx=4, y=0, dy=8, fontSize=11).encode(
        x="vram_gib:Q", text="text:N"
    )
    return _to_spec((bars + line + label).properties(height=height))


# The y axis of a line chart with a limit stops at this multiple of the limit: far above it the lines only say
# "does not fit", and an axis running to 20x the VRAM would flatten the limit line onto the floor.
LIMIT_AXIS_MULTIPLE = 2.5


def lines_with_limit(
    frame: pl.DataFrame,
    x: str,
    y: str,
    colour: str,
    limit: float,
    x_title: str,
    y_title: str,
    *,
    colour_title: str | None = None,
    limit_label: str = "VRAM",
) -> Spec:
    """One line per `colour` value of `y` against `x`, with a labelled dashed limit; the y axis stops at
    LIMIT_AXIS_MULTIPLE x the limit (points above are clipped, their tooltips still exact)."""
    spec = _lines_with_limit_spec(x, y, colour, x_title, y_title, colour_title or colour.replace("_", " "))
    y_max = min(float(frame[y].max() or limit), LIMIT_AXIS_MULTIPLE * limit) if frame.height else limit
    spec["layer"][0]["encoding"]["y"]["scale"] = {"domain": [0, max(y_max, limit) * 1.05]}
    text = f"{limit_label} {limit:,.1f}"
    return _with_data(spec, lines=frame, limit=pl.DataFrame({"limit": [limit], "text": [text]}))


@lru_cache(maxsize=8)
def _lines_with_limit_spec(
    x: str, y: str, colour: str, x_title: str, y_title: str, colour_title: str
) -> Spec:
    base = (
        alt.Chart(alt.NamedData(name="lines"))
        .mark_line(point=True, clip=True)
        .encode(
            # Doubling steps (1, 2, 4, ... 64) spread evenly: on a linear axis they crowd the left edge.
            x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(type="log", base=2)),
            y=alt.Y(f"{y}:Q", title=y_title),
            color=alt.Color(f"{colour}:N", title=colour_title, legend=alt.Legend(labelLimit=280)),
            # Dashes as well as colours: two modes with equal memory draw one line over the other.
            strokeDash=alt.StrokeDash(f"{colour}:N", title=colour_title),
            tooltip=[f"{colour}:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=",.2f")],
        )
    )
    limit = alt.Chart(alt.NamedData(name="limit"))
    rule = limit.mark_rule(color="red", strokeDash=[6, 3]).encode(y="limit:Q")
    label = limit.mark_text(color="red", align="left", x=4, dy=-7, fontSize=11).encode(
        y="limit:Q", text="text:N"
    )
    return _to_spec((base + rule + label).properties(height=300))


def scaling(frame: pl.DataFrame, gpus_per_node: int | None = None) -> Spec:
    """Wall clock and scaling efficiency against GPU count (log2 x axis), with the node boundary marked: past
    it, communication leaves NVLink for the network and efficiency usually drops."""
    node = pl.DataFrame({"n_gpus": [gpus_per_node or 0], "text": [f"one node ({gpus_per_node} GPUs)"]})
    return _with_data(_scaling_spec(), curve=frame, node=node.filter(pl.col("n_gpus") > 0))


GPU_TICKS = [2**k for k in range(13)]  # 1 to 4,096: the scaling curve's range (planner.MAX_SCALING_GPUS)


@lru_cache(maxsize=1)
def _scaling_spec() -> Spec:
    # ticks at whole GPU counts only (a log axis otherwise labels 1.5 or 3 GPUs)
    x = alt.X(
        "n_gpus:Q",
        scale=alt.Scale(type="log", base=2),
        title="GPUs",
        axis=alt.Axis(format="d", tickMinStep=1, values=GPU_TICKS),
    )
    node = alt.Chart(alt.NamedData(name="node"))
    boundary = node.mark_rule(color="grey", strokeDash=[4, 4]).encode(x="n_gpus:Q")
    boundary_label = node.mark_text(color="grey", align="left", dx=4, y=8, fontSize=11).encode(
        x="n_gpus:Q", text="text:N"
    )
    time_chart = (
        alt.Chart(alt.NamedData(name="curve"))
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("wall_clock_h:Q", title="Wall clock (h)", scale=alt.Scale(type="log")),
            tooltip=[
                "n_gpus:Q",
                alt.Tooltip("wall_clock_h:Q", format=",.2f"),
                alt.Tooltip("cost_usd:Q", format=",.0f"),
            ],
        )
    )
    eff_chart = (
        alt.Chart(alt.NamedData(name="curve"))
        .mark_line(point=alt.OverlayMarkDef(color="orange"), color="orange")
        .encode(
            x=x,
            y=alt.Y("scaling_efficiency_frac:Q", title="Scaling efficiency", axis=alt.Axis(format="%")),
            tooltip=["n_gpus:Q", alt.Tooltip("scaling_efficiency_frac:Q", format=".0%")],
        )
    )
    return _to_spec(
        alt.hconcat(
            (time_chart + boundary + boundary_label).properties(width=320, height=260),
            (eff_chart + boundary + boundary_label).properties(width=320, height=260),
        )
    )


def bars(
    frame: pl.DataFrame,
    x: str,
    y: str,
    x_title: str,
    highlight: str | None = None,
    height: int | None = None,
) -> Spec:
    """Horizontal bars of `x` per `y`, largest first; the bar whose `y` equals `highlight` in orange."""
    return _with_data(_bars_spec(x, y, x_title, highlight, height), bars=frame)


@lru_cache(maxsize=64)  # one per highlighted region at most, and the few static bar charts
def _bars_spec(x: str, y: str, x_title: str, highlight: str | None, height: int | None) -> Spec:
    colour = (
        alt.condition(alt.datum[y] == highlight, alt.value("orange"), alt.value("steelblue"))
        if highlight
        else alt.value("steelblue")
    )
    chart = (
        alt.Chart(alt.NamedData(name="bars"))
        .mark_bar()
        .encode(
            x=alt.X(f"{x}:Q", title=x_title),
            # Every label drawn, none shortened: Vega's default drops "overlapping" ones and cuts at 180 px,
            # which left the highlighted bar without its name.
            y=alt.Y(f"{y}:N", sort="-x", title=None, axis=alt.Axis(labelOverlap=False, labelLimit=320)),
            color=colour,
            tooltip=[f"{y}:N", alt.Tooltip(f"{x}:Q", format=",.2f")],
        )
    )
    return _to_spec(chart if height is None else chart.properties(height=height))


def price_history(frame: pl.DataFrame) -> Spec:
    """Median price per GPU-hour across snapshots, one line per GPU."""
    return _with_data(_price_history_spec(), prices=frame)


@lru_cache(maxsize=1)
def _price_history_spec() -> Spec:
    chart = (
        alt.Chart(alt.NamedData(name="prices"))
        .mark_line(point=True)
        .encode(
            x=alt.X("snapshot:T", title="Snapshot"),
            y=alt.Y("usd_per_gpu_hour_median:Q", title="Median $/GPU-hour"),
            color=alt.Color("gpu:N", title="GPU"),
            tooltip=["gpu:N", "snapshot:T", alt.Tooltip("usd_per_gpu_hour_median:Q", format="$.2f")],
        )
        .properties(height=320)
    )
    return _to_spec(chart)


def labelled_cost_vs_time(frame: pl.DataFrame) -> Spec:
    """Cost against wall clock, a point per plan labelled with its name, red where it does not fit."""
    sides = label_sides(frame["wall_clock_h"].to_list(), frame["cost_usd"].to_list(), frame["plan"].to_list())
    return _with_data(_labelled_cost_vs_time_spec(), plans=frame.with_columns(label_side=pl.Series(sides)))


@lru_cache(maxsize=1)
def _labelled_cost_vs_time_spec() -> Spec:
    base = alt.Chart(alt.NamedData(name="plans")).encode(
        # Zero is kept on both axes: cost and time are read as proportions (twice the cost is twice as high).
        x=alt.X("wall_clock_h:Q", title="Wall clock (hours)", axis=alt.Axis(format=",.2~f")),
        y=alt.Y("cost_usd:Q", title="Cost (USD)", axis=alt.Axis(format="$,.2~f")),
    )
    points = base.mark_circle(size=90).encode(
        color=alt.Color(
            "fit:N",
            title="Memory",
            scale=alt.Scale(domain=["fits", "does not fit"], range=["#1f77b4", "#d62728"]),
        ),
        tooltip=[
            "plan:N",
            alt.Tooltip("wall_clock_h:Q", format=",.2f"),
            alt.Tooltip("cost_usd:Q", format="$,.2f"),
            "fit:N",
        ],
    )
    return _to_spec(alt.layer(points, *text_layers(base, 11, "plan:N")).properties(height=360))
