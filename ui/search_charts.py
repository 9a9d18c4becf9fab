"""Altair builder for the plan search page: the cost-versus-time Pareto frontier with the winner marked."""

from __future__ import annotations

import altair as alt
import polars as pl

from planner import label
from ui import format as fmt

TOOLTIP = [
    alt.Tooltip("label:N", title="Configuration"),
    alt.Tooltip("wall_clock:N", title="Wall clock"),
    alt.Tooltip("cost_usd:Q", title="Cost (USD)", format="$,.2f"),
    alt.Tooltip("peak_gib_per_device:Q", title="Peak GiB per GPU", format=",.1f"),
]


def _with_labels(frame: pl.DataFrame, role: str) -> pl.DataFrame:
    labels = [label(row) for row in frame.iter_rows(named=True)]
    return frame.select("gpu", "wall_clock_h", "cost_usd", "peak_gib_per_device").with_columns(
        pl.Series("label", labels, pl.String),
        pl.lit(role).alias("role"),
        pl.Series("wall_clock", [fmt.hours(h) for h in frame["wall_clock_h"]], pl.String),
    )


def pareto_chart(
    frontier: pl.DataFrame,
    top: pl.DataFrame,
    deadline_h: float | None = None,
    budget_usd: float | None = None,
) -> alt.LayerChart:
    """Frontier points joined by a step line (coloured by GPU), the top results as rings, the winner as a star,
    and the deadline and budget as dashed rules. Log axes: frontiers span orders of magnitude in both."""
    points = _with_labels(frontier, "frontier")
    ranked = _with_labels(top.filter(pl.col("cost_usd").is_not_null()), "top")
    winner = ranked.head(1).with_columns(pl.lit("winner").alias("role"))
    x = alt.X("wall_clock_h:Q", title="Wall clock (h)", scale=alt.Scale(type="log", nice=False))
    y = alt.Y("cost_usd:Q", title="Cost (USD)", scale=alt.Scale(type="log", nice=False))
    step = (
        alt.Chart(points)
        .mark_line(interpolate="step-after", color="#9e9e9e", strokeDash=[4, 3])
        .encode(x=x, y=y)
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, size=60)
        .encode(x=x, y=y, color=alt.Color("gpu:N", title="GPU"), tooltip=TOOLTIP)
    )
    rings = alt.Chart(ranked).mark_point(size=140, color="#444444").encode(x=x, y=y, tooltip=TOOLTIP)
    star = (
        alt.Chart(winner)
        .mark_point(shape="diamond", size=320, filled=True, color="#d62728")
        .encode(x=x, y=y, tooltip=TOOLTIP)
    )
    layers: list[alt.Chart] = [step, dots, rings, star]
    if deadline_h is not None:
        layers.append(_rule({"wall_clock_h": [deadline_h]}, "wall_clock_h", "x", "Deadline (h)"))
    if budget_usd is not None:
        layers.append(_rule({"cost_usd": [budget_usd]}, "cost_usd", "y", "Budget (USD)"))
    return alt.layer(*layers).properties(height=380)


def _rule(data: dict[str, list[float]], field: str, channel: str, title: str) -> alt.Chart:
    encoding = {channel: alt.X(f"{field}:Q") if channel == "x" else alt.Y(f"{field}:Q")}
    return (
        alt.Chart(pl.DataFrame(data))
        .mark_rule(color="#d62728", strokeDash=[6, 3])
        .encode(**encoding, tooltip=[alt.Tooltip(f"{field}:Q", title=title, format=",.2f")])
    )
