"""Whole plans through the CLI and the app: the examples the issues name, with their per-component breakdown."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

MEMORY_KEYS = (
    "weights_gib",
    "gradients_gib",
    "optimizer_gib",
    "activations_gib",
    "logits_gib",
    "overhead_gib",
)


def cli_json(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *args, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_model_by_name_reports_total_and_active_parameters():
    out = cli_json("--model", "Llama 3.1 8B", "--gpu", "H100 SXM")
    # Llama 3.1 8B: 8,030,261,248 parameters (Hugging Face model card / safetensors index).
    assert out["n_params"] == 8_030_261_248
    assert out["n_active_params"] == out["n_params"]


def test_mixture_of_experts_separates_total_from_active():
    out = cli_json("--model", "Mixtral 8x7B", "--gpu", "H100")
    # Mixtral 8x7B: 46.7 B total, 12.9 B active per token (Mistral AI announcement).
    assert out["n_params"] == pytest.approx(46.7e9, rel=0.01)
    assert out["n_active_params"] == pytest.approx(12.9e9, rel=0.02)


def test_full_fine_tune_8b_zero3_full_recompute_on_8_h100_has_a_breakdown_that_fits():
    out = cli_json(
        "--model",
        "Llama 3.1 8B",
        "--gpu",
        "H100 SXM",
        "--devices",
        "8",
        "--zero",
        "3",
        "--recompute",
        "full",
        "--seq-len",
        "8192",
    )
    for key in MEMORY_KEYS:
        assert out[key] is not None and out[key] >= 0, key
    # ZeRO-3 over 8 replicas: 16 B/param x 8.03e9 / 8 = 14.96 GiB of model states per GPU.
    states = out["weights_gib"] + out["gradients_gib"] + out["optimizer_gib"] + out["master_gib"]
    assert states == pytest.approx(8_030_261_248 * 16 / 8 / 2**30, rel=0.02)
    assert out["fits_vram"] is True and out["peak_gib_per_device"] < 79.65


def test_qlora_8b_on_one_24_gib_gpu_has_a_breakdown():
    out = cli_json(
        "--model",
        "Llama 3.1 8B",
        "--method",
        "qlora",
        "--gpu",
        "RTX 4090",
        "--devices",
        "1",
        "--recompute",
        "full",
        "--zero",
        "0",
    )
    for key in MEMORY_KEYS:
        assert out[key] is not None, key
    # NF4 base: 0.5 B/param for the linear layers plus quantisation constants; the embedding and head stay
    # 16-bit (2 x 128,256 x 4,096 x 2 B = 1.96 GiB), so the weights are well under 16 B/param x N.
    assert 4.0 < out["weights_gib"] < 7.0
    assert out["gradients_gib"] < 0.5  # adapters only


def test_memory_shrinks_with_each_zero_stage_and_recompute_mode():
    base = Scenario(n_gpus=8)
    peaks = [
        estimate(base.updated(zero_stage=z), default_catalogs()).peak_gib_per_device for z in (0, 1, 2, 3)
    ]
    assert peaks == sorted(peaks, reverse=True)
    acts = [
        estimate(base.updated(recompute=r), default_catalogs()).activations_gib
        for r in ("none", "selective", "full")
    ]
    assert acts[0] >= acts[1] >= acts[2]


@pytest.mark.parametrize("field", ["micro_batch", "seq_len"])
def test_memory_grows_with_micro_batch_and_sequence_length(field):
    base = Scenario(n_gpus=8, micro_batch=1, seq_len=2048)
    small = estimate(base, default_catalogs()).peak_gib_per_device
    large = estimate(
        base.updated(**{field: getattr(base, field) * 2}), default_catalogs()
    ).peak_gib_per_device
    assert large > small
