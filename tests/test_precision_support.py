"""A precision the GPU cannot run is refused everywhere, naming the GPU and what it runs.

The rule (planner/catalogue/precisions.py): a precision runs on a GPU when data/gpus.csv lists a dense rate for
its datatype — bf16 needs tflops_bf16, fp16 tflops_fp16, fp8 tflops_fp8, fp32 tflops_tf32 or tflops_fp32.
The catalogue's rows behind the cases below: A100 80GB SXM lists BF16/FP16 312, TF32 156, FP32 19.5 and no
FP8 (Ampere has no FP8 tensor cores); V100 32GB lists FP16 125 and FP32 15.7 and no BF16 (Volta has none);
H100 SXM lists FP8 1,979 (reference/hardware-and-prices.md §1, halved from the with-sparsity figures).
"""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest

from planner import (
    Constraints,
    PlannerError,
    Scenario,
    compare_gpus,
    default_catalogs,
    estimate,
    evaluate_rows,
    search,
    sheet_row_problem,
    supported_precisions,
    validate_cases,
    with_cell,
)
from planner.cases.case_file import default_case_file, load_case_file
from planner.catalogue.precisions import PRECISION_COLUMNS
from ui.state import NOTICES_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY

CATS = default_catalogs()
GPUS = CATS.gpu_names()
A100, V100, H100 = "A100 80GB SXM", "V100 32GB", "H100 SXM"
A100_RUNS = "bf16_mixed, fp16_mixed, bf16_pure, fp32"  # every precision but fp8_mixed


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True, text=True)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# --- the rule ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "runs"),
    [
        (A100, ["bf16_mixed", "fp16_mixed", "bf16_pure", "fp32"]),
        (V100, ["fp16_mixed", "fp32"]),
        ("T4", ["fp16_mixed", "fp32"]),
        (H100, ["bf16_mixed", "fp16_mixed", "bf16_pure", "fp8_mixed", "fp32"]),
        ("TPU v5p", ["bf16_mixed", "bf16_pure", "fp8_mixed"]),  # BF16 459, FP8 459; no FP16 or FP32 rate
        ("Gaudi 2", ["bf16_mixed", "bf16_pure", "fp8_mixed"]),  # FP16/FP32 unconfirmed: blank cells
    ],
)
def test_supported_precisions_follow_the_rate_columns(gpu: str, runs: list[str]) -> None:
    assert supported_precisions(CATS.gpu(gpu)) == runs


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("precision", list(PRECISION_COLUMNS))
def test_every_gpu_and_precision_is_estimated_or_refused_naming_the_gpu(gpu: str, precision: str) -> None:
    """Exhaustive over the catalogue (31 GPUs x 5 precisions): property tests draw only runnable pairs."""
    s = Scenario(gpu=gpu, precision=precision)
    runs = supported_precisions(CATS.gpu(gpu))
    if precision in runs:
        assert estimate(s, CATS).peak_tflops > 0
        return
    with pytest.raises(PlannerError) as refused:
        estimate(s, CATS)
    assert refused.value.fields == ("precision", "gpu")
    assert f"{precision} cannot run on {gpu}" in str(refused.value)
    assert refused.value.allowed == ", ".join(runs)


# --- the command line ---------------------------------------------------------------------------------------


def test_fp8_on_an_a100_exits_2_naming_the_gpu_and_what_it_runs() -> None:
    """The issue's done-when command, as a real subprocess."""
    line = one_line_error(
        run_cli("estimate", "--gpu", "A100 80GB SXM", "--precision", "fp8_mixed", "--model", "Llama 3.1 8B")
    )
    assert line == (
        "error: --precision: fp8_mixed cannot run on A100 80GB SXM: the GPU catalogue lists no FP8 "
        f"tensor-core rate for it (allowed: {A100_RUNS})"
    )


def test_fp8_on_an_a100_is_refused_even_with_a_peak_rate_typed() -> None:
    # A typed peak describes the chip's speed, not a datatype it lacks: before, 600 TFLOP/s of fp8 was planned.
    line = one_line_error(
        run_cli("estimate", "--gpu", "a100", "--precision", "fp8_mixed", "--peak-tflops", "600")
    )
    assert "fp8_mixed cannot run on A100 80GB SXM" in line


