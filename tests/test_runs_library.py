"""Imported runs stored in the team library and set beside a saved plan's estimate (plan versus actual).

Real SQLite files (the library's default backend) in a temporary folder; a "restart" is a new engine on the
same file, as a new process would open it. The predicted figures are the Estimate's own for the plan, so the
errors are worked out from them here, not copied.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import Scenario, compare_plan, compare_runs, import_runs, save_run
from planner.catalogue.catalog import catalogs_from_environment
from planner.estimate import estimate_resolved
from planner.library.connect import create_library_engine
from planner.library.opening import open_library
from planner.library.store import PlanLibrary
from planner.resolve import resolve
from planner.runs.record import RunLogError
from planner.runs.run_store import plan_runs

DATA = Path(__file__).parent / "data" / "runs"
PLAN = Scenario(gpu="H100 SXM")


def test_runs_survive_a_restart_and_compare_with_the_plan(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'library.sqlite3'}"
    library = open_library(url)
    plan = library.save("llama8b-h100", PLAN, author="ana", tags=())
    (megatron,) = import_runs([DATA / "megatron.log"])
    (tune,) = import_runs([DATA / "torchtune_log.txt"])
    first = save_run(library, megatron, plan_id=plan.id, author="ana")
    save_run(library, tune, plan_id=plan.id, author="ana")
    save_run(library, tune)  # not attached: not the plan's
    restarted = PlanLibrary(create_library_engine(url))
    stored = plan_runs(restarted, plan.id)
    assert [run_id for run_id, _ in stored] == [first, first + 1]
    assert stored[0][1].figures == megatron.figures and stored[0][1].log_format == "megatron"
    assert len(plan_runs(restarted, None)) == 1
    rows = compare_plan(restarted, "llama8b-h100")
    flat = estimate_resolved(resolve(PLAN, catalogs_from_environment())).to_flat()
    by_figure = {(row["run"], row["figure"]): row for row in rows}
    step = by_figure[("megatron.log", "step time (s per optimizer step)")]
    assert step["predicted"] == pytest.approx(flat["step_time_s"])
    assert step["measured"] == pytest.approx(6.1)
    assert step["rel_error"] == pytest.approx(flat["step_time_s"] / 6.1 - 1)
    reserved = by_figure[("torchtune_log.txt", "peak reserved memory (GiB)")]  # reserved beside reserved
    assert reserved["predicted"] == pytest.approx(flat["peak_reserved_gib"])
    assert reserved["measured"] == pytest.approx(20.5)
    assert "GiB" in reserved["explained_by"] and "largest part" in reserved["explained_by"]


def test_attaching_to_an_unknown_plan_or_comparing_without_runs_is_refused(tmp_path: Path) -> None:
    library = open_library(f"sqlite:///{tmp_path / 'library.sqlite3'}")
    library.save("empty", PLAN, author="", tags=())
    (record,) = import_runs([DATA / "megatron.log"])
    with pytest.raises(ValueError, match="no plan has that id"):
        save_run(library, record, plan_id=999)
    with pytest.raises(RunLogError, match="no runs attached"):
        compare_plan(library, "empty")


def test_compare_runs_against_a_scenario_uses_the_reported_statistic() -> None:
    (titan,) = import_runs([DATA / "torchtitan.log"])
    rows = compare_runs(PLAN, [titan])
    figures = [row["figure"] for row in rows]
    # torchtitan reports max reserved only: no allocated row is invented
    assert "peak reserved memory (GiB)" in figures and "peak allocated memory (GiB)" not in figures
    mfu = next(row for row in rows if row["figure"] == "MFU")
    assert mfu["measured"] == pytest.approx(0.40405)


def test_cli_attach_then_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from planner.cli.main import main

    db = f"sqlite:///{tmp_path / 'cli.sqlite3'}"
    assert main(["plans", "save", "--db", db, "--name", "run-plan", "--gpu", "H100 SXM"]) == 0
    code = main(["runs", "import", str(DATA / "deepspeed.log"), "--attach", "run-plan", "--db", db])
    assert code == 0
    capsys.readouterr()
    assert main(["runs", "compare", "run-plan", "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    allocated = next(row for row in rows if row["figure"] == "peak allocated memory (GiB)")
    assert allocated["measured"] == pytest.approx(25.5)
    assert main(["runs", "compare", "no-such-plan", "--db", db]) == 2
    assert "no plan has that name" in capsys.readouterr().err
    assert main(["runs", "compare", "--db", db]) == 2  # neither PLAN nor --files
    capsys.readouterr()
    assert main(["runs", "calibrate", "--db", db]) == 2  # one run attached: three needed
    assert "at least 3 runs" in capsys.readouterr().err


def test_the_explanation_names_the_step_breakdown_parts() -> None:
    (megatron,) = import_runs([DATA / "megatron.log"])
    rows = compare_runs(PLAN, [megatron])
    flat = estimate_resolved(resolve(PLAN, catalogs_from_environment())).to_flat()
    parts = {key: flat[key] for key in ("gemm_time_s", "attention_time_s", "memory_bound_time_s",
                                        "residual_time_s", "exposed_data_parallel_comm_s")}  # fmt: skip
    largest = max(parts, key=lambda key: parts[key]).removesuffix("_s")
    tflops = next(row for row in rows if row["figure"] == "model TFLOP/s per GPU")
    assert f"largest part {largest}" in tflops["explained_by"]
    # 6.1 s measured against a ~0.1 s plan: more than every part together, so the plan is not that run
    step = next(row for row in rows if row["figure"] == "step time (s per optimizer step)")
    assert "exceeds the whole modelled total" in step["explained_by"]
