"""Expert tensor parallelism: the `etp` input, Megatron-Core's --expert-tensor-parallel-size.

Rules under test (planner/formulas/step/moe.py's docstring, with its sources): empty etp follows tp (Megatron's
default); a GPU holds 1/(etp·ep) of the routed experts, ZeRO shards them over tp·dp/(etp·ep) ranks; etp × ep must
divide tp × dp; the all-to-all group spans etp·ep consecutive ranks; each expert matmul sees etp/tp times the
rows and 1/etp of the width; the MLP half of a MoE layer's tensor collectives runs over etp ranks.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.cases.case_words import expert_tensor_parallel_degree
from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import scenario_for, search
from planner.decide.sweep_space import obeying_space
from planner.decide.sweep_types import Constraints
from planner.errors import PlannerError
from planner.estimate import estimate
from planner.export.exporters import export_plan
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.model_states import stage_model_states
from planner.formulas.step import comm, expert_compute, moe
from planner.inputs.scenario import Scenario

CATS = default_catalogs()
GIB = 2.0**30
# Mixtral 8x7B's routed experts (data/models.csv: 32 layers, 8 experts, h 4,096, expert width 14,336, SwiGLU):
# 32 × 8 × 3 × 4,096 × 14,336 = 45,097,156,608 weights.
MIXTRAL_EXPERTS = 32 * 8 * 3 * 4096 * 14336
STATES = ("weights_gib", "gradients_gib", "optimizer_gib", "master_gib")


def _mixtral(**changes) -> Scenario:
    return Scenario(model="Mixtral 8x7B", n_gpus=32, tp=4, ep=8, seq_len=4096, **changes)


def _state_bytes(s: Scenario) -> float:
    figures = estimate(s, CATS).model_dump()
    return sum(figures[name] for name in STATES) * GIB


def test_expert_states_per_gpu_split_over_etp_times_ep():
    # 32 H100s, tp 4, dp 8, ep 8, ZeRO 0, one micro-batch: bf16 weights 2 + grads 2 + Adam 8 + fp32 master 4 = 16 B
    # per parameter, nothing sharded. Attention and the router split over tp = 4 either way; the routed experts
    # over etp × ep: 4 × 8 = 32 GPUs at etp 4 (= tp, the default), 1 × 8 = 8 at etp 1. The difference per GPU is
    # 16 × 45,097,156,608 × (1/8 − 1/32) = 67,645,734,912 B (63.0 GiB).
    at_tp = _state_bytes(_mixtral(etp=4, zero_stage=0))
    whole = _state_bytes(_mixtral(etp=1, zero_stage=0))
    assert whole - at_tp == pytest.approx(16 * MIXTRAL_EXPERTS * (1 / 8 - 1 / 32), rel=1e-9)
    # ZeRO-1 shards optimizer and master (12 B) over the expert data-parallel group, tp·dp/(etp·ep) ranks:
    # 32/32 = 1 at etp 4 (each GPU 1/32 of them), 32/8 = 4 at etp 1 (1/8 × 1/4 = 1/32 again). Only the 4 B of
    # weights and gradients differ: 4 × 45,097,156,608 × (1/8 − 1/32) = 16,911,433,728 B.
    at_tp = _state_bytes(_mixtral(etp=4, zero_stage=1))
    whole = _state_bytes(_mixtral(etp=1, zero_stage=1))
    assert whole - at_tp == pytest.approx(4 * MIXTRAL_EXPERTS * (1 / 8 - 1 / 32), rel=1e-9)


def test_empty_etp_is_tp_in_every_figure():
    # Megatron's default (no --expert-tensor-parallel-size) is tp; the planner's default is the same layout.
    default = estimate(_mixtral(), CATS).model_dump()
    explicit = estimate(_mixtral(etp=4), CATS).model_dump()
    assert default == explicit


def _toy(etp: float, **changes) -> MemoryInputs:
    """1 B parameters, 0.8 B of them routed experts, 8 layers, mixed AdamW."""
    fields = dict(
        n_params=1e9, n_embedding_params=0.0, n_head_params=0.0, n_layers=8, hidden=1024, n_heads=8,
        n_kv_heads=8, head_dim=128, ffn_hidden=4096, n_mlp_matrices=3, vocab=32000, seq_len=1024,
        n_expert_params=0.8e9, etp=etp,
    )  # fmt: skip
    fields.update(changes)
    return MemoryInputs(**fields)


def _toy_states(p: MemoryInputs) -> float:
    got = stage_model_states(p, 1.0, 1.0)
    return float(sum(got[k] for k in ("weights", "grads", "optimizer", "master", "prefetch", "step_temp")))


def test_toy_expert_states_written_out():
    # tp 4, dp 4, ep 4, ZeRO 0: dense 0.2e9 × 16 B / tp 4 = 0.8e9; experts 0.8e9 × 16 B / (etp × ep)
    # (the step's fp32 gradient copy, 4 B, comes on top of both: 20 B per parameter in all).
    for etp, expert_gpus in ((1, 4), (2, 8), (4, 16)):
        p = _toy(etp, tp=4, dp=4, ep=4, zero_stage=0)
        assert _toy_states(p) == pytest.approx(0.2e9 * 20 / 4 + 0.8e9 * 20 / expert_gpus, rel=1e-12)


@given(
    tp_power=st.integers(0, 3),
    dp_factor=st.integers(1, 4),
    ep_power=st.integers(0, 3),
    zero=st.integers(0, 3),
    pp=st.sampled_from([1, 2]),
    hybrid=st.booleans(),
)
@example(tp_power=3, dp_factor=1, ep_power=3, zero=3, pp=1, hybrid=False)  # etp 1 with ep = tp·dp
@example(tp_power=2, dp_factor=2, ep_power=0, zero=1, pp=2, hybrid=True)  # ep 1: etp alone splits the experts
def test_more_etp_never_increases_expert_state_per_gpu(tp_power, dp_factor, ep_power, zero, pp, hybrid):
    tp, ep = 2**tp_power, 2**ep_power
    dp = ep * dp_factor
    previous = None
    for etp in (1, 2, 4, 8):
        if (tp * dp) % (etp * ep):  # the Scenario's rule: etp × ep divides tp × dp
            continue
        p = _toy(etp, tp=tp, dp=dp, ep=ep, zero_stage=zero, pp=pp, hybrid_shard=float(hybrid))
        got = _toy_states(p)
        if previous is not None:
            assert got <= previous * (1 + 1e-12)
        previous = got


def test_a_degree_that_does_not_fit_names_etp_and_the_degrees_that_do():
    with pytest.raises(ValidationError) as caught:
        _mixtral(etp=3)
    error = caught.value.errors()[0]["ctx"]["error"]
    assert isinstance(error, PlannerError) and error.field == "etp"
    assert error.allowed.startswith("at ep 8, tp 4, dp 8: 1, 2, 4;")  # 32 / (etp × 8) whole: etp 1, 2, 4
    # etp 1 lets ep exceed dp (Megatron's folding): tp 4 × dp 2 = 8 GPUs hold the ep-8 group of whole experts
    assert Scenario(model="Mixtral 8x7B", n_gpus=8, tp=4, ep=8, etp=1, seq_len=4096).dp == 2


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "planner", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_estimate_takes_etp_and_refuses_a_bad_one():
    base = (
        "estimate",
        "--model",
        "Mixtral 8x7B",
        "--n-gpus",
        "32",
        "--tp",
        "4",
        "--ep",
        "8",
        "--format",
        "json",
    )
    ok = _cli(*base, "--etp", "1")
    assert ok.returncode == 0, ok.stderr
    bad = _cli(*base, "--etp", "3")
    assert bad.returncode == 2 and "--etp" in bad.stderr and "1, 2, 4" in bad.stderr
    assert "Traceback" not in bad.stderr
    dense = _cli("estimate", "--model", "Llama 3.1 8B", "--tp", "2", "--etp", "1", "--format", "json")
    assert dense.returncode == 2 and "--etp" in dense.stderr and "no routed experts" in dense.stderr
    # etp splits each expert's width: Mixtral's 14,336 is 2^11 × 7, so 3 does not divide it
    width = _cli(
        "estimate", "--model", "Mixtral 8x7B", "--n-gpus", "48", "--tp", "1", "--ep", "8", "--etp", "3"
    )
    assert width.returncode == 2 and "--etp" in width.stderr and "expert width 14336" in width.stderr


def test_all_to_all_group_spans_etp_times_ep_ranks():
    # tp 4, ep 8 on 8-GPU nodes: at etp 4 the group's 32 ranks hold 8 / 4 = 2 expert peers per node, so 6 of a
    # GPU's 7 remote peers are in other nodes; at etp 1 all 8 expert ranks share the node.
    assert moe.cross_node_share(8, 4, 8) == pytest.approx(6 / 7, rel=1e-12)
    assert moe.cross_node_share(8, 1, 8) == 0.0
    at_tp = estimate(_mixtral(etp=4), CATS).model_dump()
    whole = estimate(_mixtral(etp=1), CATS).model_dump()
    assert whole["step_time_s"] != at_tp["step_time_s"]


def test_expert_matmul_rows_and_width_follow_etp():
    # 4,096 tokens per context rank, top-2 of 8 experts, ep 8: b·s/cp · ep · top-k / experts = 8,192 rows at
    # etp = tp; at etp 1 with tp 4 each GPU's 1,024 sequence-parallel tokens are not gathered: 8,192 / 4 = 2,048.
    assert expert_compute.tokens_per_expert(4096, 2, 8, 8) == 8192
    assert expert_compute.tokens_per_expert(4096, 2, 8, 8, 1 / 4) == 2048


def _layout_comm(etp):
    experts = moe.MoeLayout(MIXTRAL_EXPERTS, MIXTRAL_EXPERTS, 32, 2, 8, etp)
    return comm.layout_comm(
        n_params=46.7e9, n_trainable_params=46.7e9, n_layers=32, hidden_size=4096, kv_dim=1024, seq_len=4096,
        micro_batch=1, grad_accum=1, tp=4, pp=1, cp=1, dp=8, zero_stage=1, hybrid_shard=0, full_recompute=0,
        grad_comm_bytes=2.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=8,
        intra_node_gb_per_s=450.0, pcie_gb_per_s=64.0, inter_node_gb_per_s=50.0, moe=experts,
    )  # fmt: skip


def test_expert_layers_tensor_traffic_runs_over_etp():
    # The MLP half of each of the 32 MoE layers' 4 tensor collectives (2 of 4 per micro-batch) over tp = 4 ranks:
    # 2 × 32 × ring all-reduce 2 × 3/4 × (4,096 × 4,096 × 2 B) = 3,221,225,472 B at NVLink's achieved 370 GB/s = 8.706 ms, gone
    # at etp 1; the pipelined (tensor) part drops by exactly that.
    moved = 2 * 32 * 2 * 3 / 4 * 4096 * 4096 * 2 / 370e9
    assert _layout_comm(4).pipelined_s - _layout_comm(1).pipelined_s == pytest.approx(moved, rel=1e-9)
    assert _layout_comm(None).pipelined_s == _layout_comm(4).pipelined_s  # None follows tp


def test_recommend_keeps_a_given_etp():
    base = Scenario(model="Mixtral 8x7B", n_gpus=16, ep=8, etp=2, tp=2, seq_len=4096, grad_accum=8)
    space = obeying_space(base, {"n_gpus": 16, "tp": 2, "ep": 8})
    result = search(base, Constraints(max_gpus=16, gpus=("H100 SXM",)), space, catalogs=CATS, top_n=5)
    assert result.top.height
    for row in result.top.to_dicts():
        assert scenario_for(row, base, CATS).etp == 2
    words = _cli("recommend", "--model", "Mixtral 8x7B", "--etp", "1", "--ep", "8", "--max-gpus", "16",
                 "--gpus", "H100 SXM", "--top", "1")  # fmt: skip
    assert "Expert tensor parallelism: 1 in every plan" in words.stdout, words.stderr


def test_exports_write_the_expert_tensor_degree():
    # Megatron refuses MoE + tensor parallelism without sequence parallelism, so the plans switch it on
    s = _mixtral(etp=1, sequence_parallel=True)
    assert "--expert-tensor-parallel-size 1" in export_plan(s, CATS, "megatron").text
    default = export_plan(_mixtral(sequence_parallel=True), CATS, "megatron").text
    assert "--expert-tensor-parallel-size" not in default  # default: tp
    # torchtitan ships no Mixtral (it refuses it); its Qwen3 MoE stands in. Its own default is 1, not tp: the
    # plan's tp-wide experts are written out
    qwen = {"model": "Qwen3 30B A3B"}
    assert "expert_tensor_parallel_degree = 1" in export_plan(s.updated(**qwen), CATS, "torchtitan-0.2").text
    titan = export_plan(_mixtral().updated(**qwen), CATS, "torchtitan-0.2").text
    assert "expert_tensor_parallel_degree = 4" in titan


def test_case_notes_state_the_expert_tensor_degree():
    assert expert_tensor_parallel_degree("TP 2, expert parallel 8, expert tensor parallel size 1") == 1
    assert expert_tensor_parallel_degree("expert-tensor-parallelism 4") == 4
    assert expert_tensor_parallel_degree("expert parallel 8") is None
