"""Post-training everywhere: the GPU comparison, the plan sheet and the plan search (which
splits the GPUs between training and dedicated generation for PPO/GRPO) report the same figures as the single
estimate, through the one `evaluate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.compare import POST_TRAINING_FIGURES, compare_gpus
from planner.decide.sheet import SHEET_POST_RESULT_COLUMNS, evaluate_rows, sheet_result_columns
from planner.decide.sweep import Constraints, scenario_for, search
from planner.decide.sweep_generation import generation_counts, split_pairs
from planner.decide.sweep_grid import SearchSpace
from planner.decide.sweep_space import obeying_space
from planner.estimate import estimate
from planner.inputs.scenario import Scenario
from planner.results import Estimate

ROOT = Path(__file__).resolve().parents[1]
CATS = default_catalogs()
EIGHT_B = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8)
GRPO = EIGHT_B.updated(post_training="grpo")
DPO = EIGHT_B.updated(post_training="dpo")
REL = 1e-9  # the same formulas on the same numbers: only float summation order may differ


def planner_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m planner ...` as a user runs it: a real process, its exit status and both streams."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "planner", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=180,
    )


def same_estimate(got: Estimate, want: Estimate) -> None:
    """Every figure of two estimates equal (floats to REL), naming the first that differs."""
    for key, value in want.model_dump().items():
        other = getattr(got, key)
        if isinstance(value, float) and not np.isnan(value):
            assert other == pytest.approx(value, rel=REL, abs=1e-12), key
        elif isinstance(value, float):
            assert other is not None and np.isnan(other), key
        else:
            assert other == value, key


# --- the plan search splits the GPUs (item 5) ---


def test_generation_counts_are_the_shares_of_each_budget():
    # 8 GPUs a node. Within one node the share in whole GPUs: 8 x 1/8 = 1, 8 x 1/4 = 2, 8 x 1/2 = 4; 4 GPUs:
    # 0.5 -> 1 (at least one), 1, 2. Past one node, whole nodes (at least one): 16 x 1/8 = 2 -> 8, 16 x 1/4 =
    # 4 -> 8 (round(0.5) = 0, at least one node), 16 x 1/2 = 8; 64: 8, 16, 32. One GPU cannot split (0).
    got = generation_counts(np.array([1.0, 4.0, 8.0, 16.0, 64.0]), 8)
    assert got.tolist() == [[0, 0, 0], [1, 1, 2], [1, 2, 4], [8, 8, 8], [8, 16, 32]]


def test_split_pairs_fixed_training_count_takes_every_budget_that_leaves_it():
    # 7 training GPUs: the 8-GPU budget with 1 generating; 64: 72 - 8 (1/8 of 72 = 9 -> 1.1 nodes -> one),
    # 80 - 16 (1/4 of 80 = 20 -> 2.5 nodes -> 2), 88 - 24 (1/4 of 88 = 22 -> 2.75 nodes -> 3), 128 - 64 (a
    # half); and colocated (0) for both. (1/8 of 80 = 10 -> one node leaves 72, not 64: not a pair.)
    for training, generating in ((7, [0, 1]), (64, [0, 8, 16, 24, 64])):
        space = obeying_space(GRPO, {"n_gpus": training})
        pairs = split_pairs(GRPO, space, 1024)
        assert set(pairs[:, 0]) == {training}
        assert pairs[:, 1].tolist() == generating


def _rows_equal_their_estimates(result) -> None:
    assert {"generation_gpus", "generation_frac"} <= set(result.top.columns)
    for row in result.top.iter_rows(named=True):
        plan = scenario_for(row, GRPO, CATS)
        assert plan.generation_gpus == row["generation_gpus"]
        one = estimate(plan, CATS)
        for key in ("wall_clock_h", "cost_usd", "energy_kwh", "peak_gib_per_device", "generation_frac"):
            assert row[key] == pytest.approx(getattr(one, key), rel=REL), key
        assert one.fits_vram is True
        assert 0 < row["generation_frac"] < 1
        # money counts every GPU, training and generating: cost = (n + g) x hours x price
        gpus = row["n_gpus"] + row["generation_gpus"]
        assert row["cost_usd"] == pytest.approx(
            gpus * row["wall_clock_h"] * row["usd_per_gpu_hour"], rel=1e-6
        )
        assert row["device_hours"] == pytest.approx(gpus * row["wall_clock_h"], rel=1e-9)


def test_best_grpo_plan_equals_the_estimate_of_that_plan():
    gpus = ("H100 SXM", "A100 80GB SXM")
    result = search(GRPO, Constraints(gpus=gpus), catalogs=CATS, top_n=10)
    assert result.top.height == 10
    _rows_equal_their_estimates(result)
    # with the trainers' 1,024-prompt rollout batch every colocated GPU decodes and the KV cache runs full, so
    # the synchronous step gains nothing from GPUs that only generate: the colocated plans win
    assert result.winner is not None and result.winner["generation_gpus"] == 0
    # the split plans the search also explored equal their single estimates too
    space = obeying_space(GRPO.updated(generation_gpus=2), {"generation_gpus": 2})
    split = search(GRPO, Constraints(gpus=gpus), space, catalogs=CATS, top_n=5)
    assert split.top.height and set(split.top["generation_gpus"]) == {2}
    _rows_equal_their_estimates(split)

    # tight plans (the band's high end over the card) rank after every plan that fits with margin
    verdicts = result.top["fit_verdict"].to_list()
    assert verdicts == sorted(verdicts, key=lambda verdict: verdict != "fits")
    assert (
        n_colocated(search(GRPO, Constraints(gpus=("A100 80GB SXM",), tight_last=False), catalogs=CATS)) > 0
    )


def n_colocated(result) -> int:
    return sum(gpus == 0 for gpus in result.top["generation_gpus"].to_list())


def test_grpo_search_keeps_every_total_within_max_gpus():
    result = search(GRPO, Constraints(gpus=("H100 SXM",), max_gpus=16), catalogs=CATS, top_n=50)
    totals = [r["n_gpus"] + r["generation_gpus"] for r in result.top.iter_rows(named=True)]
    assert totals and max(totals) <= 16


def test_fixed_generation_gpus_is_obeyed_and_any_frees_it():
    argv = ("--model", "Llama 3.1 8B", "--post-training", "grpo", "--gpus", "H100 SXM", "--format", "json")
    fixed = planner_cli("recommend", *argv, "--generation-gpus", "2", "--top", "20")
    assert fixed.returncode == 0, fixed.stderr
    rows = json.loads(fixed.stdout)
    assert rows and {r["generation_gpus"] for r in rows} == {2}
    assert "keeps generation GPUs 2" in fixed.stderr
    colocated = planner_cli("recommend", *argv, "--generation-gpus", "0", "--top", "20")
    assert {r["generation_gpus"] for r in json.loads(colocated.stdout)} == {0}
    freed = planner_cli("recommend", *argv, "--generation-gpus", "any", "--top", "3")
    assert freed.returncode == 0, freed.stderr
    assert "generation GPUs" not in freed.stderr.split(":")[0]  # nothing said to be kept


def test_sft_and_dpo_searches_have_no_generation_dimension():
    # an objective that generates nothing: the grid and the result columns stay as they were
    for base in (EIGHT_B, DPO):
        space = SearchSpace()
        result = search(base, Constraints(gpus=("H100 SXM",)), space, catalogs=CATS, top_n=3)
        assert "generation_gpus" not in result.top.columns
        grpo = search(
            base.updated(post_training="grpo"), Constraints(gpus=("H100 SXM",)), space, catalogs=CATS
        )
        assert grpo.n_evaluated > result.n_evaluated  # the split multiplies GRPO's rows only


# --- the GPU comparison (item 5) ---


def test_comparison_row_for_h100_equals_the_single_estimate_for_dpo():
    frame = compare_gpus(DPO, CATS)
    row = frame.filter(frame["gpu"] == "H100 SXM").row(0, named=True)
    one = estimate(DPO, CATS)
    assert one.reference_model_gib > 0  # a DPO plan holds a frozen copy of the policy
    for key in (*POST_TRAINING_FIGURES, "wall_clock_h", "cost_usd", "peak_gib_per_device", "energy_kwh"):
        assert row[key] == pytest.approx(getattr(one, key), rel=REL), key
    assert row["peak_phase"] == one.peak_phase


def test_grpo_comparison_evaluates_generation_on_each_gpu():
    # each GPU's own memory (the engine's share of it) and bandwidth: every row equals the estimate on it
    frame = compare_gpus(GRPO, CATS)
    checked = 0
    for name in ("H100 SXM", "H200 SXM", "A100 80GB SXM", "L40S"):
        row = frame.filter(frame["gpu"] == name).row(0, named=True)
        one = estimate(GRPO.updated(gpu=name), CATS)
        for key in (*POST_TRAINING_FIGURES, "wall_clock_h", "peak_gib_per_device"):
            assert row[key] == pytest.approx(getattr(one, key), rel=REL), (name, key)
        assert row["peak_phase"] == one.peak_phase
        checked += 1
    assert checked == 4
    h100, h200 = (frame.filter(frame["gpu"] == n).row(0, named=True) for n in ("H100 SXM", "H200 SXM"))
    # decode is memory-bound: H200's 4.8 TB/s against H100's 3.35 TB/s makes its generation faster
    assert h200["generation_time_h"] < h100["generation_time_h"]


def test_sft_comparison_keeps_its_columns():
    frame = compare_gpus(EIGHT_B, CATS)
    assert not set(POST_TRAINING_FIGURES) & set(frame.columns)
    table = planner_cli("compare", "--model", "Llama 3.1 8B", "--devices", "8", "--vendor", "nvidia")
    assert table.returncode == 0, table.stderr
    assert "kv_cache_gib" not in table.stdout.splitlines()[0]
    grpo = planner_cli("compare", "--model", "Llama 3.1 8B", "--devices", "8", "--post-training", "grpo")
    header = grpo.stdout.splitlines()[0].split()
    assert {
        "reference_model_gib",
        "kv_cache_gib",
        "generation_time_h",
        "generation_frac",
        "peak_phase",
    } <= set(header)


# --- the plan sheet (item 5) ---


def test_sheet_rows_with_different_objectives_each_get_their_single_estimate():
    plans = [EIGHT_B, GRPO, DPO, EIGHT_B.updated(post_training="ppo", method="lora")]
    rows = evaluate_rows(plans, CATS)
    for plan, got in zip(plans, rows, strict=True):
        assert isinstance(got, Estimate)
        same_estimate(got, estimate(plan, CATS))
    assert rows[0].training_phase_gib == 0.0 and rows[0].generation_time_h == 0.0  # SFT stays SFT
    assert rows[1].kv_cache_gib > 0 and rows[1].generation_time_h > 0


def test_sheet_shows_post_training_columns_only_when_a_row_is_post_training():
    assert sheet_result_columns([EIGHT_B, EIGHT_B]) == sheet_result_columns([EIGHT_B])
    assert not set(SHEET_POST_RESULT_COLUMNS) & set(sheet_result_columns([EIGHT_B]))
    assert set(SHEET_POST_RESULT_COLUMNS) <= set(sheet_result_columns([EIGHT_B, GRPO]))
