"""Expert parallelism: the `ep` input from the formula to the search, the exports and the app.

Sources of the arithmetic: GShard (Lepikhin et al. 2020, §2.2) and DeepSpeed-MoE (Rajbhandari et al. 2022, §5)
for the two all-to-alls (dispatch, combine) per MoE layer and pass; Megatron-Core MoE for the layout (routed
experts split over ep ranks carved out of the data-parallel group, their optimizer sharded over the expert
data-parallel group of dp / ep ranks). `planner/formulas/step/moe.py` holds the formula.
"""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import scenario_for, search
from planner.decide.sweep_grid import SearchSpace, layout_grid
from planner.decide.sweep_space import obeying_space
from planner.decide.sweep_types import Constraints
from planner.errors import PlannerError
from planner.estimate import estimate
from planner.export.exporters import export_plan
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.model_states import stage_model_states
from planner.formulas.memory.peak import memory_per_gpu
from planner.formulas.step import comm, moe
from planner.inputs.scenario import Scenario
from planner.resolve import resolve

CATS = default_catalogs()
STATE_PARTS = ("weights", "grads", "optimizer", "master", "prefetch", "step_temp")

# --- the all-to-all volume ------------------------------------------------------------------------------------


def test_all_to_all_bytes_written_out():
    # One GPU, one MoE layer, one micro-batch: b = 1 sequence of s = 4,096 tokens (tp 1, cp 1), Mixtral's top-2
    # and h = 4,096, bf16 (2 B), ep = 8, forward + backward (2 passes):
    # 4,096 tokens × 2 copies × 4,096 × 2 B = 67,108,864 B; × (8 − 1)/8 remote = 58,720,256;
    # × 2 (dispatch + combine) = 117,440,512; × 2 passes = 234,881,024 B.
    got = moe.all_to_all_bytes(4096, 2, 4096, 2.0, 8, moe.all_to_all_passes(0))
    assert got == pytest.approx(234_881_024, rel=1e-12)
    # full recompute runs the forward's pair again: 3 passes, 352,321,536 B
    assert moe.all_to_all_bytes(4096, 2, 4096, 2.0, 8, moe.all_to_all_passes(1)) == pytest.approx(352_321_536)
    assert moe.all_to_all_bytes(4096, 2, 4096, 2.0, 1, 2.0) == 0.0  # ep 1: every expert is local


def _toy_comm(ep: float, **changes):
    """Mixtral 8x7B-like layout_comm on one 8-GPU node (intra-node link 450 GB/s, network 50 GB/s)."""
    base = dict(
        n_params=46.7e9, n_trainable_params=46.7e9, n_layers=32, hidden_size=4096, kv_dim=1024, seq_len=4096,
        micro_batch=1, grad_accum=4, tp=1, pp=1, cp=1, dp=8, zero_stage=1, hybrid_shard=0, full_recompute=0,
        grad_comm_bytes=4.0, weight_comm_bytes=2.0, activation_bytes=2.0, gpus_per_node=8,
        intra_node_gb_per_s=450.0, pcie_gb_per_s=63.0, inter_node_gb_per_s=50.0,
    )  # fmt: skip
    base.update(changes)
    experts = comm.MoeLayout(45.1e9, 45.1e9, 32, 2, ep)
    return comm.layout_comm(**base, moe=experts)


def _a2a_s(ep: float, capacity_factor: float = 1.0, gpus_per_node: float = 8, tp: float = 1) -> float:
    """The toy layout's all-to-all per step: 32 MoE layers, 4 micro-batches of 4,096 tokens, top-2, h 4,096."""
    links = moe.ExpertLinks(tp, gpus_per_node, 450.0, 50.0)
    return moe.expert_parallel_comm_s(ep, 32, 4096, 2, 4096, 2.0, 4, 0, links, capacity_factor)


