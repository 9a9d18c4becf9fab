"""Parameter counts: every preset against its published count, toy shapes with the arithmetic written out."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.catalogue.models import find_model, load_model_presets
from planner.model.architecture import (
    attention_params_per_layer,
    count_params,
    linear_params_all_layers,
    linear_params_per_layer,
    lora_adapter_params,
    mlp_params,
)
from planner.model.shape import ModelShape

PRESETS = load_model_presets()
PRESET_ROWS = list(PRESETS.iter_rows(named=True))
MOE_ROWS = [row for row in PRESET_ROWS if row["n_experts"] > 0]


def toy(**changes) -> ModelShape:
    """V=100, h=8, 2 layers, 2 heads of width 4 (MHA), SwiGLU F=16, RMSNorm, untied."""
    base = dict(vocab_size=100, hidden_size=8, n_layers=2, n_heads=2, n_kv_heads=2, head_dim=4, ffn_hidden=16)
    return ModelShape(**(base | changes))


@pytest.mark.parametrize("row", PRESET_ROWS, ids=[row["name"] for row in PRESET_ROWS])
def test_preset_total_matches_published_count(row):
    # n_params_published: Hub safetensors totals, paper tables or llm-foundry NumParams (each row's source)
    counts = count_params(find_model(PRESETS, row["name"]))
    assert counts.total == pytest.approx(row["n_params_published"], rel=0.01)


@pytest.mark.parametrize("row", PRESET_ROWS, ids=[row["name"] for row in PRESET_ROWS])
def test_components_sum_to_total_and_dense_active_is_total(row):
    counts = count_params(find_model(PRESETS, row["name"]))
    parts = [counts.embedding, counts.position, counts.attention, counts.mlp, counts.norms, counts.router]
    assert sum(parts) + counts.head == counts.total
    assert counts.active == counts.total - counts.mlp + counts.mlp_active
    if row["n_experts"] == 0:
        assert counts.active == counts.total and counts.mlp_active == counts.mlp and counts.router == 0


@pytest.mark.parametrize("row", MOE_ROWS, ids=[row["name"] for row in MOE_ROWS])
def test_moe_active_matches_published_active_count(row):
    # Active counts are announced rounded to two significant figures (12.9B, 37B, 3.3B): up to 1.6 % off.
    counts = count_params(find_model(PRESETS, row["name"]))
    assert counts.active == pytest.approx(row["n_params_active_published"], rel=0.02)
    assert counts.active < counts.total


@pytest.mark.parametrize(
    ("name", "exact"),
    [
        ("Llama 3.1 8B", 8_030_261_248),  # Hub safetensors total, meta-llama/Llama-3.1-8B
        ("Llama 3.2 1B", 1_235_814_400),  # tied embeddings, head_dim 64
        ("Qwen2.5 7B", 7_615_616_512),  # q, k, v biases but no o_proj bias
        ("Gemma 2 9B", 9_241_705_984),  # head_dim 256 != 3584/16, four norms per layer, tied
        ("Mixtral 8x7B", 46_702_792_704),  # 8 experts
        ("Qwen1.5 MoE A2.7B", 14_315_784_192),  # shared experts + shared-expert gate
        ("Qwen3 8B", 8_190_735_360),  # q/k norms
        ("Falcon 7B", 6_921_720_704),  # multi-query attention, one LayerNorm per layer
        ("GPT-2 small", 124_439_808),  # learned positions, all biases, LayerNorm
        ("MPT-70b (llm-foundry benchmark config)", 64_862_437_376),  # llm-foundry NumParams at seq 2048
    ],
)
def test_exact_published_counts(name, exact):
    assert count_params(find_model(PRESETS, name)).total == exact


@pytest.mark.parametrize(
    ("name", "seq_len", "num_params"),
    [
        # llm-foundry benchmarking README NumParams (reference/calibration.csv LF-09, LF-10, LF-06, LF-07):
        # the learned position table has max_seq_len rows, so the count grows by seq_len x d_model.
        ("MPT-7b (llm-foundry benchmark config)", 8192, 6_684_024_832),
        ("MPT-7b (llm-foundry benchmark config)", 65536, 6_918_905_856),
        ("MPT-13b (llm-foundry benchmark config)", 4096, 12_864_440_320),
        ("MPT-13b (llm-foundry benchmark config)", 32768, 13_011_240_960),
    ],
)
def test_mpt_position_table_sized_to_seq_len(name, seq_len, num_params):
    shape = find_model(PRESETS, name).model_copy(update={"learned_pos_embeddings": seq_len})
    assert count_params(shape).total == num_params


def test_toy_mha_untied():
    counts = count_params(toy())
    assert counts.embedding == 800 and counts.head == 800  # 100 x 8 each, untied
    assert counts.attention == 2 * (4 * 8 * 8)  # q, k, v, o are 8x8 each = 256 per layer
    assert counts.mlp == 2 * (3 * 8 * 16)  # gate, up, down 8x16 = 384 per layer
    assert counts.norms == 2 * 2 * 8 + 8  # two RMSNorms per layer + final = 40
    assert counts.total == 800 + 800 + 512 + 768 + 40  # 2920


def test_toy_gqa_and_mqa_shrink_only_k_and_v():
    # 4 heads of width 2 on h=8: q and o stay 8x8 = 64 each.
    assert attention_params_per_layer(8, 4, 2, 2, 0, 0) == 64 + 2 * (8 * 4) + 64  # GQA, k/v 8x4: 192
    assert attention_params_per_layer(8, 4, 1, 2, 0, 0) == 64 + 2 * (8 * 2) + 64  # MQA, k/v 8x2: 160
    assert count_params(toy(n_heads=4, n_kv_heads=1, head_dim=2)).attention == 2 * 160


def test_toy_tied_embeddings_drop_the_head():
    assert count_params(toy(tied_embeddings=True)).head == 0
    assert count_params(toy()).total - count_params(toy(tied_embeddings=True)).total == 800


def test_toy_gpt2_layout_is_12h2_plus_13h_per_layer():
    shape = toy(
        vocab_size=10,
        hidden_size=4,
        n_layers=1,
        n_heads=2,
        n_kv_heads=2,
        head_dim=2,
        ffn_hidden=16,
        mlp_kind="gelu",
        norm_kind="layernorm",
        tied_embeddings=True,
        learned_pos_embeddings=6,
        attn_bias=True,
        mlp_bias=True,
        family="gpt2",
    )
    counts = count_params(shape)
    assert counts.attention == 4 * 16 + (3 * 4 + 4)  # 80: four 4x4 matrices + q,k,v,o biases
    assert counts.mlp == 2 * 4 * 16 + (16 + 4)  # 148: up 4x16, down 16x4 + biases
    assert counts.norms == 2 * (2 * 4) + 2 * 4  # 24: two LayerNorms (weight + bias) + final
    assert counts.attention + counts.mlp + 2 * 2 * 4 == 12 * 4**2 + 13 * 4  # 244 per layer
    assert counts.total == 40 + 24 + 80 + 148 + 24  # embedding 10x4 + positions 6x4 = 316


def test_toy_moe_total_and_active():
    # h=4, 2 layers: layer 0 dense (F=8), layer 1 MoE with 4 routed experts (F=2), top-1, 1 shared expert.
    shape = toy(
        vocab_size=10,
        hidden_size=4,
        n_heads=1,
        n_kv_heads=1,
        head_dim=4,
        ffn_hidden=8,
        n_experts=4,
        n_experts_active=1,
        n_shared_experts=1,
        moe_ffn_hidden=2,
        n_dense_layers=1,
    )
    counts = count_params(shape)
    assert counts.mlp == 3 * 4 * 8 + (4 + 1) * (3 * 4 * 2)  # dense 96 + five experts of 24 = 216
    assert counts.mlp_active == 96 + (1 + 1) * 24  # 144
    assert counts.router == 4 * 4  # one MoE layer, h x E
    assert counts.total == 40 + 40 + 2 * 64 + 216 + 16 + (2 * 2 * 4 + 4)  # 460
    assert counts.active == 460 - 216 + 144  # 388


def test_family_rules_change_only_their_terms():
    llama_bias = count_params(toy(attn_bias=True)).attention - count_params(toy()).attention
    qwen_bias = count_params(toy(attn_bias=True, family="qwen2")).attention - count_params(toy()).attention
    assert llama_bias == 2 * (3 * 8 + 8)  # q, k, v (8 each) and o (8) biases per layer
    assert qwen_bias == 2 * (3 * 8)  # Qwen2: q, k, v only
    assert count_params(toy(family="gemma2")).norms == 2 * 4 * 8 + 8  # four norms per layer
    assert count_params(toy(family="qwen3")).norms == 2 * (2 * 8 + 2 * 4) + 8  # + q/k norms of head_dim 4
    assert (
        count_params(toy(family="falcon", norm_kind="layernorm")).norms == 2 * (2 * 8) + 2 * 8
    )  # 1 LN/layer
    mpt_no_bias = count_params(toy(family="mpt", norm_kind="layernorm"))
    assert mpt_no_bias.norms == 2 * 2 * 8 + 8  # no_bias also strips LayerNorm biases


def test_component_formulas_broadcast_over_arrays():
    hidden = np.array([8, 4096])
    assert np.array_equal(mlp_params(hidden, 16, 3, 0), 3 * hidden * 16)
    # 2 heads of width 4: q, k, v columns (2 + 2x2) x 4 = 24, o rows 8 -> h x 32 weights, 24 + h biases.
    expected = hidden * 32 + 24 + hidden  # [288, 135192]
    assert np.array_equal(attention_params_per_layer(hidden, 2, 2, 4, 1, 1), expected)
    as_scalars = [attention_params_per_layer(int(one), 2, 2, 4, 1, 1) for one in hidden]
    assert as_scalars == expected.tolist()


def test_lora_toy_and_published_peft_counts():
    # toy: q, k, v, o each 8 + 8 = 16 dims -> 64 per layer; MLP gate/up/down 8 + 16 = 24 each -> 72.
    assert lora_adapter_params(toy(), 8, "attention") == 8 * 2 * 64
    assert lora_adapter_params(toy(), 8, "all_linear") == 8 * 2 * (64 + 72)
    llama2_7b, llama3_8b = find_model(PRESETS, "Llama 2 7B"), find_model(PRESETS, "Llama 3.1 8B")
    # PEFT print_trainable_parameters: Llama-2-7B r=16 all-linear 39,976,960; Llama-3-8B r=16 41,943,040;
    # Llama-2-7B r=8 on q,k,v,o 8,388,608 (4 matrices x 8 x (4096+4096) x 32 layers).
    assert lora_adapter_params(llama2_7b, 16, "all_linear") == 39_976_960
    assert lora_adapter_params(llama3_8b, 16, "all_linear") == 41_943_040
    assert lora_adapter_params(llama2_7b, 8, "attention") == 8_388_608
    assert np.array_equal(lora_adapter_params(toy(), np.array([8, 16]), "attention"), [1024, 2048])
    with pytest.raises(ValueError, match="targets"):
        lora_adapter_params(toy(), 8, "mlp")  # type: ignore[arg-type]


def test_lora_on_moe_adapts_every_expert():
    # Mixtral 8x7B r=16: attention per layer 16 x (2x(4096+4096) + 2x(4096+1024)) = 425,984;
    # experts 8 x 3 x 16 x (4096 + 14336) = 7,077,888 per layer; 32 layers.
    mixtral = find_model(PRESETS, "Mixtral 8x7B")
    assert lora_adapter_params(mixtral, 16, "all_linear") == 32 * (425_984 + 7_077_888)


def test_linear_params_are_the_active_matmul_weights():
    # Llama 3.1 8B: everything but embedding (128256x4096), head (same) and norms (65 x 4096).
    llama = find_model(PRESETS, "Llama 3.1 8B")
    assert linear_params_all_layers(llama) == 8_030_261_248 - 2 * 128256 * 4096 - 65 * 4096
    assert linear_params_per_layer(llama) == linear_params_all_layers(llama) // 32
    # toy MoE: attention 64 per layer, dense MLP 96, MoE layer 2 active experts x 24 + router 16.
    moe = toy(
        vocab_size=10,
        hidden_size=4,
        n_heads=1,
        n_kv_heads=1,
        head_dim=4,
        ffn_hidden=8,
        n_experts=4,
        n_experts_active=1,
        n_shared_experts=1,
        moe_ffn_hidden=2,
        n_dense_layers=1,
    )
    assert linear_params_all_layers(moe) == 2 * 64 + 96 + 48 + 16
    assert linear_params_per_layer(moe) == 144


@st.composite
def shapes(draw) -> ModelShape:
    n_kv_heads = draw(st.integers(1, 16))
    return ModelShape(
        hidden_size=draw(st.integers(1, 8192)),
        n_layers=draw(st.integers(1, 128)),
        n_heads=n_kv_heads * draw(st.integers(1, 8)),
        n_kv_heads=n_kv_heads,
        head_dim=draw(st.integers(1, 256)),
        ffn_hidden=draw(st.integers(1, 50_000)),
        vocab_size=draw(st.integers(1, 300_000)),
        tied_embeddings=draw(st.booleans()),
        mlp_kind=draw(st.sampled_from(["gelu", "swiglu"])),
        norm_kind=draw(st.sampled_from(["layernorm", "rmsnorm"])),
    )


@given(shapes(), st.sampled_from(["n_layers", "hidden_size", "vocab_size", "ffn_hidden"]))
def test_count_grows_with_every_size(shape, field):
    bigger = shape.model_copy(update={field: getattr(shape, field) + 1})
    assert count_params(bigger).total > count_params(shape).total


@given(shapes(), st.integers(1, 64), st.integers(1, 8))
def test_moe_active_never_exceeds_total(shape, n_experts, top_k):
    moe = shape.model_copy(update={"n_experts": n_experts, "n_experts_active": min(top_k, n_experts)})
    counts = count_params(moe)
    assert counts.active <= counts.total
    assert sum(dataclasses.astuple(counts)[:7]) == counts.total
