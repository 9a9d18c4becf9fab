"""Column headers in words for the CLI's text tables (`plans`, `runs`, `validate`, `trace`).

A text table is read by a person, so its headers are words with the unit in brackets ("Peak allocated (GiB)"),
not the record keys (`peak_allocated_gib`). JSON and CSV keep the keys: scripts read those, and the keys are the
stable interface (DESIGN.md §4). A key without a header of its own here is put in words by `header`'s rule
(underscores to spaces, a unit suffix to its bracketed unit), so a new field never prints as a raw key.
"""

from __future__ import annotations

from typing import Any, Final

HEADERS: Final[dict[str, str]] = {
    # plans (planner.library.records.StoredPlan.to_record)
    "id": "Id",
    "gpu": "GPU",
    "updated_by": "Changed by",
    "updated_at": "Changed at",
    "created_at": "Created at",
    "deleted_at": "Deleted at",
    "planner_version": "Planner version",
    # runs import (planner.runs.record.RunRecord.to_flat; the figures are worded by planner.runs.record.FIGURES)
    "path": "Log file",
    "log_format": "Log format",
    "n_lines": "Lines read",
    "case_rows": "Case rows",
    "missing_for_prediction": "Missing for a prediction",
    "run_id": "Run id",
    # runs compare (planner.runs.versus) and runs calibrate (planner.runs.calibration)
    "rel_error": "Error (predicted / measured - 1)",
    "explained_by": "What explains the gap",
    "n_runs": "Runs",
    "run_ids": "Run ids",
    # validate (planner.cli.cli_validate.render_table)
    "case_id": "Case",
    "measured_unit": "Unit",
    "error": "Error",
    "skipped_reason": "Skipped because",
    "n": "Cases",
    "n_skipped": "Skipped",
    "median_abs_error": "Median |error|",
    "p90_abs_error": "90th percentile |error|",
    "max_abs_error": "Largest |error|",
    # trace (planner.trace.traced.TraceReport.to_flat)
    "micro_batch": "Micro-batch (sequences)",
    "seq_len": "Sequence length (tokens)",
    "traced_phase_peak_gib": "Traced peak by phase (GiB)",
    "formula_vs_trace_frac": "Formula against trace (formula / traced - 1)",
    "trace_s": "Time to trace (s)",
}
# Unit suffixes of the record keys (DESIGN.md §3) and how a header writes them.
UNITS: Final[dict[str, str]] = {
    "gib": "GiB",
    "s": "s",
    "h": "h",
    "usd": "USD",
    "kwh": "kWh",
    "frac": "fraction",
    "tokens": "tokens",
}
WORDS: Final[dict[str, str]] = {"gpu": "GPU", "gpus": "GPUs", "mfu": "MFU", "tflops": "TFLOP/s", "loo": "LOO"}


def header(key: str) -> str:
    """The words a text table prints above the column `key`."""
    if key in HEADERS:
        return HEADERS[key]
    from planner.runs.record import FIGURES  # the run figures' own words, kept in one place

    if key in FIGURES:
        return FIGURES[key][:1].upper() + FIGURES[key][1:]
    *words, last = key.split("_")
    if words and last in UNITS:
        return f"{_words(words)} ({UNITS[last]})"
    return _words([*words, last])


def worded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with their keys as headers in words (for a text table only)."""
    return [{header(key): value for key, value in row.items()} for row in rows]


def _words(parts: list[str]) -> str:
    text = " ".join(WORDS.get(part, part) for part in parts if part)
    return text[:1].upper() + text[1:]