def test_all_to_all_time_inside_a_node_and_across_nodes():
    # Per step: 234,881,024 B × 32 MoE layers × 4 micro-batches = 30,064,771,072 B.
    per_step_bytes = 234_881_024 * 32 * 4
    assert _a2a_s(8) == pytest.approx(per_step_bytes / 450e9, rel=1e-9)  # ep 8 fits the node: NVLink, 66.8 ms
    # ep 16 over two 8-GPU nodes: 4,096 × 2 × 4,096 × 2 × 15/16 remote × 2 × 2 = 251,658,240 B per layer and
    # micro-batch; of the 15 remote ranks 7 share the node and 8 do not, so 8/15 of it, 134,217,728 B, crosses
    # nodes at 50 GB/s while 7/15, 117,440,512 B, runs over NVLink at the same time: the network part is longer.
    network_s = 134_217_728 * 32 * 4 / 50e9  # 0.3436 s (all 251,658,240 B at 50 GB/s would be 0.644 s)
    node_s = 117_440_512 * 32 * 4 / 450e9  # 0.0334 s
    assert _a2a_s(16) == pytest.approx(max(network_s, node_s), rel=1e-9)
    # ep 64 over 8-GPU nodes (NeMo Automodel's DeepSeek-V3 rows): 56 of the 63 remote ranks are elsewhere
    assert moe.cross_node_share(64, 1, 8) == pytest.approx(56 / 63, rel=1e-12)
    assert moe.cross_node_share(8, 2, 8) == pytest.approx(4 / 7, rel=1e-12)  # tp 2: 4 expert ranks per node
    assert moe.cross_node_share(4, 2, 8) == 0.0 and moe.cross_node_share(1, 1, 8) == 0.0


def test_capacity_factor_scales_the_busiest_ranks_all_to_all():
    # Switch Transformer capacity factor 1.25 (Fedus et al. 2022, §2.1): the busiest rank exchanges 1.25 × the
    # average: 4,096 tokens × 2 × 1.25 = 10,240 copies × 4,096 × 2 B × 7/8 × 2 × 2 passes = 293,601,280 B.
    got = moe.all_to_all_bytes(4096, 2, 4096, 2.0, 8, 2.0, capacity_factor=1.25)
    assert got == pytest.approx(293_601_280, rel=1e-12)
    assert _a2a_s(8, 1.25) == pytest.approx(293_601_280 * 32 * 4 / 450e9, rel=1e-9)  # 83.5 ms on NVLink
    assert _a2a_s(16, 2.0) == pytest.approx(2 * _a2a_s(16), rel=1e-12)  # GShard's 2: twice the balanced time


def test_all_to_all_stays_out_of_the_overlappable_traffic():
    # The dispatch and combine sit on every micro-batch's critical path: layout_comm leaves them to step_parts.
    assert _toy_comm(8).pipelined_s == pytest.approx(_toy_comm(1).pipelined_s, rel=1e-12)


def test_expert_gradients_sync_over_the_expert_data_parallel_group():
    # ZeRO-1, dp 8: the dense part (46.7 − 45.1 = 1.6 B params) reduce-scatters + all-gathers over 8 ranks
    # either way; the experts over dp / ep ranks: at ep 8 the group is one rank and moves nothing.
    dense_only = _toy_comm(8).data_parallel_s
    # Plus the dense group's latency: a reduce-scatter and an all-gather per layer, 2 × 32
    # one-phase rings over 8 NVLink ranks of 8.4 + 7 × 3.4 = 32.2 µs (NCCL's Ring/Simple cost model).
    latency_s = 64 * 32.2e-6
    # bytes at NVLink's achieved 370 GB/s (NCCL's 370 of the 450 line rate, planner.formulas.step.links)
    expected = comm.ring_all_gather_bytes(8, 1.6e9 * 4.0 + 1.6e9 * 2.0) / 370e9 + latency_s
    assert dense_only == pytest.approx(expected, rel=1e-9)
    assert _toy_comm(1).data_parallel_s > 5 * dense_only  # without EP every expert syncs over all 8


# --- memory: expert state per GPU -----------------------------------------------------------------------------


