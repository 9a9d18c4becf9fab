"""Scenario <-> URL query parameters: the share link of every page.

Pure (no streamlit): the app passes `st.query_params.to_dict()` in and writes the result back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from planner.errors import PlannerError
from planner.inputs.bounded_read import MAX_QUERY_STRING_CHARS
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import Scenario

MAX_QUERY_VALUE_CHARS = 20_000  # a pasted shape JSON is ~1 kB; anything far larger is not a share link
# Link parameters that belong to a page rather than the scenario (the Methods page's section), read by that page.
PAGE_PARAMETERS = frozenset({"topic"})


def scenario_to_query(scenario: Scenario) -> dict[str, str]:
    """Only the fields that differ from the defaults, each as a string (query values are strings)."""
    out: dict[str, str] = {}
    for key, value in scenario.model_dump(exclude_defaults=True, mode="json").items():
        out[key] = json.dumps(value, separators=(",", ":")) if isinstance(value, dict) else _plain(value)
    return out


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    return str(value)


def _parse(key: str, raw: str) -> Any:
    if key == "model_shape":
        return json.loads(raw)
    if raw.lower() in {"none", "null"} and Scenario.model_fields[key].default is None:
        return None
    return raw


def scenario_from_query(params: Mapping[str, str | list[str]]) -> tuple[Scenario, list[str]]:
    """Read a URL into a scenario; invalid or unknown parameters are dropped, each with a notice."""
    notices: list[str] = []
    fields: dict[str, Any] = {}
    n_chars = sum(
        len(key) + len(value[-1] if isinstance(value, list) else value) for key, value in params.items()
    )
    if n_chars > MAX_QUERY_STRING_CHARS:  # not made by the share button: read none of it (bounded work)
        notices.append(
            f"Ignored the link: {n_chars:,} characters; a share link has at most {MAX_QUERY_STRING_CHARS:,}."
        )
        return Scenario(), notices
    for key, value in params.items():
        raw = value[-1] if isinstance(value, list) else value
        if key in PAGE_PARAMETERS:
            continue
        if key not in Scenario.model_fields:
            notices.append(f"Ignored unknown link parameter '{key[:40]}'.")
            continue
        if len(raw) > MAX_QUERY_VALUE_CHARS:
            notices.append(f"Ignored link parameter '{key}': value too long.")
            continue
        try:
            fields[key] = _parse(key, raw)
        except ValueError:
            notices.append(f"Ignored link parameter '{key}': not valid JSON.")
    return validate_dropping_bad(fields, notices), notices


def validate_dropping_bad(
    fields: dict[str, Any], notices: list[str], what: str = "link parameter"
) -> Scenario:
    """The scenario of `fields` without the ones it cannot take; one notice per dropped field ("Ignored
    <what> 'key': ...") is appended to `notices`. Share links and the plan library's repair use it."""
    # A field may be invalid alone or only with others (e.g. n_gpus vs tp): drop offenders until it validates.
    for _ in range(len(fields) + 1):
        try:
            return Scenario.model_validate(fields)
        except ValidationError as err:
            for problem in _link_problems(scenario_error(err), fields):
                key = next((field for field in problem.fields if field in fields), None)
                if key is None:  # its parameter was dropped for an earlier problem of the same input
                    continue
                notices.append(problem.describe(f"Ignored {what} '{key}'"))
                fields.pop(key)
    return Scenario()


def _link_problems(error: PlannerError, fields: dict[str, Any]) -> list[PlannerError]:
    """The problems that name a parameter of the link; a rule among defaults alone drops every parameter."""
    found = [problem for problem in (error, *error.more) if set(problem.fields) & set(fields)]
    return found or [PlannerError(key, error.describe("")) for key in fields]


def drop_unknown_names(
    scenario: Scenario, known: Mapping[str, Callable[[str], object]]
) -> tuple[Scenario, list[str]]:
    """Reset name fields the catalogues do not know (GPU, region, model, snapshot) to their defaults.

    `known` maps a field to a lookup that raises `PlannerError` for an unknown name (e.g. `find_gpu` over the
    loaded catalogue); the notice gives the closest names it carries.
    """
    notices: list[str] = []
    changes: dict[str, Any] = {}
    for field, lookup in known.items():
        value = getattr(scenario, field)
        if value in ("", None) or value == Scenario.model_fields[field].default:
            continue
        try:
            lookup(value)
        except PlannerError as err:
            changes[field] = Scenario.model_fields[field].default
            notices.append(err.describe(f"Ignored link parameter '{field}'"))
    if not changes:
        return scenario, notices
    return scenario.updated(**changes), notices
