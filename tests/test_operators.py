"""The operator step model: each term with its arithmetic written out, and the properties it must keep."""

from __future__ import annotations

import math

import pytest
from ci import n_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.microbench import gpu_constants
from planner.estimate import estimate
from planner.evaluate import evaluate
from planner.formulas.operators import attention, dispatch, gemm, memory_bound
from planner.formulas.operators.step import operator_step
from planner.inputs.scenario import Scenario
from planner.resolve import resolve

CATS = default_catalogs()
H100_PEAK = 989.5e12  # data/gpus.csv, H100 SXM dense BF16
H100_MAMF = 794.5 / 989.5  # data/microbench/published.csv: 794.5 TFLOP/s best matmul (stas00 MAMF table)
H100_BW = 3.35e12 * 0.9  # 3.35 TB/s datasheet × the copy's 90 %
PROPERTY = settings(max_examples=n_examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_wave_quantisation_of_a_split_projection():
    # 4,096 tokens × a 1,024-wide output: 32 × 4 = 128 tiles of 128 × 256, one wave on 132 SMs.
    assert gemm.quantisation_frac(4096.0, 1024.0, 132.0) == pytest.approx(4096 * 1024 / (132 * 128 * 256))
    # 1,280 wide: 32 × 5 = 160 tiles, two waves (264 slots), 5,242,880 / 8,650,752 = 0.606.
    assert gemm.quantisation_frac(4096.0, 1280.0, 132.0) == pytest.approx(0.6061, abs=1e-4)
    assert gemm.quantisation_frac(4096.0, 1280.0, 0.0) == 1.0  # no SM grid: no quantisation


def test_a_large_gemm_runs_at_the_matmul_ceiling_times_its_quantisation():
    # 8,192³: 2 · 8,192³ = 1.0995e12 FLOP; 64 × 32 = 2,048 tiles, 16 waves (2,112 slots): 0.9697
    frac = 8192 * 8192 / (2112 * 128 * 256)
    expected = 2 * 8192**3 / (H100_PEAK * H100_MAMF * frac)  # 1.0995e12 / 7.704e14 = 1.427 ms
    got = gemm.gemm_time_s(8192.0, 8192.0, 8192.0, H100_PEAK, H100_MAMF, 132.0, H100_BW, 2.0)
    assert got == pytest.approx(expected, rel=1e-9)
    assert got == pytest.approx(1.4272e-3, rel=1e-3)


def test_a_thin_gemm_is_bound_by_memory():
    # A LoRA down-projection: 4,096 × 4,096 output from K = 16: 5.4e8 FLOP (0.7 µs at the ceiling) but
    # (4,096·16 + 16·4,096 + 4,096²) · 2 bytes = 33,816,576 bytes: 11.2 µs at 3.015 TB/s.
    got = gemm.gemm_time_s(4096.0, 4096.0, 16.0, H100_PEAK, H100_MAMF, 132.0, H100_BW, 2.0)
    assert got == pytest.approx(33_816_576 / H100_BW, rel=1e-9)
    assert got == pytest.approx(11.2e-6, rel=0.01)


def test_fused_attention_time_at_its_sequence_and_head_dim():
    # H100: 335 / 989.5 = 0.3386 of the BF16 peak (FlashAttention-2, §4.1); at 4,096 tokens × 4,096 / 4,352.
    frac = 335.0 / 989.5
    assert attention.fused_attention_frac(frac, 4096.0, 128.0) == pytest.approx(frac * 4096 / 4352)
    # head dim 64: (64/96) / (128/160) = 0.8333 of the head-dim-128 rate
    assert attention.fused_attention_frac(frac, 4096.0, 64.0) == pytest.approx(
        frac * 4096 / 4352 * 0.8333, 1e-3
    )
    # one layer of Llama 3.1 8B, 4,096 causal tokens: forward 2 · 2 · 4,096² / 2 · 32 heads · 128 = 1.374e11
    flops = 2 * 2 * 4096 * 4096 / 2 * 32 * 128
    seconds = attention.attention_time_s(
        flops, 1.0, H100_PEAK, frac, H100_MAMF, 4096.0, 128.0, 0.0, H100_BW, 2.0
    )
    assert seconds == pytest.approx(
        flops / (H100_PEAK * frac * 4096 / 4352), rel=1e-9
    )  # 1.374e11 / 3.153e14 = 0.436 ms
    assert seconds == pytest.approx(0.4359e-3, rel=1e-3)


def test_a_flash_attention_1_era_kernel_runs_at_half_the_flash_attention_2_rate():
    # FlashAttention-2 "around 2x" FlashAttention (Dao 2023 abstract): H100 at 4,096 tokens, head dim 128,
    # 0.3386 × 4,096 / 4,352 = 0.3187 with FlashAttention-2, 0.1593 with the older kernel (MPT's Triton port).
    frac = 335.0 / 989.5
    assert attention.fused_attention_frac(frac, 4096.0, 128.0, 1.0) == pytest.approx(0.1593, abs=1e-4)
    flops = 2 * 2 * 4096 * 4096 / 2 * 32 * 128  # one Llama 3.1 8B layer's causal forward: 1.374e11
    older = attention.attention_time_s(
        flops, 1.0, H100_PEAK, frac, H100_MAMF, 4096.0, 128.0, 0.0, H100_BW, 2.0, 1.0
    )
    assert older == pytest.approx(0.8718e-3, rel=1e-3)  # twice FlashAttention-2's 0.436 ms
    # the unfused path has no kernel generation: the flag leaves it alone
    unfused = [
        attention.attention_time_s(
            flops, 0.0, H100_PEAK, frac, H100_MAMF, 4096.0, 128.0, 5e8, H100_BW, 2.0, k
        )
        for k in (0.0, 1.0)
    ]
    assert unfused[0] == unfused[1]


def test_a_plan_with_the_older_attention_kernel_spends_twice_as_long_in_attention_only():
    plan = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8, seq_len=8192, micro_batch=1)
    flash2, flash1 = (
        evaluate(resolve(plan.updated(attention_kernel=k), CATS).columns) for k in ("flash2", "flash1")
    )
    assert float(flash1["attention_time_s"]) == pytest.approx(2 * float(flash2["attention_time_s"]), rel=1e-9)
    assert float(flash1["gemm_time_s"]) == pytest.approx(float(flash2["gemm_time_s"]), rel=1e-12)
    assert float(flash1["step_time_s"]) > float(flash2["step_time_s"])


