"""Goodput: Young/Daly interval, expected failures, the wall clock with failures, and the
figures with failures in the estimate, the CLI, share links, the scenarios CSV and validation."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from planner.cases.case_file import default_case_file, load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import case_scenario
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import default_catalogs
from planner.decide.plan_words import checkpoint_words
from planner.decide.scenario_results import read_saved_scenarios
from planner.estimate import estimate
from planner.formulas.step import goodput
from planner.inputs.goodput_defaults import FAILURES_PER_GPU_HOUR
from planner.inputs.query import scenario_from_query, scenario_to_query
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import scenarios_to_csv
from ui import format as fmt
from ui.goodput_inputs import OPEN_KEY

CATS = default_catalogs()


def test_young_interval_written_out():
    # C = 5 min = 300 s, M = 10 h = 36,000 s: √(2 × 300 × 36,000) = √21,600,000 = 4,647.58 s = 77.46 min.
    assert goodput.young_interval_s(300.0, 36_000.0) / 60 == pytest.approx(77.4597, abs=1e-3)


def test_daly_interval_written_out():
    # Same C and M. C / 2M = 300 / 72,000 = 0.0041667, √ = 0.0645497.
    # factor = 1 + 0.0645497 / 3 + 0.0041667 / 9 = 1 + 0.0215166 + 0.0004630 = 1.0219795
    # τ = 4,647.58 × 1.0219795 − 300 = 4,749.73 − 300 = 4,449.73 s = 74.162 min.
    assert goodput.daly_interval_s(300.0, 36_000.0) == pytest.approx(4449.73, abs=0.01)
    assert goodput.daly_interval_s(300.0, 36_000.0) / 60 == pytest.approx(74.162, abs=1e-3)


def test_daly_interval_is_the_mtbf_once_the_write_takes_two_mtbfs():
    # Daly 2006: τ = M for C ≥ 2M (a checkpoint longer than two MTBFs): C = 7,200 s, M = 3,600 s -> 3,600 s.
    assert goodput.daly_interval_s(7_200.0, 3_600.0) == 3_600.0


def test_daly_tends_to_young_as_the_write_shrinks():
    # C / M = 1e-8: the higher-order terms vanish, τ_Daly / τ_Young -> 1 (within 1e-4).
    assert goodput.daly_interval_s(1e-4, 1e4) / goodput.young_interval_s(1e-4, 1e4) == pytest.approx(
        1, abs=1e-4
    )


def test_default_rate_reproduces_the_published_mttf_at_16k_gpus():
    # Kokolis et al. 2025 project a job MTTF of 1.8 h at 16,384 GPUs from RSC-1's 6.5 failures per 1,000
    # node-days: 1 / (16,384 × 6.5e-3 / 192) = 1 / 0.5547 = 1.803 h.
    assert pytest.approx(6.5e-3 / 192, rel=1e-12) == FAILURES_PER_GPU_HOUR
    assert goodput.job_mtbf_s(16_384, FAILURES_PER_GPU_HOUR) / 3600 == pytest.approx(1.8, rel=0.01)


def test_expected_failures_for_a_stated_run():
    # 1,024 GPUs for 100 h at 3.3854e-5 per GPU-hour: 102,400 GPU-hours × 3.3854e-5 = 3.4667 failures.
    assert goodput.expected_failures(100 * 3600.0, 1024, FAILURES_PER_GPU_HOUR) == pytest.approx(
        3.4667, abs=1e-4
    )


def test_wall_clock_with_failures_written_out():
    # W = 100 h = 360,000 s on 1,000 GPUs at 1e-4 per GPU-hour: M = 1 / 0.1 per h = 10 h = 36,000 s.
    # C = 300 s every τ = 3,600 s: writes = 360,000 / 3,600 × 300 = 30,000 s.
    # Per failure: (3,600 + 300) / 2 + restart 600 + reload 300 = 2,850 s; 1 − 2,850 / 36,000 = 0.9208333.
    # T = (360,000 + 30,000) / 0.9208333 = 423,529.4 s = 117.647 h; failures = T / M = 11.7647.
    run = goodput.goodput(360_000.0, 1000, 1e-4, 300.0, 600.0, interval_s=3600.0)
    assert float(run.wall_clock_s) == pytest.approx(423_529.41, abs=0.01)
    assert float(run.expected_failures) == pytest.approx(11.7647, abs=1e-4)
    assert float(run.checkpoint_writes_s) == pytest.approx(30_000.0)
    assert float(run.lost_work_s) == pytest.approx(11.7647 * 1950, rel=1e-4)
    assert float(run.restarts_s) == pytest.approx(11.7647 * 900, rel=1e-4)
    # the parts add up to the whole: T = W + writes + redone work + restarts
    parts = 360_000.0 + run.checkpoint_writes_s + run.lost_work_s + run.restarts_s
    assert float(parts) == pytest.approx(float(run.wall_clock_s), rel=1e-12)
    assert float(run.goodput_frac) == pytest.approx(360_000 / 423_529.41, rel=1e-7)


def test_saves_already_in_the_plain_wall_clock_count_towards_the_checkpoints():
    # W / τ = 100 checkpoints needed, 40 already written in W: only 60 more writes of 300 s = 18,000 s.
    run = goodput.goodput(360_000.0, 1000, 1e-4, 300.0, 600.0, interval_s=3600.0, n_saves_counted=40)
    assert float(run.checkpoint_writes_s) == pytest.approx(18_000.0)


def test_a_checkpoint_that_takes_no_time_costs_no_writes():
    # C = 0 (LoRA without a shape: 0 adapter bytes): Daly's τ = 0, writes 0 × ∞ would be NaN; they are 0 s,
    # and each failure costs the 600 s restart alone: T = 3,600 / (1 − 600 / 36,000) = 3,661.0 s.
    run = goodput.goodput(3600.0, 1000, 1e-4, 0.0, 600.0)
    assert float(run.checkpoint_writes_s) == 0.0
    assert float(run.wall_clock_s) == pytest.approx(3600 / (1 - 600 / 36_000), rel=1e-12)


def test_failures_faster_than_progress_never_finish():
    # 1,000 GPUs at 0.01 per GPU-hour: M = 360 s, while a restart alone takes 600 s: on average each attempt
    # fails before it gets anywhere, so the run does not finish.
    run = goodput.goodput(3600.0, 1000, 0.01, 30.0, 600.0)
    assert math.isinf(float(run.wall_clock_s)) and float(run.goodput_frac) == 0.0


def test_an_estimate_that_never_finishes_says_why():
    # 1,024 GPUs at 0.01 per GPU-hour: M = 3,600 / 10.24 = 352 s = 5.86 min, under the 10-minute restart.
    est = estimate(Scenario(n_gpus=1024, failures_per_gpu_hour=0.01), CATS)
    assert est.to_flat()["wall_clock_with_failures_h"] is None
    assert "5.86 min" in est.unavailable["wall_clock_with_failures_h"]


times = st.floats(1.0, 1e7)
counts = st.integers(1, 100_000)
rates = st.floats(0.0, 0.01)


@given(times, counts, st.lists(rates, min_size=2, max_size=5), st.floats(0.01, 1e4), st.floats(0, 1e4))
@example(3600.0, 1, [0.0, 1e-9], 60.0, 0.0)  # from off to the smallest rate
@example(1e7, 100_000, [0.0, 0.01], 1e4, 1e4)  # a run that can no longer finish
@example(1.0, 109, [0.0078125, 0.0078125], 2.0, 4161.0)  # found: two runs that never finish (inf − inf)
@example(1.0, 1, [0.0078125, 2.225073858507e-311], 1.0, 0.0)  # found: a subnormal rate overflowed M to inf
@example(1.0, 901, [0.0078125, 2.2250738585072014e-308], 1.0, 0.0)  # found: M finite, 2CM overflowed
def test_a_higher_failure_rate_never_lowers_the_wall_clock(wall_s, n_gpus, rate_list, write_s, restart_s):
    ordered = np.sort(np.asarray(rate_list))
    walls = goodput.goodput(wall_s, n_gpus, ordered, write_s, restart_s).wall_clock_s
    assert np.all(walls[1:] >= walls[:-1] * (1 - 1e-12))  # inf (never finishes) stays inf
    assert np.all(walls >= wall_s)


def test_rate_zero_gives_exactly_the_plain_figures():
    est = estimate(Scenario(n_gpus=64, failures_per_gpu_hour=0, storage_gb_per_s=5.0), CATS)
    assert est.wall_clock_with_failures_h == est.wall_clock_h
    assert est.gpu_hours_with_failures == est.device_hours
    assert est.cost_with_failures_usd == est.cost_usd
    assert est.energy_with_failures_kwh == est.energy_kwh
    assert est.expected_failures == 0 and est.goodput_frac == 1.0
    assert est.checkpoint_interval_min is None  # goodput off: no interval to report


def test_estimate_with_failures_for_a_large_run():
    # Llama 3.1 70B on 1,024 H100 (128 nodes): M = 1 / (1,024 × 3.3854e-5) = 28.85 h. One checkpoint is
    # 70.6e9 parameters × 14 bytes (bf16 weights 2 + fp32 master 4 + Adam 8) at the 57 GB/s cap (128 nodes ×
    # 2 GB/s is more) = 17.3 s.
    plan = Scenario(model="Llama 3.1 70B", n_gpus=1024, total_tokens_b=1000, tp=8)
    est = estimate(plan, CATS)
    assert est.job_mtbf_h == pytest.approx(28.85, abs=0.01)
    assert est.checkpoint_write_s == pytest.approx(est.n_params * 14 / 57e9, rel=1e-9)
    # Daly from C and M, and failures = wall clock with failures / M
    mtbf_s = est.job_mtbf_h * 3600
    assert est.checkpoint_interval_min == pytest.approx(goodput.daly_interval_s(17.35, mtbf_s) / 60, rel=0.01)
    assert est.expected_failures == pytest.approx(est.wall_clock_with_failures_h / est.job_mtbf_h, rel=1e-9)
    assert est.wall_clock_h < est.wall_clock_with_failures_h < 1.1 * est.wall_clock_h
    assert est.gpu_hours_with_failures == pytest.approx(est.wall_clock_with_failures_h * 1024, rel=1e-12)
    ratio = est.wall_clock_with_failures_h / est.wall_clock_h
    assert est.cost_with_failures_usd == pytest.approx(est.cost_usd * ratio, rel=1e-9)
    # redone work at the run's draw, writes and restarts at idle: between the plain energy and its scaled value
    assert est.energy_kwh < est.energy_with_failures_kwh < est.energy_kwh * ratio


def test_default_write_bandwidth_is_per_node_up_to_the_file_system():
    # 8B on one node: 8.03e9 × 14 B / 2 GB/s = 56.2 s; a fixed write time replaces it.
    est = estimate(Scenario(), CATS)
    assert est.checkpoint_write_s == pytest.approx(est.n_params * 14 / 2e9, rel=1e-9)
    assert estimate(Scenario(checkpoint_write_s=5), CATS).checkpoint_write_s == 5
    assert (
        float(goodput.default_write_gb_per_s(4)) == 8.0 and float(goodput.default_write_gb_per_s(48)) == 57.0
    )


def test_a_fixed_interval_is_used_as_given():
    est = estimate(Scenario(n_gpus=512, checkpoint_interval_min=30), CATS)
    assert est.checkpoint_interval_min == 30


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [
        ("--failures-per-gpu-hour", "-1", ">= 0 and <= 0.01"),
        ("--failures-per-gpu-hour", "0.5", ">= 0 and <= 0.01"),
        ("--checkpoint-interval-min", "0.5", ">= 1 and <= 600000"),
        ("--checkpoint-interval-min", "soon", ">= 1 and <= 600000"),
        ("--checkpoint-write-s", "0", ">= 0.01"),
        ("--restart-min", "-5", ">= 0"),
    ],
)
def test_bad_goodput_flags_exit_2_naming_the_flag_and_range(flag, value, allowed):
    done = run_cli("estimate", flag, value)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"error: {flag}:") and allowed in line
    assert repr(value) in line


def test_goodput_flags_reach_the_json():
    done = run_cli(
        "estimate",
        "--devices",
        "64",
        "--checkpoint-interval-min",
        "45",
        "--restart-min",
        "5",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    flat = json.loads(done.stdout)
    assert flat["checkpoint_interval_min"] == 45
    assert flat["wall_clock_with_failures_h"] > flat["wall_clock_h"]
    auto = json.loads(run_cli("estimate", "--checkpoint-interval-min", "auto", "--format", "json").stdout)
    off = json.loads(run_cli("estimate", "--failures-per-gpu-hour", "0", "--format", "json").stdout)
    assert auto["checkpoint_interval_min"] > 0 and off["checkpoint_interval_min"] is None
    assert off["wall_clock_with_failures_h"] == off["wall_clock_h"]


def test_goodput_inputs_survive_the_share_link_and_the_csv():
    plan = Scenario(
        failures_per_gpu_hour=1.2345e-4, checkpoint_interval_min=90, checkpoint_write_s=12.5, restart_min=3
    )
    restored, notices = scenario_from_query(scenario_to_query(plan))
    assert restored == plan and notices == []
    read = read_saved_scenarios(scenarios_to_csv({"a": plan, "b": Scenario()}), CATS)
    assert read.problems == [] and read.scenarios == {"a": plan, "b": Scenario()}
    assert scenario_from_query({"checkpoint_interval_min": "auto"})[0].checkpoint_interval_min is None


def test_published_whole_run_gpu_hours_are_predicted_with_failures():
    rows = [row for row in load_case_file(default_case_file()) if row["case_id"] == "BLOOM-3"]
    predicted = validate_cases(rows, CATS)["rows"][0]["predicted"]
    # BLOOM-176B on 384 A100: the same row's plan without failures predicts fewer GPU-hours
    made = case_scenario(rows[0], CATS, GpuMatcher(CATS))
    assert not isinstance(made, str), made
    scenario = made[0]
    est = estimate(scenario, CATS)
    assert predicted == pytest.approx(est.gpu_hours_with_failures, rel=1e-9)
    assert predicted > est.device_hours


def breakdown_text(at) -> str:
    return "\n".join(element.value for element in at.markdown)


def test_compute_page_goodput_inputs_change_the_shown_figures(app):
    app.switch_page("app_pages/compute.py").run()
    assert not app.exception
    assert not any(w.key == "w.failures_per_gpu_hour" for w in app.text_input)  # closed: no widgets drawn
    app.session_state[OPEN_KEY] = True
    app.run()
    # 8 H100 at the default rate: about 1e-4 failures, and the row is shown next to the plain wall clock
    assert "Wall clock with failures" in breakdown_text(app)
    app.text_input(key="w.failures_per_gpu_hour").input("0.001").run()
    assert not app.exception
    plan = app.session_state["scenario"]
    assert plan.failures_per_gpu_hour == 0.001
    shown = estimate(plan, CATS)
    assert shown.expected_failures > 0.003  # 8 GPUs × 0.41 h × 0.001
    text = breakdown_text(app)
    expected = (
        f"{fmt.sig(shown.expected_failures)} expected failures",
        fmt.hours(shown.wall_clock_with_failures_h),
        checkpoint_words(shown),  # a 25-minute run ends before Daly's interval: no checkpoint needed
    )
    assert all(part in text for part in expected), text
    app.text_input(key="w.checkpoint_interval_min").input("0.5").run()
    assert app.session_state["scenario"].checkpoint_interval_min is None  # the previous value stays
    assert any(
        e.value.startswith("Checkpoint interval (minutes of work): ") and ">= 1" in e.value for e in app.error
    )


def test_overview_shows_the_figures_with_failures(app):
    app.sidebar.text_input(key="w.n_gpus").input("512").run()
    assert not app.exception
    shown = estimate(app.session_state["scenario"], CATS)
    text = breakdown_text(app)
    assert "GPU-hours with failures" in text and fmt.count(shown.gpu_hours_with_failures, 1) in text
    assert "Cost with failures" in text and fmt.usd(shown.cost_with_failures_usd) in text
