"""What a plan's time is bound by, in a word or two, for the plan sheet, the comparison and the command line.

The one seam for this figure: it reads the step's parts the evaluation already reports (communication before
overlap, exposed host offload, LoRA/QLoRA memory-bound work, the pipeline bubble, and for PPO/GRPO the share of
the run spent generating). Once the Estimate carries its own step-time breakdown and verdict, `bound_by_parts`
returns that instead and every caller follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.results import Estimate

# A part that takes at least half of the step (or of the run, for generation) is what the plan waits on;
# below that, the matrix multiplies are. The same threshold as the communication banner
# (planner.decide.plan_words.COMM_BOUND_FRAC).
BOUND_FRAC = 0.5
PARTS = ("generation", "communication", "host offload", "memory bandwidth", "pipeline bubble")


def bound_by_parts(out: Mapping[str, Any]) -> list[str]:
    """Per row of evaluate's outputs (or one Estimate's figures): "generation", "communication", "host
    offload", "memory bandwidth", "pipeline bubble" or "compute"."""
    step = np.atleast_1d(np.asarray(out["step_time_s"], dtype=float))
    step = np.where(step > 0, step, np.inf)
    shares = np.vstack(
        [
            np.broadcast_to(np.asarray(out["generation_frac"], dtype=float), step.shape),
            np.asarray(out["comm_time_s"], dtype=float) / step,
            np.asarray(out["offload_time_s"], dtype=float) / step,
            np.asarray(out["adapter_memory_time_s"], dtype=float) / step,
            np.broadcast_to(np.asarray(out["bubble_frac"], dtype=float), step.shape),
        ]
    )
    shares = np.nan_to_num(shares, nan=0.0)
    largest = shares.argmax(axis=0)
    return [PARTS[i] if shares[i, row] >= BOUND_FRAC else "compute" for row, i in enumerate(largest)]


def bound_by(est: Estimate) -> str:
    """One plan's verdict (see `bound_by_parts`)."""
    return bound_by_parts(est.to_flat())[0]
