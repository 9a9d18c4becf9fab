"""The operator model's residual per GPU generation, from the case file's throughput and time rows.

For each supervised or pre-training throughput/time row the operator model predicts the run with no
residual (1 everywhere); the row's ratio is measured speed / predicted speed (a time row: predicted time /
measured time). Each source document casts one vote, the median of its rows' ratios, so that a document with
forty rows of one setup does not outweigh one with two; a generation's residual is the median of its
documents' votes, and "default" the median of every document's vote, for a generation with too few
documents. The residual divides only the GPU's work (`planner.formulas.operators.step`): the host's launches
are timed by their own microbenchmark and the communication by its own model, so where either is on the
critical path the residual corrects a little less than the ratio says. It is one figure per generation,
never per model size or method. `scripts/derive_residual.py` writes the shipped table;
`validate --refit source|row` rebuilds it without the scored row's source (or the row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import median
from typing import Any

from planner.cases.case_predict import predict_case
from planner.catalogue.catalog import Catalogs

# A generation needs votes from this many source documents for a figure of its own (one document is one
# setup, whose own quirks would become the generation's); others take "default", the median of every vote.
MIN_SOURCES = 3
TIME_UNITS = ("s_per_iteration", "days", "gpu_hours")  # a larger figure is a slower run


def residual_ratio(case: tuple[Any, Any, str], measured: float, unit: str, cats: Catalogs) -> float | None:
    """measured speed / the operator model's speed with no residual, for one row; None when unpredicted."""
    scenario, facts, _ = case
    try:
        value, _ = predict_case(scenario, facts, replace(cats, operator_residual={}))
    except ValueError:
        return None
    if not value > 0 or not measured > 0:
        return None
    return value / measured if unit in TIME_UNITS else measured / value


def residual_from(records: Sequence[tuple[str, str, float]]) -> dict[str, float]:
    """generation -> residual over the records (generation, source document, ratio): one vote per source (the
    median of its rows' ratios), the generation's figure the median of those votes, for generations with
    MIN_SOURCES sources or more; "default" the median of every source's vote over all generations."""
    votes: dict[str, dict[str, list[float]]] = {}
    for generation, source, ratio in records:
        votes.setdefault(generation, {}).setdefault(source, []).append(ratio)
    table = {
        g: median(median(ratios) for ratios in by_source.values())
        for g, by_source in votes.items()
        if len(by_source) >= MIN_SOURCES
    }
    every: dict[str, list[float]] = {}
    for _, source, ratio in records:
        every.setdefault(source, []).append(ratio)
    if every:
        table["default"] = median(median(ratios) for ratios in every.values())
    return table


def residual_records(
    rows: Sequence[Mapping[str, str]], cases: Mapping[str, Any], cats: Catalogs, feeds: Any
) -> list[tuple[Mapping[str, str], str, float]]:
    """(row, generation, ratio) for every row that `feeds` accepts and the model predicts."""
    records = []
    for row in rows:
        case = cases[row["case_id"]]
        if not feeds(row) or isinstance(case, str):
            continue
        ratio = residual_ratio(case, float(row["measured_value"]), row["measured_unit"], cats)
        if ratio is not None:
            records.append((row, case[2], ratio))
    return records
