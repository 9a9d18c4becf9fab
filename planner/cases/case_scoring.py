"""Scores of `validate` (median / p90 / max |error| per category) and the refit presets of cross-validation.

By default every row is predicted from the shipped presets (data/efficiency.csv). The `--refit` modes rebuild
the presets from the case file itself, without the scored row (`row`) or without every row of its source
document (`source`), from the compute-only efficiency each throughput or time row implies
(`planner.cases.case_predict.case_efficiency`). GPU-hour rows of the energy category never feed the presets:
model-card GPU-hours include restarts, evaluation and downtime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import median
from typing import Any

import polars as pl

from planner.cases import case_post, case_words
from planner.cases.case_predict import case_efficiency
from planner.cases.case_row import CaseFacts
from planner.catalogue.catalog import Catalogs
from planner.catalogue.efficiency import build_efficiency_table, precision_class
from planner.inputs.scenario import Scenario
from planner.model.architecture import count_params

PRESET_CATEGORIES = ("throughput", "time")  # rows whose efficiency feeds the presets
# Rows this repository measured itself on a lent GPU (bench/gpu_runs.py; their url points into data/microbench/)
# are there to test the step model: fitting the presets to them would hide the error they are meant to show.
OWN_MEASUREMENT_URL = "data/microbench/"


def feeds_presets(row: Mapping[str, str]) -> bool:
    """A throughput or time row of supervised fine-tuning or pre-training. Post-training rows (a preference
    or RL objective in `method`) never feed the presets: their step holds generation, scoring and
    other models' work beside the policy's training, so the utilisation they imply is not the training
    efficiency the presets hold (and a PPO row's decode-bound generation would drag every preset down).
    A QLoRA row over a GPTQ or AWQ int4 base is scored but feeds nothing either: the QLoRA presets are those of
    NF4 bases (torchtune rows), and another kernel family's speed is not theirs. Rows measured by this
    repository's own scripts (`OWN_MEASUREMENT_URL`) are scored only."""
    sft = row["category"] in PRESET_CATEGORIES and case_post.objective(row) == "sft"
    own = row.get("url", "").startswith(OWN_MEASUREMENT_URL)
    return sft and not case_words.other_4bit_base(row) and not own


def source_of(row: Mapping[str, str]) -> str:
    """The document a row comes from: its url without a #fragment when given, else its case-id prefix
    ("TTU31-3-tps" -> "TTU31"). In calibration.csv both give the same 13 documents; the `source` column is
    finer (one llm-foundry README holds four tables), so it would let a document's rows predict each other."""
    url = row.get("url", "").split("#", 1)[0].strip()
    return url or row["case_id"].split("-", 1)[0]


def efficiency_record(
    scenario: Scenario, facts: CaseFacts, gpu_generation: str, cats: Catalogs
) -> dict | str:
    """One measurement's contribution to the presets (keyed as `resolve` looks presets up), or why none.

    Above 100 % of the datasheet peak a row contradicts its own configuration (wrong peak, unit or
    settings); it is left out of the presets but still scored.
    """
    efficiency = case_efficiency(scenario, facts, cats)
    if isinstance(efficiency, str):
        return efficiency
    if efficiency > 1.0:
        return f"implies {efficiency:.0%} of the dense peak: inconsistent with the datasheet"
    shape = scenario.model_shape
    assert shape is not None  # case scenarios always carry their shape
    return {
        "case_id": facts.case_id,
        "generation": gpu_generation,
        "n_params": float(count_params(shape).active),  # resolve looks presets up by active parameters
        "method": scenario.method,
        "precision": precision_class(scenario.precision),
        "efficiency": efficiency,
    }


def refit_table(records: Sequence[Mapping[str, Any]], left_out: str) -> pl.DataFrame:
    """Presets rebuilt from `records` (the case file's own measurements minus the held-out ones)."""
    return build_efficiency_table(records, source=f"refit from the case file without {left_out}", as_of="")


def summarise(results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per category: n, n_skipped, median / p90 / max of |rel_error| (the `validate` summary format)."""
    summary = {}
    for category in sorted({str(r["category"]) for r in results}):
        rows = [r for r in results if r["category"] == category]
        errors = sorted(abs(r["rel_error"]) for r in rows if r["rel_error"] is not None)
        summary[category] = {
            "n": len(rows),
            "n_skipped": sum(r["rel_error"] is None for r in rows),
            "median_abs_rel_error": median(errors) if errors else None,
            "p90_abs_rel_error": errors[min(len(errors) - 1, int(0.9 * len(errors)))] if errors else None,
            "max_abs_rel_error": errors[-1] if errors else None,
        }
    return summary
