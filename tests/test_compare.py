"""The GPU comparison: each row is exactly the single estimate for that GPU; fewest-GPUs; Pareto frontier."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from planner.catalogue.catalog import DATA_DIR, default_catalogs, load_catalogs
from planner.decide.compare import (
    NO_PRICE,
    NO_RATE,
    SORT_METRICS,
    YOUR_FIGURES,
    candidate_gpu_counts,
    compare_gpus,
    filter_rows,
    sort_rows,
)
from planner.decide.frontier import pareto_frontier
from planner.errors import PlannerError
from planner.estimate import estimate
from planner.formulas.memory.verdict import VERDICT_NAMES
from planner.inputs.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]

# compare column -> Estimate field, for every figure the two share.
SAME_FIGURES = {
    "memory_gib": "vram_gib",
    "peak_tflops": "peak_tflops",
    "peak_gib_per_device": "peak_gib_per_device",
    "wall_clock_h": "wall_clock_h",
    "wall_clock_h_low": "wall_clock_h_low",
    "wall_clock_h_high": "wall_clock_h_high",
    "device_hours": "device_hours",
    "usd_per_gpu_hour": "usd_per_gpu_hour",
    "cost_usd": "cost_usd",
    "cost_usd_low": "cost_usd_low",
    "cost_usd_high": "cost_usd_high",
    "usd_per_million_tokens": "usd_per_million_tokens",
    "energy_kwh": "energy_kwh",
    "co2e_kg": "co2e_kg",
    "tokens_per_s": "tokens_per_s",
    "mfu": "mfu",
    "fits_vram": "fits_vram",
    "price_basis": "price_basis",
    "price_snapshot": "price_snapshot",
}

SCENARIOS = {
    "default": Scenario(),
    # 70B LoRA over two nodes with tensor parallelism: other counts, adapters, TP communication.
    "70b_lora_tp2": Scenario(
        model="Llama 3.1 70B", method="lora", n_gpus=16, tp=2, grad_accum=4, micro_batch=2
    ),
    # fp32: six catalogue chips list no FP32/TF32 rate (A10G, Gaudi 2, TPUs): "no rate: cannot run fp32".
    "fp32_zero1": Scenario(precision="fp32", zero_stage=1, n_gpus=4, examples=5000),
    # A bare parameter count: memory judged from model state + overhead (no shape).
    "bare_count": Scenario(model="", params_b=3.0, n_gpus=2, zero_stage=2),
}
GPUS = ["H100 SXM", "A100 80GB SXM", "MI300X", "L4", "TPU v5p", "Gaudi 3"]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def assert_row_matches(row: dict[str, Any], est: Any) -> None:
    for column, field in SAME_FIGURES.items():
        expected, got = getattr(est, field), row[column]
        if _missing(expected) or _missing(got):
            assert _missing(expected) and _missing(got), (column, got, expected)
        elif isinstance(expected, float):
            assert got == pytest.approx(expected, rel=1e-9), column
        else:
            assert got == expected, column


def one(frame: pl.DataFrame, gpu: str) -> dict[str, Any]:
    return frame.filter(pl.col("gpu") == gpu).row(0, named=True)


@pytest.mark.parametrize("scenario_name", list(SCENARIOS))
@pytest.mark.parametrize("gpu", GPUS)
def test_row_equals_the_single_estimate(scenario_name: str, gpu: str) -> None:
    s = SCENARIOS[scenario_name]
    frame = compare_gpus(s, default_catalogs())
    row = one(frame, gpu)
    if "cannot run" in row["status"]:  # fp32 on a TPU: the estimate refuses the same pair
        with pytest.raises(PlannerError, match=f"{s.precision} cannot run on {gpu}"):
            estimate(s.updated(gpu=gpu), default_catalogs())
        assert row["wall_clock_h"] is None and row["peak_tflops"] is None
        return
    assert_row_matches(row, estimate(s.updated(gpu=gpu), default_catalogs()))


def test_every_catalogue_gpu_has_a_row_and_status_says_what_is_missing() -> None:
    frame = compare_gpus(SCENARIOS["fp32_zero1"], default_catalogs())
    assert frame.height == default_catalogs().gpus.height
    assert sorted(frame["gpu"].to_list()) == sorted(default_catalogs().gpus["name"].to_list())
    no_rate = frame.filter(pl.col("status").str.contains(f"{NO_RATE}: cannot run fp32"))["gpu"].to_list()
    assert sorted(no_rate) == ["A10G", "Gaudi 2", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e"]
    assert frame.filter(pl.col("gpu").is_in(no_rate))["wall_clock_h"].null_count() == len(no_rate)
    # A chip with a rate but no catalogue price (MI250X): time and energy yes, cost no.
    mi250 = one(frame, "MI250X")
    assert NO_PRICE in mi250["status"] and mi250["cost_usd"] is None and mi250["energy_kwh"] > 0


def test_overrides_apply_only_to_the_scenario_gpu() -> None:
    s = Scenario(gpu="h100", usd_per_gpu_hour=1.0, peak_tflops=500.0, vram_gib=40.0)
    frame = compare_gpus(s, default_catalogs())
    h100 = one(frame, "H100 SXM")  # the alias "h100" names the H100 SXM
    assert h100["is_scenario_gpu"] and YOUR_FIGURES in h100["status"]
    assert (h100["usd_per_gpu_hour"], h100["peak_tflops"], h100["memory_gib"]) == (1.0, 500.0, 40.0)
    assert_row_matches(h100, estimate(s, default_catalogs()))
    catalogue_only = s.updated(usd_per_gpu_hour=None, peak_tflops=None, vram_gib=None)
    for gpu in ("A100 80GB SXM", "H200 SXM", "B200"):
        row = one(frame, gpu)
        assert not row["is_scenario_gpu"] and row["usd_per_gpu_hour"] != 1.0
        assert_row_matches(row, estimate(catalogue_only.updated(gpu=gpu), default_catalogs()))


def test_mfu_override_applies_to_every_gpu() -> None:
    frame = compare_gpus(Scenario(mfu=0.3), default_catalogs())
    # With an end-to-end MFU and one node (no inter-node traffic), every GPU that runs bf16 runs at exactly
    # 0.3; V100 and T4 have no BF16, so they have no MFU at all.
    runs = frame.filter(~pl.col("status").str.contains("cannot run"))
    assert sorted(set(frame["gpu"]) - set(runs["gpu"])) == ["T4", "V100 32GB"]
    assert runs["mfu"].to_list() == pytest.approx([0.3] * runs.height)


def _fixed_batch(s: Scenario, n_gpus: int, gpu: str) -> Scenario:
    """The scenario at another GPU count with the global batch kept (as the comparison does)."""
    model_parallel = s.tp * s.pp * s.cp
    accum = max(1, round(s.grad_accum * s.dp / (n_gpus / model_parallel)))
    return s.updated(gpu=gpu, n_gpus=n_gpus, grad_accum=accum)


@pytest.mark.parametrize("scenario_name", ["default", "70b_lora_tp2"])
def test_fewest_gpus_fit_and_one_step_fewer_does_not(scenario_name: str) -> None:
    s = SCENARIOS[scenario_name].updated(grad_accum=8)
    frame = compare_gpus(s, default_catalogs())
    counts = candidate_gpu_counts(s).astype(int).tolist()
    checked = 0
    for row in frame.iter_rows(named=True):
        fewest = row["min_gpus_to_fit"]
        if "cannot run" in row["status"]:  # V100, T4 lack BF16: no plan runs there, so nothing fits
            assert fewest is None and row["fits_vram"] is None and row["peak_gib_per_device"] is None
            continue
        if fewest is None:
            assert estimate(_fixed_batch(s, counts[-1], row["gpu"]), default_catalogs()).fits_vram is False
            continue
        assert estimate(_fixed_batch(s, fewest, row["gpu"]), default_catalogs()).fits_vram is True
        position = counts.index(fewest)
        if position > 0:
            assert (
                estimate(_fixed_batch(s, counts[position - 1], row["gpu"]), default_catalogs()).fits_vram
                is False
            )
            checked += 1
    assert checked >= 3, "the scenario should make several GPU types need more than the smallest count"


def test_fewest_is_none_when_even_the_largest_count_does_not_fit() -> None:
    # 405B with ZeRO-0 replicates ~6.5 TB of model state on every GPU: no count helps.
    frame = compare_gpus(Scenario(model="Llama 3.1 405B", zero_stage=0), default_catalogs())
    assert frame["min_gpus_to_fit"].null_count() == frame.height
    assert not any(frame["fits_vram"].to_list())


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        # tp·pp·cp = 1, 8 per node: powers of two 1, 2, 4 then every node up to 32 nodes (256), then 1/8 steps.
        (Scenario(), [1, 2, 4, 8, 16, 24, 32]),
        # tp=2, pp=3: 6 GPUs per replica, node = lcm(6, 8) = 24 GPUs.
        (Scenario(tp=2, pp=3, n_gpus=12), [6, 12, 24, 48, 72, 96]),
    ],
)
def test_candidate_counts_keep_the_layout(s: Scenario, expected: list[int]) -> None:
    counts = candidate_gpu_counts(s).astype(int)
    assert counts[: len(expected)].tolist() == expected
    assert all(c % (s.tp * s.pp * s.cp) == 0 for c in counts) and s.n_gpus in counts
    assert counts.max() <= 4096 and len(counts) < 120
    gaps = np.diff(counts) / counts[:-1]
    assert gaps[counts[:-1] >= 256 * 2].max() <= 0.125 + 1e-9  # past 32 nodes: at most 12.5 % apart


def test_gpu_columns_follow_the_scenario() -> None:
    on_demand = compare_gpus(Scenario(), default_catalogs())
    spot = compare_gpus(Scenario(pricing="spot"), default_catalogs())
    assert one(spot, "H100 SXM")["usd_per_gpu_hour"] < one(on_demand, "H100 SXM")["usd_per_gpu_hour"]
    assert compare_gpus(Scenario(), default_catalogs()).equals(on_demand)


def test_team_gpu_appears_with_its_origin(tmp_path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    records = list(csv.reader(io.StringIO((DATA_DIR / "gpus.csv").read_text(encoding="utf-8"))))
    new = {
        **dict(zip(records[0], records[1], strict=True)),
        "name": "TeamChip 1",
        "aliases": "teamchip",
        "memory_gib": "96",
        "source": "our lab",
    }
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, records[0], lineterminator="\n")
    writer.writeheader()
    writer.writerow(new)
    (team / "gpus.csv").write_text(buffer.getvalue(), encoding="utf-8")
    cats = load_catalogs(overlay_dir=team)
    frame = compare_gpus(Scenario(), cats)
    row = one(frame, "TeamChip 1")
    assert (row["origin"], row["memory_gib"], row["cost_usd"]) == ("team", 96.0, None)
    assert one(frame, "H100 SXM")["origin"] == "bundled"
    assert_row_matches(row, estimate(Scenario(gpu="TeamChip 1"), cats))


def test_filters_and_sorting() -> None:
    frame = compare_gpus(Scenario(), default_catalogs())
    amd = filter_rows(frame, vendors=["AMD"])
    assert set(amd["vendor"]) == {"AMD"} and amd.height >= 3
    big = filter_rows(frame, min_memory_gib=100.0)
    assert big.height < frame.height and big["memory_gib"].min() >= 100.0
    priced = filter_rows(frame, priced_only=True)
    assert priced["cost_usd"].null_count() == 0 and priced.height < frame.height
    assert filter_rows(frame, fitting_only=True)["fits_vram"].all()
    fitting = filter_rows(frame, fitting_only=True)
    cheapest = sort_rows(fitting, "Cost")
    costs = cheapest["cost_usd"].drop_nulls().to_list()
    assert costs == sorted(costs) and cheapest["cost_usd"][-1] is None  # unpriced rows go last
    biggest = sort_rows(fitting, "Memory per GPU")["memory_gib"].to_list()
    assert biggest == sorted(biggest, reverse=True)
    assert all(column in frame.columns for column, _ in SORT_METRICS.values())


# 70B full fine-tune on 8 GPUs: the small cards do not fit, the big ones do.
MIXED_FIT = Scenario(model="Llama 3.1 70B", n_gpus=8, zero_stage=3)


def _in_metric_order(values: list[Any], descending: bool) -> bool:
    present = [v for v in values if v is not None]
    return present == sorted(present, reverse=descending) and values[len(present) :] == [None] * (
        len(values) - len(present)
    )


@pytest.mark.parametrize("metric", list(SORT_METRICS))
def test_gpus_that_fit_come_first_under_every_sort(metric: str) -> None:
    frame = compare_gpus(MIXED_FIT, default_catalogs())
    fits = frame["fits_vram"].fill_null(False)
    assert 0 < fits.sum() < frame.height, "the scenario should mix GPUs that fit and GPUs that do not"
    ordered = sort_rows(frame, metric)
    flags = ordered["fits_vram"].fill_null(False).to_list()
    n_fit = int(fits.sum())
    assert flags == [True] * n_fit + [False] * (frame.height - n_fit)
    column, descending = SORT_METRICS[metric]
    fitting = ordered[:n_fit]
    margin = (fitting["fit_verdict"] == "fits").to_list()
    assert margin == sorted(margin, reverse=True), "those with the band's margin before the tight ones"
    for verdict in VERDICT_NAMES.values():
        group = fitting.filter(pl.col("fit_verdict") == verdict)[column].to_list()
        assert _in_metric_order(group, descending), f"fitting GPUs ({verdict}) in metric order"
    assert _in_metric_order(ordered[column][n_fit:].to_list(), descending), "the others in metric order too"


def test_sort_toy_case_puts_a_cheap_gpu_that_does_not_fit_after_the_dear_ones_that_do() -> None:
    frame = pl.DataFrame(
        {
            "gpu": ["cheap-small", "dear-big", "mid-big", "unknown", "unpriced-big"],
            "fits_vram": [False, True, True, None, True],
            "cost_usd": [1.0, 9.0, 5.0, 0.5, None],
        }
    )
    assert sort_rows(frame, "Cost")["gpu"].to_list() == [
        "mid-big",
        "dear-big",
        "unpriced-big",
        "unknown",
        "cheap-small",
    ]


def test_pareto_toy_case() -> None:
    # Lower is better on both. B(2,3) beats C(3,3) and E(2,6); A(1,5) beats E; D(4,1) is the cheapest;
    # G duplicates A exactly, so neither is strictly better and both stay; F has no x and never counts.
    frame = pl.DataFrame(
        {
            "gpu": ["A", "B", "C", "D", "E", "F", "G"],
            "wall_clock_h": [1.0, 2.0, 3.0, 4.0, 2.0, None, 1.0],
            "cost_usd": [5.0, 3.0, 3.0, 1.0, 6.0, 0.5, 5.0],
            "fits_vram": [True, False, True, True, True, True, True],
        }
    )
    marked = pareto_frontier(frame, "wall_clock_h", "cost_usd")
    assert dict(zip(marked["gpu"], marked["on_frontier"], strict=True)) == {
        "A": True,
        "B": True,
        "C": False,
        "D": True,
        "E": False,
        "F": False,
        "G": True,
    }
    # Among GPUs that fit only, B drops out: nothing beats C(3,3) any more (A is faster but dearer, D cheaper
    # but slower), so C joins the frontier.
    among = pareto_frontier(frame, "wall_clock_h", "cost_usd", among="fits_vram", name="front")
    assert among.filter(pl.col("front"))["gpu"].to_list() == ["A", "C", "D", "G"]


def test_pareto_on_the_comparison_never_marks_a_dominated_gpu() -> None:
    frame = pareto_frontier(compare_gpus(Scenario(), default_catalogs()), among="fits_vram")
    front = frame.filter(pl.col("on_frontier"))
    assert front.height >= 1
    for row in front.iter_rows(named=True):
        others = frame.filter(pl.col("fits_vram") & (pl.col("gpu") != row["gpu"]))
        beaten = others.filter(
            (pl.col("wall_clock_h") <= row["wall_clock_h"])
            & (pl.col("cost_usd") <= row["cost_usd"])
            & ((pl.col("wall_clock_h") < row["wall_clock_h"]) | (pl.col("cost_usd") < row["cost_usd"]))
        )
        assert beaten.is_empty(), row["gpu"]


# --- command line (`python -m planner compare`) -----------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "compare", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


def test_cli_json_is_the_comparison_with_quotes_for_the_scenario_gpu_only(tmp_path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps({"gpu": "A100 80GB SXM", "usd_per_gpu_hour": 1.0, "epochs": 2}), encoding="utf-8"
    )
    done = run_cli(str(plan), "--format", "json", "--sort", "wall_clock_h")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list) and len(rows) == default_catalogs().gpus.height
    expected = compare_gpus(Scenario(gpu="A100 80GB SXM", usd_per_gpu_hour=1.0, epochs=2), default_catalogs())
    by_gpu = {row["gpu"]: row for row in rows}
    for gpu in ("A100 80GB SXM", "H100 SXM", "MI300X"):
        assert by_gpu[gpu]["cost_usd"] == pytest.approx(one(expected, gpu)["cost_usd"], rel=1e-12)
        assert by_gpu[gpu]["min_gpus_to_fit"] == one(expected, gpu)["min_gpus_to_fit"]
    assert (
        by_gpu["A100 80GB SXM"]["usd_per_gpu_hour"] == 1.0 and by_gpu["H100 SXM"]["usd_per_gpu_hour"] != 1.0
    )
    # GPUs that fit first (those with the memory band's margin before the tight ones), each group by wall clock
    for group in ((True, "fits"), (True, "tight — may run out of memory"), (False, None)):
        times = [
            r["wall_clock_h"]
            for r in rows
            if r["wall_clock_h"] is not None
            and bool(r["fits_vram"]) == group[0]
            and (group[1] is None or r["fit_verdict"] == group[1])
        ]
        assert times == sorted(times)
    flags = [bool(row["fits_vram"]) for row in rows]
    assert flags == sorted(flags, reverse=True)
    assert {"on_frontier", "co2e_kg", "price_snapshot", "origin"} <= set(rows[0])


def test_cli_csv_and_table_apply_the_filters() -> None:
    done = run_cli("--format", "csv", "--vendor", "amd", "--min-memory-gib", "100")
    assert done.returncode == 0, done.stderr
    records = list(csv.DictReader(io.StringIO(done.stdout)))
    assert records and {r["vendor"] for r in records} == {"AMD"}
    assert all(float(r["memory_gib"]) >= 100 for r in records)
    numbers = [r[k] for r in records for k in ("cost_usd", "wall_clock_h", "energy_kwh") if r[k]]
    assert numbers and all(len(n.lstrip("-").replace(".", "").lstrip("0")) <= 4 for n in numbers), numbers
    table = run_cli("--priced-only", "--epochs", "1")
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split()[:3] == ["gpu", "vendor", "fits_vram"] and "cost_usd" in header
    assert (
        len(lines)
        == filter_rows(compare_gpus(Scenario(epochs=1), default_catalogs()), priced_only=True).height
    )


def test_cli_bad_input_is_one_line_and_status_2() -> None:
    done = run_cli("--vendor", "Acme")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "unknown vendor 'Acme'" in done.stderr
