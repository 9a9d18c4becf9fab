"""Communication as frameworks do it: reduce dtype, per-collective latency, compute windows.

Latency figures are NCCL's Ring / Simple cost model (NVIDIA/nccl src/graph/tuning.cc): 8.4 µs start-up, 3.4 µs
per NVLink step, 9.6 µs per network step; a ring of n ranks has n−1 steps per phase.
"""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from planner import Scenario
from planner.cases.case_file import CASE_FILE_COLUMNS, row_problems
from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.evaluate import _step_comm
from planner.formulas.step import collectives, timing
from planner.formulas.step.comm import layout_comm
from planner.formulas.step.pipeline import data_parallel_rounds
from planner.inputs.comm_inputs import OverlapModel, ReduceDtype
from planner.resolve import resolve
from tests.test_comm import H100_NVLINK, IB_PER_GPU

US = 1e-6
WINDOWS = 1.0  # the overlap_model "windows" flag of `timing.exposed_parts_s` (the default 0 is "constant")


def _ddp(**changes):
    base = dict(
        n_params=8e9, n_trainable_params=8e9, n_layers=32, hidden_size=4096, kv_dim=1024, seq_len=4096,
        micro_batch=1, grad_accum=1, tp=1, pp=1, cp=1, dp=8, zero_stage=0, hybrid_shard=0, full_recompute=0,
        grad_comm_bytes=2.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=8,
        intra_node_gb_per_s=H100_NVLINK, pcie_gb_per_s=63.0, inter_node_gb_per_s=IB_PER_GPU,
    )  # fmt: skip
    return layout_comm(**{**base, **changes})


# --- (a) reduce dtype ---------------------------------------------------------------------------------


def test_fp32_reduce_moves_twice_the_bytes_of_bf16():
    # DDP over 8 NVLink GPUs, 8e9 gradients. bf16: 2 · 7/8 · 16e9 B = 28e9 B at NCCL's achieved 370 GB/s
    # = 0.075676 s, plus ceil(16e9 / 25 MiB) = 611 buckets × (8.4 + 2 · 7 · 3.4) µs. fp32: 56e9 B and 1,221 buckets.
    bf16, fp32 = _ddp(grad_comm_bytes=2.0), _ddp(grad_comm_bytes=4.0)
    assert bf16.data_parallel_s == pytest.approx(28e9 / 370e9 + 611 * 56.0 * US, rel=1e-12)
    assert fp32.data_parallel_s == pytest.approx(56e9 / 370e9 + 1221 * 56.0 * US, rel=1e-12)


def test_reduce_dtype_rule():
    # auto (0): fp32 with an fp32 master copy (bf16 mixed), else the gradients' dtype (pure bf16: 2 B).
    assert collectives.reduce_bytes(0.0, 4.0, 2.0) == 4.0
    assert collectives.reduce_bytes(0.0, 0.0, 2.0) == 2.0
    assert (
        collectives.reduce_bytes(2.0, 4.0, 2.0) == 2.0
    )  # bf16 asked for: FSDP MixedPrecision(reduce_dtype=bf16)
    assert collectives.reduce_bytes(4.0, 0.0, 2.0) == 4.0


def test_reduce_dtype_reaches_the_estimate():
    cats = default_catalogs()
    base = Scenario(model="Llama 3.1 8B", n_gpus=16, zero_stage=0, precision="bf16_pure")
    auto = estimate(base, cats)  # pure bf16: the auto rule reduces in bf16
    fp32 = estimate(base.updated(reduce_dtype="fp32"), cats)
    bf16 = estimate(base.updated(reduce_dtype="bf16"), cats)
    assert bf16.comm_time_s == pytest.approx(auto.comm_time_s, rel=1e-12)
    # Twice the bytes (and twice the buckets): the DDP all-reduce costs between 1.9 and 2.0 times as much.
    assert 1.9 < fp32.comm_time_s / auto.comm_time_s <= 2.0 + 1e-9
    assert fp32.step_time_s >= auto.step_time_s


def test_reduce_dtype_rejects_other_names():
    with pytest.raises(ValidationError, match="reduce_dtype"):
        Scenario(reduce_dtype="fp64")


def test_case_file_reduce_dtype_column():
    row = dict.fromkeys(CASE_FILE_COLUMNS, "")
    row.update(case_id="x", category="throughput", measured_unit="tokens_per_s_per_gpu", measured_value="1")
    assert row_problems({**row, "reduce_dtype": "FP32"}) == []
    assert row_problems(row) == []  # the column is optional: blank or absent = auto
    problems = row_problems({**row, "reduce_dtype": "int8"})
    assert problems and problems[0][0] == "reduce_dtype" and "fp32" in problems[0][1]


