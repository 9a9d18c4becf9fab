"""The operator model's residual per GPU generation, from the case file's throughput and time rows.

For each supervised or pre-training throughput/time row the operator model predicts the run with no
residual (1 everywhere); the row's ratio is measured speed / predicted speed (a time row: predicted time /
measured time). A generation's residual is the median of its rows' ratios, and "default" the median of all,
for a generation without rows. The residual divides only the compute part of the step, so where
communication is exposed it corrects a little less than the ratio says; it is one figure per generation,
never per model size or method. `scripts/derive_residual.py` writes the shipped table;
`validate --refit source|row` rebuilds it without the scored row's source (or the row).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from statistics import median
from typing import Any

from planner.cases.case_predict import predict_case
from planner.catalogue.catalog import Catalogs

# A generation needs this many rows for a figure of its own (fewer come from one or two setups, which a
# single source can dominate); others take "default", the median over every row.
MIN_ROWS = 5
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


def residual_from(records: Sequence[tuple[str, float]]) -> dict[str, float]:
    """generation -> median ratio over the records (generation, ratio) for generations with MIN_ROWS rows or
    more; "default" over all of them."""
    by_generation: dict[str, list[float]] = {}
    for generation, ratio in records:
        by_generation.setdefault(generation, []).append(ratio)
    table = {g: median(ratios) for g, ratios in by_generation.items() if len(ratios) >= MIN_ROWS}
    if records:
        table["default"] = median(ratio for _, ratio in records)
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
