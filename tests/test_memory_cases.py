"""Case rows → memory inputs: keyword rules, stated defaults, skips, and the calibration summary."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from planner.cases.memory_cases import (
    memory_inputs_from_case,
    parse_optimizer,
    parse_precision,
    parse_recompute,
    parse_sharding,
    predict_memory_case,
)
from planner.formulas.recipes import RECOMPUTE_CODES

CASES = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"  # copy of shared/reference/

LLAMA_8B_ROW = {
    "case_id": "toy-8b",
    "category": "memory",
    "model": "Llama 3.1 8B",
    "params_b": "8.03",
    "n_layers": "32",
    "hidden": "4096",
    "n_heads": "32",
    "n_kv_heads": "8",
    "ffn_hidden": "14336",
    "vocab": "128256",
    "seq_len": "8192",
    "micro_batch": "2",
    "global_batch": "16",
    "method": "full",
    "optimizer": "AdamW",
    "precision": "bf16 mixed",
    "zero_stage_or_fsdp": "FSDP2 (fully_shard, 8-way)",
    "tp": "1",
    "pp": "1",
    "dp": "8",
    "cp": "1",
    "activation_ckpt": "selective (per-op SAC)",
    "flash_attn": "yes (PyTorch SDPA)",
    "n_gpus": "8",
    "measured_value": "82.4",
    "measured_unit": "gib_peak_reserved_per_gpu",
    "notes": "",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bf16 mixed", "bf16_mixed"),
        ("bf16 mixed + float8 linears (tensorwise)", "fp8_mixed"),
        ("bf16 (pure bf16 weights), NF4 base weights", "bf16_pure"),
        ("fp16 AMP", "fp16_mixed"),
        ("", "fp32"),  # unstated: PyTorch's default dtype
    ],
)
def test_parse_precision(text, expected):
    assert parse_precision(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AdamW", "adamw"),
        ("8-bit AdamW (optimizer_in_bwd)", "adamw_8bit"),
        ("PagedAdamW8bit (bitsandbytes)", "adamw_8bit"),
        ("SGD with momentum", "sgd_momentum"),
        ("Adafactor", "adafactor"),
    ],
)
def test_parse_optimizer(text, expected):
    assert parse_optimizer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FSDP2 (fully_shard, 8-way)", (3, False, False)),
        ("FSDP + fsdp_cpu_offload", (3, False, True)),
        ("DeepSpeed ZeRO-3 + CPU offload", (3, False, True)),
        ("ZeRO-1", (1, False, False)),
        ("SHARD_GRAD_OP", (2, False, False)),
        ("HYBRID_SHARD (FSDP)", (3, True, False)),
        ("none (single GPU)", (0, False, False)),
    ],
)
def test_parse_sharding(text, expected):
    assert parse_sharding(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", (RECOMPUTE_CODES["none"], False)),
        ("selective", (RECOMPUTE_CODES["selective"], False)),
        ("selective (per-op SAC)", (RECOMPUTE_CODES["selective_op"], False)),
        ("full (recipe default)", (RECOMPUTE_CODES["full"], False)),
        ("full + activation offloading to CPU", (RECOMPUTE_CODES["full"], True)),
    ],
)
def test_parse_recompute(text, expected):
    assert parse_recompute(text) == expected


def test_row_maps_to_inputs():
    inputs = memory_inputs_from_case(LLAMA_8B_ROW)
    assert not isinstance(inputs, str)
    assert inputs.n_params == pytest.approx(8.03e9)
    assert (inputs.zero_stage, inputs.dp, inputs.recompute) == (3, 8, RECOMPUTE_CODES["selective_op"])
    assert (inputs.n_mlp_matrices, inputs.n_head_params) == (3, 128256 * 4096)  # SwiGLU, untied head
    assert inputs.grad_accum == 1  # global 16 / (micro-batch 2 × dp 8)
    assert inputs.flash_attention == 1
    assert inputs.fused_cross_entropy == 0


def test_unpublished_micro_batch_fills_the_pipeline():
    # pp 8, dp 8, global batch 256 sequences, micro-batch unstated: 8 micro-batches of 4 per step.
    row = {**LLAMA_8B_ROW, "micro_batch": "", "pp": "8", "dp": "8", "n_gpus": "64", "global_batch": "256"}
    inputs = memory_inputs_from_case(row)
    assert not isinstance(inputs, str)
    assert (inputs.micro_batch, inputs.grad_accum) == (4, 8)


def test_chunked_loss_read_from_notes_or_loss_column():
    for extra in ({"notes": "packed, compile, chunked CE"}, {"loss": "chunked cross-entropy"}):
        inputs = memory_inputs_from_case({**LLAMA_8B_ROW, **extra})
        assert not isinstance(inputs, str) and inputs.fused_cross_entropy == 1


@pytest.mark.parametrize(
    ("change", "reason_word"),
    [
        ({"measured_unit": "gb_upper_bound_per_gpu"}, "upper bound"),
        ({"measured_unit": "tokens_per_s_per_gpu"}, "not a memory row"),
        ({"notes": "no packing, Alpaca samples"}, "unpacked"),
        ({"optimizer": "PagedAdamW8bit"}, "paged"),
        ({"hidden": ""}, "hidden"),
    ],
)
def test_skip_reasons(change, reason_word):
    reason = memory_inputs_from_case({**LLAMA_8B_ROW, **change})
    assert isinstance(reason, str) and reason_word in reason


def test_units_are_converted():
    gib = predict_memory_case(LLAMA_8B_ROW)
    gb = predict_memory_case({**LLAMA_8B_ROW, "measured_unit": "gb_peak_per_gpu_unspecified"})
    allocated = predict_memory_case({**LLAMA_8B_ROW, "measured_unit": "gib_peak_allocated_per_gpu"})
    assert gib.statistic == "reserved" and allocated.statistic == "allocated"
    assert gib.predicted == pytest.approx(allocated.predicted * 1.10)  # default 10 % fragmentation
    assert gb.predicted == pytest.approx(allocated.predicted * 2**30 / 1e9)


@pytest.mark.skipif(not CASES.exists(), reason="reference/calibration.csv is not beside this checkout")
def test_calibration_rows_summary():
    """The whole memory set of reference/calibration.csv through one mapping (scripts/check_memory_rows.py)."""
    with CASES.open(newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["category"] == "memory"]
    cases = [predict_memory_case(row) for row in rows]
    errors = np.array([abs(c.rel_error) for c in cases if c.rel_error is not None])
    skipped = [c for c in cases if c.skipped_reason]
    assert len(skipped) <= 5
    # Measured here: median 9.6 %. Rows beyond 30 % lack a fact in the case file (torchtune's chunked
    # loss, a contradictory 4090/A6000 pair, DeepSpeed's parameter cache); see the script's report.
    assert np.median(errors) <= 0.10
