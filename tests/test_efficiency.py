"""Efficiency presets (planner/catalogue/efficiency.py) and how they are derived from published cases through
the user's path (planner/cases/case_row.py -> resolve -> evaluate, planner/cases/case_predict.py)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from planner.cases.case_file import load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_predict import case_efficiency, evaluated, interpreted_unit, predict_case, read_out
from planner.cases.case_row import case_scenario
from planner.cases.case_scoring import feeds_presets
from planner.cases.validate import validate_cases
from planner.catalogue import efficiency
from planner.catalogue.catalog import default_catalogs

CATS = default_catalogs()  # black-box validation: the shipped catalogues and presets

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "data" / "calibration.csv"  # copy of shared/reference/calibration.csv
needs_cases = pytest.mark.skipif(not CASES.exists(), reason=f"case file {CASES} not present")


@pytest.mark.parametrize(
    ("n_params", "bucket"),
    [(1e9, "<3B"), (3e9, "3-20B"), (19.9e9, "3-20B"), (20e9, "20-100B"), (4e11, ">100B")],
)
def test_size_buckets(n_params, bucket):
    assert efficiency.SIZE_BUCKETS[int(efficiency.size_bucket_index(n_params))] == bucket


def test_precision_class():
    assert efficiency.precision_class("fp8_mixed") == "fp8"
    assert [efficiency.precision_class(p) for p in ("bf16_mixed", "fp16_mixed", "fp32")] == ["bf16"] * 3


def test_shipped_table_is_complete_and_ordered():
    table = efficiency.load_efficiency_table()
    expected = (
        len(efficiency.GENERATIONS)
        * len(efficiency.SIZE_BUCKETS)
        * len(efficiency.METHODS)
        * len(efficiency.PRECISIONS)
    )
    assert table.height == expected
    assert (table["mfu_low"] <= table["mfu_typical"]).all()
    assert (table["mfu_typical"] <= table["mfu_high"]).all()
    assert table["mfu_high"].max() <= efficiency.MAX_EFFICIENCY
    measured = table.filter(pl.col("rule") == "measured")
    assert (measured["n_rows"] > 0).all() and (
        table.filter(pl.col("rule") != "measured")["n_rows"] == 0
    ).all()


def test_preset_lookup_scalar_and_vector():
    table = efficiency.load_efficiency_table()
    low, typical, high = efficiency.efficiency_preset(table, "hopper", 8e9, "full")
    assert 0 < low <= typical <= high < 1
    sizes = np.array([1e9, 8e9, 70e9, 405e9])
    _, typicals, _ = efficiency.efficiency_preset(table, "Hopper", sizes, "full", "bf16")
    assert typicals.shape == (4,) and typicals[1] == typical
    # An unknown generation uses the "default" rows, which are the hopper figures unscaled.
    assert efficiency.efficiency_preset(table, "warp-drive", 8e9, "lora") == efficiency.efficiency_preset(
        table, "default", 8e9, "lora"
    )


def _record(case_id, generation, n_params, value, method="full", precision="bf16"):
    return {
        "case_id": case_id, "generation": generation, "n_params": n_params, "method": method,
        "precision": precision, "efficiency": value,
    }  # fmt: skip


def test_build_table_measured_cells_and_fill_rules():
    records = [
        _record("a", "hopper", 7e9, 0.40),
        _record("b", "hopper", 8e9, 0.50),
        _record("c", "hopper", 13e9, 0.60),
        _record("d", "hopper", 70e9, 0.55),
        _record("e", "hopper", 8e9, 0.45, method="lora"),
    ]
    table = efficiency.build_efficiency_table(records, source="test", as_of="2026-01-01")

    def cell(gen, bucket, method="full", precision="bf16"):
        rows = table.filter(
            (pl.col("generation") == gen) & (pl.col("size_bucket") == bucket)
            & (pl.col("method") == method) & (pl.col("precision") == precision)
        )  # fmt: skip
        return rows.row(0, named=True)

    measured = cell("hopper", "3-20B")
    # Median of 0.40, 0.50, 0.60; band = the measured range, at least ±20 % around the median.
    assert (measured["mfu_low"], measured["mfu_typical"], measured["mfu_high"]) == (0.4, 0.5, 0.6)
    assert measured["n_rows"] == 3 and measured["source_case_ids"] == "a;b;c"
    single = cell("hopper", "20-100B")  # one row: ±20 % around it
    assert (single["mfu_low"], single["mfu_typical"], single["mfu_high"]) == (0.44, 0.55, 0.66)
    # Rule 1: nearest measured bucket, ties to the smaller one ("<3B" takes "3-20B"; ">100B" takes "20-100B").
    assert cell("hopper", "<3B")["rule"] == "nearest size bucket 3-20B"
    assert cell("hopper", ">100B")["mfu_typical"] == 0.55
    # Rule 2: QLoRA has no pair anywhere, so its ratio to full is 1; LoRA 20-100B comes from its own bucket.
    assert cell("hopper", "3-20B", "qlora")["mfu_typical"] == 0.5
    assert cell("hopper", "20-100B", "lora")["rule"] == "nearest size bucket 3-20B"
    # Rule 3: another generation scales the hopper cell by its MAMF ratio (MI300X 51.4 % vs H100 80.3 %).
    assert cell("cdna3", "3-20B")["mfu_typical"] == pytest.approx(0.5 * 0.514 / 0.803, abs=1e-4)
    assert cell("turing", "3-20B")["mfu_typical"] == 0.5  # no MAMF figure: unscaled


# --- the published cases --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cases():
    return {row["case_id"]: row for row in load_case_file(CASES)}


def scenario_of(row):
    cats = default_catalogs()
    made = case_scenario(row, cats, GpuMatcher(cats))
    assert not isinstance(made, str), made
    return made


@needs_cases
def test_case_scenario_megatron_selene_row(cases):
    scenario, facts = scenario_of(cases["KO-1a"])
    assert (scenario.tp, scenario.pp, scenario.dp, scenario.n_gpus) == (8, 1, 1, 8)
    assert (scenario.recompute, scenario.flash_attention) == ("full", False)
    # "mixed precision (16-bit)" is fp16 with fp32 master weights: the A100's 312 TFLOP/s FP16 peak
    assert scenario.precision == "fp16_mixed" and scenario.gpu == "A100 80GB SXM"
    columns, _ = evaluated(scenario, default_catalogs())
    assert columns.gpu.peak_flops_per_s == 312e12
    # DGX A100 (Selene): 8 x HDR 200 Gb/s per node = 25 GB/s per GPU
    assert scenario.inter_node_gb_per_s == 25.0
    assert (scenario.micro_batch, scenario.grad_accum) == (4, 1)
    assert facts.measured_unit == "s_per_iteration" and facts.n_gpus_published == 8


@needs_cases
@pytest.mark.parametrize(
    ("case_id", "reason"),
    [
        ("TTU32-1-tps", "unpacked"),
        ("TT-T1-1-tps", "power-capped but states no limit in watts"),
        ("QLORA-1", "upper bound"),
    ],
)
def test_case_skip_reasons(cases, case_id, reason):
    # TTU31-6-tps (CPU offload) and TTU31-1-mem (paged 8-bit AdamW) are predicted since offload and paged optimizers are modelled; a
    # power-capped GPU whose cell states its limit in watts since item 3 (tests/test_power_caps.py), so the
    # capped row here states none.
    row = cases.get(case_id) or {
        **cases["TT-T1-1-mem"],
        "category": "throughput",
        "measured_unit": "tokens_per_s_per_gpu",
        "gpu": "H100 SXM (power-capped, Grand Teton)",
    }
    cats = default_catalogs()
    skip = case_scenario(row, cats, GpuMatcher(cats))
    assert isinstance(skip, str) and reason in skip


@needs_cases
def test_ambiguous_tokens_per_second_on_several_gpus_is_not_guessed(cases):
    # 70B LoRA on 8 A100, tokens/s not stated per GPU or total: picking the reading from the measured value
    # would read the answer back into the prediction, so the row is refused (validate skips it with the reason).
    scenario, facts = scenario_of(cases["TTU31-7-tps"])
    columns, out = evaluated(scenario, default_catalogs())
    with pytest.raises(ValueError, match="not stated as per GPU or total"):
        interpreted_unit(columns, out, facts)


@needs_cases
def test_megatron_tflops_count_the_full_attention_matrix(cases):
    # MG24-1 (GPT 1.7B, 24 layers, seq 4096, h 2048): the causal count is 6·N + 3·(2·L·s·h); Megatron's
    # counter does not halve the score matrix, adding 3·2·L·s·h = 3·2·24·4096·2048 = 1.21e9 FLOPs per token.
    scenario, facts = scenario_of(cases["MG24-1"])
    columns, out = evaluated(scenario, default_catalogs())
    causal = read_out(columns, out, replace(facts, full_attention_counted=False))
    full = read_out(columns, out, facts)
    per_gpu = float(out["tokens_per_s_per_gpu"])
    assert (full - causal) * 1e12 == pytest.approx(per_gpu * 3 * 2 * 24 * 4096 * 2048, rel=1e-9)


@needs_cases
def test_case_round_trip(cases):
    # Predicting a row with the efficiency it implies gives back its measured value, on the FLOP model the
    # presets still describe (bare parameter counts): a NaN residual switches the operator model off.
    cats = replace(default_catalogs(), operator_residual={"default": math.nan})
    for case_id in ("LF-01", "MG24-5", "KO-2a", "NM-3", "TTU32-9-tps", "LLAMA2-4"):
        scenario, facts = scenario_of(cases[case_id])
        implied = case_efficiency(scenario, facts, cats)
        assert isinstance(implied, float), case_id
        table = efficiency.load_efficiency_table().with_columns(
            pl.lit(implied).alias("mfu_low"),
            pl.lit(implied).alias("mfu_typical"),
            pl.lit(implied).alias("mfu_high"),
        )
        predicted, used = predict_case(scenario, facts, replace(cats, efficiency=table))
        assert used == pytest.approx(implied, rel=1e-12)
        assert predicted == pytest.approx(facts.measured_value, rel=1e-5), case_id


@needs_cases
def test_calibration_target_leave_one_out():
    # The target for throughput and time rows: median |error| ≤ 15 %, ≤ 10 % of rows skipped.
    # Post-training rows have their own target (tests/test_post_training_cases.py) and feed no preset.
    rows = [row for row in load_case_file(CASES) if feeds_presets(row)]
    report = validate_cases(rows, CATS, refit="row")
    errors = sorted(abs(r["rel_error"]) for r in report["rows"] if r["rel_error"] is not None)
    assert len(report["rows"]) >= 60
    assert len(report["rows"]) - len(errors) <= 0.10 * len(report["rows"])
    assert errors[len(errors) // 2] <= 0.15


@needs_cases
def test_shipped_table_matches_a_fresh_derivation(tmp_path, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "derive_efficiency", ROOT / "scripts" / "derive_efficiency.py"
    )
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shipped = efficiency.load_efficiency_table()
    out = tmp_path / "efficiency.csv"
    script.main(["--cases", str(CASES), "--out", str(out), "--as-of", shipped["as_of"][0]])
    capsys.readouterr()
    assert efficiency.load_efficiency_table(out).equals(shipped)
