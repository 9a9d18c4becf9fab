"""Eager code's attention scores, Gemma 2's and Qwen3's extra norms and PEFT's widest forward point
(planner/formulas/memory/eager.py), per token and layer, against the tensors the trace sees.

Golden figures: the traced bytes by module (`planner trace`'s labels) of two plans of the sweep
(`planner.trace.sweep`; transformers 5.23.0, PEFT 0.21.2, torch 2.13.0): plan 092, the cut Gemma 2 2B (width 256,
8 query and 4 key/value heads of 32, MLP 1,024; full fine-tuning, 4 × 128 tokens, two layers), and plan 013, the
cut Llama 3.1 8B (MLP 896) with all-linear LoRA in pure bf16 under full recompute at 2 × 512 tokens.
"""

from __future__ import annotations

import pytest

from planner.formulas.memory.eager import eager_layer_bytes, peft_widest_point_bytes
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.recipes import Method, Recompute

GEMMA = dict(hidden=256, n_heads=8, n_kv_heads=4, head_dim=32, ffn_hidden=1024, n_mlp_matrices=3, vocab=256)
SEQ = 128
MIB = 2**20


def inputs(method: Method, **fields: float) -> MemoryInputs:
    return MemoryInputs(
        n_params=1e7, n_embedding_params=0.0, n_head_params=0.0, n_layers=1, method=float(method),
        lora_rank=4.0, lora_all_linear=1.0, **{**GEMMA, "seq_len": SEQ, "hf_eager_code": 1.0, **fields},
    )  # fmt: skip


def per_token(method: Method, **fields: float) -> float:
    return float(eager_layer_bytes(inputs(method, **fields))) / SEQ


def test_eager_attention_keeps_the_fp32_softmax_output():
    # softmax(dtype=float32) keeps its fp32 output: 4 B per score element, a·s per token = 8 × 128 × 4
    flash, eager = per_token(Method.FULL), per_token(Method.FULL, flash_attention=0.0)
    assert eager - flash == pytest.approx(4.0 * 8 * SEQ)
    # selective recompute rebuilds the scores: nothing of them is kept
    assert per_token(Method.FULL, flash_attention=0.0, recompute=float(Recompute.SELECTIVE)) == flash
    # ungated (GeLU) models' older attention classes are left as the fused formulas count them
    assert per_token(Method.FULL, flash_attention=0.0, n_mlp_matrices=2) == 0.0


def test_gemma_layer_norms_and_scores_match_the_traced_modules():
    llama = per_token(Method.FULL, flash_attention=0.0)
    gemma = per_token(Method.FULL, flash_attention=0.0, gemma_block=1.0)
    tanh = 2.0 * 8 * SEQ  # the soft-capping tanh's e-byte output per score element
    assert gemma - llama == pytest.approx(
        20 * 256 + tanh
    )  # two more fp32 norms (8h each), fp32 normalised 2 × 2h
    # the four norms per token and layer: the fused formula's 4·e·h + the eager norms' 8h + Gemma's 20h = 36h;
    # traced at plan 092 (2 layers × 512 tokens): 2.51 + 2.51 + 2.01 + 2.01 MiB
    norms = 4 * 2 * 256 + 8 * 256 + 20 * 256
    assert norms == pytest.approx((2.51 + 2.51 + 2.01 + 2.01) * MIB / 1024, rel=0.01)
    # attention: Q, output (a·d) and K, V (g·d) at 2 B, per score 2 + 4 + 2 B (probabilities, fp32 softmax, tanh);
    # traced self_attn 10.00 MiB (the rest: the rotated query and key's copies)
    attention = 2 * (2 * 256 + 2 * 128) + 8 * SEQ * (2 + 4 + 2)
    assert attention == pytest.approx(10.00 * MIB / 1024, rel=0.06)
    # a frozen base keeps the two extra norms' fp32 inputs only (4h each)
    frozen = per_token(Method.LORA, flash_attention=0.0, gemma_block=1.0)
    assert frozen - per_token(Method.LORA, flash_attention=0.0) == pytest.approx(8 * 256 + tanh)


def test_qwen3_query_and_key_norms_keep_fp32_inputs():
    # (a + g)·d = 12 × 32 elements per token: fp32 input, + the e-byte normalised tensor when the weight trains
    full = per_token(Method.FULL, qk_norm=1.0) - per_token(Method.FULL)
    frozen = per_token(Method.LORA, qk_norm=1.0) - per_token(Method.LORA)
    assert (full, frozen) == pytest.approx((12 * 32 * 6.0, 12 * 32 * 4.0))


def test_peft_widest_forward_point_matches_the_traced_rebuilt_layer():
    llama = dict(hidden=256, n_heads=8, n_kv_heads=2, ffn_hidden=896, seq_len=512, micro_batch=2)
    pure = float(peft_widest_point_bytes(inputs(Method.LORA, master_bytes=0.0, **llama)))
    # fp32 adapters without autocast at up_proj: B's output and its scaled copy (4 B each) and the bf16 base
    # output and sum: 10 B per F-wide element; traced at plan 013 (rebuilt up_proj: lora_B 3.50 MiB, the fp32
    # scaled copy 3.50 of the 4.50 MiB under up_proj, base_layer 1.75 MiB)
    assert pure == pytest.approx(10.0 * 896 * 1024)
    assert pure == pytest.approx((3.50 + 3.50 + 1.75) * MIB, rel=0.01)
    # under autocast: 16-bit adapter outputs (6 B) or the fp32 copy of down's input beside it (6 B)
    autocast = float(peft_widest_point_bytes(inputs(Method.LORA, master_bytes=4.0, **llama)))
    assert autocast == pytest.approx(6.0 * 896 * 1024)
    assert peft_widest_point_bytes(inputs(Method.FULL, **llama)) == 0.0
    assert peft_widest_point_bytes(inputs(Method.LORA, hf_eager_code=0.0, **llama)) == 0.0
