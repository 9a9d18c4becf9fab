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
from planner.library.records import repaired
from planner.library.store import PlanLibrary
from planner.resolve import resolve
from planner.runs.column_map import parse_column_map
from planner.runs.importer import import_runs
from planner.runs.record import RunLogError, RunRecord
from planner.runs.run_store import plan_runs, save_run
from planner.runs.versus import plan_versus_actual

__all__ = ["RunLogError", "RunRecord", "compare_plan", "compare_runs", "import_runs", "parse_column_map",
           "plan_runs", "save_run"]  # fmt: skip


def compare_runs(
    scenario: Scenario, records: Sequence[RunRecord], cats: Catalogs | None = None
) -> list[dict[str, Any]]:
    """Predicted versus measured, one row per (run, figure) the runs measured."""
    flat = estimate_resolved(resolve(scenario, cats or catalogs_from_environment())).to_flat()
    tokens_per_sample = float(scenario.seq_len or scenario.tokens_per_example)
    return [row for record in records for row in plan_versus_actual(flat, record, tokens_per_sample)]


def compare_plan(library: PlanLibrary, ref: str, cats: Catalogs | None = None) -> list[dict[str, Any]]:
    """A saved plan (by name or id) against the runs attached to it; refused when none is attached."""
    plan = library.find(ref)
    attached = plan_runs(library, plan.id)
    if not attached:
        raise RunLogError(f"plan {plan.name!r} has no runs attached (planner runs import FILE --attach PLAN)")
    scenario = plan.scenario if plan.scenario is not None else repaired(plan)[0]
    return compare_runs(scenario, [record for _id, record in attached], cats)
