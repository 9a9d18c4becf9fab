"""Pipeline schedules: plain and interleaved 1F1B, from the formula to the search and export.

Sources of the arithmetic: Narayanan et al. 2021 ("Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM") §2.2 for the bubble and the v-fold point-to-point traffic; Megatron-LM's interleaved schedule
(megatron/core/pipeline_parallel/schedules.py: rank r warms up with 2·(p−r−1) + (v−1)·p chunk forwards) and
Korthikanti et al. 2022 §4.2.3 (first-stage memory × (1 + (p−1)/(p·v))) for the in-flight activations.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.cases.case_file import default_case_file, load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import case_scenario
from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import scenario_for, search
from planner.decide.sweep_grid import SearchSpace, layout_grid, pipeline_schedules
from planner.decide.sweep_types import Constraints
from planner.errors import PlannerError
from planner.estimate import estimate
from planner.export.exporters import export_plan
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.peak import stage_activations
from planner.formulas.step import comm
from planner.formulas.step.pipeline import layers_in_flight
from planner.inputs.scenario import Scenario
from planner.model.layer_split import interleaving_fits, layers_per_virtual_stage
from planner.resolve import resolve

CATS = default_catalogs()


# --- the bubble -----------------------------------------------------------------------------------------


def test_bubble_of_plain_1f1b_written_out():
    # p = 8 stages, m = 16 micro-batches: idle (p−1)/m = 7/16 of the ideal time; as a share of the whole step
    # (ideal + bubble) that is (7/16) / (1 + 7/16) = 7/23 = 0.3043.
    share = comm.pipeline_bubble_frac(8, 16, 1)
    assert share == pytest.approx(7 / 23, rel=1e-12)
    assert share / (1 - share) == pytest.approx(7 / 16, rel=1e-12)  # the paper's form, over ideal time


def test_bubble_of_interleaved_1f1b_written_out():
    # v = 4 chunks per GPU divide the bubble by 4: (p−1)/(v·m) = 7/64 of the ideal time, 7/(64 + 7) = 7/71
    # = 0.0986 of the step, lower than 1F1B's 7/23.
    share = comm.pipeline_bubble_frac(8, 16, 4)
    assert share == pytest.approx(7 / 71, rel=1e-12)
    assert share / (1 - share) == pytest.approx(7 / 64, rel=1e-12)
    assert share < comm.pipeline_bubble_frac(8, 16, 1)


def test_the_issue_405b_layout_bubble_shrinks_with_virtual_stages():
    # The issue's 405B pre-training layout: PP 16, 16 micro-batches per replica (the issue's own example; no
    # figure of a reserved document is used, shared/reference/reserved-sources.md).
    # 1F1B: 15/(16 + 15) = 15/31 = 0.484, the issue's "0.48 bubble"; v = 2: 15/47 = 0.319; v = 4: 15/79 = 0.190.
    s = Scenario(
        model="Llama 3.1 405B", n_gpus=16384, tp=8, pp=16, micro_batch=1, grad_accum=16, seq_len=8192,
        zero_stage=1, sequence_parallel=True, total_tokens_b=15_600,
    )  # fmt: skip
    bubbles = [estimate(s.updated(pp_virtual_stages=v), CATS).bubble_frac for v in (1, 2, 4)]
    assert bubbles == pytest.approx([15 / 31, 15 / 47, 15 / 79], rel=1e-9)
    hours = [estimate(s.updated(pp_virtual_stages=v), CATS).device_hours for v in (1, 2, 4)]
    assert hours[0] > hours[1] > hours[2]


@given(
    pp=st.integers(1, 64),
    m=st.integers(1, 512),
    v_small=st.integers(1, 32),
    extra=st.integers(0, 32),
)
@example(pp=1, m=1, v_small=1, extra=0)
@example(pp=64, m=1, v_small=1, extra=31)
def test_more_virtual_stages_never_increase_the_bubble(pp, m, v_small, extra):
    fewer = comm.pipeline_bubble_frac(pp, m, v_small)
    more = comm.pipeline_bubble_frac(pp, m, v_small + extra)
    assert more <= fewer
    assert 0.0 <= more < 1.0


# --- point-to-point traffic -------------------------------------------------------------------------------


def test_point_to_point_traffic_grows_v_fold():
    # b·s = 4,096 tokens, h = 8,192, 2-byte activations, tp 4: each micro-batch sends 2 × 4096 × 8192 × 2 / 4
    # = 33,554,432 bytes (activation forward + gradient backward, 1/t per TP rank); 8 micro-batches
    # = 268,435,456 bytes, at 100 GB/s 2.684 ms. Three chunks per GPU send three such pairs: 8.053 ms.
    plain = comm.pipeline_p2p_comm_s(4, 4096, 8192, 2, 4, 8, 100.0)
    three = comm.pipeline_p2p_comm_s(4, 4096, 8192, 2, 4, 8, 100.0, n_virtual_stages=3)
    assert plain == pytest.approx(268_435_456 / 100e9, rel=1e-12)
    assert three == pytest.approx(3 * 268_435_456 / 100e9, rel=1e-12)


# --- in-flight activations ---------------------------------------------------------------------------------


def test_first_and_last_stage_layers_in_flight_written_out():
    # L = 80 layers, p = 4, m = 8.
    # 1F1B: the first stage holds min(8, 4) = 4 micro-batches of 80/4 = 20 layers = 80; the last one, 20.
    assert layers_in_flight(80, 4, 1, 8, True) == pytest.approx(80)
    assert layers_in_flight(80, 4, 1, 8, False) == pytest.approx(20)
    # v = 2: chunks of 80/8 = 10 layers. Rank 0 warms up with 2·3 + 1·4 = 10 chunk forwards, + 1 = 11 chunks
    # = 110 layers = 80 × (1 + 3/8) (Korthikanti's factor 1 + (p−1)/(p·v)); rank 3 with 0 + 4, + 1 = 5 chunks = 50.
    assert layers_in_flight(80, 4, 2, 8, True) == pytest.approx(80 * (1 + 3 / 8))
    assert layers_in_flight(80, 4, 2, 8, False) == pytest.approx(50)
    # m = p = 4: a step has only v·m = 8 chunk forwards, so rank 0 holds all 8 chunks = 80 layers.
    assert layers_in_flight(80, 4, 2, 4, True) == pytest.approx(80)


def test_first_stage_activation_memory_grows_by_korthikantis_factor():
    toy = MemoryInputs(
        n_params=1e9, n_embedding_params=0.0, n_head_params=0.0, n_layers=32, hidden=4096, n_heads=32,
        n_kv_heads=8, head_dim=128, ffn_hidden=14336, n_mlp_matrices=3, vocab=128256, seq_len=4096,
        grad_accum=16, pp=4,
    )  # fmt: skip
    plain = stage_activations(toy, True, 0.0)["activations"]
    for v, factor in ((2, 1 + 3 / 8), (4, 1 + 3 / 16)):  # 1 + (p−1)/(p·v) with p = 4
        interleaved = stage_activations(MemoryInputs(**{**toy.__dict__, "n_virtual_stages": v}), True, 0.0)
        assert interleaved["activations"] / plain == pytest.approx(factor, rel=1e-12)


# --- validation ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"pp_virtual_stages": 2}, "must be 1 without pipeline parallelism (pp 1)"),
        ({"pp": 2, "grad_accum": 3, "pp_virtual_stages": 2}, "grad_accum 3, to be a multiple of pp = 2"),
        ({"pp_virtual_stages": 0}, "greater than or equal to 1"),
    ],
)
def test_scenario_rejects_impossible_interleaving(fields, needle):
    with pytest.raises(ValidationError, match="pp_virtual_stages") as caught:
        Scenario(**fields)
    assert needle in str(caught.value)


def test_a_layer_split_that_does_not_divide_names_the_input_and_the_allowed_values():
    # Llama 3.1 8B: 32 layers; pp 2 × v 3 = 6 chunks: 32 % 6 = 2 and 34 % 6 = 4, neither divides.
    s = Scenario(model="Llama 3.1 8B", pp=2, grad_accum=2, pp_virtual_stages=3)
    with pytest.raises(PlannerError) as caught:
        resolve(s, CATS)
    assert caught.value.field == "pp_virtual_stages"
    assert "32 layers" in caught.value.problem and "2 x 3 = 6" in caught.value.problem
    assert caught.value.allowed.startswith("at pp 2: 1, 2, 4, 8, 16")


def test_cli_names_the_flag_and_exits_2():
    done = subprocess.run(
        [sys.executable, "-m", "planner", "estimate", "--model", "Llama 3.1 8B", "--pp", "2", "--grad-accum",
         "2", "--pp-virtual-stages", "3"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().startswith("error: --pp-virtual-stages: Llama 3.1 8B's 32 layers")


def test_the_embedding_and_loss_rule_lets_126_layers_interleave_on_16_stages():
    # 126 % 32 = 30, but (126 + 2) / 32 = 4 layers per chunk with the embedding and the loss counted.
    assert layers_per_virtual_stage(126, 16, 2) == (4, True)
    assert layers_per_virtual_stage(80, 4, 2) == (10, False)
    assert bool(interleaving_fits(126, 16, 2)) and not bool(interleaving_fits(126, 16, 3))
    assert not bool(interleaving_fits(80, 1, 2))  # no pipeline, no interleaving


# --- export -------------------------------------------------------------------------------------------------


def test_megatron_export_gives_layers_per_virtual_stage():
    s = Scenario(model="Llama 3.1 70B", n_gpus=64, tp=4, pp=4, grad_accum=8, pp_virtual_stages=2)
    lines = export_plan(s, CATS, "megatron").text.splitlines()
    assert "--num-layers-per-virtual-pipeline-stage 10" in lines  # 80 layers / (4 × 2)
    assert "--account-for-embedding-in-pipeline-split" not in lines
    big = Scenario(model="Llama 3.1 405B", n_gpus=256, tp=8, pp=16, grad_accum=16, pp_virtual_stages=2)
    lines = export_plan(big, CATS, "megatron").text.splitlines()
    assert "--num-layers-per-virtual-pipeline-stage 4" in lines  # (126 + 2) / (16 × 2)
    assert {"--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"} <= set(lines)
    plain = export_plan(s.updated(pp_virtual_stages=1), CATS, "megatron").text
    assert "virtual-pipeline" not in plain


# --- the search ---------------------------------------------------------------------------------------------


def test_grid_tries_virtual_stages_only_where_megatron_can_run_them():
    assert pipeline_schedules((1, 2, 4, 8, 16), (1, 2, 4), 80) == [
        (1, 1),
        (2, 1),
        (4, 1),
        (8, 1),
        (16, 1),
        (2, 2),
        (2, 4),
        (4, 2),
        (4, 4),
        (8, 2),
    ]  # fmt: skip  80 % 32 = 16 and 82 % 32 = 18: v = 4 at pp 8 is out; at pp 16 neither 32 nor 64 divides
    assert pipeline_schedules((1, 2), (1, 2, 4), None) == [(1, 1), (2, 1)]  # no shape: plain 1F1B only
    base = Scenario(model="Llama 3.1 70B")
    grid = layout_grid(base, SearchSpace(target_batch_sequences=256), 64, 80.0, 64.0)
    v, pp, accum = (grid.columns[k] for k in ("n_virtual_stages", "pp", "n_micro_batches"))
    interleaved = v > 1
    assert interleaved.any()
    assert np.all(pp[interleaved] > 1)
    assert np.all(accum[interleaved] % pp[interleaved] == 0)


def test_search_returns_interleaved_plans_for_a_pipelined_run_and_they_reproduce():
    base = Scenario(model="Llama 3.1 70B", seq_len=4096)
    result = search(
        base,
        Constraints(gpus=("H100 SXM",), max_gpus=64, objective="wall_clock"),
        SearchSpace(target_batch_sequences=512, zero_stages=(1,), recompute=("full",), micro_batches=(1,)),
        top_n=20,
        catalogs=CATS,
    )
    rows = [row for row in result.top.iter_rows(named=True) if row["pp_virtual_stages"] > 1]
    assert rows, result.top
    row = rows[0]
    again = estimate(scenario_for(row, base, CATS), CATS)
    p, m, v = row["pp"], row["grad_accum"], row["pp_virtual_stages"]
    assert again.bubble_frac == pytest.approx((p - 1) / (v * m + p - 1), rel=1e-12)
    assert again.wall_clock_h == pytest.approx(row["wall_clock_h"], rel=1e-9)


# --- case rows ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case_id", "v"), [("KO-2a", 3), ("NM-1", 6), ("NM-3", 20), ("NM-5", 5), ("MG24-1", 1)]
)
def test_case_rows_read_the_interleaving_their_notes_state(case_id, v):
    rows = {row["case_id"]: row for row in load_case_file(default_case_file())}
    scenario, _ = case_scenario(rows[case_id], CATS, GpuMatcher(CATS))
    assert scenario.pp_virtual_stages == v


# --- the app ------------------------------------------------------------------------------------------------


def _notices(at) -> list[str]:
    from ui.state import NOTICES_KEY

    return [w.value for w in at.warning] + [e.value for e in at.error] + list(at.session_state[NOTICES_KEY])


def test_app_widget_beside_the_pipeline_degree_sets_and_refuses_virtual_stages(app):
    from ui.state import SCENARIO_KEY
    from ui.training_setup import OPEN_KEY, VIRTUAL_STAGES_LABEL

    app.session_state[OPEN_KEY] = True  # the training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.pp_virtual_stages").input("2").run()  # pp is 1: refused, named by its label
    assert not app.exception
    expected = f"{VIRTUAL_STAGES_LABEL}: must be 1 without pipeline parallelism (pp 1)"
    assert any(text.startswith(expected) for text in _notices(app)), _notices(app)
    assert app.session_state[SCENARIO_KEY].pp_virtual_stages == 1  # the previous valid value stays
    app.text_input(key="w.pp").input("2").run()
    app.text_input(key="w.grad_accum").input("4").run()
    app.text_input(key="w.pp_virtual_stages").input("1").run()  # the refused "2" is still in the box
    app.text_input(key="w.pp_virtual_stages").input("2").run()
    assert not app.exception
    s = app.session_state[SCENARIO_KEY]
    assert (s.pp, s.grad_accum, s.pp_virtual_stages) == (2, 4, 2)
    # the Compute page's bubble row: (2 − 1) / (2 × 4 + 2 − 1) = 1/9 = 11.1 %
    shown = " ".join(md.value for md in app.markdown)
    assert "11.1%" in shown
    # 3 chunks per GPU: Llama 3.1 8B's 32 layers do not split into 2 × 3; the page says so by the label
    app.text_input(key="w.pp_virtual_stages").input("3").run()
    assert not app.exception
    errors = [e.value for e in app.error]
    assert any(f"{VIRTUAL_STAGES_LABEL}: Llama 3.1 8B's 32 layers" in text for text in errors), errors