def test_case_file_overlap_model_column():
    # Optional like reduce_dtype: blank or absent = constant; a wrong word names the column and the choices.
    row = dict.fromkeys(CASE_FILE_COLUMNS, "")
    row.update(case_id="x", category="throughput", measured_unit="tokens_per_s_per_gpu", measured_value="1")
    assert row_problems({**row, "overlap_model": "Windows"}) == []
    problems = row_problems({**row, "overlap_model": "buckets"})
    assert problems == [("overlap_model", "'buckets' is not one of constant, windows (or empty = constant)")]


def test_app_offers_every_reduce_dtype_and_overlap_model():
    from ui.training_setup import OVERLAP_MODEL_LABELS, REDUCE_DTYPE_LABELS

    assert tuple(REDUCE_DTYPE_LABELS) == get_args(ReduceDtype)
    assert tuple(OVERLAP_MODEL_LABELS) == get_args(OverlapModel)


# --- (c) latency ----------------------------------------------------------------------------------------


def test_zero3_latency_80_layers():
    # ZeRO-3 over 8 NVLink GPUs, 80 layers, one micro-batch: a forward gather, a backward gather and a
    # reduce-scatter per layer = 240 one-phase rings of 8.4 + 7 · 3.4 = 32.2 µs = 7.728 ms.
    _, dp_s = collectives.layout_latency_s(
        tp=1, pp=1, cp=1, dp=8, shard_ranks=8, zero_stage=3, grad_accum=1, n_layers_per_stage=80,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1,
    )  # fmt: skip
    assert dp_s == pytest.approx(240 * 32.2 * US, rel=1e-12)


def test_zero3_latency_under_a_pipeline_is_once_per_step():
    # ZeRO-3 with pp 2 keeps each stage's weights gathered across its 4 micro-batches (torchtitan's FSDP2 with
    # pipelining, planner.formulas.step.pipeline.data_parallel_rounds: 1 gather, 1 reduce-scatter per step): 40
    # layers per stage × 2 = 80 one-phase rings over 8 NVLink ranks of 32.2 µs = 2.576 ms (no pipeline: 3 × 4
    # per layer, 480 rings).
    rounds, gathers = data_parallel_rounds(2.0, 4.0)
    _, dp_s = collectives.layout_latency_s(
        tp=1, pp=2, cp=1, dp=8, shard_ranks=8, zero_stage=3, grad_accum=4, n_layers_per_stage=40,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1, rounds=rounds, gathers=gathers,
    )  # fmt: skip
    assert dp_s == pytest.approx(80 * 32.2 * US, rel=1e-12)


def test_tensor_parallel_latency_80_layers():
    # TP 8 in one node, 80 layers, 2 micro-batches: (2 forward + 2 backward) × 80 × 2 = 640 all-reduces of
    # 8.4 + 2 · 7 · 3.4 = 56 µs = 35.84 ms; no DP group (dp 1), no pipeline.
    pipelined_s, dp_s = collectives.layout_latency_s(
        tp=8, pp=1, cp=1, dp=1, shard_ranks=1, zero_stage=0, grad_accum=2, n_layers_per_stage=80,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1,
    )  # fmt: skip
    assert pipelined_s == pytest.approx(640 * 56.0 * US, rel=1e-12)
    assert dp_s == 0.0


def test_ring_latency_across_nodes():
    # 16 ranks on 2 nodes, one phase: 15 steps, 1 of them over the network: 8.4 + 14 · 3.4 + 9.6 = 65.6 µs.
    assert collectives.ring_latency_s(16, 16, 8, 1, 1) == pytest.approx(65.6 * US, rel=1e-12)
    # PCIe-only node, 4 ranks, all-reduce: 8.4 + 2 · 3 · 5.7 = 42.6 µs; one rank: no collective.
    assert collectives.ring_latency_s(4, 4, 8, 2, 0) == pytest.approx(42.6 * US, rel=1e-12)
    assert collectives.ring_latency_s(1, 1, 8, 2, 1) == 0.0


def test_pipeline_sends_pay_latency_per_micro_batch():
    # pp 2 in one node, 8 micro-batches: 2 sends per micro-batch, each 8.4 + 3.4 = 11.8 µs: 16 × 11.8 µs.
    pipelined_s, _ = collectives.layout_latency_s(
        tp=1, pp=2, cp=1, dp=1, shard_ranks=1, zero_stage=0, grad_accum=8, n_layers_per_stage=16,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1,
    )  # fmt: skip
    assert pipelined_s == pytest.approx(16 * 11.8 * US, rel=1e-12)


