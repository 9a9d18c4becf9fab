"""Plan search: agreement with one-by-one estimates, constraints, objectives, frontier, words, grid, CLI."""

from __future__ import annotations

import argparse
import itertools
import json
import math

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.cli.cli_args import add_scenario_flags
from planner.cli.cli_common import add_format
from planner.cli.cli_recommend import add_command, run
from planner.decide.sweep import OBJECTIVES, Constraints, priced_gpus, scenario_for, search
from planner.decide.sweep_grid import SearchSpace, default_gpu_counts, layout_grid, tensor_parallel_degrees
from planner.decide.sweep_words import label
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

# Llama 3.1 8B full fine-tuning, global batch 1 × 4 × 8 = 32 sequences. The A100 40GB makes some layouts
# too large (16 B/param of model states = 128 GB before sharding), so the fit filter has work to do.
BASE = Scenario(model="Llama 3.1 8B", n_gpus=8, grad_accum=4, examples=20_000, seq_len=2048)
SMALL = SearchSpace(
    gpu_counts=(2, 4, 8),
    tp_degrees=(1,),
    pp_degrees=(1,),
    zero_stages=(2, 3),
    recompute=("none", "full"),
    micro_batches=(1, 2),
)
SMALL_GPUS = ("H100 SXM", "A100 40GB SXM")
FIGURES = ("wall_clock_h", "cost_usd", "energy_kwh", "co2e_kg", "peak_gib_per_device")


def _every_point() -> list[tuple[dict, object]]:
    """The small grid written out by hand, each point estimated alone through the ordinary path."""
    points = []
    for gpu in SMALL_GPUS:
        for n_gpus in (2, 4, 8):
            for zero in (2, 3):
                for recompute in ("none", "full"):
                    for micro in (1, 2):
                        # data-parallel degree = n_gpus (tp = pp = 1); accumulation rounds up to 32 sequences
                        row = {
                            "gpu": gpu,
                            "n_gpus": n_gpus,
                            "tp": 1,
                            "pp": 1,
                            "zero_stage": zero,
                            "recompute": recompute,
                            "micro_batch": micro,
                            "grad_accum": math.ceil(32 / (n_gpus * micro)),
                        }
                        points.append(
                            (row, estimate(scenario_for(row, BASE, default_catalogs()), default_catalogs()))
                        )
    return points


@pytest.fixture(scope="module")
def brute_force():
    return _every_point()


@pytest.fixture(scope="module")
def small_result():
    return search(BASE, Constraints(gpus=SMALL_GPUS), SMALL, top_n=1000, catalogs=default_catalogs())


def test_small_grid_counts(small_result, brute_force):
    assert len(brute_force) == 2 * 3 * 2 * 2 * 2 == small_result.n_evaluated
    fitting = [est for _, est in brute_force if est.fits_vram]
    assert 0 < len(fitting) < len(brute_force), "the grid must hold layouts that fit and layouts that do not"
    assert small_result.n_fit == len(fitting) == small_result.n_feasible
    assert small_result.target_batch_sequences == 32


def test_search_optimum_matches_one_by_one_estimates(small_result, brute_force):
    fitting = [(row, est) for row, est in brute_force if est.fits_vram]
    # a plan whose memory verdict is "tight" ranks after every plan that "fits" (Constraints.tight_last)
    best_row, best = min(
        fitting, key=lambda pair: (pair[1].fit_verdict != "fits", pair[1].cost_usd, pair[1].wall_clock_h)
    )
    winner = small_result.winner
    assert winner is not None
    for key in ("gpu", "n_gpus", "zero_stage", "recompute", "micro_batch", "grad_accum"):
        assert winner[key] == best_row[key], key
    for name in FIGURES:
        assert winner[name] == pytest.approx(getattr(best, name), rel=1e-9), name


def test_every_ranked_row_matches_its_estimate(small_result, brute_force):
    by_layout = {
        tuple(row[k] for k in ("gpu", "n_gpus", "zero_stage", "recompute", "micro_batch")): est
        for row, est in brute_force
    }
    for row in small_result.top.iter_rows(named=True):
        est = by_layout[(row["gpu"], row["n_gpus"], row["zero_stage"], row["recompute"], row["micro_batch"])]
        assert est.fits_vram and row["fit_verdict"] == est.fit_verdict
        for name in FIGURES:
            assert row[name] == pytest.approx(getattr(est, name), rel=1e-9), name
        assert row["global_batch_sequences"] >= 32


