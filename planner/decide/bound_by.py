"""What a plan's time is bound by, in a word or two, for the plan sheet, the comparison and the command line.

The one seam for this figure: it reads the step's parts the Estimate already reports (communication before
overlap, exposed host offload, LoRA/QLoRA memory-bound work, the pipeline bubble, and for PPO/GRPO the share of
the run spent generating). Once the Estimate carries its own step-time breakdown and verdict, this function
returns that instead and every caller follows.
"""

from __future__ import annotations

from planner.results import Estimate

# A part that takes at least half of the step (or of the run, for generation) is what the plan waits on;
# below that, the matrix multiplies are. The same threshold as the communication banner
# (planner.decide.plan_words.COMM_BOUND_FRAC).
BOUND_FRAC = 0.5


def bound_by(est: Estimate) -> str:
    """ "generation", "communication", "host offload", "memory bandwidth", "pipeline bubble" or "compute"."""
    step = est.step_time_s if est.step_time_s > 0 else float("inf")
    shares = {
        "generation": est.generation_frac,
        "communication": est.comm_time_s / step,
        "host offload": est.offload_time_s / step,
        "memory bandwidth": est.adapter_memory_time_s / step,
        "pipeline bubble": est.bubble_frac,
    }
    part, share = max(shares.items(), key=lambda item: item[1])
    return part if share >= BOUND_FRAC else "compute"
