"""The plan search's question and answer: `Constraints` (what a plan must satisfy, what "best" means) and
`SearchResult`. Kept apart from `planner.decide.sweep` so that the ranking and the wording modules can name
them without importing the search itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import polars as pl

from planner.decide.sweep_grid import DEFAULT_MAX_GPUS

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

    def __post_init__(self) -> None:
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective: must be one of {', '.join(OBJECTIVES)} (got {self.objective!r})")
        if self.deadline_h is not None and not self.deadline_h > 0:
            raise ValueError(f"deadline_h: must be > 0 hours (got {self.deadline_h})")
        if self.budget_usd is not None and not self.budget_usd > 0:
            raise ValueError(f"budget_usd: must be > 0 (got {self.budget_usd})")
        if not 1 <= self.max_gpus <= 1_000_000:
            raise ValueError(f"max_gpus: must be between 1 and 1,000,000 (got {self.max_gpus})")
        if self.gpus is not None and not self.gpus:
            raise ValueError("gpus: name at least one GPU")


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

    @property
    def winner(self) -> dict[str, Any] | None:
        return self.top.row(0, named=True) if self.top.height else None
