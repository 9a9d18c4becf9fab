"""Score the planner against published measurements: the library side of `python -m planner validate`.

A case file has the columns of `reference/calibration.csv` (DESIGN.md §4): one published figure per row with
the configuration that produced it. Each row is predicted in its own unit by the model of its category:
- memory: `planner.cases.memory_cases.predict_memory_case` (the memory statistic the row names);
- throughput and time: `planner.cases.case_scoring.score_cases` with leave-one-out efficiency presets
  (`holdout="row"`), so no row takes part in its own prediction;
- energy: one chain. GPU-hours come from the same case model as the throughput rows (score_cases scores a
  GPU-hour row from its configuration); a MWh or tCO2e row is first predicted in GPU-hours from its own
  configuration, then turned into energy and carbon with the power, PUE and grid intensity it records
  (`planner.cases.energy_cases.energy_from_gpu_hours`, which calls `planner.formulas.energy`).
Rows the models cannot predict carry a reason instead of a number. The same rules apply to every row.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.cases.case_scoring import score_cases, summarise
from planner.cases.compute_cases import load_case_gpus
from planner.cases.energy_cases import energy_from_gpu_hours
from planner.cases.memory_cases import predict_memory_case
from planner.cases.rel_error import relative_error
from planner.catalogue.paths import bundled_data_dir

if TYPE_CHECKING:
    import polars as pl

CATEGORIES = ("memory", "throughput", "time", "energy")
# DESIGN.md §4, "Case files": the controlled vocabulary of measured_unit.
MEASURED_UNITS = (
    "tokens_per_s_per_gpu", "samples_per_s_total", "tflops_per_gpu_model", "tflops_per_gpu_hardware",
    "tflops_per_gpu_peak_claim", "tokens_per_s_ambiguous", "gib_peak_allocated_per_gpu",
    "gib_peak_reserved_per_gpu", "gib_device_used_per_gpu", "gib_peak_per_gpu_unspecified",
    "gb_peak_per_gpu_unspecified", "gb_upper_bound_per_gpu", "gpu_hours", "mwh", "tco2eq",
    "s_per_iteration", "days",
)  # fmt: skip
# Energy units reached through GPU-hours (a GPU-hour row itself is scored like a time row).
ENERGY_CHAIN_UNITS = ("mwh", "tco2eq")
NUMERIC_COLUMNS = (
    "params_b", "active_params_b", "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab",
    "seq_len", "micro_batch", "global_batch", "grad_accum", "lora_rank", "tp", "pp", "dp", "cp", "n_gpus",
    "n_tokens_b", "power_w_per_gpu", "pue", "grid_kg_co2e_per_kwh", "measured_value",
)  # fmt: skip
# The header of reference/calibration.csv, the case-file format (DESIGN.md §4), in its order.
CASE_FILE_COLUMNS = (
    "case_id", "category", "source", "url", "model", "params_b", "active_params_b", "n_layers", "hidden",
    "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "seq_len", "micro_batch", "global_batch", "grad_accum",
    "method", "lora_rank", "optimizer", "precision", "zero_stage_or_fsdp", "tp", "pp", "dp", "cp",
    "activation_ckpt", "flash_attn", "gpu", "n_gpus", "n_tokens_b", "power_w_per_gpu", "pue",
    "grid_kg_co2e_per_kwh", "measured_value", "measured_unit", "notes",
)  # fmt: skip
# Provenance text: read as empty when a case file leaves the column out. Extra columns are allowed.
OPTIONAL_COLUMNS = ("source", "url", "notes")
REQUIRED_COLUMNS = tuple(column for column in CASE_FILE_COLUMNS if column not in OPTIONAL_COLUMNS)
ROW_KEYS = ("case_id", "category", "predicted", "measured", "measured_unit", "rel_error", "skipped_reason")
EMPTY_SUMMARY = {
    "n": 0,
    "n_skipped": 0,
    "median_abs_rel_error": None,
    "p90_abs_rel_error": None,
    "max_abs_rel_error": None,
}
CALIBRATION_CSV = "calibration.csv"
GPUS_CSV = "gpus.csv"


def default_case_file() -> Path:
    """The case file shipped with the planner (a copy of reference/calibration.csv)."""
    return bundled_data_dir() / CALIBRATION_CSV


def load_case_file(path: Path | str) -> list[dict[str, str]]:
    """Read and check a case file; a bad file raises ValueError with one line naming file, line and column."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:
                raise ValueError(
                    f"{path}: empty file (a case file starts with the header of calibration.csv)"
                )
            _check_columns(reader.fieldnames, str(path))
            labelled = [(f"{path} line {reader.line_num}", row) for row in reader]
    except OSError as err:
        raise ValueError(f"{path}: cannot read the case file ({err.strerror or type(err).__name__})") from err
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start})") from err
    except csv.Error as err:
        raise ValueError(f"{path}: not a readable CSV file ({err})") from err
    return _checked_rows(labelled)