def test_bf16_on_a_v100_is_refused_naming_the_flag_typed() -> None:
    # Only --gpu typed: the default precision bf16_mixed is the input the sentence is about.
    line = one_line_error(run_cli("estimate", "--gpu", "V100"))
    assert line.startswith("error: --gpu: --precision bf16_mixed cannot run on V100 32GB:")
    assert line.endswith("(allowed: fp16_mixed, fp32)")
    line = one_line_error(run_cli("estimate", "--gpu", "V100", "--precision", "bf16_pure"))
    assert line.startswith(
        "error: --precision: bf16_pure cannot run on V100 32GB: the GPU catalogue lists no BF16"
    )


def test_fp16_on_a_v100_and_fp8_on_an_h100_are_estimated() -> None:
    v100 = run_cli("estimate", "--gpu", "V100", "--precision", "fp16_mixed", "--format", "json")
    h100 = run_cli("estimate", "--gpu", "H100", "--precision", "fp8_mixed", "--format", "json")
    assert v100.returncode == 0 and h100.returncode == 0, (v100.stderr, h100.stderr)
    # the dense datasheet rates, no fallback: V100 FP16 125, H100 SXM FP8 1,979 TFLOP/s
    assert json.loads(v100.stdout)["peak_tflops"] == pytest.approx(125.0, rel=1e-12)
    assert json.loads(h100.stdout)["peak_tflops"] == pytest.approx(1979.0, rel=1e-12)


def test_compare_and_recommend_refuse_the_pair_for_the_scenario_gpu() -> None:
    for command in ("compare", "recommend"):
        line = one_line_error(run_cli(command, "--gpu", A100, "--precision", "fp8_mixed"))
        assert "fp8_mixed cannot run on A100 80GB SXM" in line and A100_RUNS in line, command


# --- the comparison, the search, fixes ------------------------------------------------------------------


def test_compare_marks_the_a100_for_fp8_instead_of_a_number() -> None:
    frame = compare_gpus(Scenario(precision="fp8_mixed"), CATS)
    a100 = frame.filter(pl.col("gpu") == A100).row(0, named=True)
    assert a100["status"].startswith("no rate: cannot run fp8_mixed")
    assert [a100[k] for k in ("peak_tflops", "wall_clock_h", "cost_usd", "fits_vram", "min_gpus_to_fit")] == [
        None
    ] * 5
    h100 = frame.filter(pl.col("gpu") == H100).row(0, named=True)
    assert h100["peak_tflops"] == pytest.approx(1979.0) and "cannot run" not in h100["status"]
    # before, the A100 borrowed its BF16 rate and came out slower than bf16 on itself
    cannot = set(frame.filter(pl.col("status").str.contains("cannot run"))["gpu"])
    assert cannot == {g for g in GPUS if "fp8_mixed" not in supported_precisions(CATS.gpu(g))}


def test_the_search_leaves_out_gpus_that_cannot_run_the_precision_and_says_why() -> None:
    base = Scenario(model="Llama 3.1 8B", precision="fp8_mixed", examples=20_000, seq_len=2048)
    result = search(base, Constraints(gpus=(A100, H100), max_gpus=8), catalogs=CATS, top_n=5)
    assert result.gpus == (H100,)
    assert "fp8_mixed cannot run on A100 80GB SXM" in result.skipped_gpus[A100]
    assert A100_RUNS in result.skipped_gpus[A100]
    assert set(result.top["gpu"]) == {H100} and result.top.height > 0
    only_a100 = search(base, Constraints(gpus=(A100,), max_gpus=8), catalogs=CATS, top_n=5)
    assert only_a100.top.height == 0
    assert only_a100.reason.startswith("No GPU searched can run this plan: fp8_mixed cannot run on A100")


def test_a_bigger_gpu_is_suggested_only_if_it_runs_the_precision() -> None:
    from planner import resolve, suggest_fixes

    # 8B LoRA in fp8 on one L4 (24 GB) peaks at 25.6 GiB: the old fixes offered the A100 40GB and the V100
    # 32GB, the smallest priced GPUs that hold it, though neither has FP8 tensor cores
    s = Scenario(model="Llama 3.1 8B", method="lora", precision="fp8_mixed", gpu="L4", n_gpus=1, zero_stage=3)
    gpus = [fix.change["gpu"] for fix in suggest_fixes(resolve(s, CATS), CATS) if "gpu" in fix.change]
    assert gpus and all("fp8_mixed" in supported_precisions(CATS.gpu(g)) for g in gpus)