def test_context_parallel_ring_passes_pay_latency_per_layer():
    # CP 4 inside a node (tp 2: 8 ranks), 32 layers, 2 micro-batches: 3 forward passes + 6 backward per layer and
    # micro-batch = 9 × 32 × 2 = 576 sends of 8.4 + 3.4 = 11.8 µs, plus TP 2's 4 × 32 × 2 = 256 all-reduces of
    # 8.4 + 2 · 1 · 3.4 = 15.2 µs. Across nodes (tp 4 · cp 4 = 16 ranks) each send pays a network step: 18 µs.
    inside, _ = collectives.layout_latency_s(
        tp=2, pp=1, cp=4, dp=1, shard_ranks=1, zero_stage=0, grad_accum=2, n_layers_per_stage=32,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1,
    )  # fmt: skip
    assert inside == pytest.approx((576 * 11.8 + 256 * 15.2) * US, rel=1e-12)
    across, _ = collectives.layout_latency_s(
        tp=4, pp=1, cp=4, dp=1, shard_ranks=1, zero_stage=0, grad_accum=2, n_layers_per_stage=32,
        full_recompute=0, n_buckets=1, gpus_per_node=8, nvlink=1,
    )  # fmt: skip
    tp4_s = 256 * (8.4 + 2 * 3 * 3.4)
    assert across == pytest.approx((576 * 18.0 + tp4_s) * US, rel=1e-12)


# --- (b) compute-dependent overlap ------------------------------------------------------------------------


def test_ddp_window_is_the_last_backward():
    # DDP with 4 micro-batches: the sync hides behind the last one's backward, 2/3 · 1/4 of the compute; one of
    # its 40 buckets is launched when the backward ends.
    window, unhidden = collectives.data_parallel_window(0, 4, 40, 32, 0)
    assert window == pytest.approx(2 / 3 / 4, rel=1e-12)
    assert unhidden == pytest.approx(1 / 40, rel=1e-12)
    # ZeRO-3 prefetches behind all compute; 2 of each micro-batch's 3 · 80 collectives have no layer beside them.
    window, unhidden = collectives.data_parallel_window(3, 4, 40, 80, 0)
    assert (window, unhidden) == (1.0, pytest.approx(2 / 240, rel=1e-12))


def test_tiny_micro_batch_cannot_hide_a_large_all_reduce():
    # 1 s of DDP all-reduce in 40 buckets, overlap 0.9, one micro-batch. Compute 0.3 s: the backward window is
    # 0.2 s, 0.9 · 0.2 = 0.18 s hides, 0.82 s stays exposed. Compute 10 s: window 6.67 s, all but the last
    # bucket hides: 1 − 0.975 = 0.025 s exposed.
    window, unhidden = collectives.data_parallel_window(0, 1, 40, 32, 0)
    _, tiny = timing.exposed_parts_s(0.3, 0.0, 1.0, 0.9, window, unhidden, WINDOWS)
    _, large = timing.exposed_parts_s(10.0, 0.0, 1.0, 0.9, window, unhidden, WINDOWS)
    assert tiny == pytest.approx(1.0 - 0.9 * 0.2, rel=1e-12)
    assert large == pytest.approx(1.0 / 40, rel=1e-12)


@given(
    compute_s=st.floats(0.0, 100),
    extra_s=st.floats(0.0, 100),
    pipelined=st.floats(0, 50),
    data_parallel=st.floats(0, 50),
    overlap=st.floats(0, 1),
    window=st.floats(0.01, 1),
    unhidden=st.floats(0, 1),
)
@example(compute_s=1.0, extra_s=1.0, pipelined=1.0, data_parallel=1.0, overlap=1.0, window=1.0, unhidden=0.0)
def test_more_compute_never_exposes_more_comm(
    compute_s, extra_s, pipelined, data_parallel, overlap, window, unhidden
):
    def exposed(c):
        return sum(timing.exposed_parts_s(c, pipelined, data_parallel, overlap, window, unhidden, WINDOWS))

    more = exposed(compute_s + extra_s)
    assert more <= exposed(compute_s) + 1e-9
    assert 0.0 <= more <= pipelined + data_parallel + 1e-9
    # and compute hides traffic only once: at most overlap × compute disappears
    assert pipelined + data_parallel - more <= overlap * (compute_s + extra_s) + 1e-9


