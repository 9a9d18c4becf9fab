"""The seed's worked example (shared/seeds, "Fine-Tuning Run Planner"): every figure reproduced exactly."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

SEED_FLAGS = {
    "examples": 30_000,
    "tokens_per_example": 1000,
    "epochs": 3,
    "params_b": 8,
    "flops_per_param_token": 6,
    "peak_tflops": 400,
    "mfu": 0.3,
    "n_gpus": 4,
    "usd_per_gpu_hour": 2,
    "bytes_per_param": 16,
    "vram_gib": 80,
}
CLI_FLAGS = [
    "--examples",
    "30000",
    "--tokens-per-example",
    "1000",
    "--epochs",
    "3",
    "--params-b",
    "8",
    "--flops-per-param-token",
    "6",
    "--peak-tflops",
    "400",
    "--mfu",
    "0.3",
    "--devices",
    "4",
    "--usd-per-device-hour",
    "2",
    "--bytes-per-param",
    "16",
    "--vram-gib",
    "80",
]

# The seed's printed figures: 90,000,000 tokens; 4.32e+18 FLOP; 1.20e+14 and 4.80e+14 FLOP/s; 2.5 h;
# 10.0 device-hours; $20.00; 10,000 tokens/s; 119.21 GiB; 29.80 GiB; fits.
EXPECTED = {
    "training_tokens": 90_000_000,
    "total_flops": 4.32e18,
    "per_device_flops_per_s": 1.20e14,
    "cluster_flops_per_s": 4.80e14,
    "wall_clock_h": 2.5,
    "device_hours": 10.0,
    "cost_usd": 20.00,
    "tokens_per_s": 10_000,
}


def seed_scenario() -> Scenario:
    return Scenario(model="", **SEED_FLAGS)


def test_seed_figures_through_the_library():
    result = estimate(seed_scenario(), default_catalogs())
    for key, value in EXPECTED.items():
        assert getattr(result, key) == pytest.approx(value, rel=1e-9), key
    assert round(result.model_state_gib_total, 2) == 119.21
    assert round(result.model_state_gib_per_device, 2) == 29.80
    assert result.fits_vram is True


def test_seed_figures_through_the_cli():
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *CLI_FLAGS, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(done.stdout)
    for key, value in EXPECTED.items():
        assert out[key] == pytest.approx(value, rel=1e-9), key
    assert round(out["model_state_gib_total"], 2) == 119.21
    assert round(out["model_state_gib_per_device"], 2) == 29.80
    assert out["fits_vram"] is True


@pytest.mark.parametrize("fmt", [["table", "--all"], ["csv"]], ids=["table --all", "csv"])
def test_other_formats_carry_the_same_figures(fmt):
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *CLI_FLAGS, "--format", *fmt],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "training_tokens" in done.stdout and "90000000" in done.stdout.replace(",", "").replace(".0", "")
