"""Dataset tokens, the FLOP model, time and checkpoint I/O (planner/formulas/step/compute.py, planner/formulas/step/timing.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.formulas.step import compute, timing
from planner.formulas.step.comm import StepComm, layout_comm, pipeline_bubble_frac

SECONDS_PER_DAY = 86_400.0
NO_COMM = StepComm(pipelined_s=0.0, data_parallel_s=0.0)

# --- the seed's worked example (shared/seeds, "Fine-Tuning Run Planner") --------------------------------


def test_seed_example_exact():
    tokens = compute.training_tokens(30_000, 1_000, 3)
    assert tokens == 90_000_000
    flops_per_token = compute.override_flops_per_token(123.0, 6, 8e9)  # the override replaces 123
    flops = compute.total_flops(flops_per_token, tokens)
    assert flops == pytest.approx(4.32e18, rel=1e-12)
    per_device_flops_per_s = 400e12 * 0.3  # peak × utilisation, as `compute_time_s` divides by
    assert per_device_flops_per_s == pytest.approx(1.20e14, rel=1e-12)
    assert 4 * per_device_flops_per_s == pytest.approx(4.80e14, rel=1e-12)  # across the cluster
    seconds = timing.compute_time_s(flops, 4, 400e12, 0.3)
    assert seconds / 3600 == pytest.approx(2.5, rel=1e-12)
    assert 4 * seconds / 3600 == pytest.approx(10.0, rel=1e-12)  # device-hours
    assert tokens / seconds == pytest.approx(10_000, rel=1e-12)


def test_seed_example_through_run_time_with_own_mfu():
    # With your own MFU the seed's form holds whatever the layout: communication is reported, not added.
    batch = compute.global_batch_tokens(1, 1, 4, 4096)
    result = timing.run_time(
        model_flops_per_token=6 * 8e9, hardware_flops_per_token=6 * 8e9, useful_tokens=9e7, processed_tokens=9e7,
        batch_tokens=batch, n_gpus=4, peak_flops_per_s=400e12, utilisation_frac=0.3, end_to_end=1,
        comm=StepComm(pipelined_s=0.0, data_parallel_s=0.5), bubble_frac=0.0, overlap_frac=0.5,
    )  # fmt: skip
    assert result.wall_clock_s == pytest.approx(9000.0, rel=1e-12)
    assert result.useful_tokens_per_s == pytest.approx(10_000, rel=1e-12)
    assert result.tokens_per_s_per_gpu == pytest.approx(2_500, rel=1e-12)
    assert result.mfu == pytest.approx(0.3, rel=1e-12)
    assert result.comm_time_s == 0.5
    assert result.exposed_comm_time_s == 0.0


# --- Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters"), eq. 4 ------
# End-to-end time ≈ 8·T·P / (n·X) with full recomputation: hardware FLOPs 8·P per token, X the achieved
# hardware FLOP/s per GPU. §5.1 worked examples: GPT-3 175B, 300B tokens, 1,024 A100 at 140 TFLOP/s ≈ 34 days;
# 1T parameters, 450B tokens, 3,072 A100 at 163 TFLOP/s ≈ 84 days.


@pytest.mark.parametrize(
    ("n_params", "tokens", "n_gpus", "achieved_tflops", "days"),
    [(175e9, 300e9, 1024, 140, 34), (1e12, 450e9, 3072, 163, 84)],
)
def test_megatron_training_time_examples(n_params, tokens, n_gpus, achieved_tflops, days):
    model = compute.model_flops_per_token(n_params, 0.0)
    hardware = compute.hardware_flops_per_token(model, n_params, 0.0, 1, 1, 0)
    assert hardware == pytest.approx(8 * n_params, rel=1e-12)
    seconds = timing.compute_time_s(hardware * tokens, n_gpus, achieved_tflops * 1e12, 1.0)
    assert seconds / SECONDS_PER_DAY == pytest.approx(days, rel=0.05)


def test_megatron_gpt3_example_with_attention_still_within_five_percent():
    # GPT-3: 96 layers, 96 heads of 128, 2,048 tokens; head 51,200 × 12,288 is not recomputed.
    attn = compute.attention_fwd_flops_per_token(96, 96, 128, 2048)
    model = compute.model_flops_per_token(175e9, attn)
    hardware = compute.hardware_flops_per_token(model, 175e9 - 51_200 * 12_288, attn, 1, 1, 0)
    seconds = timing.compute_time_s(hardware * 300e9, 1024, 140e12, 1.0)
    assert seconds / SECONDS_PER_DAY == pytest.approx(34, rel=0.05)


# --- FLOP formulas ------------------------------------------------------------------------------------


def test_attention_flops_toy():
    # 2 layers, 4 heads of 8, 16-token context: QKᵀ and A·V each 2·16·4·8 = 1,024 per token per layer,
    # 2,048 both, 4,096 over 2 layers; a causal mask halves it to 2,048.
    assert compute.attention_fwd_flops_per_token(2, 4, 8, 16, causal=0) == 4096
    assert compute.attention_fwd_flops_per_token(2, 4, 8, 16) == 2048
    # PaLM appendix B counts 12·L·H·Q·T for forward + backward: 3 × the non-causal forward.
    assert 12 * 2 * 4 * 8 * 16 == 3 * 4096


def test_model_flops_full_and_lora():
    # Full: 6 · 1e9 + 3 · 1e6 attention = 6.003e9. LoRA: 4 · 1e9 + 6 · 1e7 adapters + 3e6 = 4.063e9.
    assert compute.model_flops_per_token(1e9, 1e6) == pytest.approx(6.003e9, rel=1e-12)
    lora = compute.model_flops_per_token(1e9, 1e6, frozen_base=1, n_adapter_params=1e7)
    assert lora == pytest.approx(4.063e9, rel=1e-12)
    # Adapters only count when the base is frozen.
    assert compute.model_flops_per_token(1e9, 0.0, 0, 1e7) == pytest.approx(6e9, rel=1e-12)


@pytest.mark.parametrize(
    ("full", "selective", "flash", "extra"),
    [
        (0, 0, 1, 0.0),
        (0, 1, 1, 1e6),  # selective: the attention core again
        (1, 0, 1, 2 * 9e8 + 1e6),  # full: every layer's forward (head excluded) + attention
        (0, 0, 0, 3e6),  # no fused kernel: the masked half is computed anyway, 3 × 1e6 over the pass
        (1, 0, 0, 3e6 + 2 * 9e8 + 2e6),
    ],
)
def test_hardware_flops(full, selective, flash, extra):
    model = compute.model_flops_per_token(1e9, 1e6)
    hardware = compute.hardware_flops_per_token(model, 9e8, 1e6, flash, full, selective)
    assert hardware - model == pytest.approx(extra, rel=1e-12)


def test_override_keeps_formula_when_zero():
    assert compute.override_flops_per_token(7.0, 0.0, 8e9) == 7.0
    values = compute.override_flops_per_token(np.array([7.0, 7.0]), np.array([0.0, 4.0]), 1e9)
    assert list(values) == [7.0, 4e9]


@pytest.mark.parametrize(
    ("tokens_per_example", "seq_len", "packing", "factor"),
    [
        (1000, 4096, 1, 1.0),  # packed: nothing wasted
        (1000, 4096, 0, 4.096),  # each 1,000-token example padded to 4,096
        (4096, 4096, 0, 1.0),  # exactly one sequence
        (5000, 4096, 0, 8192 / 5000),  # split over 2 sequences, the second mostly padding
    ],
)
def test_padding_factor(tokens_per_example, seq_len, packing, factor):
    assert compute.padding_factor(tokens_per_example, seq_len, packing) == pytest.approx(factor, rel=1e-12)


def test_batch_and_steps():
    # 2 per micro-batch × 8 accumulation × 4 replicas × 4,096 tokens = 262,144 tokens per step.
    batch = compute.global_batch_tokens(2, 8, 4, 4096)
    assert batch == 262_144
    assert compute.optimizer_steps(262_144 * 10, batch) == 10
    assert compute.optimizer_steps(262_144 * 10 + 1, batch) == 11  # the last partial batch is a step


def test_formulas_broadcast_over_arrays():
    seq = np.array([1024, 2048, 4096])
    attn = compute.attention_fwd_flops_per_token(32, 32, 128, seq)
    assert attn.shape == (3,)
    assert np.all(np.diff(attn) > 0)
    hardware = compute.hardware_flops_per_token(compute.model_flops_per_token(8e9, attn), 7e9, attn, 1, 1, 0)
    scalar = [
        compute.hardware_flops_per_token(compute.model_flops_per_token(8e9, a), 7e9, a, 1, 1, 0) for a in attn
    ]
    assert np.allclose(hardware, scalar, rtol=1e-12)


# --- time ---------------------------------------------------------------------------------------------


@given(
    compute_s=st.floats(0.01, 100),
    pipelined=st.floats(0, 50),
    data_parallel=st.floats(0, 50),
    bubble=st.floats(0, 0.9),
    overlap=st.floats(0, 0.99),
)
def test_compute_time_from_step_inverts_step_time(compute_s, pipelined, data_parallel, bubble, overlap):
    step = timing.step_time_s(compute_s, pipelined, data_parallel, bubble, overlap)
    back = timing.compute_time_from_step_s(step, pipelined, data_parallel, bubble, overlap)
    assert back == pytest.approx(compute_s, rel=1e-6)


def test_compute_time_from_step_is_nan_when_comm_alone_is_longer():
    assert np.isnan(timing.compute_time_from_step_s(1.0, 0.0, 2.0, 0.0, 0.9))


def test_step_time_toy():
    # compute 10 s, TP 2 s and DP 4 s of traffic, half hidden, 10 % bubble:
    # (10 + 2 − 1) / 0.9 + (4 − 2) = 12.2222 + 2 = 14.2222 s.
    assert timing.step_time_s(10.0, 2.0, 4.0, 0.1, 0.5) == pytest.approx(11 / 0.9 + 2, rel=1e-12)
    # overlap_model "windows": DP hides min(4, 0.5 × window, 0.5 × 10 − 1 left). Behind all
    # the compute (window 1) all 4 s hide: 11 / 0.9; behind a fifth of it only 0.5 × 2 = 1 s: 11 / 0.9 + 3.
    assert timing.step_time_s(10.0, 2.0, 4.0, 0.1, 0.5, 1.0, 0.0, 1.0) == pytest.approx(11 / 0.9, rel=1e-12)
    assert timing.step_time_s(10.0, 2.0, 4.0, 0.1, 0.5, 0.2, 0.0, 1.0) == pytest.approx(
        11 / 0.9 + 3, rel=1e-12
    )
    # compute 1 s can hide only 1 s of the 2 s of traffic even at full overlap: step = max(1, 2) = 2 s.
    assert timing.step_time_s(1.0, 1.0, 1.0, 0.0, 1.0) == pytest.approx(2.0, rel=1e-12)
    # Half overlap: 0.5 s hidden, from the in-pipeline part first: 1 + 0.5 + 1 = 2.5 s.
    assert timing.exposed_parts_s(1.0, 1.0, 1.0, 0.5) == (0.5, 1.0)
    assert timing.step_time_s(1.0, 1.0, 1.0, 0.0, 0.5) == pytest.approx(2.5, rel=1e-12)


def _preset_run(n_gpus, comm, bubble=0.0, batch=2**22):
    return timing.run_time(
        model_flops_per_token=6 * 7e9, hardware_flops_per_token=8 * 7e9, useful_tokens=1e10,
        processed_tokens=1e10, batch_tokens=batch, n_gpus=n_gpus, peak_flops_per_s=989.5e12,
        utilisation_frac=0.5, end_to_end=0, comm=comm, bubble_frac=bubble, overlap_frac=0.9,
    )  # fmt: skip


def test_preset_mode_reports_mfu_and_hfu():
    result = _preset_run(8, NO_COMM)
    assert result.hfu == pytest.approx(0.5, rel=1e-12)  # no comm, no bubble: HFU is the preset
    assert result.mfu == pytest.approx(0.5 * 6 / 8, rel=1e-12)  # full recompute: MFU = HFU · 6/8
    assert result.wall_clock_s == pytest.approx(8 * 7e9 * 1e10 / (8 * 989.5e12 * 0.5), rel=1e-12)
    with_bubble = _preset_run(8, NO_COMM, bubble=0.2)
    assert with_bubble.wall_clock_s == pytest.approx(result.wall_clock_s / 0.8, rel=1e-12)


def test_more_gpus_never_add_flops_and_time_falls_until_comm_dominates():
    # 7B full training, fixed global batch of 1,024 × 4,096 tokens, DDP gradients in bf16, 100 Gb/s Ethernet
    # between nodes (12.5 GB/s per GPU).
    dps = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
    grad_accum = 1024 / dps
    tokens = 1e10
    flops = compute.total_flops(compute.model_flops_per_token(7e9, 0.0), tokens + 0 * dps)
    assert np.all(np.diff(flops) <= 0)  # the FLOPs do not depend on the GPU count
    traffic = layout_comm(
        n_params=7e9, n_trainable_params=7e9, n_layers=32, hidden_size=4096, kv_dim=4096, seq_len=4096,
        micro_batch=1, grad_accum=grad_accum, tp=1, pp=1, cp=1, dp=dps, zero_stage=0, hybrid_shard=0,
        full_recompute=0, grad_comm_bytes=2.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=8,
        intra_node_gb_per_s=450.0, pcie_gb_per_s=63.0, inter_node_gb_per_s=12.5,
    )  # fmt: skip
    result = timing.run_time(
        6 * 7e9, 6 * 7e9, tokens, tokens, 1024 * 4096, dps, 989.5e12, 0.5, 0, traffic,
        pipeline_bubble_frac(1, grad_accum), 0.9,
    )  # fmt: skip
    wall = result.wall_clock_s
    assert np.all(np.diff(wall[:8]) < 0)  # 1 → 128 GPUs: faster every time
    exposed_share = result.exposed_comm_time_s / result.step_time_s
    assert np.all(np.diff(exposed_share[3:]) > 0)  # past one node the network takes a growing share
    floor = traffic.data_parallel_s[-1] * tokens / (1024 * 4096)  # steps × one all-reduce each
    assert wall[-1] >= floor  # at 1,024 GPUs the all-reduces bound the run
    assert wall[-1] / wall[-2] > 0.9  # and doubling the GPUs buys almost nothing


# --- checkpoint I/O -----------------------------------------------------------------------------------


def test_checkpoint_bytes_and_save_time():
    # 8B full training: 2 B weights + 12 B master and Adam moments = 14 B/param = 112 GB;
    # at 2 GB/s that is 56 s per save, 560 s for 10 saves.
    size = timing.checkpoint_bytes(8e9, 2.0, 8e9, 12.0)
    assert size == pytest.approx(112e9, rel=1e-12)
    assert timing.checkpoint_save_time_s(size, 2.0, 10) == pytest.approx(560.0, rel=1e-12)
    # LoRA saves only its 40M adapters and their state: 40e6 · (2 + 12) = 560 MB.
    assert timing.checkpoint_bytes(40e6, 2.0, 40e6, 12.0) == pytest.approx(560e6, rel=1e-12)


@pytest.mark.parametrize(
    ("storage", "pcie", "seconds"),
    [
        (2.0, 63.0, 16e9 / 2e9),  # network storage is the bottleneck: 8 s for 16 GB
        (100.0, 63.0, 16e9 / (63e9 * 0.88)),  # a fast source: PCIe Gen5 at 55.4 GB/s bounds it
        (100.0, 31.5, 16e9 / (31.5e9 * 0.88)),  # Gen4 takes twice as long
    ],
)
def test_checkpoint_load_time(storage, pcie, seconds):
    assert timing.checkpoint_load_time_s(16e9, storage, pcie) == pytest.approx(seconds, rel=1e-12)