def _toy_memory(ep: float = 1.0, **changes) -> MemoryInputs:
    """1 B parameters of which 0.8 B are routed experts; 8 layers, no embedding; mixed AdamW 16 B/param."""
    fields = dict(
        n_params=1e9, n_embedding_params=0.0, n_head_params=0.0, n_layers=8, hidden=1024, n_heads=8,
        n_kv_heads=8, head_dim=128, ffn_hidden=4096, n_mlp_matrices=3, vocab=32000, seq_len=1024, dp=8,
        n_expert_params=0.8e9, ep=ep,
    )  # fmt: skip
    fields.update(changes)
    return MemoryInputs(**fields)


def _states(p: MemoryInputs, parts=("weights", "grads", "optimizer", "master")) -> float:
    got = stage_model_states(p, 1.0, 1.0)
    return float(sum(got[k] for k in parts))


def test_expert_state_per_gpu_halves_when_ep_doubles():
    # ZeRO 0, no accumulation: 2 (bf16 weights) + 2 (grads) + 8 (Adam) + 4 (fp32 master) = 16 B per parameter.
    # Dense 0.2 B × 16 = 3.2 GB on every GPU; experts 0.8 B × 16 / ep: 12.8 GB, 6.4 GB, 3.2 GB, 1.6 GB.
    for ep, experts_gb in ((1, 12.8), (2, 6.4), (4, 3.2), (8, 1.6)):
        assert _states(_toy_memory(ep)) == pytest.approx(3.2e9 + experts_gb * 1e9, rel=1e-12)


def test_zero_shards_experts_over_the_expert_data_parallel_group():
    # ZeRO-1 at dp 8: optimizer and master (12 B) over 8 ranks for the dense part; experts hold 1/ep and shard
    # those over dp/ep, so 1/max(8, ep) = 1/8 of them: ep changes only the 4 B of weights + gradients.
    # ep 2: dense 0.2e9 × (4 + 12/8) = 1.1e9; experts 0.8e9 × (4/2 + 12/8) = 2.8e9.
    assert _states(_toy_memory(2, zero_stage=1)) == pytest.approx(1.1e9 + 2.8e9, rel=1e-12)


def test_a_dense_model_and_ep_1_keep_their_old_states():
    dense = _toy_memory(1, n_expert_params=0.0)
    assert _states(_toy_memory(1)) == pytest.approx(_states(dense), rel=1e-12)  # ep 1: nothing moves


@given(
    ep_power=st.integers(0, 5),
    dp_factor=st.integers(1, 4),
    zero=st.integers(0, 3),
    pp=st.sampled_from([1, 2]),
    hybrid=st.booleans(),
    lora=st.booleans(),
    grad_accum=st.sampled_from([1, 4]),
)
@example(ep_power=2, dp_factor=1, zero=3, pp=1, hybrid=False, lora=False, grad_accum=1)  # ep = dp: no gathers
@example(ep_power=3, dp_factor=1, zero=3, pp=1, hybrid=True, lora=True, grad_accum=4)  # HSDP shard < ep
def test_more_ep_never_increases_expert_state_or_the_peak(
    ep_power, dp_factor, zero, pp, hybrid, lora, grad_accum
):
    ep = 2**ep_power
    dp = 2 * ep * dp_factor  # both ep and 2·ep divide dp (EP is carved out of it)
    method = {"method": 1.0, "n_adapter_params": 5e7, "n_expert_adapter_params": 4e7} if lora else {}
    lora_bytes = {"frozen_weight_bytes": 2.0, "frozen_other_weight_bytes": 2.0} if lora else {}
    common = dict(
        dp=float(dp),
        zero_stage=float(zero),
        pp=float(pp),
        hybrid_shard=float(hybrid),
        grad_accum=float(grad_accum),
    )
    low, high = (
        _toy_memory(ep, **common, **method, **lora_bytes),
        _toy_memory(2 * ep, **common, **method, **lora_bytes),
    )
    assert _states(high, STATE_PARTS) <= _states(low, STATE_PARTS) * (1 + 1e-12)
    # the peak may grow by the one communicator an expert-parallel group adds (ep 1 has none): its NCCL buffers
    from planner.formulas.memory.device_overhead import NCCL_BUFFER_BYTES, NCCL_CHANNELS, NCCL_PEERS

    new_communicator = NCCL_BUFFER_BYTES * NCCL_CHANNELS * NCCL_PEERS if ep == 1 else 0.0  # 256 MiB
    peak_high, peak_low = float(memory_per_gpu(high).peak_bytes), float(memory_per_gpu(low).peak_bytes)
    assert peak_high <= peak_low * (1 + 1e-12) + new_communicator