# --- the plan sheet ---------------------------------------------------------------------------------------


def test_a_sheet_cell_that_pairs_a_gpu_with_a_precision_it_lacks_is_refused() -> None:
    on_a100 = Scenario(gpu=A100)
    with pytest.raises(PlannerError, match="fp8_mixed cannot run on A100 80GB SXM"):
        with_cell(on_a100, "Precision", "fp8_mixed", CATS)
    with pytest.raises(PlannerError, match="bf16_mixed cannot run on V100 32GB"):
        with_cell(Scenario(), "GPU", V100, CATS)
    assert with_cell(Scenario(precision="fp16_mixed"), "GPU", V100, CATS).gpu == V100


def test_a_sheet_row_holding_the_pair_names_its_column() -> None:
    """A row from a library or an import that already holds the pair: its problem names the column."""
    results = evaluate_rows([Scenario(), Scenario(gpu=A100, precision="fp8_mixed")], CATS)
    assert not isinstance(results[0], PlannerError)
    problem = results[1]
    assert isinstance(problem, PlannerError)
    assert sheet_row_problem(problem) == (
        "column “Precision”: fp8_mixed cannot run on A100 80GB SXM: the GPU catalogue lists no FP8 "
        f"tensor-core rate for it (allowed: {A100_RUNS})"
    )


def test_the_sheet_page_refuses_the_cell_naming_row_and_column_and_shows_a_stored_row_problem(
    app, fresh_library
) -> None:
    from planner import open_library

    library = open_library(fresh_library)
    library.create("on A100", Scenario(gpu=A100), author="Ann")
    # a plan saved before the rule holds the pair: the sheet names its problem instead of a result
    library.create("fp8 A100", Scenario(gpu=A100, precision="fp8_mixed"), author="Ann")
    app.switch_page("app_pages/plan_sheet.py").run()
    assert not app.exception
    rows = list(app.data_editor[0].value["Name"])
    problems = dict(zip(rows, app.data_editor[0].value["Problem"], strict=True))
    assert problems["fp8 A100"].startswith("column “Precision”: fp8_mixed cannot run on A100 80GB SXM")
    app.session_state["sheet.editor.0"] = {
        "edited_rows": {rows.index("on A100"): {"Precision": "fp8_mixed", "GPUs": 4}},
        "added_rows": [],
        "deleted_rows": [],
    }
    app.run()
    assert not app.exception
    where = f"Row {rows.index('on A100') + 1} (on A100), column “Precision”: fp8_mixed cannot run on A100 80GB SXM"
    assert any(where in e.value and "previous value stays" in e.value for e in app.error), [
        e.value for e in app.error
    ]
    frame = app.data_editor[0].value
    edited = list(frame["Name"]).index("on A100")
    assert frame["Precision"][edited] == "bf16_mixed" and frame["GPUs"][edited] == 4  # the good cell applies


# --- case rows ----------------------------------------------------------------------------------------------


def _case(**cells: str) -> dict[str, str]:
    row = dict.fromkeys(load_case_file(default_case_file())[0], "")
    base = {
        "case_id": "P-1",
        "category": "throughput",
        "source": "constructed for this test",
        "model": "GPT-like 1.3B",
        "params_b": "1.3",
        "n_layers": "24",
        "hidden": "2048",
        "n_heads": "16",
        "vocab": "50257",
        "seq_len": "2048",
        "micro_batch": "4",
        "method": "full",
        "optimizer": "AdamW",
        "gpu": "V100 32GB",
        "n_gpus": "8",
        "measured_value": "3000",
        "measured_unit": "tokens_per_s_per_gpu",
    }
    return {**row, **base, **cells}


