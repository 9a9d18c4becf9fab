"""Activation and logits memory: Korthikanti et al. 2022 Table 2 on GPT-3 175B, toy shapes, properties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner.formulas.memory.activations import (
    layer_activation_bytes,
    layer_input_bytes,
    logits_bytes,
    loss_bytes_per_logit,
    op_selective_layer_bytes,
    stack_activation_bytes,
)
from planner.formulas.memory.recipes import Recompute

# GPT-3 175B (Korthikanti et al. 2022, Table 3): a = 96 heads, h = 12288, s = 2048, 96 layers, t = 8.
# The paper's Table 2 model is MHA (g = a), GeLU MLP with F = 4h, dropout on, eager attention, 16-bit.
A, H, S, T = 96, 12288, 2048, 8
GPT3 = dict(hidden=H, n_heads=A, n_kv_heads=A, head_dim=H // A, ffn_hidden=4 * H, n_mlp_matrices=2)
SBH = S * 1 * H  # s·b·h with micro-batch 1 = 25,165,824
SCORE = 5 * A * S / H  # 5·a·s/h = 5·96·2048/12288 = 80


def gpt3_layer(tp=1, sp=0, recompute=Recompute.NONE):
    return layer_activation_bytes(
        S, 1, **GPT3, element_bytes=2, tp=tp, sequence_parallel=sp, flash_attention=0,
        recompute=recompute, dropout=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("label", "tp", "sp", "recompute", "sbh_factor"),
    [
        # Table 2, row by row, evaluated at t = 8:
        ("no parallelism: 34 + 5as/h = 34 + 80", 1, 0, Recompute.NONE, 34 + SCORE),
        (
            "tensor parallel: 10 + 24/t + 5as/(ht) = 10 + 3 + 10",
            T,
            0,
            Recompute.NONE,
            10 + 24 / T + SCORE / T,
        ),
        ("tensor + sequence parallel: (34 + 5as/h)/t = 114/8", T, 1, Recompute.NONE, (34 + SCORE) / T),
        ("tensor parallel + selective: 10 + 24/t = 13", T, 0, Recompute.SELECTIVE, 10 + 24 / T),
        ("tensor + sequence parallel + selective: 34/t = 4.25", T, 1, Recompute.SELECTIVE, 34 / T),
    ],
)
def test_korthikanti_table_2_on_gpt3(label, tp, sp, recompute, sbh_factor):
    assert gpt3_layer(tp, sp, recompute) == pytest.approx(sbh_factor * SBH, rel=1e-12), label


def test_korthikanti_full_recompute_keeps_2sbh_per_layer():
    # Table 2 last row: full recompute stores the layer input, 2·s·b·h bytes (÷t with sequence parallelism).
    assert layer_input_bytes(S, 1, H, 2) == pytest.approx(2 * SBH)
    assert layer_input_bytes(S, 1, H, 2, tp=T, sequence_parallel=1) == pytest.approx(2 * SBH / T)


def test_gpt3_without_parallelism_or_recompute_needs_256_gib_of_activations():
    # 96 layers × 114 × 25,165,824 B = 275,414,777,856 B = 256.5 GiB: the reason 175B needs recompute.
    total = 96 * gpt3_layer()
    assert total == pytest.approx(96 * 114 * 25_165_824)
    assert total / 2**30 == pytest.approx(256.5, rel=1e-3)


# Toy GQA/SwiGLU layer: h = 8, a = 4 query heads, g = 2 KV heads, d = 2, F = 16, s = 4, b = 1, 2 bytes.
TOY = dict(hidden=8, n_heads=4, n_kv_heads=2, head_dim=2, ffn_hidden=16, n_mlp_matrices=3, element_bytes=2)


def test_toy_gqa_swiglu_flash_layer():
    # per token: replicated 4·h·e = 4·8·2 = 64; split e·(2·a·d + 2·g·d + 3·F) = 2·(16 + 8 + 48) = 144;
    # flash statistics 4 bytes × 4 heads = 16 → 224 bytes/token × 4 tokens = 896.
    assert layer_activation_bytes(4, 1, **TOY, flash_attention=1) == pytest.approx(896)


def test_toy_eager_attention_adds_the_score_term():
    # eager, no dropout: a·s·e = 4·4·2 = 32 bytes/token instead of 16 → (64 + 144 + 32)·4 = 960.
    assert layer_activation_bytes(4, 1, **TOY, flash_attention=0) == pytest.approx(960)
    # with dropout: scores a·s·(e + 1 + e) = 80 and masks 2·h·1 = 16 per token → (64+16+144+80)·4 = 1216.
    assert layer_activation_bytes(4, 1, **TOY, flash_attention=0, dropout=1) == pytest.approx(1216)


def test_toy_gqa_heads_replicated_when_fewer_than_tp():
    # t = 4 > g = 2: each rank keeps one K and one V head. split = 2·(2·4·2/4 + 2·4·2/4 + 3·16/4) = 2·20 = 40
    # per token; replicated 64 (no SP); flash 16/4 = 4 → 108·4 tokens = 432.
    assert layer_activation_bytes(4, 1, **TOY, tp=4) == pytest.approx(432)


def test_toy_op_level_selective():
    # layer input + half of the row-parallel outputs: h·(1 + 2·½) = 16; attention output a·d = 8 plus half of
    # q (8), k (4), v (4), gate/up ((3 − 1)·16 = 32) = 24 → (16 + 8 + 24)·e = 96; stats 16 → 112·4 = 448.
    assert op_selective_layer_bytes(4, 1, **TOY) == pytest.approx(448)


def test_context_parallel_divides_every_term():
    whole = layer_activation_bytes(4096, 2, **TOY, flash_attention=0)
    assert layer_activation_bytes(4096, 2, **TOY, flash_attention=0, cp=4) == pytest.approx(whole / 4)


def test_stack_full_recompute_keeps_inputs_plus_one_working_layer():
    # 10 layers × 5 B kept + one 100 B working set = 150; offload leaves two kept layers on the GPU.
    assert stack_activation_bytes(10, 5.0, 100.0) == pytest.approx((150.0, 0.0))
    assert stack_activation_bytes(10, 5.0, 100.0, offload=1) == pytest.approx((110.0, 40.0))


def test_logits_standard_and_fused():
    # bf16: 2 + 3·4 = 14 bytes per logit; fused/chunked: 2·(1 + 1/8) = 2.25.
    assert loss_bytes_per_logit(2.0) == pytest.approx(14.0)
    assert loss_bytes_per_logit(2.0, 1) == pytest.approx(2.25)
    # Llama 3 vocabulary, 8192 tokens: 8192·(2·4096·2 + 128256·14) = 14,843,641,856 bytes.
    assert logits_bytes(8192, 1, 128256, 4096, 2.0) == pytest.approx(8192 * (2 * 4096 * 2 + 128256 * 14))
    assert logits_bytes(8192, 1, 128256, 4096, 2.0, tp=8) < logits_bytes(8192, 1, 128256, 4096, 2.0) / 7


LLAMA_8B = dict(hidden=4096, n_heads=32, n_kv_heads=8, head_dim=128, ffn_hidden=14336, n_mlp_matrices=3)


@pytest.mark.parametrize("flash", [0, 1])
@pytest.mark.parametrize(("tp", "sp"), [(1, 0), (4, 0), (4, 1)])
def test_recompute_modes_are_ordered(flash, tp, sp):
    """full ≤ op-level ≤ none and selective ≤ none, for a 32-layer stack."""
    common = dict(**LLAMA_8B, element_bytes=2, tp=tp, sequence_parallel=sp, flash_attention=flash)
    none = layer_activation_bytes(8192, 2, **common, recompute=Recompute.NONE)
    selective = layer_activation_bytes(8192, 2, **common, recompute=Recompute.SELECTIVE)
    op_kept = op_selective_layer_bytes(8192, 2, **common)
    kept_input = layer_input_bytes(8192, 2, 4096, 2, tp, 1, sp)
    stack = {
        "none": stack_activation_bytes(32, none, 0.0)[0],
        "selective": stack_activation_bytes(32, selective, 0.0)[0],
        "op": stack_activation_bytes(32, op_kept, none)[0],
        "full": stack_activation_bytes(32, kept_input, none)[0],
    }
    assert stack["selective"] <= stack["none"]
    assert stack["full"] <= stack["op"] <= stack["none"]
    assert stack["full"] <= stack["selective"]
    if not flash:
        assert stack["selective"] < stack["none"]


@pytest.mark.parametrize("recompute", [Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL])
def test_activations_grow_with_micro_batch_and_sequence(recompute):
    sizes = [(1024, 1), (1024, 2), (2048, 2), (4096, 2), (4096, 8)]
    values = [
        layer_activation_bytes(s, b, **LLAMA_8B, element_bytes=2, flash_attention=0, recompute=recompute)
        for s, b in sizes
    ]
    assert all(later > earlier for earlier, later in itertools.pairwise(values))


def test_vectorised_call_equals_scalar_calls():
    rng = np.random.default_rng(7)
    seq = rng.choice([512.0, 2048.0, 8192.0], 50)
    batch = rng.integers(1, 9, 50).astype(float)
    tp = rng.choice([1.0, 2.0, 8.0], 50)
    flash = rng.integers(0, 2, 50).astype(float)
    recompute = rng.integers(0, 3, 50).astype(float)
    vector = layer_activation_bytes(
        seq, batch, **LLAMA_8B, element_bytes=2.0, tp=tp, flash_attention=flash, recompute=recompute
    )
    for i in range(50):
        scalar = layer_activation_bytes(
            seq[i], batch[i], **LLAMA_8B, element_bytes=2.0, tp=tp[i], flash_attention=flash[i],
            recompute=recompute[i],
        )  # fmt: skip
        assert vector[i] == pytest.approx(float(scalar), rel=1e-12)
