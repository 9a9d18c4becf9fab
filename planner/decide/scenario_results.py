"""Saved scenarios with their results: the headline figures a saved-scenario CSV carries, and the check an
import runs on every row (it must resolve against the catalogues).

The CSV format itself lives in `planner.inputs.scenario_io`, which never runs the pipeline; this module is the
composition of the two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.catalogue.catalog import Catalogs
from planner.estimate import estimate
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import (
    RESULT_COLUMNS,
    RESULT_SOURCE,
    ScenarioImport,
    read_scenarios_csv,
    scenarios_to_csv,
)
from planner.resolve import resolve


def headline_results(scenario: Scenario, catalogs: Catalogs) -> dict[str, Any]:
    """The result columns for one scenario; an estimate that fails leaves them empty and says why."""
    try:
        flat = estimate(scenario, catalogs).to_flat()
    except ValueError as err:
        return {column: None for column in RESULT_COLUMNS} | {"estimate_problem": str(err)}
    out = {column: flat.get(RESULT_SOURCE.get(column, column)) for column in RESULT_COLUMNS}
    out["estimate_problem"] = ""
    return out


def saved_scenarios_csv(
    scenarios: Mapping[str, Scenario],
    catalogs: Catalogs,
    results: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The CSV of `scenarios` with headline results: those in `results` (by name), the others computed."""
    given = results or {}
    found = {name: given.get(name) or headline_results(item, catalogs) for name, item in scenarios.items()}
    return scenarios_to_csv(scenarios, found)


def read_saved_scenarios(data: bytes | str, catalogs: Catalogs) -> ScenarioImport:
    """Read a scenarios CSV; a row naming a GPU, model, region or snapshot the catalogues lack is a problem."""
    return read_scenarios_csv(data, check=lambda scenario: resolve(scenario, catalogs))
