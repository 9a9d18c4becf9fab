"""Hybrid sharding (HSDP) as a choice of the plan search: which layouts get a hybrid twin, a multi-node plan
that picks it where its in-node gathers win, the user's fixed choice obeyed, and the row's scenario reproduced."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import Constraints, scenario_for, search
from planner.decide.sweep_degrees import with_hybrid_shard
from planner.decide.sweep_grid import SearchSpace
from planner.decide.sweep_space import obeying_space
from planner.decide.sweep_words import label
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

CATS = default_catalogs()


def test_twins_only_where_the_choice_changes_something():
    """8-GPU nodes. Rows: (tp, cp, dp, zero) = DDP across nodes; ZeRO-3 inside one node; ZeRO-3 across nodes
    at tp 1 (8 replicas' ranks per node: a twin); ZeRO-3 across nodes at tp 8 (one rank per node: no twin);
    ZeRO-1 at tp 2 · cp 2 over 4 nodes (2 per node: a twin)."""
    tp, cp, dp, zero = (
        np.array(v, dtype=float)
        for v in ([1, 1, 1, 8, 2], [1, 1, 1, 1, 2], [16, 8, 32, 4, 8], [0, 3, 3, 3, 1])
    )
    columns = {"n_gpus": tp * cp * dp, "tp": tp, "cp": cp, "dp": dp, "zero_stage": zero}
    both = with_hybrid_shard(columns, (False, True), 8)
    assert list(both["hybrid_shard"]) == [0, 0, 0, 0, 0, 1, 1]
    assert list(both["dp"][5:]) == [32, 8]  # the twins are rows 3 and 5 again
    only_on = with_hybrid_shard(columns, (True,), 8)
    assert len(only_on["dp"]) == 5 and only_on["hybrid_shard"].all()


# Llama 3.1 8B fully fine-tuned at 512 sequences per step, H100s, fastest plan wanted.
BASE = Scenario(model="Llama 3.1 8B", method="full")
FASTEST = Constraints(gpus=("H100 SXM",), max_gpus=256, objective="wall_clock")
SPACE = SearchSpace(target_batch_sequences=512, gpu_counts=(64, 128, 256))


@pytest.fixture(scope="module")
def free():
    return search(BASE, FASTEST, SPACE, catalogs=CATS, top_n=1)


def test_multi_node_plan_picks_hybrid_sharding(free):
    """Over 8-256 nodes' worth of GPUs a sharded plan keeps its per-layer gathers on NVLink under HSDP; the
    fastest plan takes it, and is faster than the fastest with the flat ZeRO group (the choice fixed off)."""
    winner = free.winner
    assert winner is not None and winner["hybrid_shard"] and winner["zero_stage"] >= 1
    assert "HSDP" in label(winner)
    flat_space = obeying_space(BASE, {"hybrid_shard": False}, target_batch_sequences=512)
    flat = search(BASE, FASTEST, flat_space, catalogs=CATS, top_n=1)
    assert flat.fixed_choices == "hybrid shard (HSDP) off"
    assert flat.winner is not None and not flat.winner["hybrid_shard"]
    assert winner["wall_clock_h"] < flat.winner["wall_clock_h"]


def test_hybrid_row_is_the_estimate_of_its_scenario(free):
    row = free.winner
    scenario = scenario_for(row, BASE, CATS)
    assert scenario.hybrid_shard
    one = estimate(scenario, CATS)
    assert one.wall_clock_h == pytest.approx(row["wall_clock_h"], rel=1e-9)
    assert one.peak_gib_per_device == pytest.approx(row["peak_gib_per_device"], rel=1e-9)
