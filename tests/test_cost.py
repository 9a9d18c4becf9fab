"""Cost: pricing resolution, the cost band, the unit price, and the seed's $20.00."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.formulas.money.cost import (
    EXPERIMENTS_MULTIPLIER_GUIDANCE,
    EXPERIMENTS_MULTIPLIER_PRESETS,
    cost_figures,
    resolve_rate,
    run_cost_usd,
    usd_per_million_tokens,
)


def test_seed_twenty_dollars_exactly() -> None:
    # Seed 000: 2.5 h wall clock x 4 devices = 10.0 device-hours; at $2/device-hour that is $20.00.
    device_hours = 2.5 * 4
    rate = resolve_rate(2.0, None)
    figures = cost_figures(device_hours, rate, n_training_tokens=90_000_000)
    assert figures.cost_usd == 20.0
    assert f"${figures.cost_usd:,.2f}" == "$20.00"
    assert run_cost_usd(10.0, 2.0) == 20.0


def test_seed_unit_price() -> None:
    # $20 for 30,000 x 1,000 x 3 = 90,000,000 tokens = 90 million -> 20 / 90 = $0.2222 per million tokens.
    assert usd_per_million_tokens(10.0, 2.0, 90_000_000) == pytest.approx(20 / 90, rel=1e-12)


def test_quote_overrides_catalogue_and_discount() -> None:
    rate = resolve_rate(2.5, 4.0, 3.0, 6.0, 0.4, 0.2, 0.6, pricing="spot")
    assert (rate.usd_per_gpu_hour, rate.usd_per_gpu_hour_low, rate.usd_per_gpu_hour_high) == (2.5, 2.5, 2.5)
    assert "your quote" in rate.basis and "$2.50" in rate.basis


def test_a_zero_quote_is_a_quote() -> None:
    # A free allocation ($0) is a valid quote, not a missing one.
    assert resolve_rate(0.0, 4.0).usd_per_gpu_hour == 0.0


@pytest.mark.parametrize(
    ("median", "low", "high", "discount", "d_low", "d_high", "expected"),
    [
        # on demand: no discount, the band is the provider range as published
        (3.50, 2.50, 6.00, 0.0, 0.0, 0.0, (3.50, 2.50, 6.00)),
        # spot 40 % (observed 20-60 %): 3.50 x 0.6 = 2.10; low 2.50 x (1 - 0.6) = 1.00; high 6.00 x 0.8 = 4.80
        (3.50, 2.50, 6.00, 0.4, 0.2, 0.6, (2.10, 1.00, 4.80)),
        # 1-year commitment 35 % (observed 30-50 %): 4.00 x 0.65 = 2.60;
        # low 3.00 x (1 - 0.5) = 1.50; high 5.00 x (1 - 0.3) = 3.50
        (4.00, 3.00, 5.00, 0.35, 0.30, 0.50, (2.60, 1.50, 3.50)),
        # unknown provider low/high fall back to the median: low 4.00 x 0.5 = 2.00; high 4.00 x 0.7 = 2.80
        (4.00, None, None, 0.35, 0.30, 0.50, (2.60, 2.00, 2.80)),
        (4.00, math.nan, math.nan, 0.35, 0.30, 0.50, (2.60, 2.00, 2.80)),
        # one discount, no range: the band is the provider low/high only, 2.00 x 0.9 = 1.80, 5.00 x 0.9 = 4.50
        (3.00, 2.00, 5.00, 0.1, None, None, (2.70, 1.80, 4.50)),
    ],
)
def test_discounted_catalogue_rate(median, low, high, discount, d_low, d_high, expected) -> None:
    rate = resolve_rate(None, median, low, high, discount, d_low, d_high, pricing="spot")
    got = (rate.usd_per_gpu_hour, rate.usd_per_gpu_hour_low, rate.usd_per_gpu_hour_high)
    assert got == pytest.approx(expected, rel=1e-12)
    assert all(isinstance(value, float) for value in got)


def test_provider_bound_on_the_wrong_side_is_clipped() -> None:
    # A snapshot whose "low" exceeds the median must not produce low > rate.
    rate = resolve_rate(None, 3.0, 3.5, 2.5)
    assert rate.usd_per_gpu_hour_low == 3.0 and rate.usd_per_gpu_hour_high == 3.0


def test_basis_names_the_discount() -> None:
    basis = resolve_rate(
        None, 3.5, 2.5, 6.0, 0.4, 0.2, 0.6, pricing="spot", price_source="H100 SXM median"
    ).basis
    assert "H100 SXM median" in basis and "$3.50" in basis and "40%" in basis and "20%-60%" in basis
    assert "spot" in basis


def test_no_price_at_all_names_the_field() -> None:
    with pytest.raises(ValueError, match="usd_per_gpu_hour"):
        resolve_rate(None, None)


def test_unpriced_gpu_gives_nan_and_says_so() -> None:
    rate = resolve_rate(None, math.nan)
    assert math.isnan(rate.usd_per_gpu_hour)
    assert "enter your quote" in rate.basis


def test_cost_band_combines_hours_band_and_rate_band() -> None:
    # 10 GPU-h (8-12) at $2.10 ($1.00-$4.80), multiplier 2:
    # cost 10 x 2.10 x 2 = 42; low 8 x 1.00 x 2 = 16; high 12 x 4.80 x 2 = 115.2; one run 21.
    rate = resolve_rate(None, 3.5, 2.5, 6.0, 0.4, 0.2, 0.6)
    figures = cost_figures(
        10.0, rate, 1e8, experiments_multiplier=2.0, gpu_hours_low=8.0, gpu_hours_high=12.0
    )
    assert figures.cost_usd == pytest.approx(42.0, rel=1e-12)
    assert figures.cost_usd_low == pytest.approx(16.0, rel=1e-12)
    assert figures.cost_usd_high == pytest.approx(115.2, rel=1e-12)
    assert figures.single_run_cost_usd == pytest.approx(21.0, rel=1e-12)
    # the unit price leaves the multiplier out: $21 / 100 M tokens = $0.21 per million
    assert figures.usd_per_million_tokens == pytest.approx(0.21, rel=1e-12)


@given(
    median=st.floats(0.05, 50),
    low_share=st.floats(0.1, 1.5),
    high_share=st.floats(0.5, 3.0),
    discounts=st.lists(st.floats(0, 0.95), min_size=3, max_size=3),
    gpu_hours=st.floats(0.01, 1e7),
)
def test_band_ordering(median, low_share, high_share, discounts, gpu_hours) -> None:
    d_low, discount, d_high = sorted(discounts)
    rate = resolve_rate(None, median, median * low_share, median * high_share, discount, d_low, d_high)
    assert rate.usd_per_gpu_hour_low <= rate.usd_per_gpu_hour <= rate.usd_per_gpu_hour_high
    figures = cost_figures(
        gpu_hours, rate, 1e9, gpu_hours_low=gpu_hours * 0.8, gpu_hours_high=gpu_hours * 1.3
    )
    assert figures.cost_usd_low <= figures.cost_usd <= figures.cost_usd_high


@pytest.mark.parametrize("multiplier", [1.0, 1.5, 3.0])
def test_doubling_gpu_hours_doubles_cost(multiplier: float) -> None:
    rate = resolve_rate(None, 3.5, 2.5, 6.0, 0.4, 0.2, 0.6)
    one = cost_figures(100.0, rate, 1e9, multiplier, 80.0, 130.0)
    two = cost_figures(200.0, rate, 1e9, multiplier, 160.0, 260.0)
    for field in ("cost_usd", "cost_usd_low", "cost_usd_high", "single_run_cost_usd"):
        assert getattr(two, field) == pytest.approx(2 * getattr(one, field), rel=1e-12)
    # the unit price is per token, so it does not change when both hours and tokens double
    assert cost_figures(200.0, rate, 2e9).usd_per_million_tokens == pytest.approx(one.usd_per_million_tokens)


def test_vectorised_equals_scalar() -> None:
    # One row per GPU of a catalogue comparison; the third GPU has no published low/high.
    medians = np.array([3.5, 1.8, 6.5])
    lows = np.array([2.5, 1.2, np.nan])
    highs = np.array([6.0, 2.8, np.nan])
    hours = np.array([100.0, 250.0, 40.0])
    band = resolve_rate(None, medians, lows, highs, 0.4, 0.2, 0.6)
    figures = cost_figures(hours, band, 1e9, 1.5, hours * 0.9, hours * 1.2)
    for i in range(3):
        low_i = None if np.isnan(lows[i]) else float(lows[i])
        high_i = None if np.isnan(highs[i]) else float(highs[i])
        one_band = resolve_rate(None, float(medians[i]), low_i, high_i, 0.4, 0.2, 0.6)
        one = cost_figures(float(hours[i]), one_band, 1e9, 1.5, hours[i] * 0.9, hours[i] * 1.2)
        for field in ("cost_usd", "cost_usd_low", "cost_usd_high", "usd_per_million_tokens"):
            assert getattr(figures, field)[i] == pytest.approx(getattr(one, field), rel=1e-12)


def test_vectorised_rate_accepts_per_row_discounts() -> None:
    # A sweep over pricing modes: on demand, spot, 1-year commitment for the same GPU.
    band = resolve_rate(None, 4.0, 3.0, 5.0, np.array([0.0, 0.4, 0.35]), np.array([0.0, 0.2, 0.3]), 0.6)
    assert band.usd_per_gpu_hour == pytest.approx([4.0, 2.4, 2.6])
    assert band.usd_per_gpu_hour_low == pytest.approx([1.2, 1.2, 1.2])  # 3.00 x (1 - 0.6)
    assert band.usd_per_gpu_hour_high == pytest.approx([5.0, 4.0, 3.5])  # 5.00 x (1 - 0, 0.2, 0.3)


def test_experiments_multiplier_guidance() -> None:
    assert all(value >= 1.0 for value in EXPERIMENTS_MULTIPLIER_PRESETS.values())
    assert EXPERIMENTS_MULTIPLIER_PRESETS["repeat a working recipe"] == 1.0
    # a first fine-tune must be priced above twice a single run (the search costs more than the run)
    assert EXPERIMENTS_MULTIPLIER_PRESETS["first fine-tune of a new setup"] > 2.0
    assert "first fine-tune" in EXPERIMENTS_MULTIPLIER_GUIDANCE
