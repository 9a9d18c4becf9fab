"""What the library refuses: a name no plan has, a name another plan has, and a save over a plan that
changed since it was loaded (the caller's version is kept, never lost)."""

from __future__ import annotations

from planner.errors import PlannerError
from planner.library.records import StoredPlan


class PlanNotFound(PlannerError):
    """No plan has that name or id (deleted ones count only where asked for)."""


class NameTaken(PlannerError):
    """Another live plan has that name."""


class StalePlanError(PlannerError):
    """The plan changed since the caller loaded it. Nothing was overwritten; the caller's version is `kept`."""

    def __init__(self, current: StoredPlan | None, kept: StoredPlan, loaded_version: int) -> None:
        self.current, self.kept = current, kept
        if current is None or current.deleted:
            what = "was deleted since you loaded it"
        else:
            who = f" by {current.updated_by}" if current.updated_by else ""
            when = current.updated_at.strftime("%Y-%m-%d %H:%M UTC")
            what = f"was changed{who} at {when} (now version {current.version}; you loaded version {loaded_version})"
        over = current.name if current is not None else kept.name
        super().__init__("name", f"not saved over {over!r}: it {what}. Your version is kept as {kept.name!r}")
