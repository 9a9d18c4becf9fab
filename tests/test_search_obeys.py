"""A search that obeys: fixed choices are constraints ('any' frees one), the global-batch target
is an input shown with the result, CPU offload is searched when nothing else fits, FSDP-only is one flag, and the
MFU band brackets the plan's end-to-end MFU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import Constraints, scenario_for, search
from planner.decide.sweep_space import FSDP_ZERO_STAGES, obeying_space
from planner.estimate import estimate
from planner.inputs.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
SEVENTY_B = ["--model", "Llama 3.1 70B", "--method", "full"]


def recommend(*argv: str) -> subprocess.CompletedProcess[str]:
    """`python -m planner recommend ...` as a user runs it: a real process, its exit status and both streams."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "planner", "recommend", *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def rows_of(done: subprocess.CompletedProcess[str]) -> list[dict]:
    return json.loads(done.stdout)


def test_done_when_tp1_pp1_zero3_returns_only_such_plans():
    # the complaint: this command came back with TP 8 / PP 2 / ZeRO-1
    done = recommend(*SEVENTY_B, "--tp", "1", "--pp", "1", "--zero", "3", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = rows_of(done)
    assert rows, "a plan exists (the default search finds TP 1 ZeRO-3 plans on 8 large GPUs)"
    assert {(r["tp"], r["pp"], r["zero_stage"]) for r in rows} == {(1, 1, 3)}
    assert "keeps TP 1, PP 1, ZeRO stage 3" in done.stderr  # the reason says what was kept


def test_done_when_nothing_fits_exits_1_with_the_reason():
    # 70B full fine-tuning on at most 2 H100 80GB with optimizer offload only: the parameters alone are
    # 70.55e9 x 2 B / 2 GPUs = 70.6e9 B = 65.7 GiB per GPU and the gradients as much again, over 79.6 GiB.
    done = recommend(
        *SEVENTY_B,
        *("--gpus", "H100 SXM", "--max-gpus", "2", "--tp", "1", "--pp", "1", "--zero", "3"),
        *("--offload-optimizer", "--no-offload-params", "--format", "json"),
    )
    assert done.returncode == 1
    assert rows_of(done) == []
    reason = done.stderr
    assert "Nothing fits in memory" in reason and "GiB short" in reason
    # freeing the parameter offload (ZeRO-Infinity / FSDP CPUOffload) is what lets a plan through
    assert "freeing parameter offload finds H100 SXM" in reason


def test_any_frees_a_dimension():
    common = (*SEVENTY_B, "--gpus", "H200 SXM,GB200", "--max-gpus", "16", "--top", "20", "--format", "json")
    fixed = rows_of(recommend(*common, "--tp", "1"))
    freed = recommend(*common, "--tp", "any")
    unflagged = rows_of(recommend(*common))
    assert {r["tp"] for r in fixed} == {1}
    assert freed.returncode == 0 and rows_of(freed) == unflagged  # 'any' is the same as not giving it
    assert {r["tp"] for r in unflagged} != {1}, "the free search does pick tensor parallelism here"
    assert "keeps" not in freed.stderr


def test_set_any_frees_and_set_value_fixes():
    common = (*SEVENTY_B, "--gpus", "H200 SXM", "--max-gpus", "16", "--top", "20", "--format", "json")
    fixed = rows_of(recommend(*common, "--set", "micro_batch=2"))
    assert fixed and {r["micro_batch"] for r in fixed} == {2}
    unflagged = rows_of(recommend(*common))
    assert {r["micro_batch"] for r in unflagged} != {2}
    assert rows_of(recommend(*common, "--set", "micro_batch=2", "--set", "micro_batch=any")) == unflagged
    # a flag wins over --set, for a value and for 'any' alike
    assert rows_of(recommend(*common, "--set", "micro_batch=2", "--micro-batch", "any")) == unflagged


def test_global_batch_target_is_an_input_shown_with_the_result():
    done = recommend(
        "--model", "Llama 3.1 8B", "--gpus", "H100", "--max-gpus", "16", "--global-batch-seqs", "64"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "Global batch target: 64 sequences per optimizer step (--global-batch-sequences)"
    )
    as_json = rows_of(
        recommend(
            "--model",
            "Llama 3.1 8B",
            "--gpus",
            "H100",
            "--max-gpus",
            "16",
            "--global-batch-sequences",
            "64",
            "--format",
            "json",
        )
    )
    assert as_json and {r["target_batch_sequences"] for r in as_json} == {64}
    # accumulation rounds up: each plan trains at least 64 sequences and less than one more round of replicas
    assert all(64 <= r["global_batch_sequences"] < 64 + r["dp"] * r["micro_batch"] for r in as_json)
    # the default is said where it comes from: micro-batch 1 x accumulation 1 x 8 replicas = 8 sequences
    default = recommend("--model", "Llama 3.1 8B", "--gpus", "H100", "--max-gpus", "16", "--top", "1")
    assert "Global batch target: 8 sequences" in default.stdout
    assert "micro-batch 1 x accumulation 1 x 8 data-parallel replicas" in default.stdout


def test_bad_global_batch_target_names_the_flag():
    done = recommend("--global-batch-sequences", "0")
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "error: --global-batch-sequences: must be >= 1 (allowed: >= 1 sequences; got 0)"
    )


