"""The plan sheet: many plans as rows, their inputs edited cell by cell, their results in one vectorised pass.

Every row goes through the same `resolve` as a single estimate; the resolved rows are stacked into one set of
columns and `evaluate` runs once for all of them, so a sheet of 100 plans costs one evaluation, not 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError

from planner.catalogue.catalog import Catalogs, UnknownNameError
from planner.catalogue.models import preset_names
from planner.columns import GROUPS, Columns, stack
from planner.decide.bound_by import bound_by
from planner.decide.sheet_multimodal import (
    MULTIMODAL_INPUT_COLUMNS,
    MULTIMODAL_RESULT_COLUMNS,
    any_multimodal,
    multimodal_pick_lists,
)
from planner.errors import PlannerError
from planner.estimate import row, to_estimate
from planner.evaluate import evaluate
from planner.inputs.errors import scenario_error
from planner.inputs.post_training import POST_TRAININGS
from planner.inputs.scenario import Method, Precision, Pricing, Recompute, Scenario
from planner.resolve import Resolved, precision_refusal, resolve
from planner.results import Estimate


@dataclass(frozen=True)
class SheetColumn:
    """An input column of the sheet: the Scenario field it edits and the label the grid shows."""

    field: str
    label: str


SHEET_INPUT_COLUMNS: tuple[SheetColumn, ...] = (
    SheetColumn("model", "Model"),
    SheetColumn("method", "Method"),
    SheetColumn("post_training", "Objective"),  # rows with different objectives evaluate together
    SheetColumn("gpu", "GPU"),
    SheetColumn("n_gpus", "GPUs"),
    SheetColumn("examples", "Examples"),
    SheetColumn("tokens_per_example", "Tokens per example"),
    SheetColumn("epochs", "Epochs"),
    SheetColumn("seq_len", "Sequence length"),
    SheetColumn("micro_batch", "Micro-batch"),
    SheetColumn("grad_accum", "Accumulation"),
    SheetColumn("zero_stage", "ZeRO stage"),
    SheetColumn("recompute", "Recompute"),
    SheetColumn("precision", "Precision"),
    SheetColumn("pricing", "Pricing"),
    SheetColumn("region", "Region"),
)
# Shown after those when any row plans a vision-language or diffusion model (planner.decide.sheet_multimodal).
SHEET_MULTIMODAL_INPUT_COLUMNS = tuple(SheetColumn(field, label) for field, label in MULTIMODAL_INPUT_COLUMNS)
_EDITABLE = SHEET_INPUT_COLUMNS + SHEET_MULTIMODAL_INPUT_COLUMNS
FIELD_OF_LABEL = {column.label: column.field for column in _EDITABLE}
LABEL_OF_FIELD = {column.field: column.label for column in _EDITABLE}
# Result columns: (Estimate attribute, label). Units in the labels: GiB is 2^30 bytes.
SHEET_RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    # The verdict in words ("fits", "tight", "does not fit") rather than a tick box that reads as an input.
    ("fit_verdict", "Memory verdict"),
    ("wall_clock_h", "Wall clock (h)"),
    ("cost_usd", "Cost (USD)"),
    ("bound_by", "Bound by"),  # planner.decide.bound_by: the one seam for this figure
    ("peak_gib_per_device", "Peak GiB/GPU"),
    ("peak_gib_high", "Peak GiB/GPU, high end"),
    ("headroom_gib", "Headroom GiB"),
    ("device_hours", "GPU-hours"),
    ("usd_per_million_tokens", "USD per M tokens"),
    ("energy_kwh", "Energy (kWh)"),
    ("co2e_kg", "CO2e (kg)"),
)
# Shown after those when any row is post-training; a sheet of SFT plans keeps its columns.
SHEET_POST_RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("peak_phase", "Peak phase"),
    ("reference_model_gib", "Reference GiB"),
    ("reward_model_gib", "Reward model GiB"),
    ("value_model_gib", "Value model GiB"),
    ("kv_cache_gib", "KV cache GiB"),
    ("generation_time_h", "Generation (h)"),
    ("training_time_h", "Training (h)"),
    ("generation_frac", "Share generating"),
)


def pick_lists(cats: Catalogs) -> dict[str, list[Any]]:
    """The allowed values of each choice column, for the grid's drop-downs."""
    return {
        "model": preset_names(cats.models, multimodal=True),
        "method": list(get_args(Method)),
        "post_training": list(POST_TRAININGS),
        "gpu": cats.gpu_names(),
        "zero_stage": [0, 1, 2, 3],
        "recompute": list(get_args(Recompute)),
        "precision": list(get_args(Precision)),
        "pricing": list(get_args(Pricing)),
        "region": sorted(cats.grid["region"].to_list()),
        **multimodal_pick_lists(),
    }


