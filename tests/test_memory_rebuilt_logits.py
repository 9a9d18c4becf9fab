"""Memory tails: a layer rebuilt by recompute and the logits are never alive together.

Mechanism: torch.utils.checkpoint reruns a region's forward only when backward reaches that region, and the
last layer's backward starts after the output layer's and the loss's backward, whose saved tensors (and the
logits' gradient) autograd has freed by then (a node's saved tensors go once its backward ran, unless
retain_graph; PyTorch autograd notes, "Saved tensors"). So the forward/backward peak holds the kept layer
inputs plus the larger of the rebuilt layer's working set and the logits, not their sum.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.formulas.memory.peak import memory_per_gpu
from tests.test_memory import llama

# Llama 3.1 8B LoRA, bf16, full recompute, micro-batch 2 × 2048 tokens = 4096 tokens.
LAYER_INPUT_BYTES = 2048 * 2 * 4096 * 2  # s·b·h·2 B = 33,554,432 B per layer, kept by full recompute
KEPT_BYTES = 32 * LAYER_INPUT_BYTES  # 32 layers: 1,073,741,824 B
# Output layer and standard loss per token: final-norm and head inputs 2·h·2 B = 16,384 B, plus the logits at
# 2 B + three fp32 buffers (12 B) = 14 B × 128,256 = 1,795,584 B; 4096 tokens × 1,811,968 B = 7,421,820,928 B.
LOGITS_BYTES = 4096 * (2 * 4096 * 2 + 128256 * 14)


def test_lora_8b_full_recompute_peak_holds_logits_not_the_rebuilt_layer_too():
    lora = llama(method="lora", seq_len=2048, micro_batch=2, recompute="full")
    m = memory_per_gpu(lora)
    assert float(m.logits_bytes) == LOGITS_BYTES
    working = float(m.activations_bytes) - KEPT_BYTES  # one rebuilt layer's tensors (and its adapters')
    assert 0 < working < LOGITS_BYTES
    states = float(m.weights_bytes + m.optimizer_bytes + m.master_bytes)
    # forward/backward is the peak (LoRA: the optimizer step is tiny): states + kept + max(working, logits)
    assert float(m.peak_phase) == 0.0
    assert float(m.allocated_peak_bytes) == pytest.approx(states + KEPT_BYTES + LOGITS_BYTES, rel=1e-12)


def test_rebuilt_layer_larger_than_small_logits_sets_the_peak():
    # A 1,000-entry vocabulary: logits 4096 × (16,384 + 1,000 × 14) = 4096 × 30,384 = 124,452,864 B, below one
    # rebuilt 8B layer, so the transient is kept + the rebuilt layer and the logits add nothing.
    p = replace(llama(method="lora", seq_len=2048, micro_batch=2, recompute="full"), vocab=1000.0)
    m = memory_per_gpu(p)
    assert float(m.logits_bytes) == 4096 * (16_384 + 1000 * 14) == 124_452_864
    working = float(m.activations_bytes) - KEPT_BYTES
    assert working > float(m.logits_bytes)
    states = float(m.weights_bytes + m.optimizer_bytes + m.master_bytes)
    assert float(m.allocated_peak_bytes) == pytest.approx(states + float(m.activations_bytes), rel=1e-12)


@given(st.sampled_from(["none", "selective", "full", "selective_op"]), st.integers(1, 8), st.booleans())
def test_peak_between_the_larger_and_the_sum(recompute, micro_batch, offload):
    # Never below kept + max(parts) (both are needed at some moment), never above the old sum.
    p = llama(method="lora", seq_len=1024, micro_batch=micro_batch, recompute=recompute,
              offload_activations=float(offload))  # fmt: skip
    m = memory_per_gpu(p)
    states = float(m.weights_bytes + m.optimizer_bytes + m.master_bytes)
    transient = float(m.allocated_peak_bytes) - states
    assert transient <= float(m.activations_bytes + m.logits_bytes) * (1 + 1e-12)
    assert transient >= max(float(m.activations_bytes), float(m.logits_bytes)) * (1 - 1e-12)


def test_no_recompute_is_unchanged():
    # Without recompute nothing is rebuilt: the peak is states + every layer's activations + logits.
    m = memory_per_gpu(replace(llama(method="lora", seq_len=2048, micro_batch=2), lora_rank=16.0))
    states = float(m.weights_bytes + m.optimizer_bytes + m.master_bytes)
    assert float(m.allocated_peak_bytes) == pytest.approx(
        states + float(m.activations_bytes + m.logits_bytes), rel=1e-12
    )