def test_the_attention_kernel_is_read_from_a_case_row_and_checked_as_an_input():
    from pydantic import ValidationError

    from planner.cases.case_words import attention_kernel

    # the llm-foundry H100 rows' cell, from their benchmark script's default attn_impl (calibration.csv notes)
    assert (
        attention_kernel("yes (Triton FlashAttention-1 port: attn_impl triton, flash-attn 1.0.9)") == "flash1"
    )
    assert attention_kernel("yes (PyTorch SDPA)") == "flash2"
    assert attention_kernel("") == "flash2"
    with pytest.raises(ValidationError, match="attention_kernel"):
        Scenario(attention_kernel="flash3")


def test_unfused_attention_adds_the_score_traffic():
    # the unfused path: the full-matrix FLOPs at the matmul ceiling plus 8 passes over the scores
    flops, scores = 2.748e11, 32 * 4096 * 4096.0
    got = attention.attention_time_s(
        flops, 0.0, H100_PEAK, 0.34, H100_MAMF, 4096.0, 128.0, scores, H100_BW, 2.0
    )
    assert got == pytest.approx(flops / (H100_PEAK * H100_MAMF) + 8 * scores * 2 / H100_BW, rel=1e-9)


def test_optimizer_step_bytes_for_mixed_precision_adam():
    # clip (read grads twice: 2·2) + update (read grad 2, master 4 and moments 8 read and written: 24,
    # write the bf16 weight 2) = 32 bytes per parameter
    assert memory_bound.optimizer_step_bytes_per_param(2.0, 4.0, 8.0, 2.0) == 32.0
    # 8e9 parameters on one H100: 2.56e11 bytes / 3.015e12 B/s = 84.9 ms
    seconds = memory_bound.memory_time_s(8e9 * 32.0, 3350.0, 0.9)
    assert seconds == pytest.approx(0.0849, rel=1e-3)