@given(
    compute_s=st.floats(0.01, 100),
    pipelined=st.floats(0, 50),
    data_parallel=st.floats(0, 50),
    bubble=st.floats(0, 0.9),
    overlap=st.floats(0, 0.99),
    window=st.floats(0.01, 1),
    unhidden=st.floats(0, 1),
)
def test_compute_from_step_inverts_the_windowed_step(
    compute_s, pipelined, data_parallel, bubble, overlap, window, unhidden
):
    parts = (pipelined, data_parallel, bubble, overlap, window, unhidden, WINDOWS)
    step = timing.step_time_s(compute_s, *parts)
    assert timing.compute_time_from_step_s(step, *parts) == pytest.approx(compute_s, rel=1e-6)


def test_accumulating_hides_less_of_the_sync():
    # End to end: 8B, ZeRO-1 over 4 nodes, 16 sequences of 4,096 tokens per step, either 4 micro-batches of 1
    # or 1 of 4: the same FLOPs and the same gradient bytes, but the sync hides behind the last micro-batch only,
    # a quarter of the compute when accumulating, all of it otherwise (overlap_model "windows").
    cats = default_catalogs()
    base = Scenario(
        model="Llama 3.1 8B",
        n_gpus=32,
        zero_stage=1,
        seq_len=4096,
        tokens_per_example=4096,
        overlap_model="windows",
    )
    accumulating = estimate(base.updated(micro_batch=1, grad_accum=4), cats)
    one_pass = estimate(base.updated(micro_batch=4, grad_accum=1), cats)
    assert accumulating.comm_time_s == pytest.approx(one_pass.comm_time_s, rel=1e-9)
    assert accumulating.step_time_s > one_pass.step_time_s * 1.01
    # The default constant overlap hides the same share whatever the split (the compute exceeds the traffic
    # in both): the steps differ only by the compute, which the operator model makes a little longer for four
    # micro-batches of 4,096 tokens than for one of 16,384 (more launches, thinner weight-gradient GEMMs).
    constant = [
        estimate(s.updated(overlap_model="constant"), cats)
        for s in (base.updated(micro_batch=1, grad_accum=4), base.updated(micro_batch=4, grad_accum=1))
    ]

    def compute_s(e):
        return (
            e.gemm_time_s
            + e.attention_time_s
            + e.memory_bound_time_s
            + e.launch_overhead_s
            + e.residual_time_s
        )

    assert constant[0].step_time_s - constant[1].step_time_s == pytest.approx(
        compute_s(constant[0]) - compute_s(constant[1]), rel=1e-9
    )
    assert constant[0].step_time_s > constant[1].step_time_s


def test_reduce_dtype_and_overlap_model_travel_in_share_links_and_cli():
    from planner.cli.cli_args import flag_name
    from planner.inputs.query import scenario_from_query, scenario_to_query

    chosen = Scenario(reduce_dtype="fp32", overlap_model="windows")
    query = scenario_to_query(chosen)
    assert query["reduce_dtype"] == "fp32" and query["overlap_model"] == "windows"
    back, notices = scenario_from_query(query)
    assert (back.reduce_dtype, back.overlap_model, notices) == ("fp32", "windows", [])
    assert flag_name("reduce_dtype") == "--reduce-dtype"
    assert flag_name("overlap_model") == "--overlap-model"


# --- overlap_model "constant" (the default) is the overlap the planner had before item 6 ----------------------


def _main_step_s(compute_s, pipelined_s, data_parallel_s, bubble_frac, overlap_frac):
    """The step as main computed it before item 6, written out: overlap × min(compute, all traffic) hides, taken
    from the in-pipeline traffic first; step = (compute + exposed in-pipeline) / (1 − bubble) + exposed sync."""
    total = pipelined_s + data_parallel_s
    exposed_total = total - overlap_frac * min(compute_s, total)
    exposed_pipelined = pipelined_s - overlap_frac * min(compute_s, pipelined_s)
    return (compute_s + exposed_pipelined) / (1.0 - bubble_frac) + (exposed_total - exposed_pipelined)


