"""Score the time model against published throughput and time measurements without leaking them.

The efficiency presets are derived from the same measurements they are scored on, so each row is predicted
from presets rebuilt without it: `holdout="row"` leaves out the row itself (leave-one-out), `holdout="source"`
leaves out every row of the same publication (its case-id prefix, e.g. "LF", "KO"), which also removes
near-duplicate siblings such as the cumulative torchtune ablation. Energy rows in GPU-hours are scored but
never feed the presets: model-card GPU-hours include restarts, evaluation and downtime.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from statistics import median
from typing import Any

from planner.cases.case_model import efficiency_record, predict_case
from planner.cases.compute_cases import TIME_UNITS, compute_inputs_from_case
from planner.cases.rel_error import relative_error
from planner.catalogue.efficiency import build_efficiency_table, efficiency_preset

PRESET_CATEGORIES = ("throughput", "time")  # rows whose efficiency feeds the presets
SCORED_CATEGORIES = ("throughput", "time", "energy")


def read_case_file(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def source_of(case_id: str) -> str:
    """A case's publication: the case-id prefix before the first dash ("TTU31-3-tps" → "TTU31")."""
    return case_id.split("-", 1)[0]


def case_inputs(
    rows: Iterable[Mapping[str, Any]], gpus: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[Mapping[str, Any], dict[str, Any] | str]]:
    """Each row of a scored category with its formula inputs or skip reason."""
    return [
        (row, compute_inputs_from_case(row, gpus))
        for row in rows
        if row.get("category") in SCORED_CATEGORIES and row.get("measured_unit") in TIME_UNITS
    ]


def efficiency_records(
    inputs: Sequence[tuple[Mapping[str, Any], dict[str, Any] | str]],
) -> list[dict[str, Any]]:
    """Per-measurement compute efficiencies of the rows that feed the presets."""
    records = []
    for row, case in inputs:
        if isinstance(case, dict) and row.get("category") in PRESET_CATEGORIES:
            record = efficiency_record(case)
            if isinstance(record, dict):
                records.append(record)
    return records


def score_cases(
    rows: Iterable[Mapping[str, Any]],
    gpus: Mapping[str, Mapping[str, Any]] | None = None,
    holdout: str = "row",
    band: str = "typical",
) -> list[dict[str, Any]]:
    """Predicted vs measured for every throughput, time and GPU-hour row, in the `validate` row format."""
    inputs = case_inputs(rows, gpus)
    records = efficiency_records(inputs)
    results = []
    for row, case in inputs:
        result: dict[str, Any] = {
            "case_id": row["case_id"],
            "category": row["category"],
            "measured": float(row["measured_value"]) if row.get("measured_value") else None,
            "measured_unit": row["measured_unit"],
            "predicted": None,
            "rel_error": None,
            "skipped_reason": case if isinstance(case, str) else None,
        }
        if isinstance(case, dict):
            kept = [r for r in records if _kept(r["case_id"], str(row["case_id"]), holdout)]
            table = build_efficiency_table(kept, source="holdout", as_of="")
            low, typical, high = efficiency_preset(
                table, case["generation"], case["n_params"], case["method"], case["precision"]
            )
            utilisation = {"low": low, "typical": typical, "high": high}[band]
            predicted = predict_case(case, float(utilisation))
            result.update(
                predicted=predicted,
                rel_error=relative_error(predicted, case["measured_value"]),
                efficiency_used=float(utilisation),
                assumptions="; ".join(case["assumptions"]),
            )
        results.append(result)
    return results


def _kept(record_id: str, scored_id: str, holdout: str) -> bool:
    if holdout == "source":
        return source_of(record_id) != source_of(scored_id)
    return record_id != scored_id


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