def test_layer_element_wise_traffic():
    # Llama 3.1 8B layer, tp 1: 10 · 4,096 (norms and residuals) + 2 · (4,096 + 1,024) (rotary) + 3 · 14,336
    got = memory_bound.layer_elements_per_token(4096.0, 4096.0, 1024.0, 14336.0, 3.0, 1.0, 0.0, 0.0)
    assert got == 10 * 4096 + 2 * 5120 + 3 * 14336 == 94_208
    # tp 4 without sequence parallelism: norms and residuals stay whole on every rank
    split = memory_bound.layer_elements_per_token(4096.0, 4096.0, 1024.0, 14336.0, 3.0, 4.0, 0.0, 0.0)
    assert split == 10 * 4096 + (2 * 5120 + 3 * 14336) / 4


def test_a_pass_lasts_at_least_its_launches():
    assert dispatch.pass_time_s(100e-6, 33.0, 8e-6) == pytest.approx(264e-6)  # 33 kernels × 8 µs
    assert dispatch.pass_time_s(1e-3, 33.0, 8e-6) == 1e-3


def test_constants_come_from_the_microbenchmark_table():
    h100, h200 = CATS.gpu("H100 SXM"), CATS.gpu("H200 SXM")
    assert gpu_constants(h100, "bf16", {}).gemm_peak_frac == pytest.approx(794.5 / 989.5)
    # The H200 has its own table measured on the lent GPU (data/microbench/h200*.csv): its best BF16 GEMM
    # (799.8 TFLOP/s of 989.5), FP8 GEMM (1,572.0 of 1,979), flash attention and large copies
    constants = gpu_constants(h200, "bf16", {"H100 SXM": h100})
    assert constants.gemm_peak_frac == pytest.approx(799.829 / 989.5, rel=1e-6) and constants.n_sms == 132
    assert gpu_constants(h200, "fp8", {"H100 SXM": h100}).gemm_peak_frac == pytest.approx(
        1572.01 / 1979, 1e-6
    )
    # the H100 96 GB variant has no rows: the H100's measured fractions, scaled by its own datasheet
    variant = CATS.gpu("H100 SXM 96GB HBM2e (500 W)")
    assert gpu_constants(variant, "bf16", {"H100 SXM": h100}).memory_frac == pytest.approx(3016.8 / 3350.0)


def _step(**fields):
    base = {"model": "Llama 3.1 8B", "gpu": "H100 SXM", "n_gpus": 8, "seq_len": 4096, "micro_batch": 1}
    columns = resolve(Scenario(**{**base, **fields}), CATS).columns
    return columns, operator_step(columns), evaluate(columns)


def test_the_step_adds_its_parts():
    _, ops, out = _step()
    assert ops.compute_s == pytest.approx(ops.gemm_s + ops.attention_s + ops.memory_bound_s + ops.launch_s)
    assert 0.6 < ops.gemm_s / ops.compute_s < 0.95  # an 8B model at 4k tokens is GEMM-bound
    assert out["step_time_s"] >= ops.compute_s / CATS.residual_frac("hopper") * (1 - 1e-9)


