"""Score the planner against published measurements: the library side of `python -m planner validate`.

A case file has the columns of `reference/calibration.csv` (DESIGN.md §4): one published figure per row with
the configuration that produced it. Each row becomes a Scenario (`planner.cases.case_row.case_scenario`) and is
predicted through resolve -> evaluate, the path of `planner.estimate`, then read in the row's unit
(`planner.cases.case_predict`). An energy row in MWh or tCO2e is first predicted in GPU-hours the same way,
then turned into energy and carbon with the power, PUE and grid intensity it records
(`planner.cases.energy_cases.energy_from_gpu_hours`).

By default the prediction is black-box: the shipped catalogues and efficiency presets only, so a row's
prediction never depends on the other rows of the file. `refit="row"` or `"source"` is cross-validation: the
presets are rebuilt from the file without the row, or without every row of its source document
(`planner.cases.case_scoring`). Rows the planner cannot predict carry a reason instead of a number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.cases import case_post
from planner.cases.case_file import (
    CASE_FILE_COLUMNS,
    CATEGORIES,
    MEASURED_UNITS,
    REFIT_MODES,
    CaseFileError,
    check_columns,
    checked_rows,
    default_case_file,
    load_case_file,
)
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_layout import RECOMMEND, STATED, layout_source, recommended
from planner.cases.case_multimodal import is_multimodal, multimodal_case
from planner.cases.case_predict import predict_case_basis
from planner.cases.case_row import MEMORY_UNITS, TIME_UNITS, CaseFacts, case_scenario
from planner.cases.case_scoring import (
    feeds_presets,
    source_of,
    summarise,
)
from planner.cases.energy_cases import energy_from_gpu_hours
from planner.cases.rel_error import relative_error
from planner.cases.residual import residual_from, residual_records
from planner.catalogue.catalog import Catalogs
from planner.inputs.scenario import Scenario

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "CASE_FILE_COLUMNS", "CATEGORIES", "MEASURED_UNITS", "REFIT_MODES", "ROW_KEYS", "CaseFileError",
    "default_case_file", "error_summary", "load_case_file", "post_training_summary", "relative_error", "validate_cases", "validate_file",
]  # fmt: skip

# Energy units reached through GPU-hours (a GPU-hour row itself is predicted like a time row).
ENERGY_CHAIN_UNITS = ("mwh", "tco2eq")
CATEGORY_UNITS = {
    "memory": (*MEMORY_UNITS, "gb_upper_bound_per_gpu"),
    "throughput": (*TIME_UNITS, "tflops_per_gpu_peak_claim"),
    "time": (*TIME_UNITS, "tflops_per_gpu_peak_claim"),
    "energy": ("gpu_hours", *ENERGY_CHAIN_UNITS),
    "multimodal": (*MEMORY_UNITS, "gb_upper_bound_per_gpu", *TIME_UNITS),  # vision-language, diffusion
}
POST_GROUP = "post_training"  # rows whose method is a preference or RL objective
# `layout_source`: "stated", or "recommend" for a row predicted at the plan search's pick (case_layout);
# `fits_memory`: whether the memory model says the predicted plan fits (None when nothing was predicted)
ROW_KEYS = (
    "case_id", "category", "predicted", "measured", "measured_unit", "rel_error", "skipped_reason",
    "layout_source", "fits_memory",
)  # fmt: skip
EMPTY_SUMMARY = {
    "n": 0,
    "n_skipped": 0,
    "median_abs_rel_error": None,
    "p90_abs_rel_error": None,
    "max_abs_rel_error": None,
}
Case = tuple[Scenario, CaseFacts, str]  # scenario, case facts, GPU generation


def validate_file(
    path: Path | str,
    cats: Catalogs,
    category: str | None = None,
    *,
    refit: str | None = None,
    include_basis: bool = False,
) -> dict:
    """`validate_cases` on a case file (see `planner.cases.case_file.load_case_file`)."""
    return validate_cases(load_case_file(path), cats, category, refit=refit, include_basis=include_basis)


def validate_cases(
    rows: Iterable[Mapping[str, Any]] | pl.DataFrame,
    cats: Catalogs,
    category: str | None = None,
    *,
    refit: str | None = None,
    include_basis: bool = False,
) -> dict[str, Any]:
    """Every row predicted in its unit and the error statistics per category (`validate --format json`).

    `rows`: case-file rows (dicts of text; a polars frame of them is accepted too). `category` keeps the
    rows of one category in the output (refit presets still come from every row, so a filtered run gives the
    same numbers as a full one). `refit`: None (shipped presets), "row" or "source". `include_basis` adds a
    `basis` key per row (what the prediction rests on) beyond the contract's keys. `cats`: the catalogues
    the rows are predicted from; black-box validation passes the shipped ones (`default_catalogs()`).
    """
    if category is not None and category not in CATEGORIES:
        raise ValueError(f"category: must be one of {', '.join(CATEGORIES)} (got {category!r})")
    if refit is not None and refit not in REFIT_MODES:
        raise ValueError(f"refit: must be one of {', '.join(REFIT_MODES)} (got {refit!r})")
    records = list(rows.to_dicts() if hasattr(rows, "to_dicts") else rows)
    if records:
        check_columns(sorted({key for record in records for key in record}), "case rows")
    checked = checked_rows([(f"row {i + 1}", record) for i, record in enumerate(records)])
    gpus = GpuMatcher(cats)
    cases = {row["case_id"]: _case(row, cats, gpus) for row in checked}
    wanted = [row for row in checked if category is None or row["category"] == category]
    presets = _Presets(cats, refit, checked, cases)
    results = [_predicted(row, cases[row["case_id"]], presets) for row in wanted]
    categories = (
        [category] if category else [c for c in CATEGORIES if any(r["category"] == c for r in wanted)]
    )
    out_rows = results if include_basis else [{key: r[key] for key in ROW_KEYS} for r in results]
    return {"rows": out_rows, "summary": error_summary(results, categories)}


def post_training_summary(
    results: Sequence[Mapping[str, Any]], cases: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """n, n_skipped and median / p90 / max |rel_error| of the post-training rows (a preference or RL objective
    in `method`) of every category together: the group the post-training acceptance target is set on. Kept out of
    `validate_cases`' object, whose keys are DESIGN.md §4's contract."""
    post_ids = {str(case["case_id"]) for case in cases if _is_post(case)}
    post = [{**r, "category": POST_GROUP} for r in results if r["case_id"] in post_ids]
    return error_summary(post, [POST_GROUP])[POST_GROUP]


def _is_post(row: Mapping[str, Any]) -> bool:
    return case_post.objective(row) != "sft"


def error_summary(results: Sequence[Mapping[str, Any]], categories: Sequence[str]) -> dict[str, Any]:
    """Per category: n (all rows), n_skipped, and median / p90 / max |rel_error| over the predicted rows;
    a category without rows gets n = 0 and no statistics."""
    stats = summarise(results)
    return {category: stats.get(category, dict(EMPTY_SUMMARY)) for category in categories}


def _case(row: dict[str, str], cats: Catalogs, gpus: GpuMatcher) -> Case | str:
    """The row's Scenario and facts (an MWh or tCO2e row as its GPU-hour view), or why it has none."""
    unit, category = row["measured_unit"], row["category"]
    if unit not in CATEGORY_UNITS[category]:
        return f"measured_unit {unit!r} is not predicted for category {category!r}"
    view = {**row, "measured_unit": "gpu_hours"} if unit in ENERGY_CHAIN_UNITS else row
    made = multimodal_case(view, gpus) if is_multimodal(view) else case_scenario(view, cats, gpus)
    if isinstance(made, str):
        return f"GPU-hours cannot be predicted: {made}" if view is not row else made
    gpu = gpus.match(made[0].gpu)
    return made[0], made[1], str(gpu["generation"]) if isinstance(gpu, dict) else "default"


