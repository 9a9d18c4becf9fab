"""Mixture-of-experts fidelity: load imbalance, small expert matmuls, latent attention, and
the sharded data-parallel traffic of pipelined layouts.

Sources: Switch Transformer (Fedus et al. 2022, §2.1) for the capacity factor; the roofline model (Williams,
Waterman & Patterson 2009) for the expert matmuls; Hugging Face's DeepSeek-V3 config.json and
modeling_deepseek_v3.py for multi-head latent attention; torchtitan's FSDP2 `reshard_after_forward = not
pp_enabled` for pipelined ZeRO-3.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.formulas.step import comm, expert_compute
from planner.formulas.step.pipeline import data_parallel_rounds
from planner.inputs.scenario import Scenario
from planner.model.architecture import count_params, linear_params_all_layers
from planner.model.hf_config import shape_from_hf_config
from planner.model.latent_attention import (
    attention_head_dim,
    kv_elements_per_token_layer,
    mla_attention_params_per_layer,
)
from planner.model.shape import ModelShape

CATS = default_catalogs()
H100_PEAK, H100_BW = 989e12, 3.35e12  # dense bf16 FLOP/s and HBM3 bytes/s of an H100 SXM (data/gpus.csv)

# --- (b) small expert matmuls on the roofline ---------------------------------------------------------------


def test_expert_matmul_roofline_at_two_token_counts():
    # An expert of h = 4,096 and F = 1,024 in bf16 (2 B) on an H100 SXM.
    # M = 64 tokens: FLOPs 2 × 64 × 4,096 × 1,024 = 536,870,912; bytes 2 × (4,096 × 1,024 + 64 × (4,096 + 1,024))
    # = 2 × (4,194,304 + 327,680) = 9,043,968. Compute 536,870,912 / 989e12 = 0.5428 µs, memory
    # 9,043,968 / 3.35e12 = 2.6997 µs: memory bound, achieved 0.5428 / 2.6997 = 0.2011 of a large matmul.
    small = expert_compute.expert_matmul_efficiency_frac(64, 4096, 1024, 2.0, H100_PEAK, H100_BW)
    assert small == pytest.approx((536_870_912 / 989e12) / (9_043_968 / 3.35e12), rel=1e-12)
    assert small == pytest.approx(0.2011, abs=5e-5)
    # M = 1,024: FLOPs 8,589,934,592 over 989e12 = 8.685 µs; bytes 2 × (4,194,304 + 5,242,880) = 18,874,368
    # over 3.35e12 = 5.634 µs: compute bound, the full rate.
    assert expert_compute.expert_matmul_efficiency_frac(1024, 4096, 1024, 2.0, H100_PEAK, H100_BW) == 1.0


def test_tokens_per_expert_written_out():
    # Qwen3 30B A3B, one 4,096-token micro-batch on each of ep 8 GPUs, top-8 of 128 experts:
    # 4,096 × 8 ranks × 8 copies / 128 experts = 2,048 tokens per expert; without EP 4,096 × 8 / 128 = 256.
    assert expert_compute.tokens_per_expert(4096, 8, 8, 128) == 2048
    assert expert_compute.tokens_per_expert(4096, 8, 1, 128) == 256


@given(
    tokens=st.floats(1, 1e6),
    more=st.floats(0, 1e6),
    hidden=st.integers(64, 16384),
    ffn=st.integers(64, 65536),
)
@example(tokens=1.0, more=0.0, hidden=64, ffn=64)
def test_more_tokens_per_expert_never_lower_the_efficiency(tokens, more, hidden, ffn):
    frac = [
        expert_compute.expert_matmul_efficiency_frac(m, hidden, ffn, 2.0, H100_PEAK, H100_BW)
        for m in (tokens, tokens + more)
    ]
    assert 0.0 < frac[0] <= frac[1] * (1 + 1e-12) <= 1.0 + 1e-12


def test_busiest_rank_extra_time_written_out():
    # 1e15 routed FLOPs per step at 989 TFLOP/s × 0.5 = 2.0222 s; capacity factor 1.25 with large matmuls:
    # 2.0222 × (1.25 / 1 − 1) = 0.50556 s more; at ep 1 one GPU holds every expert: no busiest rank, no extra.
    load = expert_compute.busiest_rank_load(8, 1.25)
    extra = expert_compute.routed_expert_extra_s(1e15, H100_PEAK, 0.5, 1.0, load)
    assert extra == pytest.approx(1e15 / (989e12 * 0.5) * 0.25, rel=1e-12)
    assert expert_compute.busiest_rank_load(1, 1.25) == 1.0
    # half the large-matmul rate doubles the time: 2.0222 s more at capacity 1
    assert expert_compute.routed_expert_extra_s(1e15, H100_PEAK, 0.5, 0.5, 1.0) == pytest.approx(
        1e15 / (989e12 * 0.5), rel=1e-12
    )


# --- (a) capacity factor through the estimate --------------------------------------------------------------


def _mixtral(**changes) -> Scenario:
    base = dict(
        model="Mixtral 8x7B", gpu="H100 SXM", n_gpus=16, ep=8, zero_stage=3, micro_batch=1, grad_accum=4,
        seq_len=4096, examples=10_000, tokens_per_example=4096, recompute="full",
    )  # fmt: skip
    return Scenario.model_validate({**base, **changes})


def test_capacity_factor_slows_an_expert_parallel_plan_and_is_validated():
    plain = estimate(_mixtral(), CATS)
    padded = estimate(_mixtral(moe_capacity_factor=1.25), CATS)
    assert padded.step_time_s > plain.step_time_s * 1.02  # the experts are most of Mixtral's FLOPs
    with pytest.raises(ValidationError, match="moe_capacity_factor"):
        _mixtral(moe_capacity_factor=0.5)


def test_capacity_factor_flag_refuses_a_value_below_one():
    run = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "--model", "Mixtral 8x7B", "--gpu", "H100 SXM",
         "--moe-capacity-factor", "0.5", "--format", "json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2
    assert "moe_capacity_factor" in run.stderr or "moe-capacity-factor" in run.stderr
    assert "Traceback" not in run.stderr


# --- sharded data-parallel traffic under a pipeline -------------------------------------------------------


def test_pipelined_zero3_gathers_once_per_step():
    assert data_parallel_rounds(4, 8) == (1.0, 1.0) and data_parallel_rounds(1, 8) == (8, 16)
    # 8e9 parameters, pp 2 (4e9 per stage, bf16 weights 8e9 B, fp32 gradients 16e9 B), dp 8 inside one node
    # at 450 GB/s, ZeRO-3, 4 micro-batches. Without a pipeline: 4 reduce-scatters + 8 gathers; with one, the
    # stage's weights stay gathered: 1 + 1. Per step 7/8 × (16e9 + 8e9) = 21e9 B at NVLink's achieved 370 GB/s
    # = 56.76 ms.
    args = dict(
        n_params=8e9, n_trainable_params=8e9, n_layers=32, hidden_size=4096, kv_dim=1024, seq_len=4096,
        micro_batch=1, grad_accum=4, tp=1, cp=1, dp=8, zero_stage=3, hybrid_shard=0, full_recompute=0,
        grad_comm_bytes=4.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=16,
        intra_node_gb_per_s=450.0, pcie_gb_per_s=63.0, inter_node_gb_per_s=50.0,
    )  # fmt: skip
    piped = comm.layout_comm(**args, pp=2).data_parallel_s
    # Plus NCCL latency: 16 layers per stage × (1 gather + 1 reduce-scatter) = 32 one-phase
    # rings over 8 NVLink ranks of 8.4 + 7 × 3.4 = 32.2 µs (NCCL's Ring/Simple cost model) = 1.0304 ms.
    latency_s = 32 * 32.2e-6
    assert piped == pytest.approx(7 / 8 * (16e9 + 8e9) / 370e9 + latency_s, rel=1e-9)


# --- (c) multi-head latent attention ------------------------------------------------------------------------

TOY_MLA = dict(
    vocab_size=1000, hidden_size=256, n_layers=2, n_heads=4, n_kv_heads=4, head_dim=24, ffn_hidden=512,
    q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
)  # fmt: skip


def test_latent_attention_parameter_count_of_a_made_up_config():
    shape = ModelShape(**TOY_MLA)
    # q_a 256 × 64 = 16,384; q_b 64 × 4 heads × (16 + 8) = 6,144; kv_a 256 × (32 + 8) = 10,240;
    # kv_b 32 × 4 × (16 + 16) = 4,096; o 4 × 16 × 256 = 16,384: 53,248 per layer
    assert mla_attention_params_per_layer(shape, with_bias=False) == 53_248
    # no query compression (DeepSeek-V2-Lite): q_proj 256 × 96 = 24,576 instead of 16,384 + 6,144
    assert mla_attention_params_per_layer(shape.model_copy(update={"q_lora_rank": 0}), False) == 55_296
    counts = count_params(shape)
    # per layer: attention 53,248 + SwiGLU 3 × 256 × 512 = 393,216 + norms 2 × 256 + the latents' 64 + 32 = 608;
    # 2 layers = 894,144; final norm 256; embedding and untied head 2 × 1,000 × 256 = 512,000: 1,406,400
    assert counts.attention == 2 * 53_248
    assert counts.total == 1_406_400
    assert linear_params_all_layers(shape) == 2 * (53_248 + 393_216)


def test_latent_attention_heads_and_cache():
    shape = ModelShape(**TOY_MLA)
    assert attention_head_dim(shape) == (16 + 8 + 16) / 2  # QKᵀ at 24 wide, A·V at 16 wide: mean 20
    assert kv_elements_per_token_layer(shape) == 32 + 8  # the latent and the shared rotary key
    gqa = ModelShape(**{**TOY_MLA, "kv_lora_rank": 0, "n_kv_heads": 2})
    assert kv_elements_per_token_layer(gqa) == 2 * 2 * 24  # a key and a value per KV head
    with pytest.raises(ValidationError, match="v_head_dim"):
        ModelShape(**{**TOY_MLA, "v_head_dim": 0})


DEEPSEEK_V3_CONFIG = {  # the keys of deepseek-ai/DeepSeek-V3's config.json this reader uses
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": 129280,
    "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
    "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "q_lora_rank": 1536,
    "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "tie_word_embeddings": False, "attention_bias": False, "max_position_embeddings": 163840,
}  # fmt: skip


def test_deepseek_v3_counts_from_its_config():
    shape = shape_from_hf_config(json.dumps(DEEPSEEK_V3_CONFIG), name="DeepSeek-V3")
    counts = count_params(shape)
    # Per MLA layer: q_a 7,168 × 1,536 = 11,010,048; q_b 1,536 × 128 × 192 = 37,748,736; kv_a 7,168 × 576 =
    # 4,128,768; kv_b 512 × 128 × 256 = 16,777,216; o 128 × 128 × 7,168 = 117,440,512: 187,105,280; × 61.
    assert counts.attention == 61 * 187_105_280
    # 3 dense MLPs 3 × 7,168 × 18,432 = 396,361,728 each; 58 MoE layers of (256 + 1) × 3 × 7,168 × 2,048 =
    # 11,318,329,344 plus a 7,168 × 256 router; norms 61 × (2 × 7,168 + 1,536 + 512) + 7,168; embedding and
    # head 2 × 129,280 × 7,168. Total 671,026,404,352: the model card's 671B (MTP module excluded).
    assert counts.total == 671_026_404_352
    # Active: the 8 routed + 1 shared experts of each MoE layer: 37,552,282,624, the card's "37B" (+1.5 %,
    # the embedding and head included).
    assert counts.active == 37_552_282_624
    assert abs(counts.total / 671e9 - 1) < 0.001 and abs(counts.active / 37e9 - 1) < 0.02
    preset = CATS.model("DeepSeek-V3")  # data/models.csv: the same shape as the config
    assert preset.model_dump(exclude={"name", "context_len"}) == shape.model_dump(
        exclude={"name", "context_len"}
    )