def test_a_small_model_at_a_small_micro_batch_is_launch_bound():
    # Qwen2.5 0.5B, 512 tokens, fused kernels: 24 layers × (33 + 66) kernels × 9 µs = 21.4 ms of launches per
    # micro-batch (its Hugging Face eager code dispatches more: tests/test_eager_step.py).
    # Its GPU work is shorter: hidden 896 leaves thin GEMMs (QKV: 512 × 1,152 is 4 × 5 = 20 tiles on 132 SMs,
    # 512 · 1,152 / (132 · 128 · 256) = 14 % of the slots busy), so both passes wait for the host.
    _, ops, _ = _step(model="Qwen2.5 0.5B", seq_len=512)
    launches = 24 * (33 + 66) * 9e-6
    assert gemm.quantisation_frac(512.0, 1152.0, 132.0) == pytest.approx(512 * 1152 / (132 * 128 * 256))
    gpu = ops.compute_s - ops.launch_s - ops.optimizer_s
    assert ops.compute_s - ops.optimizer_s == pytest.approx(launches, rel=1e-9)
    assert 0 < gpu < launches and ops.launch_s == pytest.approx(launches - gpu, abs=1e-12)
    # The residual divides the GPU's work, never the host's launches: at Hopper's residual the GPU work still
    # hides under the 21.4 ms of launches, so only the optimizer step (once per step) is divided.
    columns = _step(model="Qwen2.5 0.5B", seq_len=512)[0]
    residual = CATS.residual_frac("hopper")
    assert gpu / residual < launches
    with_residual = operator_step(columns, residual_frac=residual).residual_compute_s
    assert with_residual == pytest.approx(launches + ops.optimizer_s / residual, rel=1e-9)


def test_the_residual_divides_a_gpu_bound_step_whole():
    # Llama 3.1 8B at 4,096 tokens is GPU-bound (no launch overhead): the residual divides all of it.
    columns, ops, _ = _step()
    assert ops.launch_s == 0.0
    residual = CATS.residual_frac("hopper")
    assert operator_step(columns, residual_frac=residual).residual_compute_s == pytest.approx(
        ops.compute_s / residual, rel=1e-9
    )


@PROPERTY
@given(
    st.sampled_from(["Llama 3.1 8B", "Llama 3.1 70B"]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from([1024, 4096]),
)
def test_lora_is_never_slower_than_full_training_of_the_same_plan(model, tp, seq_len):
    full = _step(model=model, tp=tp, seq_len=seq_len, n_gpus=8 * tp)[2]["step_time_s"]
    lora = _step(model=model, tp=tp, seq_len=seq_len, n_gpus=8 * tp, method="lora")[2]["step_time_s"]
    assert lora <= full * (1 + 1e-9)


@PROPERTY
@given(
    st.sampled_from(["Llama 3.1 8B", "Llama 3.1 70B"]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4]),
)
def test_a_smaller_micro_batch_is_never_more_efficient_per_token(model, tp, micro_batch):
    small = _step(model=model, tp=tp, micro_batch=micro_batch, n_gpus=8)[1]
    large = _step(model=model, tp=tp, micro_batch=2 * micro_batch, n_gpus=8)[1]
    # per token, the optimizer step (once per step whatever the micro-batch) aside: twice the tokens
    assert (large.compute_s - large.optimizer_s) / 2 <= (small.compute_s - small.optimizer_s) * (1 + 1e-9)


def test_tp_beyond_a_node_is_never_cheaper_in_communication():
    inside = _step(model="Llama 3.1 70B", tp=8, n_gpus=16, gpus_per_node=8)[2]
    across = _step(model="Llama 3.1 70B", tp=16, n_gpus=16, gpus_per_node=8)[2]
    assert across["comm_time_s"] >= inside["comm_time_s"]
    assert math.isfinite(across["step_time_s"])


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"model": "Llama 3.1 70B", "n_gpus": 16, "tp": 8, "pp": 2, "grad_accum": 4},
        {"method": "qlora", "n_gpus": 1},
        {"model": "Llama 3.1 70B", "n_gpus": 8, "offload_optimizer": True, "zero_stage": 3},
    ],
)
def test_the_reported_parts_add_up_to_the_step(fields):
    base = {"model": "Llama 3.1 8B", "gpu": "H100 SXM", "n_gpus": 8, "seq_len": 4096}
    e = estimate(Scenario(**{**base, **fields}), CATS)
    parts = (
        e.gemm_time_s + e.attention_time_s + e.memory_bound_time_s + e.launch_overhead_s + e.residual_time_s
    )
    parts += e.adapter_memory_time_s + e.offload_time_s + e.exposed_pipelined_comm_s
    parts += e.exposed_data_parallel_comm_s + e.bubble_time_s
    assert parts == pytest.approx(e.step_time_s, rel=1e-9)
    assert e.bound_by


