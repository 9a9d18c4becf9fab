"""Clocks and power caps: a GPU's power limit derates its dense tensor rate by one rule
(planner/formulas/energy/power_cap.py) and sets its power draw, in the estimate, the comparison, the search, the CLI,
share links, the scenarios CSV, the app and validation."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from planner.cases.case_file import default_case_file, load_case_file
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import default_catalogs
from planner.catalogue.catalog_read import CatalogError
from planner.catalogue.catalog_tables import gpus_table
from planner.decide.compare import compare_gpus
from planner.decide.scenario_results import read_saved_scenarios
from planner.decide.sheet import evaluate_rows
from planner.decide.sweep import scenario_for
from planner.estimate import estimate
from planner.formulas.energy.power_cap import MIN_POWER_LIMIT_FRAC, capped_rate_frac
from planner.inputs.query import scenario_from_query, scenario_to_query
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import scenarios_to_csv
from ui.sidebar import OVERRIDES_OPEN_KEY

CATS = default_catalogs()
VARIANT = "H100 SXM 96GB HBM2e (500 W)"
CAPPED_CELL = "H100 SXM 96GB HBM2e (500W power limit, Grand Teton)"


def test_rule_written_out_for_an_h100_at_600_and_500_w():
    # Source: Factryze's power-capping note (factryze.ai/scale-atlas/power/power-capping) states that 600 W on
    # a 700 W H100 costs 10-15 % of transformer pre-training step throughput. The rule, floor 0.15 x TDP = 105 W,
    # exponent 1.5:
    #   600 W: ((600 - 105) / (700 - 105)) ** (1 / 1.5) = 0.83193 ** 0.66667 = exp(0.66667 x -0.18400)
    #          = exp(-0.12267) = 0.88456, i.e. 11.5 % slower (inside the published band);
    #   500 W: (395 / 595) ** 0.66667 = 0.66387 ** 0.66667 = exp(0.66667 x -0.40968) = exp(-0.27312) = 0.76100.
    at_600 = capped_rate_frac(600.0, 700.0)
    assert at_600 == pytest.approx(0.88456, abs=5e-5)
    assert 0.85 <= at_600 <= 0.90  # the published 10-15 % loss
    assert capped_rate_frac(500.0, 700.0) == pytest.approx(0.76100, abs=5e-5)
    assert capped_rate_frac(700.0, 700.0) == 1.0


@given(
    tdp_w=st.floats(50.0, 2_000.0),
    low_frac=st.floats(MIN_POWER_LIMIT_FRAC, 1.0),
    high_frac=st.floats(MIN_POWER_LIMIT_FRAC, 1.0),
)
@example(tdp_w=700.0, low_frac=MIN_POWER_LIMIT_FRAC, high_frac=1.0)
def test_rate_never_rises_as_the_cap_falls(tdp_w, low_frac, high_frac):
    low_frac, high_frac = sorted((low_frac, high_frac))
    low = capped_rate_frac(low_frac * tdp_w, tdp_w)
    high = capped_rate_frac(high_frac * tdp_w, tdp_w)
    assert 0.0 < low <= high <= 1.0


def test_cap_at_tdp_gives_exactly_todays_figures():
    plain = Scenario(gpu="H100 SXM")
    at_tdp = plain.updated(power_limit_w=700.0)
    assert estimate(at_tdp, CATS).model_dump() == estimate(plain, CATS).model_dump()
    # the comparison's other rows never see the scenario's limit; its own row is unchanged at the TDP
    mine, theirs = compare_gpus(at_tdp, CATS), compare_gpus(plain, CATS)
    assert mine.drop("status").equals(theirs.drop("status"))


def test_capped_peak_time_and_energy_follow_the_limit():
    plain = estimate(Scenario(gpu="H100 SXM"), CATS)
    capped = estimate(Scenario(gpu="H100 SXM", power_limit_w=500.0), CATS)
    # peak: 989.5 x 0.76100 = 753.01 TFLOP/s (the rule above)
    assert capped.peak_tflops == pytest.approx(989.5 * 0.76100, abs=0.05)
    assert capped.wall_clock_h > plain.wall_clock_h
    # energy: the draw is limit x (idle + (1 - idle) x load) instead of TDP x (...), so per GPU-hour it scales
    # by 500 / 700, and the GPU-hours grow with the slower clock.
    expected = plain.energy_kwh * (500.0 / 700.0) * (capped.device_hours / plain.device_hours)
    assert capped.energy_kwh == pytest.approx(expected, rel=1e-9)
    assert capped.gpu_energy_kwh == pytest.approx(
        plain.gpu_energy_kwh * (500.0 / 700.0) * (capped.device_hours / plain.device_hours), rel=1e-9
    )


def test_the_catalogue_variant_runs_at_its_own_limit():
    variant = estimate(Scenario(gpu=VARIANT), CATS)
    typed = estimate(Scenario(gpu="H100 SXM", power_limit_w=500.0), CATS)
    assert variant.peak_tflops == pytest.approx(typed.peak_tflops, rel=1e-12)
    # the same tensor rate, but HBM2e at 2.4 TB/s against HBM3's 3.35: the memory-bound operations of the
    # step model (norms, activations, the optimizer step) take 3.35 / 2.4 as long, so the variant is slower
    assert variant.memory_bound_time_s == pytest.approx(typed.memory_bound_time_s * 3.35 / 2.4, rel=1e-9)
    assert variant.gemm_time_s == pytest.approx(typed.gemm_time_s, rel=1e-9)
    assert variant.wall_clock_h > typed.wall_clock_h
    # the same 500 W per GPU-hour (95.58 GiB of memory against 79.65 changes no draw)
    per_gpu_hour = [e.energy_kwh / e.device_hours for e in (variant, typed)]
    assert per_gpu_hour[0] == pytest.approx(per_gpu_hour[1], rel=1e-9)
    assert CATS.gpu("h100 96gb hbm2e")["name"] == VARIANT
    # a typed limit overrides the variant's: at its 700 W TDP it runs at the datasheet rate
    assert estimate(Scenario(gpu=VARIANT, power_limit_w=700.0), CATS).peak_tflops == 989.5
    frame = compare_gpus(Scenario(), CATS)
    peaks = dict(zip(frame["gpu"], frame["peak_tflops"], strict=True))
    assert peaks[VARIANT] == pytest.approx(0.76100 * peaks["H100 SXM"], rel=1e-4)


def test_the_sheet_evaluates_capped_rows_like_the_estimate_and_refuses_a_limit_out_of_range():
    capped = Scenario(gpu="H100 SXM", power_limit_w=450.0)
    too_high = Scenario(gpu="A100 80GB SXM", power_limit_w=450.0)  # above the A100's 400 W TDP
    row, plain, refused = evaluate_rows([capped, Scenario(gpu="H100 SXM"), too_high], CATS)
    assert not isinstance(row, Exception) and not isinstance(plain, Exception)
    alone = estimate(capped, CATS)
    for name in ("peak_tflops", "power_limit_w", "wall_clock_h", "energy_kwh", "cost_usd"):
        assert getattr(row, name) == pytest.approx(getattr(alone, name), rel=1e-12), name
    assert row.wall_clock_h > plain.wall_clock_h
    assert isinstance(refused, Exception) and refused.field == "power_limit_w"


def test_the_search_on_another_gpu_drops_the_typed_limit():
    base = Scenario(gpu="H100 SXM", power_limit_w=500.0)
    layout = {
        "n_gpus": 8,
        "tp": 1,
        "pp": 1,
        "zero_stage": 1,
        "recompute": "none",
        "micro_batch": 1,
        "grad_accum": 1,
    }
    assert scenario_for({**layout, "gpu": "A100 80GB SXM"}, base, CATS).power_limit_w is None
    assert scenario_for({**layout, "gpu": "H100 SXM"}, base, CATS).power_limit_w == 500.0


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("100", "175 to 700 W (0.25 x TDP to TDP)"),
        ("701", "175 to 700 W (0.25 x TDP to TDP)"),
        ("5", ">= 10 and <= 100000"),
        ("lots", ">= 10 and <= 100000"),
    ],
)
def test_bad_power_limit_exits_2_naming_the_flag_and_range(value, allowed):
    done = run_cli("estimate", "--gpu", "H100 SXM", "--power-limit-w", value)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith("error: --power-limit-w:") and allowed in line


def test_power_limit_flag_reaches_the_json():
    done = run_cli("estimate", "--gpu", "H100 SXM", "--power-limit-w", "500", "--format", "json")
    assert done.returncode == 0, done.stderr
    flat = json.loads(done.stdout)
    assert flat["power_limit_w"] == 500 and flat["peak_tflops"] == pytest.approx(753.01, abs=0.05)


def test_power_limit_survives_the_share_link_and_the_csv():
    plan = Scenario(gpu="H100 SXM", power_limit_w=512.5)
    restored, notices = scenario_from_query(scenario_to_query(plan))
    assert restored == plan and notices == []
    read = read_saved_scenarios(scenarios_to_csv({"a": plan, "b": Scenario()}), CATS)
    assert read.problems == [] and read.scenarios == {"a": plan, "b": Scenario()}


def test_a_catalogue_limit_outside_the_tdp_range_names_the_row_and_column():
    header = "name,vendor,generation,tflops_bf16,memory_gib,memory_bw_tb_per_s,tdp_w,power_limit_w,"
    header += "intra_node_gb_per_s,pcie_gb_per_s,launch_year,source,as_of\n"
    good = "Acme X1,Acme,other,500,80,3,600,450,0,63,2026,Acme sheet,2026-11-01\n"
    assert gpus_table((header + good).encode(), "team", "gpus.csv")["power_limit_w"].to_list() == [450.0]
    with pytest.raises(CatalogError, match=r"gpus.csv, row 2, column 'power_limit_w': must lie between"):
        gpus_table((header + good.replace(",450,", ",650,")).encode(), "team", "gpus.csv")
    with pytest.raises(CatalogError, match=r"0.25 x tdp_w = 150 W"):
        gpus_table((header + good.replace(",450,", ",100,")).encode(), "team", "gpus.csv")


def _capped_rows(cell: str) -> list[dict[str, str]]:
    """A published H100 throughput row (llm-foundry LF-01) with its GPU cell replaced by `cell`."""
    row = next(r for r in load_case_file(default_case_file()) if r["case_id"] == "LF-01")
    return [dict(row, gpu=cell, case_id="CAPPED"), dict(row, gpu="H100 SXM", case_id="FULL")]


def test_rows_on_power_capped_gpus_are_predicted_at_the_stated_limit():
    # Before power caps were modelled such rows were skipped ("capped clocks are not modelled").
    capped, full = validate_cases(_capped_rows(CAPPED_CELL), CATS)["rows"]
    assert capped["skipped_reason"] is None and capped["predicted"] is not None
    # slower than the same run at 700 W, by at most the rate's 0.761 (memory-bound time keeps its speed)
    ratio = capped["predicted"] / full["predicted"]
    assert 0.761 - 1e-6 <= ratio < 1.0
    stated, _ = validate_cases(_capped_rows("H100 SXM (power limit 450 W)"), CATS)["rows"]
    assert stated["skipped_reason"] is None and stated["predicted"] < capped["predicted"]


def test_a_capped_row_without_watts_or_outside_the_range_says_why():
    vague, _ = validate_cases(_capped_rows("H100 SXM (power-capped)"), CATS)["rows"]
    assert vague["predicted"] is None and "states no limit in watts" in vague["skipped_reason"]
    low, _ = validate_cases(_capped_rows("H100 SXM (100W power limit)"), CATS)["rows"]
    assert low["predicted"] is None and "175 to 700 W" not in low["skipped_reason"]
    assert "outside what the H100 SXM accepts" in low["skipped_reason"]


def test_sidebar_power_limit_widget_changes_the_plan_and_refuses_out_of_range(app):
    assert not any(w.key == "w.power_limit_w" for w in app.sidebar.text_input)  # closed: nothing drawn
    app.session_state[OVERRIDES_OPEN_KEY] = True
    app.run()
    app.sidebar.text_input(key="w.power_limit_w").input("500").run()
    assert not app.exception
    plan = app.session_state["scenario"]
    assert plan.gpu == "H100 SXM" and plan.power_limit_w == 500.0
    app.sidebar.text_input(key="w.power_limit_w").input("100").run()
    assert app.session_state["scenario"].power_limit_w == 500.0  # the previous valid value stays
    told = [e.value for e in app.error] + [w.value for w in app.warning]
    assert any(t.startswith("Power limit per GPU (W): ") and "175 to 700 W" in t for t in told), told


def test_a_share_link_with_a_limit_the_gpu_cannot_take_keeps_the_gpu_and_drops_the_limit():
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP
    from ui.state import NOTICES_KEY, SCENARIO_KEY

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["gpu"] = "A100 80GB SXM"
    at.query_params["power_limit_w"] = "600"  # above the A100's 400 W TDP
    at.run()
    assert not at.exception
    kept = at.session_state[SCENARIO_KEY]
    assert (kept.gpu, kept.power_limit_w) == ("A100 80GB SXM", None)
    told = [w.value for w in at.warning] + list(at.session_state[NOTICES_KEY])
    assert any(
        t.startswith("Ignored power limit ('power_limit_w'): ") and "100 to 400 W" in t for t in told
    ), told


def test_picking_a_gpu_whose_range_excludes_the_typed_limit_keeps_the_gpu(app):
    app.session_state[OVERRIDES_OPEN_KEY] = True
    app.run()
    app.sidebar.text_input(key="w.power_limit_w").input("600").run()
    assert app.session_state["scenario"].power_limit_w == 600.0
    app.sidebar.selectbox(key="w.gpu").select("A100 80GB SXM").run()
    assert not app.exception
    plan = app.session_state["scenario"]
    assert (plan.gpu, plan.power_limit_w) == ("A100 80GB SXM", None)
