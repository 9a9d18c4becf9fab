"""Memory tails: LoRA adapters' saved activations, fp32 gradient buffers, the loss and
adapter targets case rows state. Arithmetic written out; each new term never lowers the peak; with the new
inputs off the previous figures stand."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from planner.cases.case_file import CASE_FILE_COLUMNS
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import case_scenario
from planner.cases.case_words import lora_targets
from planner.catalogue.catalog import default_catalogs
from planner.formulas.memory.activations import lora_adapter_bytes
from planner.formulas.memory.peak import GIB, memory_per_gpu
from tests.test_memory import llama

TOKENS = 2 * 2048  # micro-batch 2 × sequence 2048 (the torchtune README's Llama 3.1 setting)


def test_lora_adapter_saved_bytes_llama_8b_all_linear():
    # Llama 3.1 8B (h 4096, 32 heads × 128, F 14336, SwiGLU), rank 16, bf16, micro-batch 2 × 2048 tokens.
    # A outputs: 7 adapted matrices (q, k, v, o, gate, up, down) × 16 × 2 B = 224 B per token.
    # Dropped inputs: q, k, v, gate, up read h = 4096; o reads a·d = 4096; down reads F = 14336:
    #   6·4096 + 14336 = 38,912 elements × (2 B copy + 1 B mask) = 116,736 B per token.
    # Per layer: 4096 tokens × (224 + 116,736) = 479,068,160 B; 32 layers = 15,330,181,120 B = 14.28 GiB.
    args = (2048, 2, 4096, 32, 128, 14336, 3, 2.0, 16, 1.0)
    assert lora_adapter_bytes(*args, lora_dropout=0.0) == TOKENS * 224
    per_layer = lora_adapter_bytes(*args, lora_dropout=1.0)
    assert per_layer == 479_068_160
    assert 32 * per_layer / GIB == pytest.approx(14.28, abs=0.005)


def test_lora_adapter_saved_bytes_attention_only():
    # q, k, v, o only: A outputs 4 × 16 × 2 = 128 B; dropped inputs 4 × 4096 × 3 B = 49,152 B per token.
    per_layer = lora_adapter_bytes(2048, 2, 4096, 32, 128, 14336, 3, 2.0, 16, 0.0, lora_dropout=1.0)
    assert per_layer == TOKENS * (128 + 49_152)


def test_lora_dropout_adds_its_copies_to_the_peak_without_recompute():
    # No recompute: every layer keeps its adapters' tensors, so the peak grows by 32 layers × the per-layer
    # difference (the dropout copies and masks) and by nothing else; seq 2048, micro-batch 2.
    base = llama(method="lora", seq_len=2048, micro_batch=2, lora_rank=16, lora_all_linear=1)
    dropped = replace(base, lora_dropout=1.0)
    per_layer = TOKENS * 116_736
    off, on = memory_per_gpu(base), memory_per_gpu(dropped)
    assert float(on.activations_bytes - off.activations_bytes) == pytest.approx(32 * per_layer, rel=1e-12)
    assert float(on.allocated_peak_bytes) > float(off.allocated_peak_bytes)


def test_full_recompute_holds_one_layer_of_adapter_tensors():
    # Full recompute keeps layer inputs only; the adapters' tensors exist in the one layer being rebuilt.
    base = llama(
        method="lora", seq_len=2048, micro_batch=2, lora_rank=16, lora_all_linear=1, recompute="full"
    )
    on = memory_per_gpu(replace(base, lora_dropout=1.0))
    assert float(on.activations_bytes - memory_per_gpu(base).activations_bytes) == pytest.approx(
        TOKENS * 116_736, rel=1e-12
    )


def test_fp32_grad_buffers_bytes_for_8b_on_one_gpu():
    # bf16 mixed AdamW, 8.03e9 parameters, no accumulation: bf16 gradients 2 B/param = 16.06e9 B; Megatron's
    # main_grad fp32 buffers 4 B/param = 32.12e9 B = 29.91 GiB, held through forward and backward.
    base = llama(seq_len=2048)
    off, on = memory_per_gpu(base), memory_per_gpu(replace(base, fp32_grad_buffers=1.0))
    assert float(off.gradients_bytes) == pytest.approx(8.03e9 * 2, rel=1e-12)
    assert float(on.gradients_bytes) == pytest.approx(8.03e9 * 4, rel=1e-12)
    assert float(on.gradients_bytes) / GIB == pytest.approx(29.91, abs=0.005)


def test_fp32_grad_buffers_shard_with_zero_2():
    # ZeRO-2 over 8 GPUs: 8.03e9 × 4 B / 8 = 4.015e9 B per GPU.
    on = memory_per_gpu(llama(seq_len=2048, dp=8, zero_stage=2, fp32_grad_buffers=1))
    assert float(on.gradients_bytes) == pytest.approx(8.03e9 * 4 / 8, rel=1e-12)


@given(
    method=st.sampled_from(["full", "lora", "qlora"]),
    recompute=st.sampled_from(["none", "selective", "full", "selective_op"]),
    micro_batch=st.integers(1, 8),
    grad_accum=st.sampled_from([1, 4]),
    zero_stage=st.integers(0, 3),
    dp=st.sampled_from([1, 8]),
    all_linear=st.booleans(),
)
@example(method="lora", recompute="none", micro_batch=1, grad_accum=1, zero_stage=0, dp=1, all_linear=True)
def test_new_terms_never_lower_the_peak(
    method, recompute, micro_batch, grad_accum, zero_stage, dp, all_linear
):
    base = llama(
        method=method, recompute=recompute, micro_batch=micro_batch, grad_accum=grad_accum,
        zero_stage=zero_stage, dp=dp, lora_rank=16, lora_all_linear=float(all_linear), seq_len=2048,
    )  # fmt: skip
    plain = memory_per_gpu(base)
    peak = float(plain.peak_bytes)
    assert float(memory_per_gpu(replace(base, lora_dropout=1.0)).peak_bytes) >= peak
    # fp32 buffers hold more gradient bytes, but they are the optimizer's fp32 gradients too (Megatron's
    # distributed optimizer steps on a view of main_grad), so the step's fp32 copy goes: the peak may fall by
    # at most that copy and the allocator slack over it (full training, no accumulation: 2 + 4 B of gradient and
    # copy become one 4 B buffer)
    buffered = memory_per_gpu(replace(base, fp32_grad_buffers=1.0))
    assert float(buffered.gradients_bytes) >= float(plain.gradients_bytes)
    copy = (1.0 + base.fragmentation_frac) * float(plain.optimizer_step_temp_bytes)
    assert float(buffered.peak_bytes) >= peak - copy
    # and the adapters' own term: a rank-0 adapter saves nothing, rank 16 never less
    assert peak >= float(memory_per_gpu(replace(base, lora_rank=0.0)).peak_bytes)


def test_previous_figures_unchanged_with_the_new_inputs_off():
    # Full training has no adapters and, off, the fp32 buffers change nothing: the memory breakdown equals
    # the one of MemoryInputs without the new fields set (their defaults are off).
    plain = llama(seq_len=2048, micro_batch=2, dp=8, zero_stage=3)
    explicit = replace(plain, lora_rank=64.0, lora_all_linear=1.0, lora_dropout=0.0, fp32_grad_buffers=0.0)
    a, b = memory_per_gpu(plain).as_dict(), memory_per_gpu(explicit).as_dict()
    assert all(np.array_equal(a[key], b[key]) for key in a)


def test_lora_rank_adds_only_the_a_outputs_without_dropout():
    # LoRA without dropout: the only new bytes are A's outputs, 7 × 16 × 2 B = 224 B per token per layer,
    # 32 layers × 4096 tokens × 224 B = 29,360,128 B beside the rank-0 figure (no recompute).
    base = llama(method="lora", seq_len=2048, micro_batch=2, lora_rank=16, lora_all_linear=1)
    diff = (
        memory_per_gpu(base).activations_bytes
        - memory_per_gpu(replace(base, lora_rank=0.0)).activations_bytes
    )
    assert float(diff) == 29_360_128


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ("LoRA defaults: rank 8, alpha 16, q_proj+v_proj only.", "attention"),
        ("LoRA defaults (70B_lora): rank 16, alpha 32, q/k/v.", "attention"),
        ("QLoRA defaults: NF4 base, rank 8, alpha 16, q/k/v/output_proj + MLP.", "all_linear"),
        ("LoRA r=8, alpha 32 (example script).", None),
    ],
)
def test_lora_targets_read_from_notes(notes, expected):
    assert lora_targets(notes) == expected


def case(row):
    cats = default_catalogs()
    return case_scenario({**{column: "" for column in CASE_FILE_COLUMNS}, **row}, cats, GpuMatcher(cats))


TORCHTUNE_8B_LORA = {
    "case_id": "X-1", "category": "memory", "model": "Llama 3.1 8B", "params_b": "8.03", "n_layers": "32",
    "hidden": "4096", "n_heads": "32", "n_kv_heads": "8", "ffn_hidden": "14336", "vocab": "128256",
    "seq_len": "2048", "micro_batch": "2", "method": "lora", "lora_rank": "8", "optimizer": "AdamW",
    "precision": "bf16 (pure bf16 weights)", "gpu": "RTX 4090 24GB", "n_gpus": "1",
    "measured_value": "16.2", "measured_unit": "gib_peak_per_gpu_unspecified",
}  # fmt: skip


def test_case_notes_state_the_loss_and_the_adapter_targets():
    # torchtune 30b8519e8's 8B_lora_single_device.yaml: CEWithChunkedOutputLoss, lora_attn_modules q_proj, v_proj.
    notes = "LoRA defaults: rank 8, alpha 16, q_proj+v_proj only. Loss: CEWithChunkedOutputLoss (chunked)."
    scenario, _ = case({**TORCHTUNE_8B_LORA, "notes": notes})
    assert scenario.fused_cross_entropy and scenario.lora_targets == "attention"
    scenario, facts = case({**TORCHTUNE_8B_LORA, "notes": "Loss: torch.nn.CrossEntropyLoss (standard)."})
    assert not scenario.fused_cross_entropy and scenario.lora_targets == "all_linear"
    assert "LoRA target modules not stated: all_linear" in facts.assumptions