def validate_file(path: Path | str, category: str | None = None, *, include_basis: bool = False) -> dict:
    """`validate_cases` on a case file (see `load_case_file`)."""
    return validate_cases(load_case_file(path), category, include_basis=include_basis)


def validate_cases(
    rows: Iterable[Mapping[str, Any]] | pl.DataFrame,
    category: str | None = None,
    *,
    include_basis: bool = False,
) -> dict[str, Any]:
    """Every row predicted in its unit and the error statistics per category (`validate --format json`).

    `rows`: case-file rows (dicts of text; a polars frame of them is accepted too). `category` keeps the
    rows of one category in the output; the leave-one-out presets are still built from every throughput
    and time row, so a filtered run gives the same numbers as a full one. `include_basis` adds a `basis`
    key per row (what the prediction rests on) beyond the contract's keys.
    """
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"category: must be one of {', '.join(CATEGORIES)} (got {category!r})")
    records = list(rows.to_dicts() if hasattr(rows, "to_dicts") else rows)
    if records:
        _check_columns(sorted({key for record in records for key in record}), "case rows")
    checked = _checked_rows([(f"row {i + 1}", record) for i, record in enumerate(records)])
    wanted = [row for row in checked if category is None or row["category"] == category]
    predicted = _predict(wanted, checked)
    results = [predicted[row["case_id"]] for row in wanted]
    categories = (
        [category] if category else [c for c in CATEGORIES if any(r["category"] == c for r in wanted)]
    )
    out_rows = results if include_basis else [{key: r[key] for key in ROW_KEYS} for r in results]
    return {"rows": out_rows, "summary": error_summary(results, categories)}


def error_summary(results: Sequence[Mapping[str, Any]], categories: Sequence[str]) -> dict[str, Any]:
    """Per category: n (all rows), n_skipped, and median / p90 / max |rel_error| over the predicted rows.

    The statistics are `planner.cases.case_scoring.summarise`'s, so validate and scripts/check_throughput_rows.py
    agree; a category without rows gets n = 0 and no statistics.
    """
    stats = summarise(results)
    return {category: stats.get(category, dict(EMPTY_SUMMARY)) for category in categories}


# --- checking rows ------------------------------------------------------------------------------------------


def _check_columns(columns: Sequence[str], where: str) -> None:
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise ValueError(
            f"{where}: missing columns {', '.join(missing)} (a case file has the columns of calibration.csv)"
        )


def _checked_rows(labelled: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, str]]:
    """Rows as stripped text (None and missing optional columns → ""), each checked by `_check_row`."""
    rows, seen = [], set()
    for where, raw in labelled:
        row = {str(key): "" if value is None else str(value).strip() for key, value in raw.items() if key}
        row.update({column: row.get(column, "") for column in OPTIONAL_COLUMNS})
        _check_row(row, where)
        if row["case_id"] in seen:
            raise ValueError(
                f"{where}, column case_id: {row['case_id']!r} appears twice (ids must be unique)"
            )
        seen.add(row["case_id"])
        rows.append(row)
    return rows


def _check_row(row: Mapping[str, str], where: str) -> None:
    if not row["case_id"]:
        raise ValueError(f"{where}, column case_id: empty (every case needs an id)")
    if row["category"] not in CATEGORIES:
        raise ValueError(
            f"{where}, column category: {row['category']!r} is not one of {', '.join(CATEGORIES)}"
        )
    if row["measured_unit"] not in MEASURED_UNITS:
        raise ValueError(f"{where}, column measured_unit: {row['measured_unit']!r} is not a known unit")
    for column in NUMERIC_COLUMNS:
        text = row[column]
        if column == "measured_value" and not text:
            raise ValueError(f"{where}, column measured_value: empty (a case needs its published figure)")
        if text and not _positive_number(text):
            raise ValueError(f"{where}, column {column}: {text!r} is not a number > 0 (or empty)")


