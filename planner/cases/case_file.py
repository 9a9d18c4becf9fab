"""Reading and checking a case file (the columns of reference/calibration.csv, DESIGN.md §4).

Every malformed cell of every row is collected and reported at once (`CaseFileError`, one line per problem
naming the row and the column); a file whose header lacks a column is refused before its rows are read. A
case file that lacks a newer optional column reads it as blank.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

from planner.catalogue.paths import bundled_data_dir
from planner.inputs.bounded_read import Limit, ReadLimitError, read_limited
from planner.inputs.comm_inputs import OVERLAP_MODELS, ReduceDtype
from planner.inputs.loading_inputs import MODEL_LOADINGS

# multimodal: vision-language and diffusion rows (planner.cases.case_multimodal)
CATEGORIES = ("memory", "throughput", "time", "energy", "multimodal")
# `validate --refit`: presets rebuilt without the scored row, or without every row of its source document. Kept
# with the case-file vocabulary so that the CLI offers them without loading the scorer (and polars).
REFIT_MODES = ("row", "source")
CALIBRATION_CSV = "calibration.csv"
# DESIGN.md §4, "Case files": the controlled vocabulary of measured_unit.
MEASURED_UNITS = (
    "tokens_per_s_per_gpu", "samples_per_s_total", "tflops_per_gpu_model", "tflops_per_gpu_hardware",
    "tflops_per_gpu_peak_claim", "tokens_per_s_ambiguous", "gib_peak_allocated_per_gpu",
    "gib_peak_reserved_per_gpu", "gib_device_used_per_gpu", "gib_peak_per_gpu_unspecified",
    "gb_peak_per_gpu_unspecified", "gb_upper_bound_per_gpu", "gpu_hours", "mwh", "tco2eq",
    "s_per_iteration", "days",
)  # fmt: skip
NUMERIC_COLUMNS = (
    "params_b", "active_params_b", "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab",
    "seq_len", "micro_batch", "global_batch", "grad_accum", "lora_rank", "tp", "pp", "dp", "cp", "n_gpus",
    "n_tokens_b", "power_w_per_gpu", "pue", "grid_kg_co2e_per_kwh", "measured_value",
    # post-training
    "prompt_tokens", "completion_tokens", "samples_per_prompt", "rollout_prompts", "generation_memory_frac",
    "generation_tp",
)  # fmt: skip
# Counts and sizes: whole numbers (a layout of 2.5 GPUs or 0.5 layers is a typo).
WHOLE_COLUMNS = (
    "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "seq_len", "micro_batch",
    "global_batch", "grad_accum", "lora_rank", "tp", "pp", "dp", "cp", "n_gpus",
    "prompt_tokens", "completion_tokens", "samples_per_prompt", "rollout_prompts", "generation_tp",
)  # fmt: skip
# A count that may be zero: GPUs that only generate (0 = generation colocated on the training GPUs).
ZERO_OR_COUNT_COLUMNS = ("generation_gpus",)
FRACTION_COLUMNS = ("generation_memory_frac",)  # a share of GPU memory: in (0, 1]
# Post-training rows: how the policy is trained when `method` names the objective, the rollout's
# shape and the models beside the policy (planner.cases.case_post maps them to the Scenario).
POST_COLUMNS = (
    "policy_method", "prompt_tokens", "completion_tokens", "samples_per_prompt", "rollout_prompts",
    "generation_gpus", "reference", "reward_model", "value_model", "generation_memory_frac", "generation_tp",
    "generation_engine", "model_placement",
)  # fmt: skip
# Vocabulary of the post-training text columns (blank = the objective's default).
WORD_COLUMNS = {
    "policy_method": ("full", "lora", "qlora"),
    "reference": ("copy", "offload", "base", "precomputed", "none"),
    "generation_engine": ("vllm", "eager"),
    # shared: every model on the training GPUs (verl, TRL, DeepSpeed-Chat); separate: each model on GPUs of its
    # own (OpenRLHF's Ray placement), which the planner does not model
    "model_placement": ("shared", "separate"),
}
# The header of reference/calibration.csv, the case-file format (DESIGN.md §4), in its order.
CASE_FILE_COLUMNS = (
    "case_id", "category", "source", "url", "model", "params_b", "active_params_b", "n_layers", "hidden",
    "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "seq_len", "micro_batch", "global_batch", "grad_accum",
    "method", "lora_rank", "optimizer", "precision", "zero_stage_or_fsdp", "tp", "pp", "dp", "cp",
    "activation_ckpt", "flash_attn", "gpu", "n_gpus", "n_tokens_b", "power_w_per_gpu", "pue",
    "grid_kg_co2e_per_kwh", "measured_value", "measured_unit", "notes",
    *POST_COLUMNS,
)  # fmt: skip
# Provenance text and the post-training columns: read as empty when a case file leaves the column out (case
# files older than the post-training columns keep working, DESIGN.md §4). Extra columns are allowed.
OPTIONAL_COLUMNS = ("source", "url", "notes", *POST_COLUMNS)
# Optional setting columns beyond the reference header, case-insensitive, empty = the default
# (first value): the gradient reduce dtype and the overlap model (planner/inputs/comm_inputs.py), how the model
# was loaded before sharding.
REDUCE_DTYPE_COLUMN = "reduce_dtype"
OVERLAP_MODEL_COLUMN = "overlap_model"
SETTING_COLUMNS: dict[str, tuple[str, ...]] = {
    REDUCE_DTYPE_COLUMN: get_args(ReduceDtype),
    OVERLAP_MODEL_COLUMN: OVERLAP_MODELS,
    "model_loading": MODEL_LOADINGS,  # planner/inputs/loading_inputs.py
}
REQUIRED_COLUMNS = tuple(column for column in CASE_FILE_COLUMNS if column not in OPTIONAL_COLUMNS)
# The shipped calibration file is 140 kB for 145 cases; 5 MB is some 5,000 cases, far more than any study holds.
CASE_FILE = Limit("case file", 5_000_000, "the shipped calibration file is 140 kB for 145 cases")
MAX_LISTED_PROBLEMS = 50  # a file with more malformed cells is listed up to here, then counted


class CaseFileError(ValueError):
    """A case file or rows that cannot be read; `problems` holds one line per malformed cell."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        lines = self.problems[:MAX_LISTED_PROBLEMS]
        if len(self.problems) > MAX_LISTED_PROBLEMS:
            lines.append(f"... and {len(self.problems) - MAX_LISTED_PROBLEMS} more problems")
        super().__init__("\n".join(lines))


