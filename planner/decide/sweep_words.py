"""Plan search results in words: a configuration's label and why the winner won."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from planner.decide.sweep_grid import SearchSpace
from planner.decide.sweep_rank import Kept
from planner.decide.sweep_space import FIELD_WORDS, SEARCHED_FIELDS, fixed_words
from planner.decide.sweep_types import Constraints
from planner.formulas.units import GIB_BYTES, SECONDS_PER_HOUR

SUPERLATIVE = {
    "cost": "cheapest",
    "wall_clock": "fastest",
    "energy": "lowest-energy",
    "co2e": "lowest-carbon",
}
RECOMPUTE_WORDS = {
    "none": "no recompute",
    "selective": "selective recompute",
    "full": "full recompute",
    "selective_op": "op-level selective recompute",
}


def label(row: Mapping[str, Any]) -> str:
    """E.g. "H200 SXM ×16, TP 2, ZeRO-2, selective recompute, micro-batch 2"."""
    parts = [f"{row['gpu']} ×{row['n_gpus']}"]
    if row.get("generation_gpus"):  # PPO/GRPO with dedicated generation GPUs (0 or absent: colocated)
        parts[0] += f" training + {row['generation_gpus']} generating"
    pairs = (("TP", "tp"), ("CP", "cp"), ("PP", "pp"))  # a row from before CP was searched has none
    parts += [f"{name} {row[key]}" for name, key in pairs if row.get(key, 1) > 1]
    if row.get("pp_virtual_stages", 1) > 1:
        parts.append(f"interleaved ×{row['pp_virtual_stages']}")
    if row.get("ep", 1) > 1:
        parts.append(f"EP {row['ep']}")
    hybrid = row.get("hybrid_shard") and row["zero_stage"] >= 1  # nothing to shard at ZeRO-0
    parts.append(f"ZeRO-{row['zero_stage']}" + (" sharded within each node (HSDP)" if hybrid else ""))
    parts.append(RECOMPUTE_WORDS.get(str(row["recompute"]), str(row["recompute"])))
    parts.append(f"micro-batch {row['micro_batch']}")
    if row.get("offload_params"):
        parts.append("parameters and optimizer offloaded to the CPU")
    elif row.get("offload_optimizer"):
        parts.append("optimizer offloaded to the CPU")
    return ", ".join(parts)


def hours_words(hours: float) -> str:
    return f"{hours:,.1f} h" if hours >= 10 else f"{hours:,.2f} h"


def usd_words(usd: float) -> str:
    return "no price" if not np.isfinite(usd) else f"${usd:,.0f}"


def _conditions(constraints: Constraints, space: SearchSpace | None, with_margin: bool = False) -> str:
    words = ["fits in memory with margin" if with_margin and constraints.tight_last else "fits in memory"]
    if space is not None and space.fixed:
        words.append(f"keeps {fixed_words(space)}")
    if constraints.deadline_h is not None:
        words.append(f"finishes within {constraints.deadline_h:g} h")
    if constraints.budget_usd is not None:
        words.append(f"costs at most ${constraints.budget_usd:,.0f}")
    return ", ".join(words[:-1]) + (" and " if len(words) > 1 else "") + words[-1]


def _percent(change: float) -> str:
    """A relative change as a rounded percentage; a small one keeps a decimal so it never reads "0 %"."""
    size = abs(change) * 100
    return f"{size:,.1f} %" if size < 10 else f"{size:,.0f} %"


def _versus(winner: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    """ "12 % faster but 31 % dearer": the other configuration's time and cost relative to the winner's."""
    time_change = other["wall_clock_h"] / winner["wall_clock_h"] - 1.0
    cost_change = other["cost_usd"] / winner["cost_usd"] - 1.0
    time_words = f"{_percent(time_change)} {'faster' if time_change < 0 else 'slower'}"
    cost_words = f"{_percent(cost_change)} {'dearer' if cost_change > 0 else 'cheaper'}"
    joiner = " but " if (time_change < 0) == (cost_change > 0) else " and "
    return f"{time_words}{joiner}{cost_words}"


def _alternative(winner: Mapping[str, Any], frontier: pl.DataFrame) -> Mapping[str, Any] | None:
    """The fastest point of the cost-versus-time frontier that is not the winner."""
    keys = ("gpu", *SEARCHED_FIELDS)
    for row in frontier.iter_rows(named=True):
        if any(row.get(k) != winner.get(k) for k in keys):  # generation_gpus: PPO/GRPO searches only
            return row
    return None


def explain(
    top: pl.DataFrame,
    frontier: pl.DataFrame,
    kept: Kept,
    constraints: Constraints,
    space: SearchSpace | None = None,
) -> str:
    """Why the first row of `top` won, compared with the fastest other frontier point; or why nothing did."""
    if not top.height:
        return _nothing(kept, constraints, space)
    winner = top.row(0, named=True)
    bound = f"; {winner['bound_by']}" if winner.get("bound_by") else ""  # its step's largest part
    figures = f"{hours_words(winner['wall_clock_h'])}, {usd_words(winner['cost_usd'])}{bound}"
    sentence = (
        f"{label(winner)}: the {SUPERLATIVE[constraints.objective]} configuration that "
        f"{_conditions(constraints, space, winner.get('fit_verdict') == 'fits')} ({figures})."
    )
    if winner.get("fit_verdict", "fits") != "fits":  # no plan that meets the rest leaves the memory margin
        sentence += (
            " Its memory is tight: the estimate fits, the high end of the memory model's measured error band "
            "does not, so it may run out of memory."
        )
    other = _alternative(winner, frontier)
    if other is None or not np.isfinite(winner["cost_usd"]):
        return sentence
    other_bound = f"; {other['bound_by']}" if other.get("bound_by") else ""
    other_figures = f"{hours_words(other['wall_clock_h'])}, {usd_words(other['cost_usd'])}{other_bound}"
    return f"{sentence} {label(other)} is {_versus(winner, other)} ({other_figures})."


def _nothing(kept: Kept, constraints: Constraints, space: SearchSpace | None) -> str:
    if not len(kept):
        kept_fixed = f" keeping {fixed_words(space)}" if space is not None and space.fixed else ""
        return (
            f"Nothing fits in memory with these GPUs and at most {constraints.max_gpus:,} of them{kept_fixed}: "
            "allow more GPUs or larger ones, or lower the memory need (LoRA/QLoRA, 8-bit optimizer, shorter "
            "sequences)."
        )
    wall = kept.figures["wall_clock_s"] / SECONDS_PER_HOUR
    cost = kept.figures["cost_usd"]
    hints = []
    if constraints.deadline_h is not None:
        hints.append(
            f"the fastest that fits takes {hours_words(float(np.nanmin(wall)))} "
            f"(deadline {constraints.deadline_h:g} h)"
        )
    if constraints.budget_usd is not None and np.isfinite(cost).any():
        hints.append(
            f"the cheapest that fits costs {usd_words(float(np.nanmin(cost)))} "
            f"(budget ${constraints.budget_usd:,.0f})"
        )
    if not hints:
        hints.append(
            f"no configuration that fits has a {constraints.objective.replace('_', ' ')} figure "
            "(a GPU without a price? enter your quote)"
        )
    return "No configuration meets the constraints: " + "; ".join(hints) + "."


def fallback_note(*, found: bool) -> str:
    """The note of the second pass that CPU offload gets when nothing meets the constraints without it."""
    if found:
        return (
            "No configuration without CPU offload meets the constraints, so configurations that offload the "
            "optimizer (and the parameters) to host memory were searched too; these plans need that host memory."
        )
    return "CPU offload of the optimizer (and the parameters) was searched too, without a plan either."


def shortfall_words(row: Mapping[str, Any], over_bytes: float) -> str:
    """The closest miss: "The closest, H200 SXM ×8, ..., needs 150.2 GiB per GPU of 139.8 GiB (10.4 GiB short)." """
    need = row["peak_gib_per_device"]
    return (
        f"The closest, {label(row)}, needs {need:,.1f} GiB per GPU of {row['vram_gib']:,.1f} GiB "
        f"({over_bytes / GIB_BYTES:,.1f} GiB short)."
    )


def freed_words(space: SearchSpace, opened: Mapping[str, Mapping[str, Any]]) -> str:
    """Which fixed choice excludes everything: the plans that freeing each one alone would allow."""
    if not opened:
        return f"Freeing any one of the fixed choices ({fixed_words(space)}) alone does not help either."
    found = "; ".join(f"freeing {FIELD_WORDS[name]} finds {label(row)}" for name, row in opened.items())
    return f"The fixed choices exclude every plan: {found}."
