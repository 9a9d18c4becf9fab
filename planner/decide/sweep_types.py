"""The plan search's question and answer: `Constraints` (what a plan must satisfy, what "best" means) and
`SearchResult`. Kept apart from `planner.decide.sweep` so that the ranking and the wording modules can name
them without importing the search itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import polars as pl

from planner.decide.sweep_grid import DEFAULT_MAX_GPUS
from planner.errors import PlannerError

Objective = Literal["cost", "wall_clock", "energy", "co2e"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)


@dataclass(frozen=True)
class Constraints:
    """What a plan must satisfy, and what "best" means."""

    deadline_h: float | None = None  # wall clock, hours
    budget_usd: float | None = None
    max_gpus: int = DEFAULT_MAX_GPUS
    gpus: tuple[str, ...] | None = None  # GPU names or aliases; None: every GPU with a catalogue price
    objective: Objective = "cost"
    # plans whose memory verdict is "tight" (estimate fits, the error band's high end does not) rank after
    # every plan that "fits" (planner.formulas.memory.verdict); False ranks them by the objective alone
    tight_last: bool = True

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise PlannerError(
                "objective", "unknown objective", value=self.objective, allowed=", ".join(OBJECTIVES)
            )
        if self.deadline_h is not None and not self.deadline_h > 0:
            raise PlannerError("deadline_h", "must be > 0 hours", value=self.deadline_h, allowed="> 0")
        if self.budget_usd is not None and not self.budget_usd > 0:
            raise PlannerError("budget_usd", "must be > 0", value=self.budget_usd, allowed="> 0")
        if not 1 <= self.max_gpus <= 1_000_000:
            raise PlannerError("max_gpus", "out of range", value=self.max_gpus, allowed="1 to 1,000,000")
        if self.gpus is not None and not self.gpus:
            raise PlannerError("gpus", "name at least one GPU")


@dataclass(frozen=True)
class SearchResult:
    top: pl.DataFrame  # best first, `rank` 1..N
    frontier: pl.DataFrame  # cost-versus-time Pareto frontier, fastest first
    reason: str  # why the winner won, in one or two sentences
    constraints: Constraints
    gpus: tuple[str, ...]  # GPU types searched
    skipped_gpus: dict[str, str]  # GPU -> why it was left out
    target_batch_sequences: int
    n_candidates: int  # layout combinations × GPU types, before impossible layouts were dropped
    n_evaluated: int  # rows evaluated
    n_fit: int  # rows whose peak fits the device memory
    n_feasible: int  # ... and meet every constraint with a finite objective
    elapsed_s: float
    notes: list[str] = field(default_factory=list)
    offload_explored: bool = False  # a second pass with CPU offload ran (nothing met the constraints without)
    fixed_choices: str = ""  # the choices the search kept fixed, in words ("TP 1, PP 1, ZeRO stage 3")

    @property
    def winner(self) -> dict[str, Any] | None:
        return self.top.row(0, named=True) if self.top.height else None