def test_max_gpus_8_finds_the_offload_plan():
    # 70B full fine-tuning (bf16 weights and gradients, fp32 master and Adam moments: 2 + 2 + 4 + 8 = 16 B per
    # parameter) on 8 H200 (140.4 GiB): even fully sharded, 70.55e9 x 16 B / 8 = 141.1e9 B = 131.4 GiB of model
    # states per GPU, plus 10 % allocator slack = 144.5 GiB > 140.4 GiB. Without offload nothing fits.
    base = Scenario(model="Llama 3.1 70B", method="full")
    cats = default_catalogs()
    limits = Constraints(max_gpus=8, gpus=("H200 SXM",))
    no_offload = obeying_space(base, {"offload_optimizer": False, "offload_params": False})
    assert search(base, limits, no_offload, catalogs=cats).n_fit == 0
    done = recommend(*SEVENTY_B, "--gpus", "H200 SXM", "--max-gpus", "8", "--top", "5", "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = rows_of(done)
    assert rows and all(r["offload_optimizer"] and r["n_gpus"] <= 8 for r in rows)
    assert all(r["zero_stage"] >= 1 for r in rows)  # DeepSpeed's offload_optimizer needs ZeRO 1-3
    assert all(r["zero_stage"] == 3 for r in rows if r["offload_params"])  # offload_param needs ZeRO-3
    for row in rows:  # each row is a plan the ordinary estimate reproduces and finds fitting
        one = estimate(scenario_for(row, base, cats), cats)
        assert one.fits_vram and one.peak_gib_per_device == pytest.approx(
            row["peak_gib_per_device"], rel=1e-9
        )
    table = recommend(*SEVENTY_B, "--gpus", "H200 SXM", "--max-gpus", "8", "--top", "1")
    assert "No configuration without CPU offload meets the constraints" in table.stdout


def test_fsdp_only_is_one_flag():
    done = recommend(
        *SEVENTY_B,
        "--gpus",
        "H200 SXM,H100 SXM",
        "--max-gpus",
        "32",
        "--top",
        "30",
        "--fsdp-only",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    rows = rows_of(done)
    assert rows and all(r["tp"] == 1 and r["pp"] == 1 for r in rows)
    assert {r["zero_stage"] for r in rows} <= set(FSDP_ZERO_STAGES) == {0, 2, 3}
    assert {(r["offload_optimizer"], r["offload_params"]) for r in rows} <= {(False, False), (True, True)}


def test_fsdp_only_with_a_fixed_tensor_parallel_degree_is_refused():
    done = recommend("--fsdp-only", "--tp", "2")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --tp: --fsdp-only keeps TP at 1 (allowed: 1, or 'any'; got 2)"


def test_mfu_band_brackets_the_achieved_mfu():
    """MFU = model FLOPs / (wall clock x GPUs x peak): the slow end of the band is the same plan at the preset's
    low efficiency (wall_clock_h_high), the fast end at its high one (wall_clock_h_low). Checkpoint I/O is 0
    without a storage bandwidth, so the wall clocks are the training time alone."""
    base = Scenario(model="Llama 3.1 70B", method="full")
    cats = default_catalogs()
    result = search(base, Constraints(gpus=("H200 SXM", "H100 SXM"), max_gpus=64), catalogs=cats, top_n=5)
    assert result.top.height == 5
    for row in result.top.iter_rows(named=True):
        one = estimate(scenario_for(row, base, cats), cats)
        gpu_flops = row["n_gpus"] * one.peak_tflops * 1e12
        slow = one.model_flops / (one.wall_clock_h_high * 3600 * gpu_flops)
        fast = one.model_flops / (one.wall_clock_h_low * 3600 * gpu_flops)
        achieved = one.model_flops / (one.wall_clock_h * 3600 * gpu_flops)
        assert achieved == pytest.approx(one.mfu, rel=1e-9)
        assert (one.mfu_low, one.mfu_high) == pytest.approx((slow, fast), rel=1e-9)
        assert one.mfu_low <= one.mfu <= one.mfu_high
        assert (row["mfu_low"], row["mfu"], row["mfu_high"]) == pytest.approx(
            (one.mfu_low, one.mfu, one.mfu_high), rel=1e-9
        )


def test_fixed_virtual_stages_keep_every_plan_and_the_frontier_interleaved():
    """Regression (found merging the pipeline and search issues): with --pp-virtual-stages 2 the frontier still
    offered a plain 1F1B plan (H100 ×224, PP 4, v = 1) as the faster alternative, because the grid always added v = 1."""
    common = (*SEVENTY_B, "--gpus", "H100 SXM", "--pp", "4", "--pp-virtual-stages", "2", "--grad-accum", "4")
    for view in ((), ("--frontier",)):
        done = recommend(*common, *view, "--format", "json")
        assert done.returncode == 0, done.stderr
        rows = rows_of(done)
        assert rows and {(r["pp"], r["pp_virtual_stages"]) for r in rows} == {(4, 2)}
