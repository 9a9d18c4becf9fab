"""Per-GPU memory: recipes, ZeRO golden numbers, toy configurations, peaks, micro-batch search, properties."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from planner.formulas.memory.model_states import zero_shard_degree
from planner.formulas.memory.peak import GIB, MemoryInputs, max_micro_batch, memory_per_gpu, model_state_bytes
from planner.formulas.memory.recipes import (
    Method,
    Recompute,
    model_state_bytes_per_param,
    nf4_bytes_per_param,
    recipe_bytes_per_param,
)
from planner.model.architecture import count_params, lora_adapter_params
from planner.model.shape import ModelShape

LLAMA_8B = ModelShape(
    name="Llama 3.1 8B", vocab_size=128256, hidden_size=4096, n_layers=32, n_heads=32, n_kv_heads=8,
    head_dim=128, ffn_hidden=14336,
)  # fmt: skip


def llama(**choices) -> MemoryInputs:
    """MemoryInputs of Llama 3.1 8B (8.03e9 parameters) with Scenario-style choices, numbers elsewhere as given.

    The shape and recipe columns as `planner.resolve` builds them (count_params, recipe_bytes_per_param), so
    layouts can be set freely (dp, tp, pp without a GPU count) for the formula tests here.
    """
    choices = {"method": "full", "optimizer": "adamw", "precision": "bf16_mixed", "seq_len": 4096, **choices}
    method, recompute = choices.pop("method"), choices.pop("recompute", "none")
    recipe = recipe_bytes_per_param(method, choices.pop("optimizer"), choices.pop("precision"), True)
    counts = count_params(LLAMA_8B)
    return MemoryInputs(
        n_params=8.03e9,
        n_embedding_params=float(counts.embedding + counts.position),
        n_head_params=float(counts.head),
        n_layers=32.0, hidden=4096.0, n_heads=32.0, n_kv_heads=8.0, head_dim=128.0, ffn_hidden=14336.0,
        n_mlp_matrices=3.0, vocab=128256.0,
        method=float(Method.of(method)),
        n_adapter_params=float(lora_adapter_params(LLAMA_8B, 16, "all_linear")) if method != "full" else 0.0,
        weight_bytes=recipe["weights"], grad_bytes=recipe["grads"], master_bytes=recipe["master"],
        optimizer_bytes=recipe["optimizer"], frozen_weight_bytes=recipe["frozen_weights"],
        frozen_other_weight_bytes=recipe["frozen_other_weights"], activation_bytes=recipe["activation_element"],
        recompute=float(Recompute.of(recompute)),
        **{key: float(value) for key, value in choices.items()},
    )  # fmt: skip


def model_states(b) -> float:
    return float(b.weights_bytes + b.gradients_bytes + b.optimizer_bytes + b.master_bytes)


# --- recipes ------------------------------------------------------------------------------------------------


def test_seed_16_bytes_per_param_for_8b_is_119_21_gib():
    # seed: 8e9 parameters × 16 B (bf16 weights 2 + grads 2 + fp32 master 4 + Adam 8) = 1.28e11 B = 119.21 GiB
    assert model_state_bytes(8e9, 16) / GIB == pytest.approx(119.21, abs=0.005)
    assert model_state_bytes_per_param("full", "adamw", "bf16_mixed") == 16


@pytest.mark.parametrize(
    ("optimizer", "precision", "expected"),
    [
        ("adamw", "bf16_mixed", 2 + 2 + 4 + 8),
        ("adamw", "fp16_mixed", 16),
        ("adamw", "fp8_mixed", 16),
        ("adamw", "bf16_pure", 2 + 2 + 0 + 2 * 2),
        ("adamw", "fp32", 4 + 4 + 0 + 8),
        ("sgd", "bf16_mixed", 2 + 2 + 4 + 0),
        ("sgd_momentum", "bf16_mixed", 2 + 2 + 4 + 4),
        ("sgd_momentum", "bf16_pure", 2 + 2 + 0 + 2),
        # two 1-byte states + an fp32 absmax per 2048 values each: 2·(1 + 4/2048) = 2.00390625
        ("adamw_8bit", "bf16_mixed", 8 + 2.00390625),
        ("adamw_8bit", "bf16_pure", 4 + 2.00390625),
        # factored second moment only, charged at 4·(1024 + 1024)/1024² = 8/1024
        ("adafactor", "bf16_mixed", 8 + 8 / 1024),
    ],
)
def test_model_state_bytes_per_param_table(optimizer, precision, expected):
    assert model_state_bytes_per_param("full", optimizer, precision) == pytest.approx(expected, rel=1e-12)


def test_qlora_nf4_storage():
    # QLoRA §2: 4 bits + fp32 absmax per 64 = 4.5 bits; double quantisation 4 + 8/64 + 32/(64·256) bits.
    assert nf4_bytes_per_param(False) == pytest.approx(4.5 / 8)
    assert nf4_bytes_per_param(True) == pytest.approx((4 + 0.125 + 32 / 16384) / 8)
    assert nf4_bytes_per_param(True) * 8 - 4 == pytest.approx(0.127, abs=5e-4)
    recipe = recipe_bytes_per_param("qlora", "adamw", "bf16_mixed")
    assert recipe["frozen_other_weights"] == 2.0  # embeddings, norms and head stay 16-bit
    assert recipe_bytes_per_param("lora", "adamw", "fp32")["frozen_weights"] == 4.0


# --- ZeRO ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "expected_gb"),
    # ZeRO paper (Rajbhandari et al. 2020) Figure 1: Ψ = 7.5B, N_d = 64, K = 12.
    [(0, 120.0), (1, 31.40625), (2, 16.640625), (3, 1.875)],
)
def test_zero_paper_figure_1(stage, expected_gb):
    # 0: (2 + 2 + 12)Ψ; 1: 2Ψ + 2Ψ + 12Ψ/64; 2: 2Ψ + 14Ψ/64; 3: 16Ψ/64 (bytes, Ψ = 7.5e9)
    inputs = replace(
        llama(seq_len=16), n_params=7.5e9, n_embedding_params=0.0, n_head_params=0.0, dp=64.0,
        zero_stage=float(stage),
    )  # fmt: skip
    assert model_states(memory_per_gpu(inputs)) / 1e9 == pytest.approx(expected_gb, rel=1e-9)


def test_zero_shards_over_data_parallel_replicas_only():
    # 64 GPUs, tp 8 → dp 8: states divide by 8, not 64 (peers.md §4.6: sharding over all GPUs is a bug).
    assert zero_shard_degree(dp=8, tp=8) == 8
    assert zero_shard_degree(dp=2, cp=4) == 8  # CP ranks hold the same weights and join the group
    assert zero_shard_degree(dp=32, hybrid_shard=1, gpus_per_node=8) == 8
    assert zero_shard_degree(dp=32, hybrid_shard=1, gpus_per_node=8, tp=2) == 4
    assert zero_shard_degree(dp=2, hybrid_shard=1, gpus_per_node=8) == 2


@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
@pytest.mark.parametrize(("dp", "tp", "pp"), [(8, 1, 1), (4, 2, 1), (2, 2, 2), (1, 1, 1)])
def test_higher_zero_stage_never_needs_more_memory(method, dp, tp, pp):
    peaks = [
        float(
            memory_per_gpu(llama(method=method, zero_stage=s, dp=dp, tp=tp, pp=pp, grad_accum=4)).peak_bytes
        )
        for s in range(4)
    ]
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in itertools.pairwise(peaks))


# --- toy configurations -------------------------------------------------------------------------------------

# Toy: 1000 parameters of which embedding 100 and head 100, 2 layers of 400; h = 4, a = 2, g = 2, d = 2,
# F = 8 (GeLU), V = 25, seq 2, micro-batch 1, flash attention, no overhead, no fragmentation.
TOY = MemoryInputs(
    n_params=1000.0, n_embedding_params=100.0, n_head_params=100.0, n_layers=2.0, hidden=4.0, n_heads=2.0,
    n_kv_heads=2.0, head_dim=2.0, ffn_hidden=8.0, n_mlp_matrices=2.0, vocab=25.0, seq_len=2.0,
    overhead_bytes=0.0, fragmentation_frac=0.0,
)  # fmt: skip


def test_toy_full_training_breakdown():
    b = memory_per_gpu(TOY)
    # states: 1000 × (2 + 2 + 4 + 8) = 16,000 B
    assert (b.weights_bytes, b.gradients_bytes, b.master_bytes, b.optimizer_bytes) == (2000, 2000, 4000, 8000)
    # per token per layer: 4·h·e = 32 + e·(2·a·d + 2·g·d + 2·F) = 2·(8 + 8 + 16) = 64 + stats 4·2 = 8 → 104;
    # × 2 tokens × 2 layers = 416
    assert b.activations_bytes == pytest.approx(416)
    # logits: 2 tokens × (2·h·e = 16 + V·14 = 350) = 732
    assert b.logits_bytes == pytest.approx(732)
    # forward/backward: 2000 + 8000 + 4000 + max(416 + 732, 2000) = 16,000; step: 16,000 + fp32 gradient
    # copy 1000·4 = 20,000 → the optimizer step peaks
    assert b.allocated_peak_bytes == pytest.approx(20_000)
    assert b.peak_phase == 1


def test_toy_forward_backward_peaks_with_long_sequences():
    b = memory_per_gpu(replace(TOY, seq_len=64.0, micro_batch=4.0))
    assert b.peak_phase == 0
    expected = 2000 + 8000 + 4000 + b.activations_bytes + b.logits_bytes
    assert b.allocated_peak_bytes == pytest.approx(expected)


def test_toy_overhead_and_fragmentation():
    b = memory_per_gpu(replace(TOY, overhead_bytes=500.0, fragmentation_frac=0.1))
    assert b.reserved_peak_bytes == pytest.approx(22_000)
    assert b.peak_bytes == pytest.approx(22_500)


def test_toy_lora_only_adapters_get_gradients_and_optimizer():
    # LoRA on a 16-bit base: frozen 1000 × 2 B; 10 adapters × (2 + 2 + 4 + 8)
    lora = replace(
        TOY, method=1.0, n_adapter_params=10.0, frozen_weight_bytes=2.0, frozen_other_weight_bytes=2.0
    )
    b = memory_per_gpu(lora)
    assert b.weights_bytes == pytest.approx(1000 * 2 + 10 * 2)
    assert (b.gradients_bytes, b.master_bytes, b.optimizer_bytes) == pytest.approx((20, 40, 80))


def test_toy_qlora_quantises_only_layer_weights():
    # 800 layer weights at 0.5159 B (NF4 + double-quant constants); embedding + head 200 × 2 B; adapters 10 × 2
    nf4 = nf4_bytes_per_param(True)
    qlora = replace(
        TOY, method=2.0, n_adapter_params=10.0, frozen_weight_bytes=nf4, frozen_other_weight_bytes=2.0
    )
    assert memory_per_gpu(qlora).weights_bytes == pytest.approx(800 * nf4 + 400 + 20)


def test_toy_offload_moves_states_to_host():
    b = memory_per_gpu(replace(TOY, offload_optimizer=1.0))
    assert (b.optimizer_bytes, b.master_bytes) == (0, 0)
    assert b.host_offload_bytes == pytest.approx(12_000)
    both = memory_per_gpu(replace(TOY, offload_optimizer=1.0, offload_params=1.0))
    assert both.host_offload_bytes == pytest.approx(16_000)
    assert both.weights_bytes == 0


def test_toy_pipeline_reports_the_worse_stage():
    # pp 2: each stage 1 layer (400 params); first stage + embedding 100 = 500, last + head 100 = 500.
    # Each stage: 500 × (2 + 4 + 8) B of weights, master and Adam, plus 500 × 4 B of gradients that
    # accumulate in fp32 over the micro-batches. 4 micro-batches in flight on the first stage: 4 × 1 layer
    # × 64 tokens × 104 B; the last stage holds one plus the logits.
    piped = replace(TOY, pp=2.0, grad_accum=4.0, seq_len=64.0)
    b = memory_per_gpu(piped)
    per_layer = 64 * (32 + 64 + 8)
    states = 500 * 14 + 500 * 4
    first = states + 4 * per_layer
    last_logits = 64 * (16 + 25 * 14)
    last = states + per_layer + last_logits
    assert b.allocated_peak_bytes == pytest.approx(max(first, last))
    assert b.pp_stage == float(last > first)


def test_bytes_per_param_override_scales_model_states():
    # the seed's shortcut: 8e9 × 16 B with the override equals the mixed-precision AdamW recipe
    one_gpu = replace(llama(seq_len=16), n_params=8e9)
    overridden = replace(one_gpu, bytes_per_param=16.0)
    assert model_states(memory_per_gpu(overridden)) == pytest.approx(model_states(memory_per_gpu(one_gpu)))
    assert model_states(memory_per_gpu(overridden)) / GIB == pytest.approx(119.21, abs=0.005)
    lora = replace(llama(method="lora", seq_len=16), bytes_per_param=2.0)
    assert model_states(memory_per_gpu(lora)) == pytest.approx(2.0 * 8.03e9)


# --- properties ---------------------------------------------------------------------------------------------


SHARDED = dict(zero_stage=3, dp=8)  # small model states, so activations decide the peak


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_memory_grows_with_micro_batch_and_sequence(recompute):
    peaks = [
        float(memory_per_gpu(llama(recompute=recompute, seq_len=s, micro_batch=b, **SHARDED)).peak_bytes)
        for s, b in [(1024, 1), (2048, 1), (2048, 2), (8192, 2), (8192, 4)]
    ]
    assert all(later > earlier for earlier, later in itertools.pairwise(peaks))


def test_recompute_never_increases_the_peak():
    none, selective, full = (
        float(memory_per_gpu(llama(recompute=r, flash_attention=0, seq_len=8192)).peak_bytes)
        for r in ("none", "selective", "full")
    )
    assert full <= selective <= none


@pytest.mark.parametrize("zero_stage", [1, 2, 3])
def test_max_micro_batch_is_the_largest_that_fits(zero_stage):
    inputs = llama(zero_stage=zero_stage, dp=8, seq_len=4096, grad_accum=2, recompute="full")
    vram = 80 * GIB
    best = float(max_micro_batch(inputs, vram))
    assert best >= 1
    assert float(memory_per_gpu(replace(inputs, micro_batch=best)).peak_bytes) <= vram
    assert float(memory_per_gpu(replace(inputs, micro_batch=best + 1)).peak_bytes) > vram


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_max_micro_batch_does_not_depend_on_the_plans_own_micro_batch(recompute):
    """The limit is read from the plan's own terms (one sequence's share: its transient bytes ÷ b), so the
    same plan at micro-batch 1, 3 or 8 has the same largest micro-batch."""
    base = llama(zero_stage=3, dp=8, seq_len=4096, grad_accum=2, recompute=recompute)
    limits = {b: float(max_micro_batch(replace(base, micro_batch=b), 80 * GIB)) for b in (1.0, 3.0, 8.0)}
    assert limits[1.0] >= 1 and limits[1.0] == limits[3.0] == limits[8.0]


def test_the_device_peak_and_the_limit_of_one_plan_are_worked_out_from_the_same_terms():
    """Both read one set of stage terms, kept on the (frozen) inputs; `replace` makes inputs without them."""
    inputs = llama(zero_stage=3, dp=8, seq_len=4096, recompute="full")
    before = float(memory_per_gpu(inputs).peak_bytes)
    max_micro_batch(inputs, 80 * GIB)
    assert float(memory_per_gpu(inputs).peak_bytes) == before
    longer = replace(inputs, seq_len=8192.0)
    assert float(memory_per_gpu(longer).peak_bytes) > before


def test_max_micro_batch_is_zero_when_states_do_not_fit():
    assert max_micro_batch(llama(), 24 * GIB) == 0  # 8B × 16 B = 119.6 GiB of states on one GPU


def test_vectorised_call_equals_per_row_calls():
    rng = np.random.default_rng(11)
    n = 40
    columns = {
        "micro_batch": rng.integers(1, 5, n).astype(float),
        "seq_len": rng.choice([512.0, 4096.0, 16384.0], n),
        "zero_stage": rng.integers(0, 4, n).astype(float),
        "dp": rng.choice([1.0, 8.0, 64.0], n),
        "tp": rng.choice([1.0, 4.0], n),
        "pp": rng.choice([1.0, 4.0], n),
        "grad_accum": rng.choice([1.0, 8.0], n),
        "recompute": rng.integers(0, 4, n).astype(float),
        "method": rng.integers(0, 3, n).astype(float),
        "offload_optimizer": rng.integers(0, 2, n).astype(float),
    }
    base = replace(llama(), n_adapter_params=4.2e7, frozen_weight_bytes=2.0, frozen_other_weight_bytes=2.0)
    vector = memory_per_gpu(replace(base, **columns)).as_dict()
    for i in range(n):
        scalar = memory_per_gpu(replace(base, **{k: v[i] for k, v in columns.items()})).as_dict()
        for key, value in scalar.items():
            assert np.broadcast_to(vector[key], (n,))[i] == pytest.approx(float(value), rel=1e-12), key
    vram = 80 * GIB
    best = max_micro_batch(replace(base, **columns), vram)
    for i in range(n):
        assert best[i] == max_micro_batch(replace(base, **{k: v[i] for k, v in columns.items()}), vram)


@pytest.mark.parametrize(
    "changes",
    [
        {},  # 8B, ZeRO-3 on 8 H100: the forward/backward phase is the peak
        {
            "model": "Llama 3.1 70B"
        },  # the optimizer step is the peak: its fp32 gradient copy must be in the bar
        {"method": "qlora", "gpu": "RTX 4090", "n_gpus": 1},
        {"grad_accum": 4, "zero_stage": 0, "n_gpus": 1, "model": "Llama 3.2 1B"},
    ],
)
def test_the_memory_bar_holds_every_byte_of_the_peak(changes: dict[str, object]) -> None:
    """The Memory page's stacked bar adds each component at its largest, so it can only exceed the peak (by what
    is freed between phases), never fall short of it: a peak above the bar would be memory the chart cannot
    explain (the 70B bar summed to less than its peak before the optimizer-step copy was shown)."""
    from planner import estimate_resolved, memory_components, resolve
    from planner.catalogue.catalog import default_catalogs
    from planner.inputs.scenario import Scenario

    est = estimate_resolved(resolve(Scenario(**changes), default_catalogs()))
    total_gib = float(memory_components(est)["gib"].sum())
    assert est.peak_gib_per_device is not None
    assert total_gib >= est.peak_gib_per_device - 1e-9
    assert set(memory_components(est)["component"]) >= {"fp32 gradient copy", "Activations", "Gradients"}
