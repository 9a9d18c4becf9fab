"""Context parallelism in the plan search: the degrees a sequence allows, a long-sequence plan that picks CP > 1
where it helps, memory that falls with CP, and a searched row that the ordinary estimate reproduces."""

from __future__ import annotations

import itertools

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import Constraints, scenario_for, search
from planner.decide.sweep_degrees import DEFAULT_CP_DEGREES, context_parallel_degrees
from planner.decide.sweep_grid import SearchSpace, layout_grid
from planner.decide.sweep_space import obeying_space
from planner.decide.sweep_words import label
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

CATS = default_catalogs()
# Llama 3.1 8B fully fine-tuned on 64k-token sequences: one sequence's activations are far beyond one H100's
# 80 GB without splitting the sequence (Korthikanti et al. 2022: s·b·h·(34 + 5·a·s/h) bytes per layer).
LONG = Scenario(
    model="Llama 3.1 8B", method="full", seq_len=65_536, tokens_per_example=65_536, examples=2_000
)
ONE_GPU_TYPE = Constraints(gpus=("H100 SXM",), max_gpus=64)


@pytest.mark.parametrize(
    ("seq_len", "expected"),
    [
        (2_048, (1,)),  # 2k: one rank would keep 1k tokens, below the 4096 floor
        (8_192, (1, 2)),  # 8192 / 2 = 4096 tokens per rank, 8192 % 4 == 0; cp 4 leaves 2048
        (12_288, (1, 2)),  # 12288 % 4 == 0 and 6144 per rank; cp 4 leaves 3072
        (65_536, (1, 2, 4, 8, 16)),  # 65536 / 16 = 4096, 65536 % 32 == 0
        (65_537, (1,)),  # odd: no split into 2·cp equal chunks
        (None, (1,)),  # unknown length: no context parallelism
    ],
)
def test_degrees_the_sequence_allows(seq_len, expected):
    assert context_parallel_degrees(DEFAULT_CP_DEGREES, seq_len) == expected


def test_grid_splits_gpus_over_tp_cp_pp_and_dp():
    """Every layout's GPU count is tp·cp·pp·dp, and a short sequence's grid has no CP column value above 1."""
    space = SearchSpace(gpu_counts=(16,), pp_degrees=(1, 2), micro_batches=(1,), virtual_stages=(1,))
    grid = layout_grid(LONG, space, 64, 32.0, 32.0, None, 65_536.0)
    c = grid.columns
    assert set(c["cp"]) == {1.0, 2.0, 4.0, 8.0, 16.0}
    assert (c["tp"] * c["cp"] * c["pp"] * c["dp"] == c["n_gpus"]).all()
    short = layout_grid(LONG, space, 64, 32.0, 32.0, None, 2_048.0)
    assert set(short.columns["cp"]) == {1.0}


def test_memory_falls_with_context_parallelism():
    """Same 16 GPUs, TP 1, ZeRO-3: each doubling of CP halves the per-GPU tokens, so the peak falls every time."""
    peaks = [
        estimate(
            LONG.updated(n_gpus=16, cp=cp, zero_stage=3, micro_batch=1, grad_accum=1), CATS
        ).peak_gib_per_device
        for cp in (1, 2, 4, 8)
    ]
    assert all(later < earlier for earlier, later in itertools.pairwise(peaks))
    # the activations are most of the 64k-token peak: CP 8 needs under a third of CP 1's memory
    assert peaks[-1] < peaks[0] / 3


@pytest.fixture(scope="module")
def free_cp():
    return search(LONG, ONE_GPU_TYPE, catalogs=CATS, top_n=3)


def test_long_sequence_plan_picks_context_parallelism(free_cp):
    """At 64k tokens the cheapest plan splits the sequence, and it is cheaper than the best plan at CP 1."""
    winner = free_cp.winner
    assert winner is not None and winner["cp"] > 1
    assert f"CP {winner['cp']}" in label(winner)
    kept_at_one = search(LONG, ONE_GPU_TYPE, obeying_space(LONG, {"cp": 1}), catalogs=CATS, top_n=1)
    # CP 1 fits only with the sequence's heads split by TP 4 over 24 GPUs (1.8 h, $169 against CP 8's 0.56 h, $123)
    assert kept_at_one.winner is not None and kept_at_one.winner["cost_usd"] > 1.2 * winner["cost_usd"]
    assert kept_at_one.fixed_choices == "CP 1"


def test_searched_row_is_the_estimate_of_its_scenario(free_cp):
    """The winner's scenario carries its CP and reproduces the row's figures through `estimate`."""
    row = free_cp.winner
    one = estimate(scenario_for(row, LONG, CATS), CATS)
    assert one.wall_clock_h == pytest.approx(row["wall_clock_h"], rel=1e-9)
    assert one.peak_gib_per_device == pytest.approx(row["peak_gib_per_device"], rel=1e-9)


def test_short_sequence_search_keeps_cp_one():
    """At 2k tokens no CP degree is tried: every ranked plan has CP 1."""
    short = LONG.updated(seq_len=2_048, tokens_per_example=2_048)
    result = search(short, ONE_GPU_TYPE, SearchSpace(gpu_counts=(8, 16)), catalogs=CATS, top_n=5)
    assert result.top.height and set(result.top["cp"]) == {1}