def test_scenario_for_reproduces_a_row():
    result = search(BASE, Constraints(gpus=("H200 SXM",), max_gpus=16), top_n=3, catalogs=default_catalogs())
    for row in result.top.iter_rows(named=True):
        est = estimate(scenario_for(row, BASE, default_catalogs()), default_catalogs())
        assert est.wall_clock_h == pytest.approx(row["wall_clock_h"], rel=1e-9)
        assert est.cost_usd == pytest.approx(row["cost_usd"], rel=1e-9)


def test_scenario_for_keeps_overrides_on_the_base_gpu_only():
    quoted = BASE.updated(gpu="h100", usd_per_gpu_hour=2.0, vram_gib=70.0)
    row = {
        "gpu": "H100 SXM",
        "n_gpus": 4,
        "tp": 1,
        "pp": 1,
        "zero_stage": 3,
        "recompute": "full",
        "micro_batch": 1,
        "grad_accum": 8,
    }
    same = scenario_for(row, quoted, default_catalogs())
    other = scenario_for({**row, "gpu": "H200 SXM"}, quoted, default_catalogs())
    assert (same.usd_per_gpu_hour, same.vram_gib) == (2.0, 70.0)
    assert (other.usd_per_gpu_hour, other.vram_gib, other.gpu) == (None, None, "H200 SXM")
    assert (same.n_gpus, same.dp, same.zero_stage, same.recompute, same.grad_accum) == (4, 4, 3, "full", 8)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_results_are_ordered_by_the_objective(objective):
    result = search(
        BASE, Constraints(gpus=SMALL_GPUS, objective=objective), SMALL, top_n=50, catalogs=default_catalogs()
    )
    column = {"cost": "cost_usd", "wall_clock": "wall_clock_h", "energy": "energy_kwh", "co2e": "co2e_kg"}
    values = result.top[column[objective]].to_list()
    tight = [verdict != "fits" for verdict in result.top["fit_verdict"].to_list()]
    ordered = sorted(zip(tight, values, strict=True))  # every "fits" plan first, each group by the objective
    assert list(zip(tight, values, strict=True)) == ordered and len(values) == result.n_feasible
    assert result.top["rank"].to_list() == list(range(1, len(values) + 1))


def test_fastest_and_cheapest_differ_on_a_wide_search():
    cheapest = search(
        BASE, Constraints(gpus=("H100 SXM",), max_gpus=64), top_n=1, catalogs=default_catalogs()
    ).winner
    fastest = search(
        BASE,
        Constraints(gpus=("H100 SXM",), max_gpus=64, objective="wall_clock"),
        top_n=1,
        catalogs=default_catalogs(),
    ).winner
    assert fastest["wall_clock_h"] < cheapest["wall_clock_h"]
    assert fastest["cost_usd"] > cheapest["cost_usd"]
    assert fastest["n_gpus"] > cheapest["n_gpus"]


def test_deadline_budget_gpu_limit_and_types_filter():
    free = search(BASE, Constraints(gpus=SMALL_GPUS), SMALL, top_n=1000, catalogs=default_catalogs())
    deadline = float(free.top["wall_clock_h"].median())
    budget = float(free.top["cost_usd"].median())
    timed = search(
        BASE,
        Constraints(gpus=SMALL_GPUS, deadline_h=deadline),
        SMALL,
        top_n=1000,
        catalogs=default_catalogs(),
    )
    assert 0 < timed.n_feasible < free.n_feasible
    assert timed.top["wall_clock_h"].max() <= deadline
    assert timed.n_feasible == (free.top["wall_clock_h"] <= deadline).sum()
    priced = search(
        BASE, Constraints(gpus=SMALL_GPUS, budget_usd=budget), SMALL, top_n=1000, catalogs=default_catalogs()
    )
    assert 0 < priced.n_feasible < free.n_feasible and priced.top["cost_usd"].max() <= budget
    few = search(
        BASE, Constraints(gpus=SMALL_GPUS, max_gpus=4), SMALL, top_n=1000, catalogs=default_catalogs()
    )
    assert few.top["n_gpus"].max() <= 4 and few.n_evaluated == 2 * 2 * 2 * 2 * 2
    one = search(BASE, Constraints(gpus=("a100 40gb",)), SMALL, top_n=1000, catalogs=default_catalogs())
    assert set(one.top["gpu"]) == {"A100 40GB SXM"} and one.gpus == ("A100 40GB SXM",)