def test_deepseek_v3_lora_on_64_h200_rises_with_ep():
    # The example plan: DeepSeek-V3 LoRA, 64 H200, the Scenario's other defaults (ZeRO-3). Without EP
    # every micro-batch all-gathers all 671 B frozen weights over the network.
    base = Scenario(model="DeepSeek-V3", method="lora", gpu="H200 SXM", n_gpus=64)
    runs = [estimate(base.updated(ep=ep), CATS) for ep in (1, 2, 4, 8, 16, 32, 64)]
    mfus = [r.mfu for r in runs]
    assert all(b > a for a, b in itertools.pairwise(mfus)), mfus
    assert mfus[-1] > 10 * mfus[0]
    peaks = [r.peak_gib_per_device for r in runs]
    assert all(b <= a for a, b in itertools.pairwise(peaks)), peaks
    # before EP: 0.35 % (the old planner's 0.37 % at the network's 50 GB/s line rate; 47 GB/s achieved now)
    assert runs[0].mfu == pytest.approx(0.00353, rel=0.02)


# --- validation -----------------------------------------------------------------------------------------------


def test_ep_must_divide_the_data_parallel_degree():
    with pytest.raises(ValidationError, match="ep") as caught:
        Scenario(model="Mixtral 8x7B", n_gpus=8, ep=3)
    text = str(caught.value)
    assert "must divide the data-parallel degree dp" in text and "= 8" in text
    assert "at dp 8: 1, 2, 4, 8" in text


def test_ep_must_divide_the_routed_experts_and_a_dense_model_takes_1():
    with pytest.raises(PlannerError) as caught:
        resolve(Scenario(model="Mixtral 8x7B", n_gpus=16, ep=16), CATS)
    assert caught.value.field == "ep"
    assert "Mixtral 8x7B's 8 routed experts" in caught.value.problem
    assert caught.value.allowed == "1, 2, 4, 8"
    with pytest.raises(PlannerError) as dense:
        resolve(Scenario(model="Llama 3.1 8B", n_gpus=8, ep=2), CATS)
    assert dense.value.field == "ep" and "dense model" in dense.value.problem
    assert dense.value.allowed == "1 for a dense model"


def test_cli_names_the_ep_flag_and_exits_2():
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "--model", "Llama 3.1 8B", "--ep", "2"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("error: --ep: Llama 3.1 8B is a dense model")


def test_share_link_and_csv_carry_ep():
    from planner.inputs.query import scenario_from_query, scenario_to_query

    s = Scenario(model="Mixtral 8x7B", n_gpus=16, ep=4)
    query = scenario_to_query(s)
    assert query["ep"] == "4"
    assert scenario_from_query(query)[0].ep == 4
    from planner.inputs.scenario_io import INPUT_COLUMNS

    assert "ep" in INPUT_COLUMNS  # the scenario CSV's column, written and read like every input


# --- search ---------------------------------------------------------------------------------------------------


