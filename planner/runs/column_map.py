"""A W&B or MLflow run exported as CSV, read through a column map the user gives.

Neither tool fixes metric names (they are whatever the training script logged), so nothing is guessed: the
user maps each figure to a column, `FIGURE=COLUMN` or `FIGURE=COLUMN*SCALE` (e.g.
`peak_allocated_gib=gpu_mem_bytes*9.313225746154785e-10`). W&B's "Export CSV" writes one row per logged
step with a `Step` column; MLflow's run table export writes one row per run with `metrics.NAME` columns:
both are rows of numbers under a header, read here one row at a time.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

from planner.runs.reading import MAX_LINE_CHARS, Progress
from planner.runs.record import FIGURES, RunLogError, RunRecord
from planner.runs.summary import Summary

PEAKS = ("peak_allocated_gib", "peak_reserved_gib", "peak_active_gib")
LASTS = ("n_steps", "wall_clock_s")


def parse_column_map(text: str) -> dict[str, tuple[str, float]]:
    """`FIGURE=COLUMN[*SCALE],...` -> {figure: (column, scale)}; an unknown figure is refused by name."""
    mapping: dict[str, tuple[str, float]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        figure, sep, target = item.partition("=")
        if not sep or figure not in FIGURES or not target:
            raise RunLogError(f"--columns: {item!r} is not FIGURE=COLUMN; figures are {', '.join(FIGURES)}")
        column, _, scale = target.partition("*")
        try:
            factor = float(scale) if scale else 1.0
        except ValueError:
            raise RunLogError(f"--columns: scale {scale!r} of {figure} is not a number") from None
        mapping[figure] = (column, factor)
    return mapping


def read_mapped_csv(
    path: Path, mapping: Mapping[str, tuple[str, float]], progress: Progress | None
) -> RunRecord:
    if not mapping:
        raise RunLogError(f"{path.name}: a CSV needs --columns FIGURE=COLUMN,... ({_header_words(path)})")
    csv.field_size_limit(MAX_LINE_CHARS)
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.DictReader(handle)
        absent = [column for column, _ in mapping.values() if column not in (reader.fieldnames or [])]
        if absent:
            raise RunLogError(f"{path.name}: no column {', '.join(absent)} ({_header_words(path)})")
        record, summary = RunRecord(path=path.name, log_format="csv"), Summary()
        for record.n_lines, row in enumerate(reader, start=1):
            for figure, (column, scale) in mapping.items():
                _add(summary, figure, row.get(column) or "", scale)
    if summary.empty():
        raise RunLogError(f"{path.name}: the mapped columns hold no number in any row")
    summary.fill(record)
    if progress is not None:
        progress(1.0)
    return record


def _add(summary: Summary, figure: str, cell: str, scale: float) -> None:
    try:
        value = float(cell) * scale
    except ValueError:
        return  # W&B leaves a cell blank on steps where that metric was not logged
    if not math.isfinite(value):
        return
    if figure in PEAKS:
        summary.peak(figure, value)
    elif figure in LASTS:
        summary.peak(figure, value)  # steps and runtime only grow: the largest is the run's
    else:
        summary.rate(figure, value)


def _header_words(path: Path) -> str:
    with path.open(encoding="utf-8", errors="replace") as handle:
        header = handle.readline(MAX_LINE_CHARS).strip()
    return f"its columns: {header[:200]}"
