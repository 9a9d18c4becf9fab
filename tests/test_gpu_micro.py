"""bench/gpu_micro.py and bench/gpu_runs.py on the CPU (their tiny smoke path), the tables they wrote on the lent
H200 (data/microbench/), and scripts/microbench_to_cases.py, which turns the runs into calibration rows.

The CPU path runs the same code as the GPU one at tiny sizes; its timings are not asserted (no timing assertions
in unit tests), its arithmetic is: FLOPs, bytes, parameter counts and tokens/s follow from the shapes.
"""

from __future__ import annotations

import csv
import importlib.util
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
MICRO = ROOT / "data" / "microbench"
TIMEOUT_S = 600  # importing torch and transformers on a busy 2-core machine


def _module(name: str, folder: Path = BENCH):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _run(script: str, out: Path, *extra: str) -> list[dict[str, str]]:
    command = [sys.executable, str(BENCH / script), "--out", str(out), "--tiny", "--budget-s", "300", *extra]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return _rows(out)


# --- the layer shapes the GEMM sweep measures --------------------------------------------------------------


def test_layer_gemms_of_an_8b_layer_at_tp_2():
    shapes = _module("micro_shapes")
    # Llama 3.1 8B's layer (hidden 4096, MLP 14336 = 3.5 x 4096, 8 of 32 heads for keys/values) split over
    # TP 2 at 4096 tokens: QKV out (4096 + 2 x 1024) / 2 = 3072, attention output in 4096 / 2 = 2048,
    # gate+up out 2 x 14336 / 2 = 14336, down in 14336 / 2 = 7168.
    got = {name.split(" ", 4)[4]: (m, n, k) for name, m, n, k in shapes._layer_gemms(4096, 2, 4096)}
    assert got["qkv fwd"] == (4096, 3072, 4096)
    assert got["attn_out fwd"] == (4096, 4096, 2048)
    assert got["mlp_gate_up fwd"] == (4096, 14336, 4096)
    assert got["mlp_down fwd"] == (4096, 4096, 7168)
    # backward: data gradient (tokens x in <- out) and weight gradient (in x out, summed over the tokens)
    assert got["mlp_down dgrad"] == (4096, 7168, 4096)
    assert got["mlp_down wgrad"] == (7168, 4096, 4096)


def test_the_sweep_holds_each_shape_once_and_fp8_shapes_a_subset():
    shapes = _module("micro_shapes")
    bf16, fp8 = shapes.gemm_shapes(False, "bf16"), shapes.gemm_shapes(False, "fp8_e4m3")
    dims = [(m, n, k) for _, m, n, k in bf16]
    assert len(dims) == len(set(dims))
    assert {(m, n, k) for _, m, n, k in fp8} <= set(dims)
    assert ("square", 16384, 16384, 16384) in bf16


def test_attention_flops_follow_the_flashattention_counting():
    micro = _module("gpu_micro")
    # 1 x 32 heads x 4096^2 x 128: forward 4 * 32 * 4096^2 * 128 = 274.9 GFLOP, half under a causal mask,
    # forward + backward 3.5 times the forward
    assert micro.attention_flops(1, 32, 4096, 128, False, "fwd") == 274_877_906_944
    assert micro.attention_flops(1, 32, 4096, 128, True, "fwd") == 137_438_953_472
    assert micro.attention_flops(1, 32, 4096, 128, True, "fwd_bwd") == 481_036_337_152
    assert micro.optimizer_bytes_per_param("fp32") == 28
    assert micro.optimizer_bytes_per_param("bf16") == 14


# --- the CPU smoke path -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def micro_rows(tmp_path_factory) -> list[dict[str, str]]:
    pytest.importorskip("torch", reason="torch (CPU build) is needed: pip install torch==2.13.0")
    return _run("gpu_micro.py", tmp_path_factory.mktemp("micro") / "cpu.csv")