def test_impossible_deadline_explains_itself():
    result = search(BASE, Constraints(gpus=SMALL_GPUS, deadline_h=0.001), SMALL, catalogs=default_catalogs())
    assert result.top.height == 0 and result.winner is None
    assert result.reason.startswith("No configuration meets the constraints")
    assert "deadline 0.001 h" in result.reason


def test_nothing_fits_says_so():
    huge = Scenario(model="Llama 3.1 405B", n_gpus=2)
    result = search(
        huge, Constraints(gpus=("L4",), max_gpus=2), SearchSpace(pp_degrees=(1,)), catalogs=default_catalogs()
    )
    assert result.n_fit == 0 and result.reason.startswith("Nothing fits in memory")


def test_reason_names_the_winner_and_compares_with_the_frontier(small_result):
    winner = small_result.winner
    assert small_result.reason.startswith(f"{label(winner)}: the cheapest configuration that fits in memory")
    fastest = small_result.frontier.row(0, named=True)
    assert label(fastest) in small_result.reason  # the fastest frontier point, which is not the winner
    versus = small_result.reason.split(label(fastest))[1]
    faster = fastest["wall_clock_h"] < winner["wall_clock_h"]
    assert (" faster " if faster else " slower ") in versus
    assert ("dearer" if fastest["cost_usd"] > winner["cost_usd"] else "cheaper") in versus


def test_pareto_frontier_is_not_dominated(small_result):
    frontier = small_result.frontier
    walls, costs = frontier["wall_clock_h"].to_list(), frontier["cost_usd"].to_list()
    assert walls == sorted(walls)
    assert all(later < earlier for earlier, later in itertools.pairwise(costs))
    for row in small_result.top.iter_rows(named=True):
        dominated_by = [
            w for w, c in zip(walls, costs, strict=True) if w <= row["wall_clock_h"] and c <= row["cost_usd"]
        ]
        assert dominated_by, "every feasible row is matched or beaten by a frontier point"
    assert frontier["cost_usd"].min() == small_result.top["cost_usd"].min()


def test_default_gpu_counts_are_powers_of_two_and_whole_nodes():
    assert default_gpu_counts(8, 64) == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
    assert default_gpu_counts(6, 20) == (1, 2, 4, 6, 8, 12, 16, 18)


def test_tensor_parallel_stays_in_a_node_and_divides_the_heads():
    assert tensor_parallel_degrees(8, 64) == (1, 2, 4, 8)
    assert tensor_parallel_degrees(8, 12) == (1, 2, 4)  # 12 heads: TP 8 would split a head
    assert tensor_parallel_degrees(6, None) == (1, 2, 3, 6)


def test_layout_grid_rounds_accumulation_up_and_drops_oversized_batches():
    # target 8 sequences: dp 3 × micro 1 → accumulation ceil(8/3) = 3 (9 sequences); dp 8 × micro 2 = 16 > 8
    space = SearchSpace(
        gpu_counts=(3, 8),
        tp_degrees=(1,),
        pp_degrees=(1,),
        zero_stages=(0,),
        recompute=("none",),
        micro_batches=(1, 2),
        target_batch_sequences=8,
    )
    grid = layout_grid(BASE.updated(gpus_per_node=1), space, 64, 32, 32)
    rows = sorted(
        zip(
            *(grid.columns[k].tolist() for k in ("n_gpus", "micro_batch_seqs", "n_micro_batches")),
            strict=True,
        )
    )
    assert rows == [(3.0, 1.0, 3.0), (3.0, 2.0, 2.0), (8.0, 1.0, 1.0)]


def test_zero_stages_are_not_repeated_without_replicas():
    space = SearchSpace(
        gpu_counts=(1,), tp_degrees=(1,), pp_degrees=(1,), recompute=("none",), micro_batches=(1,)
    )
    grid = layout_grid(BASE, space, 8, 32, 32)
    assert grid.columns["zero_stage"].tolist() == [0.0]