def default_case_file() -> Path:
    """The case file shipped with the planner (a copy of reference/calibration.csv)."""
    return bundled_data_dir() / CALIBRATION_CSV


def load_case_file(path: Path | str) -> list[dict[str, str]]:
    """Read and check a case file; a bad file raises CaseFileError naming file, line and column of each cell."""
    path = Path(path)
    try:
        text = read_limited(path, CASE_FILE, str(path)).decode("utf-8-sig")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames is None:
            raise CaseFileError(
                [f"{path}: empty file (a case file starts with the header of calibration.csv)"]
            )
        check_columns(reader.fieldnames, str(path))
        labelled = [(f"{path} line {reader.line_num}", row) for row in reader]
    except ReadLimitError as err:
        raise CaseFileError([str(err)]) from None
    except UnicodeDecodeError as err:
        raise CaseFileError([f"{path}: not UTF-8 text (byte {err.start})"]) from err
    except csv.Error as err:
        raise CaseFileError([f"{path}: not a readable CSV file ({err})"]) from err
    return checked_rows(labelled)


def check_columns(columns: Sequence[str], where: str) -> None:
    missing = [column for column in REQUIRED_COLUMNS if column not in columns]
    if missing:
        raise CaseFileError(
            [
                f"{where}: missing columns {', '.join(missing)} (a case file has the columns of calibration.csv)"
            ]
        )


def checked_rows(labelled: Sequence[tuple[str, Mapping[str, Any]]]) -> list[dict[str, str]]:
    """Rows as stripped text (None and missing optional columns -> ""); every problem of every row at once."""
    rows, seen, problems = [], set(), []
    for where, raw in labelled:
        row = {str(key): "" if value is None else str(value).strip() for key, value in raw.items() if key}
        row.update({column: row.get(column, "") for column in OPTIONAL_COLUMNS})
        problems += [f"{where}, column {column}: {message}" for column, message in row_problems(row)]
        if row["case_id"] and row["case_id"] in seen:
            problems.append(f"{where}, column case_id: {row['case_id']!r} appears twice (ids must be unique)")
        seen.add(row["case_id"])
        rows.append(row)
    if problems:
        raise CaseFileError(problems)
    return rows


def row_problems(row: Mapping[str, str]) -> list[tuple[str, str]]:
    """(column, message) for each malformed cell of one row."""
    problems = []
    if not row["case_id"]:
        problems.append(("case_id", "empty (every case needs an id)"))
    if row["category"] not in CATEGORIES:
        problems.append(("category", f"{row['category']!r} is not one of {', '.join(CATEGORIES)}"))
    if row["measured_unit"] not in MEASURED_UNITS:
        problems.append(("measured_unit", f"{row['measured_unit']!r} is not a known unit"))
    for column, allowed in SETTING_COLUMNS.items():
        text = row.get(column, "").lower()
        if text not in ("", *allowed):
            problems.append(
                (column, f"{text!r} is not one of {', '.join(allowed)} (or empty = {allowed[0]})")
            )
    for column in NUMERIC_COLUMNS:
        text = row[column]
        if column == "measured_value" and not text:
            problems.append((column, "empty (a case needs its published figure)"))
        elif text and not _positive_number(text):
            problems.append((column, f"{text!r} is not a number > 0 (or empty)"))
        elif text and column in WHOLE_COLUMNS and not float(text).is_integer():
            problems.append((column, f"{text!r} is not a whole number"))
        elif text and column in FRACTION_COLUMNS and float(text) > 1:
            problems.append((column, f"{text!r} is not a share in (0, 1]"))
    for column in ZERO_OR_COUNT_COLUMNS:
        text = row[column]
        if text and not _whole_count(text):
            problems.append((column, f"{text!r} is not a whole number >= 0 (or empty)"))
    for column, allowed in WORD_COLUMNS.items():
        if row[column] and row[column].lower() not in allowed:
            problems.append((column, f"{row[column]!r} is not one of {', '.join(allowed)} (or empty)"))
    return problems


def _whole_count(text: str) -> bool:
    """0, 1, 2, ... (a count that may be zero)."""
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value >= 0 and value.is_integer()


def _positive_number(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value > 0