@pytest.mark.parametrize(
    ("compute_s", "pipelined_s", "data_parallel_s", "bubble_frac", "overlap_frac"),
    [
        (10.0, 2.0, 4.0, 0.1, 0.5),  # the toy of tests/test_compute.py: (10 + 1) / 0.9 + 2 = 14.2222 s
        (1.0, 1.0, 1.0, 0.0, 1.0),  # traffic longer than compute: max(compute, traffic) = 2 s
        (3.0, 0.0, 5.0, 0.0, 0.9),  # DDP only, sync longer than compute: 5 − 0.9 · 3 + 3 = 5.3 s
        (8.0, 9.0, 1.0, 0.25, 0.9),  # in-pipeline traffic alone exceeds the compute: none of the sync hides
    ],
)
def test_constant_overlap_is_the_step_before_item_6(
    compute_s, pipelined_s, data_parallel_s, bubble_frac, overlap_frac
):
    parts = (pipelined_s, data_parallel_s, bubble_frac, overlap_frac)
    expected = _main_step_s(compute_s, *parts)
    assert timing.step_time_s(compute_s, *parts) == pytest.approx(expected, rel=1e-12)
    # A window and an unhidden share are ignored unless the windows model is chosen.
    assert timing.step_time_s(compute_s, *parts, 0.05, 0.5, 0.0) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "layout",
    [
        dict(n_gpus=16, zero_stage=0, micro_batch=1, grad_accum=8),  # DDP over 2 nodes, 8 micro-batches
        dict(n_gpus=64, zero_stage=1, tp=4, pp=2, micro_batch=1, grad_accum=16),  # Megatron-style 3-D layout
        dict(n_gpus=32, zero_stage=3, micro_batch=2, grad_accum=4),  # FSDP over 4 nodes
        dict(n_gpus=8, zero_stage=2, micro_batch=4, grad_accum=2),  # ZeRO-2 in one node
    ],
)
def test_constant_overlap_estimates_the_step_as_before_item_6(layout):
    # End to end, from the estimate's own figures: at overlap 0 nothing hides, so step0 = (C + P)/(1 − b) + D
    # gives the compute C = (step0 − D)(1 − b) − P; at the default 0.9 the constant model's step must equal
    # main's written-out step from C, P, D and b. Under the windows model an accumulating DDP/ZeRO-1 sync hides
    # only behind the last micro-batch's backward (2/3 · 1/8 or 1/16 of the compute): a longer step.
    cats = default_catalogs()
    scenario = Scenario(model="Llama 3.1 70B", seq_len=4096, tokens_per_example=4096, **layout)
    assert scenario.overlap_model == "constant"
    traffic = _step_comm(resolve(scenario, cats).columns)
    pipelined_s, data_parallel_s = float(traffic.pipelined_s), float(traffic.data_parallel_s)
    assert pipelined_s + data_parallel_s > 0.0
    hidden_nothing = estimate(scenario.updated(overlap_frac=0.0), cats)
    bubble = hidden_nothing.bubble_frac
    compute_s = (hidden_nothing.step_time_s - data_parallel_s) * (1.0 - bubble) - pipelined_s
    assert compute_s > 0.0
    constant = estimate(scenario, cats)
    # tensor-parallel collectives (without tp_comm_overlap) never hide: main's step over the rest of the
    # in-pipeline traffic, plus the tensor traffic stretched by the bubble like the compute it waits beside
    tensor_s = float(traffic.exposed_tensor_s)
    expected = _main_step_s(compute_s, pipelined_s - tensor_s, data_parallel_s, bubble, 0.9)
    # and, since main, what the hidden traffic still costs: NCCL's 16 channels hold 16 SMs while it runs, so the
    # compute beside it is 16 / (SMs − 16) of its length slower (planner.formulas.step.contention)
    n_sms = float(resolve(scenario, cats).columns.gpu.n_sms)
    hideable_s = pipelined_s - tensor_s
    hidden_in_pipeline = 0.9 * min(compute_s, hideable_s)
    hidden_sync = 0.9 * min(compute_s, hideable_s + data_parallel_s) - hidden_in_pipeline
    contention_s = (hidden_in_pipeline / (1.0 - bubble) + hidden_sync) * 16.0 / (n_sms - 16.0)
    assert n_sms == 132.0 and contention_s > 0.0
    assert constant.step_time_s == pytest.approx(
        expected + tensor_s / (1.0 - bubble) + contention_s, rel=1e-9
    )
    windows = estimate(scenario.updated(overlap_model="windows"), cats)
    if layout["zero_stage"] <= 1:
        assert windows.step_time_s > constant.step_time_s * 1.001


def test_case_row_states_its_overlap_model():
    # A calibration row read with the optional column set: the scenario carries it; blank = constant.
    from planner.cases.case_file import default_case_file, load_case_file
    from planner.cases.case_gpu import GpuMatcher
    from planner.cases.case_row import case_scenario

    cats = default_catalogs()
    row = next(r for r in load_case_file(default_case_file()) if r["category"] == "throughput")
    made = [case_scenario({**row, "overlap_model": text}, cats, GpuMatcher(cats)) for text in ("", "windows")]
    assert not any(isinstance(m, str) for m in made)
    assert [m[0].overlap_model for m in made] == ["constant", "windows"]  # type: ignore[index]