def test_priced_gpus_all_have_a_cost():
    names = priced_gpus(BASE, default_catalogs())
    assert "H100 SXM" in names and len(names) < default_catalogs().gpus.height
    result = search(
        BASE,
        Constraints(max_gpus=8),
        SearchSpace(pp_degrees=(1,), micro_batches=(1,)),
        top_n=500,
        catalogs=default_catalogs(),
    )
    assert result.top["cost_usd"].null_count() == 0 and result.top["cost_usd"].is_nan().sum() == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"objective": "speed"}, "objective"),
        ({"deadline_h": 0}, "deadline_h"),
        ({"budget_usd": -5}, "budget_usd"),
        ({"max_gpus": 0}, "max_gpus"),
        ({"gpus": ()}, "gpus"),
    ],
)
def test_bad_constraints_name_the_field(changes, message):
    with pytest.raises(ValueError, match=message):
        Constraints(**changes)


def _recommend(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers(dest="command"), add_scenario_flags, add_format)
    return parser.parse_args(["recommend", *argv])


def test_cli_recommend_prints_json_rows(capsys):
    args = _recommend(
        [
            "--model",
            "Llama 3.1 8B",
            "--gpus",
            "H100,H200",
            "--max-gpus",
            "16",
            "--top",
            "2",
            "--format",
            "json",
        ]
    )
    assert run(args) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and rows[0]["rank"] == 1 and {r["gpu"] for r in rows} <= {"H100 SXM", "H200 SXM"}
    assert rows[0]["cost_usd"] <= rows[1]["cost_usd"]


def test_cli_recommend_table_ends_with_the_reason(capsys):
    assert (
        run(_recommend(["--gpus", "H100", "--max-gpus", "8", "--objective", "wall_clock", "--top", "1"])) == 0
    )
    out = capsys.readouterr().out
    assert "the fastest configuration that fits in memory" in out and "configurations evaluated" in out


def test_chunking_does_not_change_the_answer(small_result):
    calls = []
    chunked = search(
        BASE,
        Constraints(gpus=SMALL_GPUS),
        SMALL,
        top_n=1000,
        chunk_rows=7,
        progress=lambda done, total: calls.append((done, total)),
        catalogs=default_catalogs(),
    )
    assert chunked.top.equals(small_result.top) and chunked.frontier.equals(small_result.frontier)
    # 24 layouts per GPU in chunks of 7, each chunk for both GPUs (they share its memory evaluation):
    # 7 + 7, 7 + 7, 7 + 7, then the last 3 + 3
    assert [done for done, _ in calls] == [7, 14, 21, 28, 35, 42, 45, 48]
    assert {total for _, total in calls} == {48}


def test_a_bare_parameter_count_cannot_be_shown_to_fit():
    bare = Scenario(model="", params_b=7.0)
    result = search(
        bare,
        Constraints(gpus=("H100",), max_gpus=8),
        SearchSpace(pp_degrees=(1,)),
        catalogs=default_catalogs(),
    )
    assert result.n_evaluated > 0 and result.n_fit == 0
    assert result.notes and "no shape" in result.notes[0]


def test_an_oversized_search_is_refused_before_it_allocates():
    # a 100,000 x 8 x 8 = 6.4 M-sequence batch over up to a million GPUs: every whole node is usable
    wide = BASE.updated(grad_accum=100_000)
    with pytest.raises(ValueError, match="max_gpus: the search would hold over"):
        search(wide, Constraints(gpus=("H100",), max_gpus=1_000_000), catalogs=default_catalogs())


def test_tight_plans_rank_after_those_that_fit_unless_asked(small_result, brute_force):
    verdicts = small_result.top["fit_verdict"].to_list()
    assert "fits" in verdicts and "tight — may run out of memory" in verdicts, "the grid must hold both"
    assert verdicts == sorted(verdicts, key=lambda v: v != "fits")  # every "fits" before any "tight"
    plain = search(
        BASE, Constraints(gpus=SMALL_GPUS, tight_last=False), SMALL, top_n=1000, catalogs=default_catalogs()
    )
    fitting = [est for _, est in brute_force if est.fits_vram]
    cheapest = min(fitting, key=lambda est: (est.cost_usd, est.wall_clock_h))
    assert plain.winner is not None and plain.winner["cost_usd"] == pytest.approx(cheapest.cost_usd, rel=1e-9)
    assert plain.winner["fit_verdict"] == cheapest.fit_verdict == "tight — may run out of memory"
