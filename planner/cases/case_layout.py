"""Rows whose source states no layout, predicted at the layout `recommend` would pick for them.

A published run that gives neither TP, PP, CP, data-parallel degree nor micro-batch (a model card's GPU-hours)
ran at some layout its team tuned. Predicting it at pure data parallelism with one sequence per micro-batch
(the blank cells' defaults) would score the planner on a plan nobody ran; the plan search is the planner's own
answer to "how would this be run", so such a row is predicted at the plan `python -m planner recommend` ranks
first on the row's GPU type (cheapest, which on one GPU type is fewest GPU-hours), at the row's global batch
and its GPU count when stated. A row without a global batch keeps the blank cells' defaults, and says so. The search never sees the measured value, so nothing of the answer is
read back into the prediction. `validate` says which layout each row was predicted at (`layout_source`).
"""

from __future__ import annotations

from collections.abc import Mapping

from planner.cases import case_words as words
from planner.catalogue.catalog import Catalogs
from planner.decide.sweep import Constraints, scenario_for, search
from planner.decide.sweep_grid import DEFAULT_MAX_GPUS
from planner.decide.sweep_space import obeying_space
from planner.inputs.scenario import Scenario

LAYOUT_COLUMNS = ("tp", "pp", "cp", "dp", "micro_batch")  # all blank: the source states no layout
STATED, RECOMMEND, DEFAULTS = "stated", "recommend", "defaults"  # the `layout_source` of a validate row


def layout_source(row: Mapping[str, str]) -> str:
    """ "stated" when the row gives any of the layout columns; else "recommend" when it gives the global batch
    the search must reach, or "defaults" without one (the blank cells' defaults: a search would reach the
    defaults' one-sequence batch, a plan no pre-training run uses)."""
    if any(str(row.get(column) or "").strip() for column in LAYOUT_COLUMNS):
        return STATED
    return RECOMMEND if str(row.get("global_batch") or "").strip() else DEFAULTS


def recommended(row: Mapping[str, str], scenario: Scenario, cats: Catalogs) -> tuple[Scenario, str] | str:
    """(the row's Scenario at the layout the search ranks first, that layout in words), or why none fits."""
    stated_gpus = words.number(dict(row), "n_gpus")
    fixed = {"n_gpus": scenario.n_gpus} if stated_gpus is not None else {}
    global_batch = int(words.number(dict(row), "global_batch") or 1)  # stated: layout_source says so
    space = obeying_space(scenario, fixed, target_batch_sequences=global_batch)
    limit = max(DEFAULT_MAX_GPUS, scenario.n_gpus)
    found = search(
        scenario,
        Constraints(gpus=(scenario.gpu,), max_gpus=limit),
        space,
        catalogs=cats,
        top_n=1,
        explain_misses=False,
    )
    if not found.top.height:
        return f"layout not stated and the plan search finds none on {scenario.gpu}: {found.reason}"
    plan = found.top.row(0, named=True)
    said = (
        f"layout not stated: predicted at the plan recommend ranks first on {scenario.gpu}: "
        f"{plan['n_gpus']} GPUs, TP {plan['tp']}, PP {plan['pp']}, ZeRO-{plan['zero_stage']}, "
        f"micro-batch {plan['micro_batch']} x {plan['grad_accum']}, recompute {plan['recompute']}"
    )
    return scenario_for(plan, scenario, cats), said
