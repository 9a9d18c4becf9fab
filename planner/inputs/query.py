"""Scenario <-> URL query parameters: the share link of every page.

Pure (no streamlit): the app passes `st.query_params.to_dict()` in and writes the result back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from planner.errors import PlannerError, shortened
from planner.inputs.bounded_read import MAX_QUERY_STRING_CHARS
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import Scenario
from planner.model.hf_json import parse_json_text

MAX_QUERY_VALUE_CHARS = 20_000  # a pasted shape JSON is ~1 kB; anything far larger is not a share link
# Link parameters that belong to a page rather than the scenario (the Methods page's section), read by that page.
PAGE_PARAMETERS = frozenset({"topic"})
# A link with hundreds of bad parameters gets this many notices, then one that counts (and names) the rest:
# five fit on a screen above the page, and a link rarely carries more than a few mistakes.
MAX_NOTICES = 5
MAX_NAMES_IN_SUMMARY = 10  # names listed in the closing "and N more" notice


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
        return parse_json_text(raw)
    if raw.lower() in {"none", "null"} and Scenario.model_fields[key].default is None:
        return None
    return raw


def scenario_from_query(params: Mapping[str, str | list[str]]) -> tuple[Scenario, list[str]]:
    """Read a URL into a scenario; invalid or unknown parameters are dropped, each with a notice."""
    notices: list[str] = []
    dropped: list[str] = []  # the parameters each notice is about, for the summary of those not shown
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
            notices.append(f"Ignored unknown link parameter '{shortened(key)}'.")
        elif len(raw) > MAX_QUERY_VALUE_CHARS:
            notices.append(
                f"Ignored link parameter '{key}': value of {len(raw):,} characters is too long "
                f"(at most {MAX_QUERY_VALUE_CHARS:,})."
            )
        else:
            try:
                fields[key] = _parse(key, raw)
                continue
            except ValueError as err:
                notices.append(
                    f"Ignored link parameter '{key}': the JSON text {err} (got {shortened(raw)!r})."
                )
        dropped.append(key)
    scenario = validate_dropping_bad(fields, notices, dropped=dropped)
    return scenario, capped(notices, dropped)


def capped(notices: list[str], about: list[str], what: str = "link parameters") -> list[str]:
    """The first `MAX_NOTICES` notices, then one that counts the rest and names some (`about[i]` is the
    input notice i is about)."""
    if len(notices) <= MAX_NOTICES:
        return notices
    rest = about[MAX_NOTICES:]
    names = ", ".join(f"'{shortened(name)}'" for name in rest[:MAX_NAMES_IN_SUMMARY])
    more = ", …" if len(rest) > MAX_NAMES_IN_SUMMARY else ""
    return [*notices[:MAX_NOTICES], f"…and {len(notices) - MAX_NOTICES} more ignored {what}: {names}{more}."]


def validate_dropping_bad(
    fields: dict[str, Any],
    notices: list[str],
    what: str = "link parameter",
    dropped: list[str] | None = None,
) -> Scenario:
    """The scenario of `fields` without the ones it cannot take; one notice per dropped field ("Ignored
    <what> 'key': ...") is appended to `notices` (and the key to `dropped`). Share links and the plan
    library's repair use it."""
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
                if dropped is not None:
                    dropped.append(key)
        except (RecursionError, OverflowError, TypeError) as err:  # never expected: drop all, say why
            notices.append(f"Ignored every {what}: they could not be read ({shortened(str(err))}).")
            if dropped is not None:
                dropped.append(f"every {what}")  # one entry per notice, as `capped` reads them
            fields.clear()
    return Scenario()


def _link_problems(error: PlannerError, fields: dict[str, Any]) -> list[PlannerError]:
    """The problems that name a parameter of the link. A rule that names none of them (it holds among the
    defaults the link did not set) is blamed on each parameter that breaks it alone, in that one's own words."""
    found = [problem for problem in (error, *error.more) if set(problem.fields) & set(fields)]
    if found:
        return found
    alone = [_problem_alone(key, value) for key, value in fields.items()]
    return [problem for problem in alone if problem is not None] or [
        PlannerError(key, error.describe("")) for key in fields
    ]


def _problem_alone(key: str, value: Any) -> PlannerError | None:
    """The problem of one parameter on top of the defaults, or None when it is fine alone."""
    try:
        Scenario.model_validate({key: value})
    except ValidationError as err:
        first = scenario_error(err)
        return PlannerError(key, first.describe(""), related=first.related)
    return None


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
