"""The runs feature's public functions (re-exported by planner/__init__.py): import, store, compare.

`compare_runs` evaluates the scenario once through the same resolve/estimate path as `planner estimate` and
sets every run's measured figures beside it (planner.runs.versus); `compare_plan` does it for a saved plan and
the runs attached to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.catalogue.catalog import Catalogs, catalogs_from_environment
from planner.estimate import estimate_resolved
from planner.inputs.scenario import Scenario
from planner.library.records import StoredPlan, repaired
from planner.library.store import PlanLibrary
from planner.resolve import resolve
from planner.runs.calibration import Calibration, calibrated, fit, run_ratio
from planner.runs.column_map import parse_column_map
from planner.runs.importer import import_runs
from planner.runs.record import RunLogError, RunRecord
from planner.runs.run_store import attached_runs, latest_calibration, plan_runs, save_calibration, save_run
from planner.runs.versus import plan_versus_actual

__all__ = ["Calibration", "RunLogError", "RunRecord", "compare_plan", "compare_runs", "fit_team_calibration",
           "import_runs", "parse_column_map", "plan_runs", "save_run"]  # fmt: skip


def _flat(scenario: Scenario, cats: Catalogs | None) -> dict[str, Any]:
    return estimate_resolved(resolve(scenario, cats or catalogs_from_environment())).to_flat()


def compare_runs(
    scenario: Scenario,
    records: Sequence[RunRecord],
    cats: Catalogs | None = None,
    calibration: Calibration | None = None,
) -> list[dict[str, Any]]:
    """Predicted versus measured, one row per (run, figure) the runs measured; with a calibration, the
    predictions are the calibrated ones ("calibrated to your runs")."""
    flat = _flat(scenario, cats)
    if calibration is not None:
        flat = calibrated(flat, calibration)
    tokens_per_sample = float(scenario.seq_len or scenario.tokens_per_example)
    return [row for record in records for row in plan_versus_actual(flat, record, tokens_per_sample)]


def compare_plan(
    library: PlanLibrary, ref: str | int, cats: Catalogs | None = None, *, use_calibration: bool = False
) -> list[dict[str, Any]]:
    """A saved plan (by name, or by its id as an int) against the runs attached to it; refused when none is attached. With
    `use_calibration`, the newest team calibration of the plan's GPU and regime is applied (refused if none)."""
    plan = library.get(ref) if isinstance(ref, int) else library.find(ref)
    attached = plan_runs(library, plan.id)
    if not attached:
        raise RunLogError(f"plan {plan.name!r} has no runs attached (planner runs import FILE --attach PLAN)")
    scenario = _scenario(plan)
    calibration = None
    if use_calibration:
        calibration = latest_calibration(library, scenario.gpu, scenario.method)
        if calibration is None:
            raise RunLogError(
                f"no team calibration for {scenario.gpu} {scenario.method} yet (runs calibrate)"
            )
    return compare_runs(scenario, [record for _id, record in attached], cats, calibration)


def _scenario(plan: StoredPlan) -> Scenario:
    return plan.scenario if plan.scenario is not None else repaired(plan)[0]


def fit_team_calibration(
    library: PlanLibrary, author: str = "", cats: Catalogs | None = None
) -> list[Calibration]:
    """Fit and store the scale factors from every run attached to a live plan, per GPU and regime."""
    cats = cats or catalogs_from_environment()
    ratios = []
    for run_id, plan_id, record in attached_runs(library):
        plan = library.get(plan_id)
        if plan.deleted:
            continue
        scenario = _scenario(plan)
        ratios.append(run_ratio(run_id, scenario.gpu, scenario.method, _flat(scenario, cats), record.figures))
    fitted = fit(ratios)
    for calibration in fitted:
        save_calibration(library, calibration, author)
    return fitted
