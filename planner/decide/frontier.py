"""The Pareto frontier of a table of plans or GPUs: the rows no other row beats on both of two figures."""

from __future__ import annotations

import numpy as np
import polars as pl


def pareto_frontier(
    frame: pl.DataFrame,
    x: str = "wall_clock_h",
    y: str = "cost_usd",
    *,
    among: str | None = None,
    name: str = "on_frontier",
) -> pl.DataFrame:
    """Add a boolean column: True where no other row is at least as good on both x and y and better on one.

    Lower is better on both. Rows with a missing x or y are never on the frontier; with `among` (a boolean
    column), only rows where it is True take part (e.g. only GPUs that fit).
    """
    xs = frame[x].cast(pl.Float64).fill_null(np.nan).to_numpy()
    ys = frame[y].cast(pl.Float64).fill_null(np.nan).to_numpy()
    valid = np.isfinite(xs) & np.isfinite(ys)
    if among is not None:
        valid &= frame[among].fill_null(False).to_numpy().astype(bool)
    no_worse = (xs[:, None] <= xs[None, :]) & (ys[:, None] <= ys[None, :])
    better = (xs[:, None] < xs[None, :]) | (ys[:, None] < ys[None, :])
    dominated = (valid[:, None] & no_worse & better).any(axis=0)  # [j, i]: does row j dominate row i
    return frame.with_columns(pl.Series(name, valid & ~dominated, dtype=pl.Boolean))
