"""LoRA and QLoRA speed: the 4-bit base dequantised every pass and the adapters' thin matmuls
cost memory-bandwidth time (planner/formulas/step/adapter_time.py, composed in planner/step_parts.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import Scenario, default_catalogs, estimate
from planner.formulas.memory.recipes import nf4_bytes_per_param
from planner.formulas.step import adapter_time

CATS = default_catalogs()

# Llama 3.1 8B (Meta's config.json: 32 layers, hidden 4096, 8 KV heads of 128, MLP 14336, vocab 128256, untied).
LLAMA_8B_PARAMS = 8_030_261_248
LLAMA_8B_TABLE = 128_256 * 4_096  # 525,336,576: the embedding, and the output head again (untied)
LLAMA_8B_LAYER_WEIGHTS = LLAMA_8B_PARAMS - 2 * LLAMA_8B_TABLE  # 6,979,588,096
# Σ (d_in + d_out) per layer over q, k, v, o, gate, up, down = 8192 + 5120 + 5120 + 8192 + 3 × 18432 = 81,920.
LLAMA_8B_ADAPTER_IO = 32 * 81_920  # 2,621,440 elements per token
H100_SXM_BYTES_PER_S = 3.35e12  # data/gpus.csv memory_bw_tb_per_s
DEFAULT_TOKENS = 1_024  # one micro-batch of the derived sequence length (1,000-token examples, packed)


def test_nf4_dequantisation_bytes_written_out():
    # Double-quantised NF4: (4 + 8/64 + 32/(64·256)) / 8 = 0.515869140625 B read, 2 B of bf16 written.
    nf4 = nf4_bytes_per_param(True)
    assert nf4 == pytest.approx(0.515869140625, rel=1e-12)
    assert adapter_time.dequant_bytes_per_weight(nf4) == pytest.approx(2.515869140625, rel=1e-12)
    # 1e9 weights, no recomputation (2 passes), 4 micro-batches: 1e9 × 2.515869 × 2 × 4 = 20.127 GB.
    assert adapter_time.dequant_step_bytes(1e9, nf4, 0, 4) == pytest.approx(20.12695e9, rel=1e-6)
    # Full recomputation dequantises a third time per micro-batch.
    assert adapter_time.dequant_step_bytes(1e9, nf4, 1, 4) == pytest.approx(30.19043e9, rel=1e-6)


def test_adapter_bytes_written_out():
    # 1e6 elements in and out per token, bf16, 1,000 tokens: 1e6 × (1.5 + 2) × 2 B × 1,000 = 7.0e9 B;
    # recomputation repeats the forward's 1.5: 1e6 × 5 × 2 × 1,000 = 1.0e10 B.
    assert adapter_time.adapter_step_bytes(1e6, 2.0, 0, 1_000) == pytest.approx(7.0e9, rel=1e-12)
    assert adapter_time.adapter_step_bytes(1e6, 2.0, 1, 1_000) == pytest.approx(1.0e10, rel=1e-12)
    # 2.68e12 B/s is 80 % of an H100 SXM's 3.35 TB/s: 7.0e9 B take 2.612 ms.
    assert adapter_time.memory_bound_time_s(7.0e9, H100_SXM_BYTES_PER_S) == pytest.approx(2.6119e-3, rel=1e-4)


def _plan(method: str, **changes: object):
    return estimate(Scenario(model="Llama 3.1 8B", method=method, gpu="H100 SXM", n_gpus=1, **changes), CATS)


def test_qlora_8b_on_one_h100_pays_dequantisation_and_adapters():
    """The issue's plan (QLoRA, Llama 3.1 8B, one H100), by hand from the shape:
    dequantisation 6,979,588,096 × 2.515869 B × 2 passes = 35.12 GB;
    adapters 2,621,440 × 3.5 × 2 B × 1,024 tokens = 18.79 GB; (35.12 + 18.79) GB / 2.68 TB/s = 20.12 ms."""
    dequant = LLAMA_8B_LAYER_WEIGHTS * (nf4_bytes_per_param(True) + 2.0) * 2
    adapters = LLAMA_8B_ADAPTER_IO * 3.5 * 2.0 * DEFAULT_TOKENS
    assert dequant == pytest.approx(35.12e9, rel=1e-3) and adapters == pytest.approx(18.79e9, rel=1e-3)
    qlora = _plan("qlora")
    assert qlora.adapter_memory_time_s == pytest.approx((dequant + adapters) / 2.68e12, rel=1e-9)
    assert qlora.adapter_memory_time_s == pytest.approx(0.02012, rel=1e-3)
    # LoRA keeps a 16-bit base: only the adapters' 18.79 GB, 7.01 ms; full training has no adapters.
    assert _plan("lora").adapter_memory_time_s == pytest.approx(adapters / 2.68e12, rel=1e-9)
    assert _plan("full").adapter_memory_time_s == 0.0


def test_the_memory_bound_work_is_inside_the_step_time():
    plan = _plan("qlora")
    assert plan.adapter_memory_time_s < plan.step_time_s
    # Four micro-batches of accumulation: dequantisation 4 times, adapters on 4 times the tokens.
    assert _plan("qlora", grad_accum=4).adapter_memory_time_s == pytest.approx(
        4 * plan.adapter_memory_time_s, rel=1e-9
    )


def test_your_own_end_to_end_mfu_already_holds_it():
    own = _plan("qlora", mfu=0.3)
    assert own.adapter_memory_time_s == 0.0
    # The seed's form: time = FLOPs / (GPUs × peak × MFU), nothing added (the 20 ms above would be +19 %;
    # 1e-4 allows the rounding of the reported step count).
    assert own.step_time_s == pytest.approx(own.model_flops / own.n_steps / (989.5e12 * 0.3), rel=1e-4)


def test_full_recomputation_adds_a_dequantisation_pass_and_a_forward_of_the_adapters():
    plain, recomputed = _plan("qlora"), _plan("qlora", recompute="full")
    dequant = LLAMA_8B_LAYER_WEIGHTS * (nf4_bytes_per_param(True) + 2.0)
    adapters = LLAMA_8B_ADAPTER_IO * 2.0 * DEFAULT_TOKENS
    extra_s = (dequant + 1.5 * adapters) / 2.68e12
    assert recomputed.adapter_memory_time_s - plain.adapter_memory_time_s == pytest.approx(extra_s, rel=1e-9)


@given(
    weights=st.floats(1e6, 1e12),
    io=st.floats(0, 1e8),
    recompute=st.sampled_from([0, 1]),
    micro_batches=st.integers(1, 64),
    tokens=st.integers(1, 1 << 20),
    bandwidth=st.floats(1e11, 1e13),
)
def test_more_bandwidth_never_costs_more_time(weights, io, recompute, micro_batches, tokens, bandwidth):
    nf4 = nf4_bytes_per_param(True)
    step_bytes = adapter_time.dequant_step_bytes(weights, nf4, recompute, micro_batches)
    step_bytes = step_bytes + adapter_time.adapter_step_bytes(io, 2.0, recompute, tokens * micro_batches)
    slow = adapter_time.memory_bound_time_s(step_bytes, bandwidth)
    assert slow > 0
    assert adapter_time.memory_bound_time_s(step_bytes, 2 * bandwidth) == pytest.approx(slow / 2, rel=1e-12)
