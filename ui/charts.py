"""Altair chart builders; each takes a polars frame the planner produced."""

from __future__ import annotations

import altair as alt
import polars as pl

MEMORY_COLOURS = alt.Scale(scheme="tableau10")


def memory_stack(components: pl.DataFrame, vram_gib: float) -> alt.LayerChart:
    """Stacked bar of per-GPU memory components with the VRAM line."""
    bars = (
        alt.Chart(components)
        .mark_bar()
        .encode(
            x=alt.X("gib:Q", title="GiB per GPU", stack="zero"),
            y=alt.Y("label:N", title=None),
            color=alt.Color("component:N", scale=MEMORY_COLOURS, sort=None, title="Component"),
            order=alt.Order("order:Q"),
            tooltip=["component:N", alt.Tooltip("gib:Q", format=",.2f", title="GiB")],
        )
    )
    line = (
        alt.Chart(pl.DataFrame({"vram_gib": [vram_gib]}))
        .mark_rule(color="red", strokeDash=[6, 3], size=2)
        .encode(x="vram_gib:Q", tooltip=[alt.Tooltip("vram_gib:Q", format=",.2f", title="VRAM GiB")])
    )
    return (bars + line).properties(height=140)


def lines_with_limit(
    frame: pl.DataFrame, x: str, y: str, colour: str, limit: float, x_title: str, y_title: str
) -> alt.LayerChart:
    base = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X(f"{x}:Q", title=x_title),
            y=alt.Y(f"{y}:Q", title=y_title),
            color=alt.Color(f"{colour}:N", title=colour.replace("_", " ")),
            tooltip=[f"{colour}:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=",.2f")],
        )
    )
    rule = (
        alt.Chart(pl.DataFrame({"limit": [limit]}))
        .mark_rule(color="red", strokeDash=[6, 3])
        .encode(y="limit:Q")
    )
    return (base + rule).properties(height=300)


def scaling(frame: pl.DataFrame) -> alt.HConcatChart:
    """Wall clock and scaling efficiency against GPU count (log2 x axis)."""
    x = alt.X("n_gpus:Q", scale=alt.Scale(type="log", base=2), title="GPUs")
    time_chart = (
        alt.Chart(frame)
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
        alt.Chart(frame)
        .mark_line(point=True, color="orange")
        .encode(
            x=x,
            y=alt.Y("scaling_efficiency_frac:Q", title="Scaling efficiency", axis=alt.Axis(format="%")),
            tooltip=["n_gpus:Q", alt.Tooltip("scaling_efficiency_frac:Q", format=".0%")],
        )
    )
    return alt.hconcat(
        time_chart.properties(width=320, height=260), eff_chart.properties(width=320, height=260)
    )


def bars(frame: pl.DataFrame, x: str, y: str, x_title: str, highlight: str | None = None) -> alt.Chart:
    colour = (
        alt.condition(alt.datum[y] == highlight, alt.value("orange"), alt.value("steelblue"))
        if highlight
        else alt.value("steelblue")
    )
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X(f"{x}:Q", title=x_title),
            y=alt.Y(f"{y}:N", sort="-x", title=None),
            color=colour,
            tooltip=[f"{y}:N", alt.Tooltip(f"{x}:Q", format=",.2f")],
        )
    )


def price_history(frame: pl.DataFrame) -> alt.Chart:
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("snapshot:T", title="Snapshot"),
            y=alt.Y("usd_per_gpu_hour_median:Q", title="Median $/GPU-hour"),
            color=alt.Color("gpu:N", title="GPU"),
            tooltip=["gpu:N", "snapshot:T", alt.Tooltip("usd_per_gpu_hour_median:Q", format="$.2f")],
        )
        .properties(height=320)
    )
