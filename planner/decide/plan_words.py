"""A plan in words, shared by the dashboard and the command line: one way to say a duration, a count of things
("1 GPU", "8 GPUs") and a figure of many magnitudes; and the warnings about a plan that runs but wastes its GPUs (a
step spent mostly communicating, a rollout step that generates for very few prompts, a GPU count past the point
where more GPUs help).

The warnings read figures the estimate already has (and, for the GPU count, the same scaling curve the Compute
page draws), so a warning never disagrees with a number shown beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.decide.explore import scaling_curve
from planner.inputs.post_training import ONLINE
from planner.resolve import Resolved
from planner.results import Estimate

# (unit, seconds in one, the value at which the next unit takes over): "45 s", "20 min", "5.4 h", "3.2 days".
DURATION_UNITS = (("s", 1.0, 60.0), ("min", 60.0, 60.0), ("h", 3600.0, 48.0), ("days", 86400.0, math.inf))


def human_duration(hours: float | None) -> str:
    """A duration given in hours, in the unit that reads best: seconds, minutes, hours or days.

    Below 10 of a unit one decimal is shown ("5.4 h"; two significant figures below 1 s), from 10 up whole
    numbers ("20 min"). A value that would round up to the next unit's threshold ("60 s") takes that unit.
    """
    if hours is None or math.isnan(hours):
        return "n/a"
    seconds = hours * 3600.0
    for unit, size, limit in DURATION_UNITS:
        text = _duration_amount(seconds / size)
        if float(text.replace(",", "")) < limit:
            return f"{text} {unit}"
    raise AssertionError("the last unit has no limit")


def _duration_amount(amount: float) -> str:
    if amount == 0:
        return "0"
    if amount < 0.95:  # only seconds get here: "0.36 s"
        return f"{amount:.2g}"
    return f"{amount:,.1f}" if amount < 10 else f"{amount:,.0f}"


def plural(n: float, noun: str, nouns: str | None = None) -> str:
    """ "1 GPU", "8 GPUs", "1.5 days": the count with the noun that agrees with it (singular only for exactly 1)."""
    shown = f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"
    return f"{shown} {noun if n == 1 else (nouns or noun + 's')}"


def significant(value: float | None, digits: int = 3) -> str:
    """Significant digits for figures that span orders of magnitude (kg CO2e from grams to tonnes)."""
    if value is None or math.isnan(value):
        return "n/a"
    return f"{value:,.0f}" if abs(value) >= 10 ** (digits - 1) else f"{value:.{digits}g}"


def checkpoint_words(est: Estimate) -> str:
    """The checkpoint plan in words: its size and interval, or that the run ends before the first is due."""
    if est.checkpoint_interval_min is None:  # failures off: no interval is planned
        return "no checkpoint interval: failures are left out"
    interval_h = est.checkpoint_interval_min / 60.0
    if interval_h >= est.wall_clock_h:
        return (
            f"no checkpoint needed: the run ends ({human_duration(est.wall_clock_h)}) before the first is due "
            f"({human_duration(interval_h)})"
        )
    return f"a {human_duration(est.checkpoint_write_s / 3600.0)} checkpoint write every {human_duration(interval_h)}"


# Communication at or above half of the step (before any overlap): the GPUs wait for traffic at least as long as
# they compute, so a larger micro-batch (more compute per byte sent) or fewer GPUs (less traffic per step) pays
# directly. A stated threshold, not a fitted one.
COMM_BOUND_FRAC = 0.5
# Fewer prompts than this per rollout step: every recipe cited beside DEFAULT_ROLLOUT_PROMPTS generates for at
# least 128 prompts a step (Oat's Dr. GRPO 128, verl 1024); a few dozen leave the decode streaming every weight
# for a handful of sequences, and the group baseline averages over few prompts.
FEW_ROLLOUT_PROMPTS = 32
# A smaller GPU count whose wall clock is at least this much shorter marks "more GPUs make it slower" (1 %: below
# that the two are the same within the model's rounding).
SLOWER_MARGIN_FRAC = 0.01


@dataclass(frozen=True)
class PlanWarning:
    kind: str  # "communication", "few_prompts" or "more_gpus_slower": stable, for tests and styling
    message: str


def communication_warning(est: Estimate) -> PlanWarning | None:
    # what the step waits on: the communication left exposed after overlap (the step's parts), not the traffic
    # before it, which a prefetching ZeRO-3 step largely hides behind its compute
    exposed_s = est.exposed_pipelined_comm_s + est.exposed_data_parallel_comm_s
    share = exposed_s / est.step_time_s if est.step_time_s > 0 else 0.0
    if share < COMM_BOUND_FRAC:
        return None
    shown = min(share, 1.0)
    return PlanWarning(
        "communication",
        f"Communication is {shown:.0%} of the step: raise the micro-batch or use fewer GPUs.",
    )


def rollout_warning(resolved: Resolved, est: Estimate) -> PlanWarning | None:
    s = resolved.scenario
    # a run of fewer prompts than that in all cannot raise it: no advice to give
    if s.post_training not in ONLINE or est.rollout_prompts >= min(FEW_ROLLOUT_PROMPTS, s.examples):
        return None
    prompts = round(est.rollout_prompts)
    noun = "prompt" if prompts == 1 else "prompts"
    return PlanWarning(
        "few_prompts",
        f"Each rollout step generates for only {prompts:,} {noun}: decoding streams every weight for a "
        f"handful of sequences. Raise prompts per rollout step (trainers use 128-1,024).",
    )


def scaling_warning(resolved: Resolved, est: Estimate) -> PlanWarning | None:
    """The fastest smaller GPU count on the scaling curve (same global batch), when it beats this plan."""
    n_gpus = resolved.scenario.n_gpus
    curve = scaling_curve(resolved)
    fewer = curve.filter(curve["n_gpus"] < n_gpus).sort("wall_clock_h")
    if fewer.is_empty():
        return None
    best_gpus, best_h = int(fewer["n_gpus"][0]), float(fewer["wall_clock_h"][0])
    own = curve.filter(curve["n_gpus"] == n_gpus)["wall_clock_h"]
    own_h = float(own[0]) if len(own) else est.wall_clock_h
    if best_h >= own_h * (1.0 - SLOWER_MARGIN_FRAC):
        return None
    return PlanWarning(
        "more_gpus_slower",
        f"More GPUs make this plan slower: {plural(best_gpus, 'GPU')} {_take(best_gpus)} "
        f"{human_duration(best_h)}, {plural(n_gpus, 'GPU')} take {human_duration(own_h)}.",
    )


def _take(n_gpus: int) -> str:
    return "takes" if n_gpus == 1 else "take"


def plan_warnings(resolved: Resolved, est: Estimate) -> list[PlanWarning]:
    """The warnings that apply to a plan, most actionable first."""
    found = (
        communication_warning(est),
        rollout_warning(resolved, est),
        scaling_warning(resolved, est),
    )
    return [w for w in found if w is not None]
