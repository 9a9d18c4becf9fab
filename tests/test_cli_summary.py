"""`planner estimate`'s table: a short grouped summary in rounded units; `--all` keeps every key."""

from __future__ import annotations

import subprocess
import sys

from planner import Scenario, default_catalogs, estimate_resolved, human_duration, resolve
from planner.cli.cli_summary import summary
from planner.decide.bound_by import bound_by

CATS = default_catalogs()


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "estimate", *argv], capture_output=True, text=True
    )


def test_summary_is_grouped_short_and_in_rounded_units():
    done = run("--model", "Llama 3.1 8B", "--n-gpus", "8", "--micro-batch", "8")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    lines = text.splitlines()
    assert len(lines) <= 30  # a screenful, against 90 keys with --all
    assert [line for line in lines if line and not line.startswith(" ")][1:5] == [
        "Time",
        "Memory per GPU (GiB = 2^30 bytes)",
        "Cost",
        "Energy",
    ]
    assert lines[0] == "Llama 3.1 8B on 8 GPUs (H100 SXM), full fine-tuning: 90.0 M training tokens"
    est = estimate_resolved(resolve(Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=8), CATS))
    assert f"  Wall clock   {human_duration(est.wall_clock_h)} (range " in text
    assert "_gib" not in text and "wall_clock_h" not in text  # no internal key names
    assert f" s, {bound_by(est)}; MFU " in text and "bound by matmul-bound" not in text  # no doubled words


def test_all_prints_every_key_with_its_unit():
    text = run("--all").stdout
    assert "wall_clock_h " in text and "peak_gib_per_device " in text and "training_tokens " in text


def test_one_gpu_is_singular_and_a_plan_that_does_not_fit_says_so():
    resolved = resolve(Scenario(model="Llama 3.1 70B", n_gpus=1), CATS)
    text = summary(resolved, estimate_resolved(resolved))
    assert "on 1 GPU (" in text and "1 GPUs" not in text
    assert ": does NOT fit" in text
    assert "  Wall clock   " in text and text.count(", if it fit") == 2  # time and cost, as on the Overview


def test_warnings_close_the_summary():
    text = run("--n-gpus", "16", "--micro-batch", "1", "--examples", "1000").stdout
    warnings = text.split("\nWarnings\n")[1].splitlines()
    assert warnings[0].startswith(
        "  ! Communication is 93% of the step"
    )  # exposed after overlap (47 GB/s NIC)
    assert warnings[1].startswith("  ! More GPUs make this plan slower: 8 GPUs take ")


def test_bound_by_is_one_seam_for_the_estimate_the_sheet_and_the_comparison():
    from planner import compare_gpus, evaluate_rows, result_cells, sheet_result_columns

    plans = [
        Scenario(model="Llama 3.1 8B", micro_batch=8),
        # micro-batch 8: at 1 the 1,024 tokens per GPU leave each layer's eager launches longer than its work
        Scenario(model="Llama 3.1 8B", tp=16, n_gpus=16, gpus_per_node=8, micro_batch=8),
    ]
    verdicts = [bound_by(estimate_resolved(resolve(p, CATS))) for p in plans]
    # the data-parallel sync hides behind the backward pass; TP 16 over two nodes puts its all-reduces on the path
    assert verdicts == ["matmul-bound (GEMMs)", "communication-bound: TP 16 across 2 nodes"]
    sheet = [result_cells(r, sheet_result_columns(plans))["Bound by"] for r in evaluate_rows(plans, CATS)]
    assert sheet == verdicts
    for plan, verdict in zip(plans, verdicts, strict=True):
        rows = compare_gpus(plan, CATS)
        assert rows.filter(rows["is_scenario_gpu"])["bound_by"].to_list() == [verdict]