class _Presets:
    """The catalogues each row is predicted with: the shipped ones, or with presets refit without the row
    (or its source document) from the file's own throughput and time rows."""

    def __init__(
        self, cats: Catalogs, refit: str | None, rows: Sequence[dict[str, str]], cases: dict
    ) -> None:
        self.cats, self.refit = cats, refit
        self._tables: dict[str, Catalogs] = {}
        if refit is None:
            return
        found = residual_records(rows, cases, cats, feeds_presets)  # the operator model's residual
        self.residuals = [(self._key(row), (gen, source_of(row), ratio)) for row, gen, ratio in found]

    def _key(self, row: Mapping[str, str]) -> str:
        return source_of(row) if self.refit == "source" else row["case_id"]

    def for_row(self, row: Mapping[str, str]) -> tuple[Catalogs, str]:
        """(catalogues, words for the basis) for one row; memory rows use no efficiency preset."""
        if self.refit is None or row["category"] == "memory":
            return self.cats, "shipped presets"
        key = self._key(row)
        if key not in self._tables:
            # Shaped rows' time comes from the operator model and its residual, which is refit; the
            # efficiency presets only serve bare parameter counts now and stay shipped.
            residual = residual_from([record for held, record in self.residuals if held != key])
            self._tables[key] = replace(self.cats, operator_residual=residual)
        what = "this row" if self.refit == "row" else f"source {key}"
        return self._tables[key], f"residual refit without {what}"


def _predicted(row: dict[str, str], case: Case | str, presets: _Presets) -> dict[str, Any]:
    if isinstance(case, str):
        return _result(row, None, case, "", layout_source(row))
    scenario, facts, _ = case
    cats, label = presets.for_row(row)
    source = layout_source(row)
    try:
        if source == RECOMMEND:  # the source states no layout: the plan search's pick, said in the basis
            picked = recommended(row, scenario, cats)
            if isinstance(picked, str):
                return _result(row, None, picked, "", source)
            scenario, facts = picked[0], replace(facts, assumptions=(*facts.assumptions, picked[1]))
        value, _, words, fits = predict_case_basis(scenario, facts, cats)
    except ValueError as err:  # a preset cell the (refit) table cannot fill, an unknown catalogue name
        return _result(row, None, f"no prediction: {str(err).splitlines()[0]}", "", source)
    if facts.statistic:
        read_as = " (statistic not stated: read as allocated)" if "unspecified" in facts.measured_unit else ""
        head = f"{facts.statistic} peak per GPU{read_as}"
    else:
        head = f"{words} ({label})"
    basis = "; ".join([head, *facts.assumptions])
    if row["measured_unit"] in ENERGY_CHAIN_UNITS:
        energy = energy_from_gpu_hours(row, value, f"case-model {value:,.0f} GPU-hours at {basis}")
        return _result(row, energy.predicted, energy.skipped_reason, energy.basis, source, fits)
    return _result(row, value, None, basis, source, fits)


def _result(
    row: Mapping[str, str],
    predicted: float | None,
    reason: str | None,
    basis: str,
    layout: str = STATED,
    fits: bool | None = None,
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
        "layout_source": layout,
        "fits_memory": fits if predicted is not None else None,
        "basis": basis if predicted is not None else "",
    }
