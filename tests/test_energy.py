"""Energy, carbon and the published-footprint arithmetic (reference/energy.md, calibration.csv energy)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cases.energy_cases import (
    DEFAULT_CASE_MFU,
    energy_prediction_from_case,
    gpu_hours_from_model_flops,
)
from planner.formulas.energy.footprint import (
    DEFAULT_GPU_UTIL_FRAC,
    GPU_UTIL_EXPLANATION,
    PUE_EXPLANATION,
    co2e_kg,
    electricity_cost_usd,
    energy_breakdown_kwh,
    energy_figures,
    gpu_power_w,
    model_card_energy_kwh,
)

A100_BF16_PEAK_TFLOPS = 312.0  # NVIDIA A100 datasheet, dense BF16 (reference/hardware-and-prices.md §1b)


# --- the power model --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("util", "expected_w"),
    [
        (0.0, 210.0),  # idle floor: 700 x 0.3
        (0.8, 602.0),  # 700 x (0.3 + 0.7 x 0.8) = 700 x 0.86
        (1.0, 700.0),  # full load reaches TDP
    ],
)
def test_gpu_power_linear_from_idle_floor(util: float, expected_w: float) -> None:
    assert gpu_power_w(700.0, util, 0.3) == pytest.approx(expected_w, rel=1e-12)


def test_default_load_matches_measured_h100_training_draw() -> None:
    # Morrison et al. 2025: H100s (700 W TDP) averaged "over 600 W" while training, i.e. > 85 % of TDP.
    assert 600.0 < gpu_power_w(700.0, DEFAULT_GPU_UTIL_FRAC, 0.3) < 700.0


def test_entering_mfu_as_load_understates_by_about_a_third() -> None:
    # As the explanation text claims: MFU 0.4 gives 0.3 + 0.7 x 0.4 = 0.58 x TDP, not 0.86 x TDP: 33 % less.
    understatement = 1 - gpu_power_w(1.0, 0.4, 0.3) / gpu_power_w(1.0, DEFAULT_GPU_UTIL_FRAC, 0.3)
    assert understatement == pytest.approx(1 / 3, abs=0.02)
    assert "not MFU" in GPU_UTIL_EXPLANATION and "1.56" in PUE_EXPLANATION


def test_breakdown_toy_run() -> None:
    # 8 GPUs x 10 h = 80 GPU-h at 602 W (700 W TDP, load 0.8) -> GPU 48.16 kWh;
    # host 30 % -> 14.448 kWh; IT 62.608 kWh; facility (PUE 1.2) 0.2 x 62.608 = 12.5216 kWh;
    # total 75.1296 kWh.
    gpu, host, facility, total = energy_breakdown_kwh(80.0, 700.0, 0.8, 0.3, 0.3, 1.2)
    assert (gpu, host, facility, total) == pytest.approx((48.16, 14.448, 12.5216, 75.1296), rel=1e-12)
    # 400 g/kWh -> 30.05184 kg; $0.12/kWh -> $9.015552
    assert co2e_kg(total, 400.0) == pytest.approx(30.05184, rel=1e-12)
    assert electricity_cost_usd(total, 0.12) == pytest.approx(9.015552, rel=1e-12)


@pytest.mark.parametrize(
    ("util", "tdp_multiple"),
    [
        (1.0, 1.56),  # energy.md A1: 1.0 x 1.3 x 1.2
        (0.8, 1.3416),  # 0.86 x 1.3 x 1.2 (A1 rounds it to 1.34)
        (0.6, 1.1232),  # 0.72 x 1.3 x 1.2 (A6 uses this; A1's "1.17" does not follow from the formula)
    ],
)
def test_energy_per_gpu_hour_as_multiple_of_tdp(util: float, tdp_multiple: float) -> None:
    assert energy_breakdown_kwh(1.0, 1000.0, util)[3] == pytest.approx(tdp_multiple, rel=1e-9)


@pytest.mark.parametrize(
    ("run", "gpu_hours", "tdp_w", "util", "expected_mwh"),
    [
        # energy.md A6, planner defaults (idle 0.3, host 0.3, PUE 1.2) applied to published GPU-hours
        ("Llama 2 70B", 1_720_320, 400, 1.0, 1_073),
        ("Llama 2 70B", 1_720_320, 400, 0.8, 923),
        ("Llama 2 70B", 1_720_320, 400, 0.6, 773),
        ("Llama 3.1 405B", 30.84e6, 700, 1.0, 33_677),
        ("Llama 3.1 405B", 30.84e6, 700, 0.8, 28_963),
        ("BLOOM final", 1_082_990, 400, 1.0, 676),
        ("GPT-3", 3.552e6, 300, 1.0, 1_662),
    ],
)
def test_planner_defaults_on_published_runs(run, gpu_hours, tdp_w, util, expected_mwh) -> None:
    assert energy_breakdown_kwh(gpu_hours, tdp_w, util)[3] / 1000 == pytest.approx(expected_mwh, rel=0.005)


# --- published footprints: who applies PUE ----------------------------------------------------------------


def test_bloom_dynamic_energy_has_no_pue() -> None:
    # Luccioni et al. 2022: dynamic energy = 1,082,990 GPU-h x 0.4 kW = 433,196 kWh
    # (no PUE; BLOOM-4 records 1.0);
    # x 57 g/kWh = 24,692 kg = 24.7 t (BLOOM-5).
    kwh = model_card_energy_kwh(1_082_990, 400.0, pue=1.0)
    assert kwh / 1000 == pytest.approx(433.196, rel=0.01)
    assert kwh / 1000 == pytest.approx(433, rel=0.01)
    assert co2e_kg(kwh, 57.0) / 1000 == pytest.approx(24.7, rel=0.01)
    # The BLOOM paper's comparison table multiplies by Jean Zay's PUE 1.2: 24.69 x 1.2 = 29.6, printed "30".
    assert co2e_kg(model_card_energy_kwh(1_082_990, 400.0, 1.2), 57.0) / 1000 == pytest.approx(30, rel=0.02)


@pytest.mark.parametrize(
    ("model", "gpu_hours", "power_w", "published_t"),
    [
        # Llama 2 card: GPU-h x W x PUE 1.1 x 0.385 kg/kWh. 70B: 1,720,320 x 0.4 kW = 688,128 kWh;
        # x 1.1 = 756,940.8 kWh; x 0.385 = 291,422 kg = 291.42 t.
        ("Llama 2 70B", 1_720_320, 400, 291.42),
        ("Llama 2 7B", 184_320, 400, 31.22),  # 184,320 x 0.4 x 1.1 x 0.385 = 31,222 kg
        ("Llama 2 13B", 368_640, 400, 62.44),
        ("Llama 2 34B", 1_038_336, 350, 153.9),  # paper only, 350 W
        ("LLaMA-7B", 82_432, 400, 14),  # LLaMA Table 15, printed to the tonne
        ("LLaMA-65B", 1_022_362, 400, 173),
    ],
)
def test_meta_cards_apply_pue(model: str, gpu_hours: float, power_w: float, published_t: float) -> None:
    with_pue = co2e_kg(model_card_energy_kwh(gpu_hours, power_w, 1.1), 385.0) / 1000
    assert with_pue == pytest.approx(published_t, rel=0.01 if published_t > 20 else 0.03)
    # Without the PUE the same arithmetic falls 9 % short, outside the tolerance: the cards do apply it.
    without_pue = co2e_kg(model_card_energy_kwh(gpu_hours, power_w, 1.0), 385.0) / 1000
    assert without_pue / published_t < 0.95


def test_gpt3_patterson_system_power() -> None:
    # Patterson et al. 2021: 3.552 M V100-h x 330 W measured system power x PUE 1.1 = 1,289 MWh
    # (published 1,287);
    # x 0.429 kg/kWh = 553 t (published 552).
    kwh = model_card_energy_kwh(3.552e6, 330.0, 1.1)
    assert kwh / 1000 == pytest.approx(1_287, rel=0.01)
    assert co2e_kg(kwh, 429.0) / 1000 == pytest.approx(552, rel=0.01)


# --- figures of a plan ------------------------------------------------------------------------------------


def _plan(**changes):
    inputs = {
        "n_gpus": 8,
        "wall_clock_h": 10.0,
        "tdp_w": 700.0,
        "g_co2e_per_kwh": 400.0,
        "usd_per_kwh": 0.12,
        "wall_clock_h_low": 8.0,
        "wall_clock_h_high": 14.0,
    }
    return energy_figures(**{**inputs, **changes})


def test_plan_figures_add_up() -> None:
    figures = _plan()
    parts = figures.gpu_energy_kwh + figures.host_energy_kwh + figures.facility_overhead_kwh
    assert figures.energy_kwh == pytest.approx(parts, rel=1e-12)
    assert figures.energy_kwh == pytest.approx(75.1296, rel=1e-12)  # the toy run above
    assert figures.gpu_power_w == pytest.approx(602.0)
    # the band follows the wall clock: 8/10 and 14/10 of the central energy
    assert figures.energy_kwh_low == pytest.approx(0.8 * 75.1296, rel=1e-12)
    assert figures.energy_kwh_high == pytest.approx(1.4 * 75.1296, rel=1e-12)
    assert figures.co2e_kg_low <= figures.co2e_kg <= figures.co2e_kg_high
    assert figures.electricity_cost_usd == pytest.approx(9.015552, rel=1e-12)


def test_no_band_collapses_to_the_estimate() -> None:
    figures = _plan(wall_clock_h_low=None, wall_clock_h_high=None)
    assert figures.energy_kwh_low == figures.energy_kwh == figures.energy_kwh_high


@pytest.mark.parametrize(
    "field", ["energy_kwh", "energy_kwh_low", "energy_kwh_high", "co2e_kg", "gpu_energy_kwh"]
)
def test_doubling_gpu_hours_doubles_energy(field: str) -> None:
    one, by_gpus = _plan(), _plan(n_gpus=16)
    by_hours = _plan(wall_clock_h=20.0, wall_clock_h_low=16.0, wall_clock_h_high=28.0)
    by_runs = _plan(experiments_multiplier=2.0)
    for doubled in (by_gpus, by_hours, by_runs):
        assert getattr(doubled, field) == pytest.approx(2 * getattr(one, field), rel=1e-12)


@pytest.mark.parametrize(
    ("name", "low", "high"),
    [
        ("gpu_util_frac", 0.3, 0.9),
        ("pue", 1.05, 1.6),
        ("host_overhead_frac", 0.1, 0.6),
        ("idle_power_frac", 0.1, 0.5),
    ],
)
def test_energy_rises_with_each_power_input(name: str, low: float, high: float) -> None:
    assert _plan(**{name: low}).energy_kwh < _plan(**{name: high}).energy_kwh


def test_vectorised_equals_scalar() -> None:
    # One row per GPU: H100 SXM, A100 80GB, L40S; different wall clocks, regions and PUEs.
    tdp = np.array([700.0, 400.0, 350.0])
    hours = np.array([10.0, 22.0, 31.0])
    grid = np.array([400.0, 33.0, 106.0])
    pue = np.array([1.2, 1.1, 1.56])
    many = energy_figures(8, hours, tdp, grid, pue=pue, usd_per_kwh=0.12, wall_clock_h_low=hours * 0.8)
    for i in range(3):
        one = energy_figures(
            8, float(hours[i]), float(tdp[i]), float(grid[i]), pue=float(pue[i]), usd_per_kwh=0.12,
            wall_clock_h_low=float(hours[i]) * 0.8,
        )  # fmt: skip
        for field in (
            "energy_kwh",
            "energy_kwh_low",
            "facility_overhead_kwh",
            "co2e_kg",
            "electricity_cost_usd",
        ):
            assert getattr(many, field)[i] == pytest.approx(getattr(one, field), rel=1e-12)


# --- predicting the energy rows of calibration.csv ---------------------------------------------------------

# Rows copied from reference/calibration.csv (only the columns the prediction reads).
BLOOM = {"model": "BLOOM-176B", "params_b": "176.2", "gpu": "A100 80GB SXM (Jean Zay)", "n_tokens_b": "366"}
BLOOM_3 = {
    **BLOOM,
    "case_id": "BLOOM-3",
    "category": "energy",
    "measured_value": "1082990",
    "measured_unit": "gpu_hours",
}
BLOOM_4 = {**BLOOM, "case_id": "BLOOM-4", "category": "energy", "power_w_per_gpu": "400", "pue": "1.0"}
BLOOM_4 |= {"measured_value": "433.196", "measured_unit": "mwh"}
BLOOM_5 = {**BLOOM_4, "case_id": "BLOOM-5", "grid_kg_co2e_per_kwh": "0.057"}
BLOOM_5 |= {"measured_value": "24.7", "measured_unit": "tco2eq"}
LLAMA2_70B = {"model": "Llama 2 70B", "params_b": "69.0", "gpu": "A100 80GB", "n_tokens_b": "2000"}
LLAMA2_70B |= {"power_w_per_gpu": "400", "pue": "1.1", "grid_kg_co2e_per_kwh": "0.385", "category": "energy"}
LLAMA2_4 = {**LLAMA2_70B, "case_id": "LLAMA2-4", "measured_value": "1720320", "measured_unit": "gpu_hours"}
LLAMA2_CO2 = {
    **LLAMA2_70B,
    "case_id": "LLAMA2-70B-CO2",
    "measured_value": "291.42",
    "measured_unit": "tco2eq",
}
OPT_2 = {"case_id": "OPT-2", "category": "energy", "params_b": "175.0", "gpu": "A100 80GB", "n_gpus": "992"}
OPT_2 |= {
    "n_tokens_b": "180",
    "power_w_per_gpu": "",
    "pue": "",
    "measured_value": "75",
    "measured_unit": "tco2eq",
}


@pytest.mark.parametrize(
    ("row", "published_gpu_hours"), [(BLOOM_4, 1_082_990), (BLOOM_5, 1_082_990), (LLAMA2_CO2, 1_720_320)]
)
def test_case_arithmetic_from_published_gpu_hours(row: dict, published_gpu_hours: float) -> None:
    prediction = energy_prediction_from_case(row, None, gpu_hours=published_gpu_hours)
    assert prediction.skipped_reason is None
    assert prediction.predicted == pytest.approx(float(row["measured_value"]), rel=0.01)
    assert abs(prediction.rel_error) < 0.01


def test_case_gpu_hours_from_model_flops() -> None:
    # 6 x 69e9 x 2e12 = 8.28e23 FLOP; at 312e12 x 0.40 = 1.248e14 FLOP/s -> 6.6346e9 s = 1,842,949 GPU-h.
    prediction = energy_prediction_from_case(LLAMA2_4, A100_BF16_PEAK_TFLOPS, 0.40)
    assert prediction.predicted == pytest.approx(1_842_949, rel=1e-5)
    # Against the published 1,720,320 that is +7.1 % (an MFU of 0.428 would match exactly).
    assert prediction.rel_error == pytest.approx(0.0713, abs=0.001)
    assert "MFU 0.4" in prediction.basis


def test_case_chain_carries_gpu_hours_error_into_carbon() -> None:
    # tCO2e from predicted GPU-hours: 1,842,949 x 0.4 x 1.1 x 0.385 / 1000 = 312.2 t,
    # the same +7.1 % as the hours.
    prediction = energy_prediction_from_case(LLAMA2_CO2, A100_BF16_PEAK_TFLOPS, 0.40)
    assert prediction.predicted == pytest.approx(312.2, rel=0.001)
    assert prediction.gpu_hours == pytest.approx(1_842_949, rel=1e-5)


def test_case_bloom_hours_at_default_mfu() -> None:
    # 6 x 176.2e9 x 366e9 = 3.869e23 FLOP / (312e12 x 0.40) / 3600 = 861,234 GPU-h, 20 % under the published
    # 1,082,990: BLOOM ran at about 0.32 model-FLOPs utilisation (recompute and 2022-era kernels).
    prediction = energy_prediction_from_case(BLOOM_3, A100_BF16_PEAK_TFLOPS, DEFAULT_CASE_MFU)
    assert prediction.predicted == pytest.approx(861_234, rel=1e-5)
    assert -0.25 < prediction.rel_error < -0.15


@pytest.mark.parametrize(
    ("row", "peak", "reason"),
    [
        (OPT_2, A100_BF16_PEAK_TFLOPS, "no power per GPU or no PUE"),
        (LLAMA2_4, None, "no peak TFLOP/s"),
        ({**BLOOM_3, "n_tokens_b": ""}, A100_BF16_PEAK_TFLOPS, "n_tokens_b"),
        ({**BLOOM_3, "params_b": ""}, A100_BF16_PEAK_TFLOPS, "parameter count"),
        ({**BLOOM_5, "grid_kg_co2e_per_kwh": ""}, A100_BF16_PEAK_TFLOPS, "grid carbon intensity"),
        ({**BLOOM_3, "measured_unit": "tokens_per_s_per_gpu"}, A100_BF16_PEAK_TFLOPS, "not an energy row"),
    ],
)
def test_case_rows_that_cannot_be_modelled_say_why(row: dict, peak: float | None, reason: str) -> None:
    prediction = energy_prediction_from_case(row, peak)
    assert prediction.predicted is None and prediction.rel_error is None
    assert reason in prediction.skipped_reason


def test_case_moe_uses_active_parameters() -> None:
    dense = energy_prediction_from_case({**BLOOM_3, "params_b": "47"}, A100_BF16_PEAK_TFLOPS)
    moe = energy_prediction_from_case(
        {**BLOOM_3, "params_b": "47", "active_params_b": "13"}, A100_BF16_PEAK_TFLOPS
    )
    assert moe.predicted == pytest.approx(dense.predicted * 13 / 47, rel=1e-12)


def test_case_row_format_matches_validate() -> None:
    row = energy_prediction_from_case(BLOOM_5, None, gpu_hours=1_082_990).as_row()
    assert set(row) == {
        "case_id",
        "category",
        "predicted",
        "measured",
        "measured_unit",
        "rel_error",
        "skipped_reason",
    }
    assert row["case_id"] == "BLOOM-5" and row["measured_unit"] == "tco2eq"


def test_gpu_hours_from_flops_is_vectorised() -> None:
    params = np.array([6.74e9, 13e9, 69e9])
    hours = gpu_hours_from_model_flops(params, 2e12, 312e12, 0.4)
    assert hours[2] == pytest.approx(gpu_hours_from_model_flops(69e9, 2e12, 312e12, 0.4), rel=1e-12)
    assert hours[1] / hours[0] == pytest.approx(13 / 6.74, rel=1e-12)