def test_micro_smoke_covers_every_section_with_consistent_arithmetic(micro_rows):
    assert all(row["run_kind"] == "cpu_tiny_smoke" and row["date"] == "2026-12-04" for row in micro_rows)
    assert not [row for row in micro_rows if row["timing"].startswith("failed")]
    ops = {row["op"] for row in micro_rows}
    assert {"gemm", "attention_fwd", "attention_fwd_bwd", "copy", "rms_norm_eager_llama", "adamw_step"} <= ops
    assert {"launch_add_tiny", "cross_entropy_vocab128k_fp32_upcast"} <= ops
    for row in micro_rows:
        if row["op"] == "gemm":
            m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
            assert int(row["flops"]) == 2 * m * n * k
            seconds = float(row["median_time_us"]) / 1e6
            assert float(row["achieved_tflop_per_s"]) == pytest.approx(
                2 * m * n * k / seconds / 1e12, rel=1e-4
            )
        if row["op"] == "copy":  # read once, written once
            assert int(row["bytes_moved"]) == 2 * int(row["size_bytes"]) == 2 * 2**20


@pytest.fixture(scope="module")
def run_rows(tmp_path_factory) -> list[dict[str, str]]:
    pytest.importorskip("torch", reason="torch (CPU build) is needed: pip install torch==2.13.0")
    pytest.importorskip("transformers", reason="transformers is needed: pip install transformers")
    pytest.importorskip("peft", reason="peft is needed: pip install peft")
    return _run("gpu_runs.py", tmp_path_factory.mktemp("runs") / "cpu_runs.csv")


def test_runs_smoke_counts_parameters_and_tokens(run_rows):
    full, lora = run_rows
    assert full["status"] == lora["status"] == "ok"
    # 2 layers, hidden 64, 4 query and 2 key/value heads of 16, MLP 160, vocabulary 256, untied:
    # per layer q 64x64 + k, v 64x32 each + o 64x64 = 12288, MLP 3 x 64 x 160 = 30720, two norms 128;
    # embedding and head 2 x 256 x 64 = 32768, final norm 64: 32768 + 2 x 43136 + 64 = 119104
    assert int(full["n_params"]) == int(full["trainable_params"]) == 119_104
    # LoRA r=16 on seven projections: 16 x (in + out) each: q, o 2048; k, v 1536; gate, up, down 3584
    assert int(lora["trainable_params"]) == 2 * (2 * 2048 + 2 * 1536 + 3 * 3584) == 35_840
    assert int(lora["n_params"]) == 119_104 + 35_840
    for row in run_rows:
        tokens = int(row["micro_batch"]) * int(row["seq_len"])
        assert float(row["tokens_per_s"]) == pytest.approx(tokens / float(row["median_step_s"]), rel=1e-4)
    assert lora["recompute"].startswith("full") and full["recompute"] == "none"


def test_phases_smoke_splits_the_step_and_counts_host_operations(tmp_path):
    pytest.importorskip("torch", reason="torch (CPU build) is needed: pip install torch==2.13.0")
    pytest.importorskip("transformers", reason="transformers is needed: pip install transformers")
    (row,) = _run("gpu_run_phases.py", tmp_path / "phases.csv", "--limit", "1")
    assert row["status"] == "ok" and row["run_kind"] == "cpu_tiny_smoke"
    phases = sum(float(row[k]) for k in ("forward_s", "backward_s", "optimizer_s"))
    # the step is the median of the steps' phase sums, each phase the median of its own; over the CPU run's two
    # timed steps a median is the mean, so the two agree exactly (the GPU run's three need not)
    assert row["n_timed_steps"] == "2"
    assert float(row["step_s"]) == pytest.approx(phases, rel=1e-4)
    # two layers of attention, MLP and norms, the loss and the AdamW step: hundreds of top-level operations
    assert 200 < int(row["n_host_ops_per_step"]) < 5000


def test_gpu_busy_time_counts_overlaps_once():
    phases = _module("gpu_run_phases")
    # a kernel 0-10 under an annotation span 2-5, a kernel 10-12, two overlapping 20-25 and 24-30: 12 + 10
    assert phases.union_s([(0, 10), (2, 5), (10, 12), (20, 25), (24, 30)]) == 22
    assert phases.union_s([]) == 0


