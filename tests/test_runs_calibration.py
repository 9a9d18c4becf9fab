"""Team calibration from runs attached to saved plans: per GPU and regime, checked leave-one-run-out.

The example set is four torchtune metric logs of one plan (full fine-tune on H100 SXM), written in torchtune's
DiskLogger format (see tests/data/runs/torchtune_log.txt); their steady tokens/s and peak allocated memory
are the figures a team would have. The assertions are the issue's: the leave-one-run-out error is reported
and never worse than the uncalibrated model, and too few runs are refused with the count.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from planner import Scenario, compare_plan, fit_team_calibration, import_runs, save_run
from planner.library.opening import open_library
from planner.library.store import PlanLibrary
from planner.runs.calibration import MIN_RUNS, RunRatio, fit
from planner.runs.record import RunLogError
from planner.runs.run_store import latest_calibration

PLAN = Scenario(gpu="H100 SXM")
# (steady tokens/s per GPU, peak allocated GiB) of each example run: the warm-up window first, then three
EXAMPLE_RUNS = ((5100.0, 18.5), (5300.0, 18.9), (4900.0, 18.2), (5200.0, 18.7))


def _log(folder: Path, number: int, tokens_per_s: float, allocated_gib: float) -> Path:
    path = folder / f"run{number}.txt"
    lines = [
        f"Step {step} | loss:1.5 tokens_per_second_per_gpu:{tokens_per_s if step > 1 else 900.0} "
        f"peak_memory_alloc:{allocated_gib if step == 3 else allocated_gib - 1:.2f} \n"
        for step in (1, 2, 3)
    ]
    path.write_text("".join(lines))
    return path


def _library_with_runs(tmp_path: Path, runs: tuple[tuple[float, float], ...]) -> PlanLibrary:
    library = open_library(f"sqlite:///{tmp_path / 'team.sqlite3'}")
    plan = library.save("team-plan", PLAN, author="ana", tags=())
    for number, (tokens, memory) in enumerate(runs):
        (record,) = import_runs([_log(tmp_path, number, tokens, memory)])
        save_run(library, record, plan_id=plan.id)
    return library


def test_calibration_never_worse_under_leave_one_run_out(tmp_path: Path) -> None:
    library = _library_with_runs(tmp_path, EXAMPLE_RUNS)
    before = {row["figure"]: row for row in compare_plan(library, "team-plan")}
    (calibration,) = fit_team_calibration(library, author="ana")
    assert (calibration.gpu, calibration.regime, len(calibration.run_ids)) == ("H100 SXM", "full", 4)
    assert calibration.loo["time_error_after"] <= calibration.loo["time_error_before"]
    assert calibration.loo["memory_error_after"] <= calibration.loo["memory_error_before"]
    # the time scale is the geometric mean of predicted / measured tokens/s over the four runs
    predicted = before["throughput (tokens/s per GPU)"]["predicted"]
    expected = math.exp(sum(math.log(predicted / tokens) for tokens, _ in EXAMPLE_RUNS) / 4)
    assert calibration.time_scale == pytest.approx(expected, rel=1e-9)
    stored = latest_calibration(library, "H100 SXM", "full")  # kept in the library with its runs
    assert stored is not None and stored.run_ids == calibration.run_ids
    after = {row["figure"]: row for row in compare_plan(library, "team-plan", use_calibration=True)}
    tokens_after = after["throughput (tokens/s per GPU)"]["predicted"]
    assert tokens_after == pytest.approx(predicted / calibration.time_scale)
    assert abs(after["peak allocated memory (GiB)"]["rel_error"]) < abs(
        before["peak allocated memory (GiB)"]["rel_error"]
    )


def test_too_few_runs_are_refused_with_the_count(tmp_path: Path) -> None:
    library = _library_with_runs(tmp_path, EXAMPLE_RUNS[:2])
    with pytest.raises(RunLogError, match=f"at least {MIN_RUNS} runs.*H100 SXM full: 2"):
        fit_team_calibration(library)
    with pytest.raises(RunLogError, match="no team calibration"):
        compare_plan(library, "team-plan", use_calibration=True)


def test_a_factor_that_does_not_help_is_not_applied() -> None:
    # ratios scattered around 1 (0.5, 1, 2): leaving one out predicts it worse than the model does
    ratios = [
        RunRatio(i, "H100 SXM", "lora", value, None) for i, value in enumerate((0.5, 1.0, 2.0), start=1)
    ]
    (calibration,) = fit(ratios)
    assert calibration.time_scale == 1.0 and calibration.memory_scale == 1.0
    assert calibration.loo["time_error_after"] == calibration.loo["time_error_before"]
    assert any("no better" in note for note in calibration.notes)
    assert any("memory: 0 runs" in note for note in calibration.notes)
