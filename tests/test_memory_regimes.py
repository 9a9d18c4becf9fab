"""Device overhead (the third statistic's extra) and the distributed optimizer's fp32 gradient buffer.

Worked numbers: Llama 3.1 8B as tests/test_memory.py builds it (8.03e9 parameters), bf16 mixed AdamW.
Overhead (planner/formulas/memory/device_overhead.py): 0.75 GiB CUDA context measured on the lent H200
(data/microbench/h200_runs.csv, non_pytorch_gib), 2 × 32 MiB cuBLAS/cuBLASLt workspaces (torch's default
CUBLAS_WORKSPACE_CONFIG :4096:8), 4 MiB NCCL_BUFFSIZE × 32 channels × 2 ring peers = 256 MiB per communicator.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.formulas.memory.allocator import growth_frac
from planner.formulas.memory.fp8_state import fp8_cache_bytes_per_param
from planner.formulas.memory.peak import max_micro_batch, memory_per_gpu
from planner.inputs.scenario import Scenario
from tests.test_memory import llama

GIB = 2.0**30
N = 8.03e9


@pytest.mark.parametrize(
    ("layout", "expected_gib"),
    [
        ({}, 0.75 + 0.0625),  # one GPU: no communicator
        ({"dp": 8.0}, 0.75 + 0.0625 + 0.25),  # data parallel: one communicator
        ({"dp": 4.0, "tp": 2.0}, 0.75 + 0.0625 + 0.5),  # data and tensor parallel: two
        ({"dp": 2.0, "tp": 2.0, "pp": 2.0, "cp": 2.0}, 0.75 + 0.0625 + 1.0),  # four groups
    ],
)
def test_modelled_overhead_counts_context_workspaces_and_one_communicator_per_group(layout, expected_gib):
    b = memory_per_gpu(llama(**layout))
    assert float(b.overhead_bytes) / GIB == pytest.approx(expected_gib, rel=1e-12)
    # device total = reserved + overhead, the statistic the fit verdict judges
    assert float(b.peak_bytes) == pytest.approx(float(b.reserved_peak_bytes + b.overhead_bytes), rel=1e-12)


def test_a_stated_overhead_replaces_the_model():
    b = memory_per_gpu(llama(dp=8.0, overhead_bytes=3.0 * GIB))
    assert float(b.overhead_bytes) == 3.0 * GIB


def test_distributed_optimizer_reads_its_fp32_buffer_without_a_copy():
    # Megatron --use-distributed-optimizer, bf16: fp32 main_grad buffer whole on every rank (4 B × 8.03e9 =
    # 32.12e9 B), master and Adam states sharded over dp = 8 (12 B × 8.03e9 / 8 = 12.045e9 B), bf16 weights
    # 16.06e9 B; the optimizer step reads the buffer itself, so no fp32 gradient copy (4 B / 8 = 4.015e9 B)
    p = llama(dp=8.0, zero_stage=1.0, fp32_grad_buffers=1.0, seq_len=1024.0)
    b = memory_per_gpu(p)
    assert float(b.gradients_bytes) == pytest.approx(4.0 * N, rel=1e-12)
    assert float(b.optimizer_bytes + b.master_bytes) == pytest.approx(12.0 * N / 8, rel=1e-12)
    assert float(b.optimizer_step_temp_bytes) == 0.0
    # the same run with 16-bit gradients (ZeRO-1 in DeepSpeed without the bf16 optimizer) keeps the copy
    plain = memory_per_gpu(replace(p, fp32_grad_buffers=0.0))
    assert float(plain.optimizer_step_temp_bytes) == pytest.approx(4.0 * N / 8, rel=1e-12)
    assert float(plain.gradients_bytes) == pytest.approx(2.0 * N, rel=1e-12)


# --- the allocator's growth with varying sequence lengths (planner/formulas/memory/allocator.py) ---------------


def test_varying_lengths_grow_reserved_by_the_spread_of_the_transient_bytes():
    # no recompute, one stage: the transient bytes are the kept activations plus the logits
    p = llama(seq_len=4096.0)
    packed, varying = memory_per_gpu(p), memory_per_gpu(replace(p, allocator_growth_frac=0.5))
    assert float(varying.allocated_peak_bytes) == float(packed.allocated_peak_bytes)
    transient = float(packed.activations_bytes + packed.logits_bytes)
    assert transient > 10 * GIB  # 4096 tokens of an 8B model without recompute: a growth that shows
    grown = float(varying.reserved_peak_bytes - packed.reserved_peak_bytes)
    assert grown == pytest.approx(0.5 * transient, rel=1e-12)
    assert float(varying.peak_bytes - packed.peak_bytes) == pytest.approx(grown, rel=1e-12)


def test_expandable_segments_remove_the_growth_and_packed_batches_have_none():
    assert growth_frac(0.6, expandable_segments=True) == 0.0
    assert growth_frac(0.6, expandable_segments=False) == 0.6
    assert growth_frac(0.0, expandable_segments=False) == 0.0


def test_largest_micro_batch_accounts_for_the_growth():
    vram = 79.65 * GIB
    p = llama(seq_len=2048.0, allocator_growth_frac=0.4, recompute="full", dp=8.0, zero_stage=3.0)
    largest = float(max_micro_batch(p, vram))
    assert largest >= 1
    assert float(memory_per_gpu(replace(p, micro_batch=largest)).peak_bytes) <= vram
    assert float(memory_per_gpu(replace(p, micro_batch=largest + 1)).peak_bytes) > vram
    # fewer sequences fit than with packed batches
    assert largest < float(max_micro_batch(replace(p, allocator_growth_frac=0.0), vram))


# --- Transformer Engine's cached fp8 weights (planner/formulas/memory/fp8_state.py) ---------------------------


def test_fp8_cache_adds_a_byte_and_a_transpose_byte_per_layer_matmul_parameter():
    # Llama 3.1 8B: 8.03e9 parameters less the untied 128,256 × 4,096 embedding and head (525,336,576 each)
    # = 6,979,326,848 layer parameters × 2 B = 13,958,653,696 B on one GPU
    assert fp8_cache_bytes_per_param("fp8_mixed", True) == 2.0
    assert fp8_cache_bytes_per_param("fp8_mixed", False) == 0.0
    assert fp8_cache_bytes_per_param("bf16_mixed", True) == 0.0
    p = llama(precision="fp8_mixed")
    plain, cached = memory_per_gpu(p), memory_per_gpu(replace(p, fp8_cache_bytes_per_param=2.0))
    assert float(cached.weights_bytes - plain.weights_bytes) == pytest.approx(13_958_653_696.0, rel=1e-12)
    # split like the weights over tensor-parallel ranks
    tp2 = replace(p, tp=2.0)
    added = memory_per_gpu(replace(tp2, fp8_cache_bytes_per_param=2.0)).weights_bytes
    assert float(added - memory_per_gpu(tp2).weights_bytes) == pytest.approx(13_958_653_696.0 / 2, rel=1e-12)


def test_the_plan_inputs_reach_the_memory_model():
    cats = default_catalogs()
    base = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8, zero_stage=3, seq_len=4096)
    packed = estimate(base, cats)
    varying = estimate(base.updated(seq_len_spread_frac=0.5), cats)
    transient_gib = packed.activations_gib + packed.logits_gib
    assert varying.peak_reserved_gib - packed.peak_reserved_gib == pytest.approx(
        0.5 * transient_gib, rel=1e-9
    )
    expandable = estimate(base.updated(seq_len_spread_frac=0.5, expandable_segments=True), cats)
    assert expandable.peak_reserved_gib == pytest.approx(packed.peak_reserved_gib, rel=1e-12)
    fp8 = base.updated(precision="fp8_mixed")
    cached = estimate(fp8.updated(fp8_weight_cache=True), cats)
    # ZeRO-3 over 8 GPUs shards the cached copies like the weights: 13,958,653,696 B / 8 (Meta's 8,030,261,248
    # parameters less the 2 × 525,336,576 of embedding and head)
    added_gib = cached.weights_gib - estimate(fp8, cats).weights_gib
    assert added_gib == pytest.approx(2.0 * (8_030_261_248 - 2 * 525_336_576) / 8 / GIB, rel=1e-6)


# --- PEFT's fp32 adapters in pure bf16 ----------------------------------------------------------------------
def test_peft_adapters_are_fp32_in_pure_bf16_and_torchtune_adapters_are_not():
    """PEFT upcasts adapters to fp32 by default (`autocast_adapter_dtype=True`); torchtune builds them in bf16."""
    from planner.formulas.memory.recipes import recipe_bytes_per_param

    peft = recipe_bytes_per_param("lora", "adamw", "bf16_pure", peft_adapters=True)
    tune = recipe_bytes_per_param("lora", "adamw", "bf16_pure", peft_adapters=False)
    assert (peft["weights"], peft["grads"], peft["master"], peft["optimizer"]) == (4.0, 4.0, 0.0, 8.0)
    assert (tune["weights"], tune["grads"], tune["master"], tune["optimizer"]) == (2.0, 2.0, 0.0, 4.0)
    assert peft["frozen_weights"] == peft["frozen_other_weights"] == 2.0, "the frozen base stays bf16"
    qlora = recipe_bytes_per_param("qlora", "paged_adamw_8bit", "bf16_pure", peft_adapters=True)
    assert (qlora["weights"], qlora["grads"]) == (4.0, 4.0)
    mixed = recipe_bytes_per_param("lora", "adamw", "bf16_mixed", peft_adapters=True)
    assert mixed == recipe_bytes_per_param("lora", "adamw", "bf16_mixed"), (
        "16 B per adapter parameter either way"
    )
    full = recipe_bytes_per_param("full", "adamw", "bf16_pure", peft_adapters=True)
    assert full["weights"] == 2.0, "no adapters: the recipe's own dtype"


def test_peft_pure_bf16_model_states_add_eight_bytes_per_adapter_parameter():
    """Llama 3.1 8B, rank 16 on every linear layer: 41,943,040 adapter parameters (PEFT's print_trainable_parameters
    for Llama 3 8B, r = 16, all linear). fp32 against bf16: (4 + 4 + 8) − (2 + 2 + 4) = 8 B each, sharded over the
    default 8 GPUs by ZeRO-3."""
    base = Scenario(method="lora", precision="bf16_pure", hf_eager_code=False)
    bf16 = estimate(base, default_catalogs()).model_state_gib_per_device
    fp32 = estimate(base.updated(hf_eager_code=True), default_catalogs()).model_state_gib_per_device
    assert fp32 - bf16 == pytest.approx(41_943_040 * 8 / 8 / GIB, rel=0.01)


@pytest.mark.parametrize(("method", "cached"), [("full", True), ("lora", True), ("qlora", False)])
def test_fp8_cache_covers_routed_experts_and_a_lora_base_not_a_4bit_one(method, cached):
    """Transformer Engine's GroupedLinear caches each expert's fp8 weight, and a frozen base linear is cached
    like a trained one; QLoRA's NF4 base runs in bitsandbytes, outside TE. Mixtral 8x7B on one GPU: 46,702,792,704
    parameters (its Hugging Face model card) less the untied 32,000 × 4,096 embedding and head = 46,440,648,704
    layer parameters (experts included), 2 B each."""
    cats = default_catalogs()
    base = Scenario(
        model="Mixtral 8x7B", gpu="H100 SXM", n_gpus=1, zero_stage=0, seq_len=1024, method=method,
        precision="fp8_mixed",
    )  # fmt: skip
    added_gib = (
        estimate(base.updated(fp8_weight_cache=True), cats).weights_gib - estimate(base, cats).weights_gib
    )
    expected_gib = 2.0 * (46_702_792_704 - 2 * 32_000 * 4_096) / GIB if cached else 0.0
    assert added_gib == pytest.approx(expected_gib, rel=1e-6, abs=1e-9)