def test_search_returns_expert_parallel_plans_for_an_moe_model():
    base = Scenario(model="Mixtral 8x7B", gpu="H100 SXM", n_gpus=16, micro_batch=1, grad_accum=8)
    result = search(base, Constraints(gpus=("H100 SXM",), max_gpus=64), catalogs=CATS)
    assert result.top.height
    eps = set(result.top["ep"].to_list()) | set(result.frontier["ep"].to_list())
    assert max(eps) > 1, eps
    rows = [*result.top.iter_rows(named=True), *result.frontier.iter_rows(named=True)]
    row = next(r for r in rows if r["ep"] > 1)
    again = estimate(scenario_for(row, base, CATS), CATS)  # a row's scenario reproduces its figures
    assert again.wall_clock_h == pytest.approx(row["wall_clock_h"], rel=1e-9)
    # fixed: ep 1 keeps every plan at 1
    fixed = search(
        base, Constraints(gpus=("H100 SXM",), max_gpus=64), obeying_space(base, {"ep": 1}), catalogs=CATS
    )
    assert set(fixed.top["ep"].to_list()) == {1}


def test_a_fixed_ep_the_model_cannot_take_finds_nothing_and_says_which_choice():
    # Mixtral 8x7B has 8 routed experts: a fixed EP 16 is obeyed (no plan quietly runs another degree)
    base = Scenario(model="Mixtral 8x7B", gpu="H100 SXM", n_gpus=16, micro_batch=1, grad_accum=8)
    space = obeying_space(base, {"ep": 16})
    result = search(base, Constraints(gpus=("H100 SXM",), max_gpus=64), space, catalogs=CATS)
    assert result.top.height == 0
    assert "EP" in result.reason, result.reason


def test_dense_grids_do_not_grow():
    base = Scenario(model="Llama 3.1 70B", n_gpus=8)
    dense = layout_grid(base, SearchSpace(), 64, 80.0, 64.0)
    same = layout_grid(base, SearchSpace(expert_degrees=(1,)), 64, 80.0, 64.0)
    assert len(dense) == len(same) and "ep" not in dense.columns  # the scenario's ep 1 stands
    moe_grid = layout_grid(base, SearchSpace(), 64, 80.0, 64.0, n_experts=8.0)
    assert len(moe_grid) > len(dense)
    eps, dps = moe_grid.columns["ep"], moe_grid.columns["dp"]
    assert set(eps) == {1.0, 2.0, 4.0, 8.0}  # divisors of 8 experts among 1..64
    assert ((dps % eps) == 0).all()


# --- exports --------------------------------------------------------------------------------------------------


def test_exports_name_the_expert_parallel_degree():
    s = Scenario(model="Mixtral 8x7B", n_gpus=16, ep=8, seq_len=4096)
    assert "--expert-model-parallel-size 8" in export_plan(s, CATS, "megatron").text
    # torchtitan ships no Mixtral (it refuses it); its Qwen3 MoE takes the same degree
    titan = export_plan(s.updated(model="Qwen3 30B A3B"), CATS, "torchtitan-0.2").text
    assert "expert_parallel_degree = 8" in titan
    plain = export_plan(s.updated(ep=1), CATS, "megatron").text
    assert "--expert-model-parallel-size" not in plain


# --- the app --------------------------------------------------------------------------------------------------


def test_app_widget_beside_the_tp_and_pp_inputs_sets_and_refuses_ep(app):
    from ui.state import NOTICES_KEY, SCENARIO_KEY
    from ui.training_setup import EXPERT_PARALLEL_LABEL, OPEN_KEY

    app.session_state[OPEN_KEY] = True
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.ep").input("3").run()  # 8 GPUs, dp 8: 3 does not divide it, refused by its label
    assert not app.exception
    notices = (
        [w.value for w in app.warning] + [e.value for e in app.error] + list(app.session_state[NOTICES_KEY])
    )
    expected = f"{EXPERT_PARALLEL_LABEL}: must divide the data-parallel degree"
    assert any(text.startswith(expected) for text in notices), notices
    assert app.session_state[SCENARIO_KEY].ep == 1  # the previous valid value stays
    app.text_input(key="w.ep").input("2").run()  # divides dp, but the default Llama 3.1 8B is dense
    assert not app.exception
    errors = [e.value for e in app.error]
    assert any(f"{EXPERT_PARALLEL_LABEL}: Llama 3.1 8B is a dense model" in text for text in errors), errors
