"""The Pareto frontier's bucket pre-filter (planner.decide.sweep_rank): it only drops rows the exact sweeps
would drop, so the frontier is the same with and without it, ties and all."""

from __future__ import annotations

import numpy as np

from planner.decide.sweep_rank import (
    FRONTIER_BUCKETS,
    Kept,
    _cheaper_than_all_faster,
    _not_beaten_by_a_faster_bucket,
    pareto_order,
)


def _kept(wall: np.ndarray, cost: np.ndarray) -> Kept:
    n = len(wall)
    return Kept(np.zeros(n, dtype=np.int32), np.arange(n), {"wall_clock_s": wall, "cost_usd": cost})


def _exact(kept: Kept, rows: np.ndarray) -> np.ndarray:
    wall, cost = kept.figures["wall_clock_s"], kept.figures["cost_usd"]
    return _cheaper_than_all_faster(_cheaper_than_all_faster(rows, wall, cost, None), wall, cost, kept)


def test_the_frontier_is_the_same_with_the_prefilter_ties_and_all():
    rng = np.random.default_rng(14)  # fixed seed: the same rows in every run
    n = 4 * FRONTIER_BUCKETS
    # rounded to a few hundred values each, so most rows tie on wall clock, cost or both (as search rows do)
    wall = np.round(rng.lognormal(3.0, 1.0, n), 1)
    cost = np.round(1e4 / wall * rng.uniform(0.5, 2.0, n), 0)
    wall[:5] = [np.inf, np.nan, wall[5], wall[5], 0.5]  # no finite time, a tie at the front, the fastest
    kept = _kept(wall, cost)
    feasible = np.isfinite(cost)
    rows = np.flatnonzero(feasible)
    assert len(_not_beaten_by_a_faster_bucket(rows, wall, cost)) < n // 100  # it does prune
    np.testing.assert_array_equal(pareto_order(kept, feasible), _exact(kept, rows))


def test_the_frontier_matches_a_plain_loop_over_the_rows():
    """A plain loop over the rows by (wall clock, cost, index) keeps each row cheaper than every row before it:
    the frontier's definition, one point per undominated (wall clock, cost), the first row of a tie. Above the
    pre-filter's row count, so the pre-filter runs."""
    rng = np.random.default_rng(7)
    n = FRONTIER_BUCKETS + 10
    wall = np.round(rng.uniform(1.0, 100.0, n), 0)
    cost = np.round(rng.uniform(1.0, 100.0, n), 0)
    frontier = set(pareto_order(_kept(wall, cost), np.ones(n, dtype=bool)).tolist())
    order = np.lexsort((np.arange(n), cost, wall))
    best = {}  # the first row (by wall, cost, index) of each undominated (wall, cost) point
    cheapest = np.inf
    for row in order:
        if cost[row] < cheapest:
            best[(wall[row], cost[row])] = int(row)
            cheapest = cost[row]
    assert frontier == set(best.values())
    assert len(frontier) < 200
