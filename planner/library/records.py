"""A stored plan as the library hands it out, and the checks on what goes in (names, authors, tags).

A plan's scenario is stored as the JSON it had when saved. Read back, it is validated again by today's
Scenario: a plan an older planner saved that no longer validates comes out with `problem` set (and `scenario`
None) instead of disappearing, and `repaired` gives the closest scenario that does validate.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import RowMapping

from planner.errors import PlannerError
from planner.inputs.errors import scenario_error
from planner.inputs.query import validate_dropping_bad
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_set import name_problem
from planner.library.names import fold_name, shown, utf8_problem
from planner.library.tables import MAX_AUTHOR_CHARS, MAX_TAG_CHARS, MAX_TAGS
from planner.library.versioning import PLANNER_VERSION

MAX_PROBLEMS_LISTED = 3  # a stored plan's problems shown in one line; the repair lists every one
MAX_SCENARIO_JSON_CHARS = 200_000  # a scenario with an imported shape is ~3 kB; far more is not a plan


@dataclass(frozen=True)
class StoredPlan:
    """One plan of the library. `scenario` is None when the stored JSON no longer validates (`problem` says why)."""

    id: int
    name: str
    scenario: Scenario | None
    problem: str | None
    scenario_json: str
    planner_version: str
    author: str
    updated_by: str
    tags: tuple[str, ...]
    model: str
    gpu: str
    created_at: datetime
    updated_at: datetime
    version: int
    deleted_at: datetime | None

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

    def to_record(self) -> dict[str, Any]:
        """A flat JSON-ready record (the CLI's `plans list/show --format json`)."""
        scenario = self.scenario.model_dump(mode="json") if self.scenario else _raw_fields(self.scenario_json)
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "author": self.author,
            "updated_by": self.updated_by,
            "tags": list(self.tags),
            "model": self.model,
            "gpu": self.gpu,
            "planner_version": self.planner_version,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "deleted_at": self.deleted_at.isoformat() if self.deleted_at else None,
            "problem": self.problem,
            "scenario": scenario,
        }


def plan_from_row(row: RowMapping) -> StoredPlan:
    """A row as a plan; text another tool (or an older planner) stored that cannot be shown comes out with
    U+FFFD in its place, so one bad value never breaks the list."""
    scenario, problem = read_scenario(row["scenario_json"])
    return StoredPlan(
        id=int(row["id"]),
        name=shown(row["name"]),
        scenario=scenario,
        problem=shown(problem) if problem else None,
        scenario_json=row["scenario_json"],
        planner_version=shown(row["planner_version"]),
        author=shown(row["author"]),
        updated_by=shown(row["updated_by"]),
        tags=tuple(shown(tag) for tag in _raw_tags(row["tags"])),
        model=shown(row["model"]),
        gpu=shown(row["gpu"]),
        created_at=_utc(row["created_at"]),
        updated_at=_utc(row["updated_at"]),
        version=int(row["version"]),
        deleted_at=_utc(row["deleted_at"]) if row["deleted_at"] is not None else None,
    )


def _utc(moment: datetime) -> datetime:
    """SQLite hands timestamps back without their zone; every timestamp is written in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def read_scenario(stored: str) -> tuple[Scenario | None, str | None]:
    """The stored JSON validated by today's Scenario, or None and its problems in words (the first few)."""
    try:
        return Scenario.model_validate_json(stored), None
    except ValidationError as err:
        found = scenario_error(err)
        problems = [found, *found.more]
        words = "; ".join(problem.describe() for problem in problems[:MAX_PROBLEMS_LISTED])
        extra = len(problems) - MAX_PROBLEMS_LISTED
        return None, words + (f"; and {extra} more" if extra > 0 else "")
    except RecursionError:  # nesting deeper than any scenario has
        return None, "the stored scenario is nested too deeply to read"


def repaired(plan: StoredPlan) -> tuple[Scenario, list[str]]:
    """The closest valid scenario to a plan that no longer validates: the fields today's planner refuses are
    left at their defaults, each with a notice saying which and why. The stored plan is not changed."""
    notices: list[str] = []
    fields = _raw_fields(plan.scenario_json)
    if not isinstance(fields, dict):
        return Scenario(), ["The stored plan is not a JSON object; every input is at its default."]
    unknown = [key for key in fields if key not in Scenario.model_fields]
    for key in unknown:
        notices.append(f"Dropped saved field '{key[:40]}': today's planner has no such input.")
        fields.pop(key)
    return validate_dropping_bad(fields, notices, what="saved field"), notices