def test_tensor_parallel_collectives_are_exposed_unless_overlapped():
    # Llama 3.1 8B, TP 8 in one node: without Megatron's tp_comm_overlap every tensor-parallel collective waits
    # on the critical path; with it only the hideable share stays (the overlap share of the compute hides it)
    plain = _step(tp=8, grad_accum=8)[2]
    overlapped = _step(tp=8, grad_accum=8, tp_comm_overlap=True)[2]
    assert plain["step_time_s"] > overlapped["step_time_s"]
    assert plain["exposed_pipelined_comm_s"] - overlapped["exposed_pipelined_comm_s"] == pytest.approx(
        plain["step_time_s"] - overlapped["step_time_s"], rel=1e-9
    )
    # Written out: 8 micro-batches × 4 all-reduces × 32 layers of 4,096 tokens × 4,096 × 2 bytes (33.5 MB), each
    # ring all-reduce sending 2 · 7/8 of it (58.7 MB) over NVLink at NCCL's achieved 370 GB/s (450 line rate):
    # 6.01e10 B / 3.7e11 B/s = 0.1625 s.
    tensor_s = 8 * 4 * 32 * (2 * 7 / 8 * 4096 * 4096 * 2) / 370e9
    assert tensor_s == pytest.approx(0.1625, rel=1e-3)
    # with overlap (compute longer than the traffic) 0.9 of it hides; without, all of it waits: 0.9 × 0.1625 more,
    # less what the hidden traffic still costs: NCCL's 16 channels hold 16 of the H100's 132 SMs while it runs,
    # so the compute beside it takes 16 / 116 of its length longer: 0.9 × 0.1625 × (1 − 16/116) = 0.1261 s
    diff = plain["exposed_pipelined_comm_s"] - overlapped["exposed_pipelined_comm_s"]
    assert diff == pytest.approx(0.9 * tensor_s * (1 - 16 / 116), rel=1e-9)
    assert diff == pytest.approx(0.1261, rel=1e-3)


def test_source_holdout_score_of_throughput_and_time_is_bounded():
    # The score that counts for a new setup: every row predicted with the residual rebuilt without its source
    # (validate --refit source). Published rows, measured when the operator model landed: median 11.5 %, p90
    # 41.5 % over 86 throughput and time rows (the goal is 10 % / 30 %; before the operator model 12.3 % / 46.8 %);
    # with the residual on the GPU's work only and one vote per source document, 10.5 % / 41.2 %; with NCCL's
    # SMs slowing the compute that hidden traffic overlaps, 10.3 % / 43.0 %.
    # The runs measured on the lent H200 (small Hugging Face models in eager mode, scored only) are predicted
    # too fast (median 43 %) before the eager mode counted their dispatch and unfused kernels, 13 % after, 10.2 %
    # (p90 16.0 %) once the residual no longer divides the host's dispatch, 8.3 % / 14.0 % with NCCL's SMs (the
    # Hopper residual rises from 0.824 to 0.848): bounded apart so that a change for the worse on them shows too.
    # All 135 rows together: 10.4 % / 36.7 %, then 9.4 % / 35.8 %. With links at NCCL's achieved bandwidth
    # (NVLink 370 of 450 GB/s) beside the contention term, and the residual re-derived (Hopper 0.877): published
    # 10.0 % / 44.4 %, measured here 6.1 % / 14.6 %, all 8.8 % / 34.6 % (statistics.quantiles' p90). With the
    # llm-foundry H100 rows' attention at their own kernel's rate (MPT's Triton FlashAttention-1 port, half
    # FlashAttention-2's) and the residual re-derived (Hopper 0.887): 9.4 % / 33.9 %, 5.2 % / 14.6 %, 7.8 % / 29.0 %.
    from statistics import median, quantiles

    from planner.cases.case_scoring import OWN_MEASUREMENT_URL
    from planner.cases.validate import default_case_file, load_case_file, validate_cases

    cases = load_case_file(default_case_file())
    own = {c["case_id"] for c in cases if c.get("url", "").startswith(OWN_MEASUREMENT_URL)}
    report = validate_cases(cases, CATS, refit="source")
    rows = [
        r for r in report["rows"] if r["category"] in ("throughput", "time") and r["rel_error"] is not None
    ]
    published = [abs(r["rel_error"]) for r in rows if r["case_id"] not in own]
    measured_here = [abs(r["rel_error"]) for r in rows if r["case_id"] in own]
    assert len(published) >= 80 and len(measured_here) >= 40
    assert median(published) <= 0.10
    assert quantiles(published, n=10)[-1] <= 0.35
    assert median(measured_here) <= 0.06 and quantiles(measured_here, n=10)[-1] <= 0.16  # with the eager mode
    every = published + measured_here
    assert median(every) <= 0.085 and quantiles(every, n=10)[-1] <= 0.30


