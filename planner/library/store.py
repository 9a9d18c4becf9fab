"""The plan library's operations: list and search, save (refusing stale saves), delete softly and undo,
duplicate, import many at once. Every change is one transaction; the database settles races between replicas.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from planner.errors import PlannerError
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_set import copy_name
from planner.library.bulk import ImportReport, import_named
from planner.library.connect import READING, shown_url, unavailable
from planner.library.names import FoldedNames, fold_name, plan_id_in, utf8_problem
from planner.library.records import (
    StoredPlan,
    checked_author,
    checked_name,
    checked_tags,
    content_values,
    new_values,
    plan_from_row,
)
from planner.library.refusals import NameTaken, PlanNotFound, StalePlanError
from planner.library.tables import MAX_PLAN_ID, plans

CONFLICT_TAG = "conflict"  # on the copy a refused stale save is kept as
COPY_NAME_ATTEMPTS = 50  # each failed attempt means another replica took a copy name in that instant
MAX_LISTED = 5_000  # one search's answer; the library may hold more, a search narrows them


def _now() -> datetime:
    return datetime.now(UTC)


class PlanLibrary:
    """The plans of one database. Build it with `planner.library.open_library` (which migrates first)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def backend(self) -> str:
        """ "sqlite" or "postgresql"."""
        return self.engine.dialect.name

    @property
    def location(self) -> str:
        return shown_url(self.engine.url)

    @contextmanager
    def _transaction(self, *, reading: bool = False) -> Iterator[Connection]:
        """One transaction; a `reading` one takes no write lock (SQLite: a deferred BEGIN, see connect)."""
        try:
            with self.engine.connect() as connection:
                connection.execution_options(**{READING: reading})
                with connection.begin():
                    yield connection
        except IntegrityError:
            raise
        except SQLAlchemyError as err:
            raise unavailable(self.engine.url, err) from err

    # ------------------------------------------------------------------------------------------ reading

    def plans(self, search: str = "", *, deleted: bool = False, limit: int = MAX_LISTED) -> list[StoredPlan]:
        """Live plans (or only deleted ones), newest change first. Every word of `search` must appear in the
        name, a tag, the model, the GPU or the author (case-insensitive)."""
        problem = utf8_problem(search)
        if problem:
            raise PlannerError("search", problem)
        query = select(plans).where(
            plans.c.deleted_at.is_not(None) if deleted else plans.c.deleted_at.is_(None)
        )
        for word in search.split()[:20]:
            pattern = f"%{_escape_like(word)}%"
            columns = (plans.c.name, plans.c.tags, plans.c.model, plans.c.gpu, plans.c.author)
            query = query.where(or_(*(column.ilike(pattern, escape="\\") for column in columns)))
        query = query.order_by(plans.c.updated_at.desc(), plans.c.id.desc()).limit(limit)
        with self._transaction(reading=True) as connection:
            return [plan_from_row(row) for row in connection.execute(query).mappings()]

    def count(self) -> int:
        with self._transaction(reading=True) as connection:
            found = connection.execute(select(func.count()).where(plans.c.deleted_at.is_(None))).scalar_one()
        return int(found)

    def get(self, plan_id: int) -> StoredPlan:
        found = None
        if 1 <= plan_id <= MAX_PLAN_ID:  # a larger one cannot be stored, and SQLite's driver cannot even ask
            with self._transaction(reading=True) as connection:
                found = _by_id(connection, plan_id)
        if found is None:
            raise PlanNotFound("plan", "no plan has that id", value=plan_id)
        return found

    def find(self, ref: str, *, deleted: bool = False) -> StoredPlan:
        """A plan by name (a live one; or the latest deleted one with `deleted`), then by a name that looks the
        same (its folded key), else by its numeric id."""
        ref = ref.strip()
        problem = utf8_problem(ref)
        if problem:
            raise PlanNotFound("plan", problem)
        state = plans.c.deleted_at.is_not(None) if deleted else plans.c.deleted_at.is_(None)
        newest = plans.c.deleted_at.desc()
        with self._transaction(reading=True) as connection:
            row = connection.execute(select(plans).where(plans.c.name == ref, state).order_by(newest)).first()
            if row is None:
                key = plans.c.name_key == fold_name(ref)
                row = connection.execute(select(plans).where(key, state).order_by(newest)).first()
            if row is None and plan_id_in(ref) is not None:
                row = connection.execute(select(plans).where(plans.c.id == plan_id_in(ref), state)).first()
        if row is None:
            names = [plan.name for plan in self.plans(deleted=deleted, limit=200)]
            from difflib import get_close_matches

            raise PlanNotFound(
                "plan",
                f"no {'deleted ' if deleted else ''}plan has that name or id"
                + (
                    f" (ids run from 1 to {MAX_PLAN_ID})" if ref.isdigit() and plan_id_in(ref) is None else ""
                ),
                value=ref,
                closest=get_close_matches(ref, names, n=3),
            )
        return plan_from_row(row._mapping)

    def live_names(self) -> set[str]:
        """The live plans' names, as a set in which a lookalike of a name counts as that name."""
        with self._transaction(reading=True) as connection:
            found = connection.execute(select(plans.c.name).where(plans.c.deleted_at.is_(None))).scalars()
            return FoldedNames(found)

    # ------------------------------------------------------------------------------------------ changing

    def create(
        self, name: str, scenario: Scenario, *, author: str = "", tags: Sequence[str] = ()
    ) -> StoredPlan:
        """A new plan; NameTaken when a live plan has that name."""
        values = new_values(checked_name(name.strip()), scenario, checked_author(author), checked_tags(tags))
        try:
            with self._transaction() as connection:
                inserted = connection.execute(insert(plans).values(**values).returning(plans.c.id))
                found = _by_id(connection, int(inserted.scalar_one()))
        except IntegrityError as err:
            problem = f"another plan already has this name{self._twin(values['name'])}"
            raise NameTaken("name", problem, value=values["name"]) from err
        assert found is not None  # just inserted, in this transaction
        return found

    def _twin(self, name: str) -> str:
        """ " ('x' looks the same)" when the live plan holding `name` is spelled differently, else ""."""
        try:
            holder = self.find(name).name
        except PlanNotFound:
            return ""
        return "" if holder == name else f" ({holder!r} looks the same)"

    def update(
        self,
        plan_id: int,
        scenario: Scenario,
        *,
        expected_version: int,
        author: str = "",
        name: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> StoredPlan:
        """Save over plan `plan_id` if it is still at `expected_version` (the one the caller loaded).

        Otherwise nothing is overwritten: the caller's version is kept as a new plan (tagged "conflict") and
        StalePlanError says who changed the plan and when.
        """
        changes: dict[str, Any] = content_values(scenario) | {
            "updated_by": checked_author(author),
            "updated_at": _now(),
        }
        if name is not None:
            changes["name"] = checked_name(name.strip())
            changes["name_key"] = fold_name(changes["name"])
        if tags is not None:
            changes["tags"] = json.dumps(list(checked_tags(tags)))
        guard = (plans.c.id == plan_id, plans.c.version == expected_version, plans.c.deleted_at.is_(None))
        try:
            with self._transaction() as connection:
                done = connection.execute(
                    update(plans).where(*guard).values(**changes, version=plans.c.version + 1)
                )
                current = _by_id(connection, plan_id)
        except IntegrityError as err:
            raise NameTaken("name", "another plan already has this name", value=changes.get("name")) from err
        if done.rowcount == 1 and current is not None:
            return current
        return self._keep_refused(current, scenario, author, expected_version, tags)

    def _keep_refused(
        self,
        current: StoredPlan | None,
        scenario: Scenario,
        author: str,
        loaded: int,
        tags: Sequence[str] | None,
    ) -> StoredPlan:
        base = current.name if current is not None else "plan"
        kept_tags = (*(tags if tags is not None else (current.tags if current else ())), CONFLICT_TAG)
        kept = self.create_copy(base, scenario, author=author, tags=kept_tags)
        raise StalePlanError(current, kept, loaded)

    def save(
        self,
        name: str,
        scenario: Scenario,
        *,
        author: str = "",
        tags: Sequence[str] | None = None,
        replace: bool = False,
        expected_version: int | None = None,
    ) -> StoredPlan:
        """Save by name (the CLI's way): a new plan, or with `replace` a new version of the live plan of that
        name (checked against `expected_version` when given)."""
        name = checked_name(name.strip())
        if name not in self.live_names():
            return self.create(name, scenario, author=author, tags=tags or ())
        if not replace:
            raise NameTaken("name", f"a plan with this name exists{self._twin(name)}", value=name)
        current = self.find(name)
        loaded = current.version if expected_version is None else expected_version
        return self.update(current.id, scenario, expected_version=loaded, author=author, tags=tags)

    def delete(self, plan_id: int, *, author: str = "") -> StoredPlan:
        """Soft delete: the plan leaves the list and can be brought back with `undo_delete`."""
        return self._set_deleted(plan_id, _now(), author)

    def undo_delete(self, plan_id: int, *, author: str = "") -> StoredPlan:
        """Bring a deleted plan back; under a copy name when another live plan took its name meanwhile."""
        plan = self.get(plan_id)
        if not plan.deleted:
            return plan
        live = self.live_names()
        name = copy_name(plan.name, live) if plan.name in live else plan.name
        try:
            return self._set_deleted(plan_id, None, author, name=name)
        except IntegrityError as err:  # another replica took that name in between
            raise NameTaken("name", "another plan took this name; try undo again", value=name) from err

    def _set_deleted(
        self, plan_id: int, when: datetime | None, author: str, name: str | None = None
    ) -> StoredPlan:
        with self._transaction() as connection:
            changes = {"deleted_at": when, "updated_by": checked_author(author), "updated_at": _now()}
            if name is not None:
                changes["name"], changes["name_key"] = name, fold_name(name)
            connection.execute(update(plans).where(plans.c.id == plan_id).values(**changes))
            found = _by_id(connection, plan_id)
        if found is None:
            raise PlanNotFound("plan", "no plan has that id", value=plan_id)
        return found

    def duplicate(self, plan_id: int, *, author: str = "") -> StoredPlan:
        plan = self.get(plan_id)
        if plan.scenario is None:
            raise PlannerError("plan", f"repair {plan.name!r} before copying it: {plan.problem}")
        return self.create_copy(plan.name, plan.scenario, author=author, tags=plan.tags)

    def create_copy(self, base: str, scenario: Scenario, *, author: str, tags: Sequence[str]) -> StoredPlan:
        """A new plan under the first free copy name of `base`; another replica taking that name at the same
        moment only moves this one to the next name (refused saves must never be lost to a name race)."""
        for _ in range(COPY_NAME_ATTEMPTS):
            try:
                return self.create(copy_name(base, self.live_names()), scenario, author=author, tags=tags)
            except NameTaken:
                continue
        raise NameTaken("name", "no free copy name was found; rename some copies", value=base)

    def import_plans(
        self, named: Mapping[str, Scenario], *, author: str = "", tags: Sequence[str] = ()
    ) -> ImportReport:
        """Many plans in one transaction (a CSV import): new names are created, live names get a new version."""
        return import_named(self, named, checked_author(author), checked_tags(tags))


def _by_id(connection: Connection, plan_id: int) -> StoredPlan | None:
    row = connection.execute(select(plans).where(plans.c.id == plan_id)).mappings().first()
    return plan_from_row(row) if row is not None else None


def _escape_like(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