def _raw_fields(stored: str) -> Any:
    try:
        return json.loads(stored)
    except (ValueError, RecursionError):
        return {}


def _raw_tags(stored: str) -> list[str]:
    try:
        found = json.loads(stored)
    except ValueError:
        return []
    return [str(tag) for tag in found] if isinstance(found, list) else []


def model_label(scenario: Scenario) -> str:
    """What the library's Model column and search show: the preset, the imported shape's name, or the count."""
    if scenario.model:
        return scenario.model
    if scenario.model_shape is not None:
        return scenario.model_shape.name
    return f"{scenario.params_b:g} B parameters"


def checked_name(name: str) -> str:
    problem = utf8_problem(name) or name_problem(name)
    if not problem and not fold_name(name):
        problem = "a name needs a visible character"
    if problem:
        raise PlannerError("name", problem, value=shown(name))
    return name


def checked_author(author: str) -> str:
    author = author.strip()
    problem = utf8_problem(author)
    if problem:
        raise PlannerError("author", problem, value=shown(author))
    if len(author) > MAX_AUTHOR_CHARS:
        raise PlannerError("author", f"at most {MAX_AUTHOR_CHARS} characters", value=author)
    if any(unicodedata.category(char) == "Cc" for char in author):
        raise PlannerError(
            "author", "cannot contain tabs, line breaks or other control characters", value=author
        )
    return author


def checked_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags stripped, empty ones dropped, duplicates kept once (first spelling), in the order given."""
    found: dict[str, str] = {}
    for raw in tags:
        tag = raw.strip()
        if not tag:
            continue
        problem = utf8_problem(tag)
        if problem:
            raise PlannerError("tags", f"a tag {problem}", value=shown(tag))
        if len(tag) > MAX_TAG_CHARS or "," in tag:
            raise PlannerError(
                "tags", f"a tag has at most {MAX_TAG_CHARS} characters and no comma", value=tag
            )
        if any(unicodedata.category(char) == "Cc" for char in tag):
            raise PlannerError("tags", "a tag cannot contain control characters", value=tag)
        found.setdefault(tag.casefold(), tag)
    if len(found) > MAX_TAGS:
        raise PlannerError("tags", f"at most {MAX_TAGS} tags a plan", value=len(found))
    return tuple(found.values())


def split_tags(text: str) -> tuple[str, ...]:
    """Tags typed as "a, b, c" (the app's box and the CLI's --tags)."""
    return checked_tags(text.split(","))


def scenario_json(scenario: Scenario) -> str:
    """The stored form: every input, defaults included, so a later planner with other defaults still reads
    the plan the user saw (a share link leaves defaults out; a saved plan must not drift)."""
    text = scenario.model_dump_json()
    problem = utf8_problem(text)  # pydantic keeps a name's undecodable byte as a lone surrogate
    if problem:
        raise PlannerError("scenario", "a name in it is not valid UTF-8 text")
    if len(text) > MAX_SCENARIO_JSON_CHARS:
        raise PlannerError(
            "scenario", f"too large to store (at most {MAX_SCENARIO_JSON_CHARS:,} characters of JSON)"
        )
    return text


def content_values(scenario: Scenario) -> dict[str, Any]:
    return {
        "scenario_json": scenario_json(scenario),
        "planner_version": PLANNER_VERSION,
        "model": model_label(scenario)[:120],
        "gpu": scenario.gpu[:120],
    }


def new_values(name: str, scenario: Scenario, author: str, tags: Sequence[str]) -> dict[str, Any]:
    now = datetime.now(UTC)
    return content_values(scenario) | {
        "name": name,
        "name_key": fold_name(name),
        "author": author,
        "updated_by": author,
        "tags": json.dumps(list(tags)),
        "created_at": now,
        "updated_at": now,
        "version": 1,
        "deleted_at": None,
    }