# --- the committed H200 tables -----------------------------------------------------------------------------


def test_h200_tables_come_from_the_gpu_and_hold_their_headline_figures():
    rows = _rows(MICRO / "h200.csv")
    assert {row["gpu_name"] for row in rows} == {"NVIDIA H200"}
    assert {row["run_kind"] for row in rows} == {"gpu_full"}
    assert not [row for row in rows if row["timing"].startswith("failed")]
    best = {}
    for row in rows:
        if row["op"] == "gemm":
            key = row["dtype"]
            best[key] = max(best.get(key, 0.0), float(row["achieved_tflop_per_s"]))
    # Hopper's dense rates (H100/H200 SXM datasheet): 989 TFLOP/s bf16, 1979 fp8; cuBLAS reaches 70-85 %
    assert 0.7 * 989 < best["bf16"] < 989
    assert 0.7 * 1979 < best["fp8_e4m3"] < 1979
    copy_4gib = next(r for r in rows if r["op"] == "copy" and r["size_bytes"] == str(4 * 2**30))
    assert 3500 < float(copy_4gib["achieved_gb_per_s"]) < 4800  # the datasheet's 4.8 TB/s is the ceiling


def test_h200_step_phases_and_gpu_busy_time():
    rows = _rows(MICRO / "h200_run_phases.csv")
    assert rows and all(row["status"] == "ok" and row["gpu_name"] == "NVIDIA H200" for row in rows)
    for row in rows:
        # the GPU cannot be busy longer than the profiled step; the union of activities keeps it below 1
        assert 0 < float(row["gpu_busy_frac"]) <= 1.0
        assert float(row["gpu_busy_s"]) == pytest.approx(
            float(row["gpu_busy_frac"]) * float(row["step_s"]), rel=1e-4
        )
    small = next(r for r in rows if r["model"].startswith("Llama-style 0.13B") and r["micro_batch"] == "1")
    assert float(small["gpu_busy_frac"]) < 0.5  # host-bound: the GPU idles most of the step


def test_the_two_device_calls_agree_on_the_large_gemms():
    first, second = (_rows(MICRO / name) for name in ("h200.csv", "h200_rerun.csv"))

    def squares(rows):
        return {
            (r["dtype"], int(r["m"])): float(r["achieved_tflop_per_s"])
            for r in rows
            if r["variant"] == "square"
        }

    a, b = squares(first), squares(second)
    # squares of 4096 and up, bf16 and fp8: the two calls (minutes apart, fresh machines) within 5 %
    ratios = [a[key] / b[key] for key in a if key in b and key[1] >= 4096]
    assert len(ratios) == 10
    assert statistics.median(ratios) == pytest.approx(1.0, abs=0.05)


def test_calibration_rows_of_the_runs():
    script = _module("microbench_to_cases", ROOT / "scripts")
    with (ROOT / "data" / "calibration.csv").open(newline="") as handle:
        reader = csv.DictReader(handle)
        header, shipped = list(reader.fieldnames or []), [r for r in reader if r["source"] == script.SOURCE]
    rows = script.case_rows(header)
    assert shipped == rows  # the calibration file holds exactly what the script makes of the runs tables
    runs, _ = script.measured_runs()
    assert len(rows) == 4 * len(runs) == 196
    first = {row["measured_unit"]: row for row in rows if row["case_id"].startswith("H200R-01-")}
    run = runs[0]
    assert float(first["tokens_per_s_per_gpu"]["measured_value"]) == pytest.approx(
        float(run["tokens_per_s"]), rel=1e-5
    )
    assert float(first["gib_peak_reserved_per_gpu"]["measured_value"]) == pytest.approx(
        float(run["peak_reserved_gib"]), abs=5e-4
    )
    # Llama 3.2 1B: 1,235,814,400 parameters (its config.json; data/models.csv n_params_published)
    assert first["gib_peak_allocated_per_gpu"]["params_b"] == "1.235814"