def test_a_table_measured_by_gpu_micro_sets_its_gpus_constants(tmp_path, monkeypatch):
    # bench/gpu_micro.py's format (one row per measurement, nvidia-smi's GPU name): the best GEMM, the flash
    # backend's causal head-dim-128 forward + backward, and copies past the L2 cache are read; a 16 MiB copy
    # (cache-resident, above the datasheet bandwidth) and a CPU smoke-test row are not.
    from planner.catalogue import microbench

    header = "gpu_name,op,variant,dtype,shape,m,n,k,seq,head_dim,causal,size_bytes,achieved_tflop_per_s,"
    header += "achieved_gb_per_s,us_per_op,run_kind,measured_on,date"
    rows = [
        "NVIDIA H200,gemm,square,bf16,4096x4096x4096,4096,4096,4096,,,,,700.0,,,gpu_full,H200,2026-12-04",
        "NVIDIA H200,gemm,square,bf16,2048x4096x6144,2048,4096,6144,,,,,800.0,,,gpu_full,H200,2026-12-04",
        "NVIDIA H200,gemm,square,bf16,8x8x8,8,8,8,,,,,900.0,,,cpu_smoke,CPU,2026-12-04",
        "NVIDIA H200,attention_fwd_bwd,flash,bf16,,,,,16384,128,True,,319.0,,,gpu_full,H200,2026-12-04",
        "NVIDIA H200,copy,hbm,bf16,,,,,,,,4294967296,,4200.0,,gpu_full,H200,2026-12-04",
        "NVIDIA H200,copy,hbm,bf16,,,,,,,,16777216,,5600.0,,gpu_full,H200,2026-12-04",
    ]
    (tmp_path / "h200.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    published = microbench.MICROBENCH_DIR / "published.csv"
    (tmp_path / "published.csv").write_text(published.read_text(encoding="utf-8"), encoding="utf-8")
    table = microbench.microbench_rows(tmp_path)
    monkeypatch.setattr(microbench, "microbench_rows", lambda folder=None: table)
    h200, h100 = CATS.gpu("H200 SXM"), CATS.gpu("H100 SXM")
    constants = gpu_constants(h200, "bf16", {"H100 SXM": h100})
    assert constants.gemm_peak_frac == pytest.approx(800.0 / 989.5)  # not the CPU row's 900
    assert constants.attention_frac == pytest.approx(319.0 / 989.5)
    assert constants.memory_frac == pytest.approx(4200.0 / 4800.0)  # 4.8 TB/s datasheet, not the 16 MiB copy
