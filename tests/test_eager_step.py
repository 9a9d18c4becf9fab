"""The eager Hugging Face execution mode of the operator step model (planner/formulas/operators/eager.py):
its arithmetic written out, its place against the fused model, and what it does to the lent H200's runs."""

from __future__ import annotations

import json
import subprocess
import sys
from statistics import median, quantiles

import pytest
from ci import n_examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from planner.catalogue.catalog import default_catalogs
from planner.evaluate import evaluate
from planner.formulas.operators import eager
from planner.formulas.operators.step import operator_step
from planner.inputs.scenario import Scenario
from planner.resolve import resolve

CATS = default_catalogs()
PROPERTY = settings(max_examples=n_examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _columns(**fields):
    base = {"model": "Qwen2.5 0.5B", "gpu": "H200 SXM", "n_gpus": 1, "seq_len": 512, "micro_batch": 1}
    return resolve(Scenario(**{**base, **fields}), CATS).columns


def test_one_eager_layer_dispatches_its_operations_at_the_measured_host_cost():
    # Per layer: forward 53 operations × 20.8 µs = 1.1024 ms, backward 168.5 × 20.8 µs = 3.5048 ms, one layer
    # 221.5 × 20.8 µs = 4.6072 ms (h200_run_phases.csv: 886 more operations for 4 more layers; 20.8 µs per
    # operation, the host-bound 0.13B step's forward and backward phases over their operations).
    layer_ops = eager.OPS_PER_LAYER_FORWARD + eager.OPS_PER_LAYER_BACKWARD
    assert layer_ops == pytest.approx(221.5)
    assert layer_ops * eager.HOST_S_PER_OP == pytest.approx(4.6072e-3)
    # Qwen2.5 0.5B, 24 layers, full fine-tuning: forward 24 × 1.1024 = 26.4576 ms; backward 24 × 3.5048 + the
    # 105 operations outside the layers × 20.8 µs (2.184 ms) = 86.2992 ms.
    c = _columns(hf_eager_code=True)
    fwd, bwd = eager.host_s(c, c.model.n_layers)
    assert float(fwd) == pytest.approx(26.4576e-3, rel=1e-9)
    assert float(bwd) == pytest.approx(86.2992e-3, rel=1e-9)
    # 512 tokens leave the GPU idle most of the pass: the step's compute is the host's 112.7568 ms (the
    # optimizer update aside), against 24 × (33 + 66) × 8 µs = 19.0 ms of fused launches.
    ops = operator_step(c)
    assert float(ops.compute_s - ops.optimizer_s) == pytest.approx(112.7568e-3, rel=1e-9)
    assert float(operator_step(_columns()).launch_s) < float(ops.launch_s)


def test_lora_adds_peft_operations_per_adapted_matrix():
    # All linear layers adapted: 7 matrices; forward 53 + 7 × 6 = 95, backward 168.5 + 7 × 16.4 = 283.3 per
    # layer (h200_run_phases.csv: 157 more operations per layer with LoRA, 42 more in a recomputed forward).
    c = _columns(hf_eager_code=True, method="lora")
    assert float(eager.adapted_matrices(c)) == 7.0
    fwd, bwd = eager.host_s(c, 24.0)
    assert float(fwd) == pytest.approx(24 * 95 * 20.8e-6, rel=1e-9)
    assert float(bwd) == pytest.approx((24 * 283.3 + 105) * 20.8e-6, rel=1e-9)
    attention_only = _columns(hf_eager_code=True, method="lora", lora_targets="attention")
    assert float(eager.adapted_matrices(attention_only)) == 4.0


def test_one_eager_rmsnorm_bytes_and_time():
    # 4,096 tokens × hidden 4,096 in bf16 (e = 2): upcast 6, pow 8, mean 4, scale 8, downcast 6, weight 4 =
    # 32 bytes per element, 16,777,216 × 32 = 536,870,912 bytes.
    n = 4096.0 * 4096.0
    assert eager.rmsnorm_bytes(n, 2.0) == 536_870_912
    # At the H200's copy rate (4,214 GB/s) × the chain's share 0.6170: 536,870,912 / 2.600e12 = 206.49 µs, which
    # is the table's figure read back: the least bytes (2 × 2 × n = 67,108,864) at the measured 325 GB/s.
    got = eager.rmsnorm_s(n, 2.0, 4214e9)
    assert got == pytest.approx(206.49e-6, rel=1e-4)
    assert got == pytest.approx(4.0 * n / 325e9, rel=1e-9)
    assert got > 4.0 * n / 2796e9 * 5  # more than 5 × the fused LayerNorm's 2,796 GB/s (h200.csv)


def test_the_optimizer_step_runs_at_foreach_speed_when_torch_picks_foreach():
    # AdamW foreach 1,214 GB/s against 3,105 fused (h200.csv, 1 B fp32 parameters): the step takes 4,214 / 1,214
    # = 3.47 × as long as at the copy rate the fused model assumes.
    fused = operator_step(_columns()).optimizer_s
    foreach = operator_step(_columns(optimizer_foreach=True)).optimizer_s
    assert float(foreach / fused) == pytest.approx(4214.0 / 1214.0, rel=1e-9)


@PROPERTY
@example(
    model="Qwen2.5 0.5B", method="lora", micro_batch=1, seq_len=512, tp=1, recompute="none", chunked=False
)
@given(
    model=st.sampled_from(["Qwen2.5 0.5B", "Llama 3.1 8B"]),
    method=st.sampled_from(["full", "lora"]),
    micro_batch=st.sampled_from([1, 4]),
    seq_len=st.sampled_from([512, 4096]),
    tp=st.sampled_from([1, 2]),
    recompute=st.sampled_from(["none", "full"]),
    chunked=st.booleans(),
)
def test_eager_code_is_never_faster_than_fused_kernels_for_the_same_plan(
    model, method, micro_batch, seq_len, tp, recompute, chunked
):
    fields = {
        "model": model,
        "method": method,
        "micro_batch": micro_batch,
        "seq_len": seq_len,
        "tp": tp,
        "n_gpus": 2 * tp,
        "recompute": recompute,
        "fused_cross_entropy": chunked,
    }
    fused = evaluate(_columns(**fields))["step_time_s"]
    hf = evaluate(_columns(**fields, hf_eager_code=True))["step_time_s"]
    assert float(hf) >= float(fused) * (1 - 1e-12)


def test_the_lent_h200_eager_runs_are_scored_within_bounds():
    # 49 runs of transformers' LlamaForCausalLM (bench/gpu_runs.py), predicted black-box from the shipped
    # catalogues. Measured with the eager mode: median |error| 13.2 %, p90 25.2 % (without it: 42.9 % and 216 %,
    # every run predicted too fast).
    from planner.cases.validate import default_case_file, load_case_file, validate_cases

    cases = [r for r in load_case_file(default_case_file()) if r["case_id"].startswith("H200R")]
    rows = validate_cases([r for r in cases if r["case_id"].endswith("-tps")], CATS)["rows"]
    errors = [abs(r["rel_error"]) for r in rows if r["rel_error"] is not None]
    assert len(errors) == 49
    assert median(errors) <= 0.20
    assert quantiles(errors, n=10)[-1] <= 0.35


def test_the_cli_flag_slows_a_small_model_at_a_small_micro_batch():
    args = [
        sys.executable,
        "-m",
        "planner",
        "estimate",
        "--set",
        "model=Qwen2.5 0.5B",
        "--set",
        "gpu=H200 SXM",
    ]
    args += ["--set", "n_gpus=1", "--set", "seq_len=512", "--format", "json"]
    fused = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    hf = json.loads(
        subprocess.run([*args, "--hf-eager-code"], capture_output=True, text=True, check=True).stdout
    )
    # host-bound: 112.76 ms of dispatch per micro-batch against 19.0 ms of fused launches, so at least 3 × slower
    assert hf["tokens_per_s"] < fused["tokens_per_s"] / 3


def test_app_training_code_select_sets_hf_eager_code(app):
    from ui.state import SCENARIO_KEY
    from ui.training_code import TRAINING_CODE_LABELS
    from ui.training_setup import OPEN_KEY

    assert TRAINING_CODE_LABELS[True] == "Hugging Face Trainer/PEFT (eager)"
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.selectbox(key="w.hf_eager_code").set_value(True).run()
    assert not app.exception
    assert app.session_state[SCENARIO_KEY].hf_eager_code is True
