"""What a plan's time is bound by, in words, for the plan sheet, the comparison and the command line.

The one seam for this figure. The step's own verdict comes from the operator model (the largest part of the
step, `planner.formulas.operators.outputs.bound_by_words`: GEMMs, attention, memory-bound operations, launches,
exposed communication with the layout behind it, the bubble, offload, adapters). A PPO or GRPO run adds what no
training step shows: when generating the rollouts takes most of the run, that is what it waits on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.formulas.operators.outputs import bound_by_words
from planner.results import Estimate

# A share of the run at or above this is what the plan waits on; the same threshold as the communication
# banner (planner.decide.plan_words.COMM_BOUND_FRAC).
BOUND_FRAC = 0.5


def with_generation(step_words: str, generation_frac: float) -> str:
    """The step's verdict, or the rollouts' when generating is at least BOUND_FRAC of the run."""
    if generation_frac >= BOUND_FRAC:
        return f"generation-bound: rollouts take {generation_frac:.0%} of the run"
    return step_words


def bound_by(est: Estimate) -> str:
    """One plan's verdict (module docstring)."""
    return with_generation(est.bound_by, est.generation_frac or 0.0)


def bound_by_rows(out: Mapping[str, Any], layout: Any, n_rows: int) -> list[str]:
    """Per row of evaluate's outputs under one layout (`planner.columns` layout group): the verdict in words."""
    degrees = [float(np.max(getattr(layout, name))) for name in ("tp", "cp", "pp", "n_gpus_per_node")]
    generation = np.broadcast_to(np.nan_to_num(np.asarray(out["generation_frac"], dtype=float)), n_rows)
    codes = np.broadcast_to(np.asarray(out["bound_by_code"]), n_rows)
    return [
        with_generation(bound_by_words(int(code), *degrees), float(frac))
        for code, frac in zip(codes, generation, strict=True)
    ]