def with_cell(scenario: Scenario, label: str, value: Any, cats: Catalogs | None = None) -> Scenario:
    """The scenario with one sheet cell changed; a PlannerError (field, allowed range) when it is refused.

    With `cats`, a GPU or precision cell that pairs a GPU with a precision it cannot run is refused too
    (`resolve.precision_refusal`); a GPU name the catalogues lack is left for the row's problem to name.
    """
    if label not in FIELD_OF_LABEL:
        raise PlannerError(
            "column", "is not an input of the sheet", value=label, allowed=", ".join(FIELD_OF_LABEL)
        )
    field = FIELD_OF_LABEL[label]
    if value is None or (isinstance(value, str) and not value.strip()):
        if Scenario.model_fields[field].default is None:  # an optional input: empty means derived
            return scenario.updated(**{field: None})
        raise PlannerError(field, "needs a value")
    try:
        changed = scenario.updated(**{field: value})
    except ValidationError as err:
        raise scenario_error(err) from None
    if cats is not None and field in ("gpu", "precision"):
        try:
            refused = precision_refusal(changed, cats)
        except UnknownNameError:
            return changed
        if refused is not None:
            raise refused
    return changed


def sheet_row_problem(error: PlannerError) -> str:
    """Why a row has no results, naming the sheet column at fault (the first of the error's inputs shown)."""
    field = next((name for name in error.fields if name in LABEL_OF_FIELD), None)
    return str(error) if field is None else error.describe(f"column “{LABEL_OF_FIELD[field]}”")


def sheet_input_columns(scenarios: Sequence[Scenario]) -> tuple[SheetColumn, ...]:
    """The input columns of a sheet: the image inputs too when any of its plans is multimodal."""
    return SHEET_INPUT_COLUMNS + (SHEET_MULTIMODAL_INPUT_COLUMNS if any_multimodal(scenarios) else ())


def sheet_inputs(scenario: Scenario, columns: Sequence[SheetColumn] = SHEET_INPUT_COLUMNS) -> dict[str, Any]:
    return {column.label: getattr(scenario, column.field) for column in columns}


def evaluate_rows(scenarios: Sequence[Scenario], cats: Catalogs) -> list[Estimate | PlannerError]:
    """Each plan's Estimate, or the PlannerError that stops it (an unknown GPU...), in one `evaluate` call."""
    found: list[Resolved | PlannerError] = []
    for scenario in scenarios:
        try:
            found.append(resolve(scenario, cats))
        except PlannerError as err:
            found.append(err)
    resolved = [item for item in found if isinstance(item, Resolved)]
    if not resolved:
        return list(found)  # type: ignore[arg-type]  # only errors here
    columns = Columns(**{group: stack([getattr(r.columns, group) for r in resolved]) for group in GROUPS})
    out = evaluate(columns)
    estimates = iter(to_estimate(r, row(out, index)) for index, r in enumerate(resolved))
    return [next(estimates) if isinstance(item, Resolved) else item for item in found]


def sheet_result_columns(scenarios: Sequence[Scenario]) -> tuple[tuple[str, str], ...]:
    """The result columns of a sheet: the post-training ones too when any of its plans is post-training, the
    parts' memory and images per second when any is multimodal."""
    post = any(scenario.post_training != "sft" for scenario in scenarios)
    mm = MULTIMODAL_RESULT_COLUMNS if any_multimodal(scenarios) else ()
    return SHEET_RESULT_COLUMNS + mm + (SHEET_POST_RESULT_COLUMNS if post else ())


def result_cells(
    result: Estimate | PlannerError, columns: Sequence[tuple[str, str]] = SHEET_RESULT_COLUMNS
) -> dict[str, Any]:
    """The result columns of one row (empty when it could not be estimated)."""
    if isinstance(result, PlannerError):
        return {label: None for _, label in columns}
    return {
        label: bound_by(result) if name == "bound_by" else getattr(result, name) for name, label in columns
    }