def _positive_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value > 0


# --- predicting ---------------------------------------------------------------------------------------------


def _predict(wanted: Sequence[dict[str, str]], every_row: Sequence[dict[str, str]]) -> dict[str, dict]:
    """case_id → result row (contract keys + basis) for the wanted rows."""
    results = {row["case_id"]: _memory_result(row) for row in wanted if row["category"] == "memory"}
    if any(row["category"] != "memory" for row in wanted):
        results.update(_compute_and_energy_results(wanted, every_row))
    return results


def _memory_result(row: Mapping[str, str]) -> dict[str, Any]:
    case = predict_memory_case(row)
    read_as = " (statistic not stated: read as allocated)" if "unspecified" in case.measured_unit else ""
    return _result(row, case.predicted, case.skipped_reason, f"{case.statistic} peak per GPU{read_as}")


def _compute_and_energy_results(
    wanted: Sequence[dict[str, str]], every_row: Sequence[dict[str, str]]
) -> dict[str, dict[str, Any]]:
    """Throughput, time and energy rows from one `score_cases` pass over the whole file.

    A MWh or tCO2e row joins the pass as a GPU-hour row of the same configuration ("its GPU-hours view"):
    score_cases predicts GPU-hours from the configuration alone (the measured value only enters the
    rel_error it computes, which is discarded here), then the row's power, PUE and grid intensity convert.
    """
    chain = [
        row for row in wanted if row["category"] == "energy" and row["measured_unit"] in ENERGY_CHAIN_UNITS
    ]
    chain_ids = {row["case_id"] for row in chain}
    views = [{**row, "measured_unit": "gpu_hours"} for row in chain]
    scored = {r["case_id"]: r for r in score_cases([*every_row, *views], _case_gpus(), holdout="row")}
    results = {}
    for row in wanted:
        if row["category"] == "memory":
            continue
        score = scored.get(row["case_id"])
        if row["case_id"] in chain_ids:
            results[row["case_id"]] = _energy_chain_result(row, score)
        elif score is None:
            reason = (
                f"measured_unit {row['measured_unit']!r} is not predicted for category {row['category']!r}"
            )
            results[row["case_id"]] = _result(row, None, reason, "")
        else:
            results[row["case_id"]] = _result(row, score["predicted"], score["skipped_reason"], _basis(score))
    return results


def _energy_chain_result(row: Mapping[str, str], gpu_hours_score: Mapping[str, Any] | None) -> dict:
    if gpu_hours_score is None or gpu_hours_score["predicted"] is None:
        reason = (gpu_hours_score or {}).get("skipped_reason") or "no GPU-hour prediction"
        return _result(row, None, f"GPU-hours cannot be predicted: {reason}", "")
    hours = float(gpu_hours_score["predicted"])
    basis = f"case-model {hours:,.0f} GPU-hours at {_basis(gpu_hours_score)}"
    case = energy_from_gpu_hours(row, hours, basis)
    return _result(row, case.predicted, case.skipped_reason, case.basis)


def _basis(score: Mapping[str, Any]) -> str:
    if score.get("efficiency_used") is None:
        return ""
    parts = [f"efficiency preset {score['efficiency_used']:.3f}"]
    return "; ".join([*parts, *filter(None, [score.get("assumptions")])])


def _result(
    row: Mapping[str, str], predicted: float | None, reason: str | None, basis: str
) -> dict[str, Any]:
    """One output row; a non-finite prediction is reported as skipped rather than as NaN in the JSON."""
    if predicted is not None and not math.isfinite(predicted):
        predicted, reason = None, reason or "the model gives no finite prediction for this configuration"
    measured = float(row["measured_value"])
    return {
        "case_id": row["case_id"],
        "category": row["category"],
        "predicted": None if predicted is None else float(predicted),
        "measured": measured,
        "measured_unit": row["measured_unit"],
        "rel_error": relative_error(predicted, measured),
        "skipped_reason": (reason or "no prediction") if predicted is None else None,
        "basis": basis if predicted is not None else "",
    }


@lru_cache(maxsize=1)
def _case_gpus() -> dict[str, dict[str, Any]] | None:
    """The bundled GPU catalogue's figures for the case model (its built-in figures when absent)."""
    path = bundled_data_dir() / GPUS_CSV
    return load_case_gpus(path) if path.is_file() else None
