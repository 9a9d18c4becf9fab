"""Scenario <-> URL query parameters: the share link of every page.

Pure (no streamlit): the app passes `st.query_params.to_dict()` in and writes the result back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

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
    return _validate_dropping_bad(fields, notices), notices


def _validate_dropping_bad(fields: dict[str, Any], notices: list[str]) -> Scenario:
    # A field may be invalid alone or only with others (e.g. n_gpus vs tp): drop offenders until it validates.
    for _ in range(len(fields) + 1):
        try:
            return Scenario.model_validate(fields)
        except ValidationError as err:
            bad = {str(e["loc"][0]) for e in err.errors() if e["loc"]}
            message = err.errors()[0]["msg"]
            if not bad:  # a cross-field rule: its message starts with the field it names
                bad = {message.split(":")[0].removeprefix("Value error, ")} & set(fields) or set(fields)
            for key in sorted(bad):
                notices.append(f"Ignored link parameter '{key}': {message}")
                fields.pop(key, None)
    return Scenario()


def drop_unknown_names(
    scenario: Scenario, known: Mapping[str, Callable[[str], object]]
) -> tuple[Scenario, list[str]]:
    """Reset name fields the catalogues do not know (GPU, region, model, snapshot) to their defaults.

    `known` maps a field to a lookup that raises ValueError for an unknown name (e.g. `find_gpu` over the
    loaded catalogue); the error's text, which lists the closest names, becomes the notice.
    """
    notices: list[str] = []
    changes: dict[str, Any] = {}
    for field, lookup in known.items():
        value = getattr(scenario, field)
        if value in ("", None) or value == Scenario.model_fields[field].default:
            continue
        try:
            lookup(value)
        except ValueError as err:
            changes[field] = Scenario.model_fields[field].default
            notices.append(f"Ignored link parameter '{field}': {str(err).splitlines()[0]}")
    if not changes:
        return scenario, notices
    return scenario.updated(**changes), notices