def test_a_case_row_stating_a_precision_its_gpu_lacks_is_skipped_with_the_reason() -> None:
    rows = [
        _case(case_id="P-1", precision="bf16 AMP"),
        _case(case_id="P-2", precision="fp16 AMP"),
        _case(case_id="P-3", precision=""),
    ]
    out = {row["case_id"]: row for row in validate_cases(rows, CATS)["rows"]}
    assert out["P-1"]["predicted"] is None
    assert out["P-1"]["skipped_reason"] == (
        "precision 'bf16 AMP' read as bf16_mixed cannot run on V100 32GB: the GPU catalogue lists no BF16 "
        "tensor-core rate for it"
    )
    assert out["P-2"]["predicted"] is not None
    # a blank precision on a multi-GPU V100 row reads fp16_mixed (no BF16 there): the same prediction as P-2
    assert out["P-3"]["predicted"] == pytest.approx(out["P-2"]["predicted"], rel=1e-12)


def test_the_calibration_file_loses_no_row() -> None:
    """No calibration row pairs a GPU with a precision it lacks: the same n and n_skipped as the rows' other
    reasons give (the post-training rows add skips for GPUs the catalogue lacks, unstated batches
    and per-model GPU placement), and no skip names a precision."""
    report = validate_cases(load_case_file(default_case_file()), CATS)
    counts = {name: (s["n"], s["n_skipped"]) for name, s in report["summary"].items()}
    # memory and throughput include the 147 + 49 rows measured on a lent H200 (none skipped); throughput skips the
    # torchtune rows whose tokens/s is not stated per GPU or total on 8 GPUs (reading the measured value to choose
    # would read the answer back into the prediction)
    expected = {
        "memory": (185, 2),
        "throughput": (118, 4),
        "time": (30, 9),
        "energy": (13, 1),
        "multimodal": (9, 0),
    }
    assert counts == expected
    assert not [r for r in report["rows"] if "precision" in (r["skipped_reason"] or "")]


# --- the app ------------------------------------------------------------------------------------------------


def told(at) -> list[str]:
    return [w.value for w in at.warning] + [e.value for e in at.error] + list(at.session_state[NOTICES_KEY])


def test_the_app_refuses_fp8_on_an_a100_naming_the_widget_and_the_gpu(app) -> None:
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.sidebar.selectbox(key="w.gpu").set_value(A100).run()
    app.selectbox(key="w.precision").set_value("fp8_mixed").run()
    assert not app.exception
    expected = (
        "Precision: fp8_mixed cannot run on A100 80GB SXM: the GPU catalogue lists no FP8 tensor-core rate "
        f"for it (allowed: {A100_RUNS})"
    )
    assert expected in told(app), told(app)
    kept = app.session_state[SCENARIO_KEY]
    assert (kept.gpu, kept.precision) == (A100, "bf16_mixed")  # the previous valid value stays
    assert app.selectbox(key="w.precision").value == "bf16_mixed"


def test_picking_a_v100_under_bf16_switches_the_precision_and_says_so(app) -> None:
    """The GPU picked is kept (a newcomer picking a V100 under the default bf16_mixed was refused until they
    found the precision box first); the precision moves to one the V100 runs, with a notice naming both."""
    app.session_state[OPEN_KEY] = True
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.n_gpus").input("4").run()  # another input the user set: it must survive
    app.sidebar.selectbox(key="w.gpu").set_value(V100).run()
    assert not app.exception
    expected = "GPU: Precision bf16_mixed cannot run on V100 32GB:"
    notice = [t for t in told(app) if t.startswith(expected)]
    assert notice and notice[0].endswith("Precision is now fp16_mixed, which it runs."), told(app)
    now = app.session_state[SCENARIO_KEY]
    assert (now.gpu, now.n_gpus, now.precision) == (V100, 4, "fp16_mixed")
    assert app.selectbox(key="w.precision").value == "fp16_mixed"
    # choosing a precision the V100 lacks is still refused, and the working pair stays
    app.selectbox(key="w.precision").set_value("bf16_mixed").run()
    assert any(t.startswith("Precision: bf16_mixed cannot run on V100 32GB") for t in told(app)), told(app)
    assert app.session_state[SCENARIO_KEY].precision == "fp16_mixed"


def test_a_share_link_with_the_pair_keeps_the_gpu_and_drops_the_precision() -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["gpu"] = A100
    at.query_params["precision"] = "fp8_mixed"
    at.run()
    assert not at.exception
    kept = at.session_state[SCENARIO_KEY]
    assert (kept.gpu, kept.precision) == (A100, "bf16_mixed")
    assert any(
        t.startswith("Ignored link parameter 'precision': fp8_mixed cannot run on A100 80GB SXM")
        for t in told(at)
    ), told(at)
