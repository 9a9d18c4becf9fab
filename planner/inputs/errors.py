"""Rejected scenario input as a `planner.errors.PlannerError`: the one place a Scenario's pydantic
`ValidationError` is translated, so the CLI, the app, share links and CSV imports all get the same parts
(field, value given, allowed range, closest names) and name the input in their own words.
"""

from __future__ import annotations

from pydantic import ValidationError

from planner.errors import PlannerError, from_validation_error
from planner.inputs.scenario import Scenario


def scenario_error(err: ValidationError) -> PlannerError:
    """The problems of a rejected Scenario: the first, with the others in `more`."""
    return from_validation_error(err, Scenario)
