"""Read one catalogue CSV into a typed polars frame, or fail with the file, row and column of the problem.

Rows are numbered as a spreadsheet shows them: the header is row 1, the first data row is row 2. Every frame
returned here carries two hidden columns, `_file` and `_row`, so that checks made after merging bundled and
team files (duplicate names, unknown GPUs) can still point at the right line; `planner.catalogue.catalog` drops them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from planner.catalogue.catalog_schema import Column, TableSpec
from planner.errors import NAME_CHAR_CLASS, NAME_CHARS, PlannerError
from planner.inputs.bounded_read import Limit, ReadLimitError, check_limited, read_limited

FILE_COL, ROW_COL = "_file", "_row"
MAX_LISTED_PROBLEMS = 5
# Bytes of one catalogue file (bundled, team or uploaded). The largest bundled file, grid_intensity.csv, is 46 kB
# for 132 rows; the longest bundled line is 1,044 characters, so 200 GPU rows of that length are 209 kB and
# 2,000 grid rows about 700 kB. A megabyte holds every file the row limits allow and is read in milliseconds.
CATALOGUE_FILE = Limit("catalogue file", 1_000_000, "enough for every row the row limits allow")
# Characters in one cell. The longest bundled cell is a 704-character note; a note, a source list or a name
# longer than this is not a catalogue entry (and would be echoed in every message about its row).
MAX_CELL_CHARS = 2_000


@dataclass(frozen=True)
class Problem:
    file: str
    row: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = [self.file]
        if self.row is not None:
            where.append(f"row {self.row}")
        if self.column is not None:
            where.append(f"column '{self.column}'")
        return f"{', '.join(where)}: {self.message}"


class CatalogError(ValueError):
    """A catalogue file is unreadable or invalid; the message names the file, row and column."""

    def __init__(self, problems: list[Problem] | str) -> None:
        self.problems = (
            [Problem("catalogue", None, None, problems)] if isinstance(problems, str) else problems
        )
        first = self.problems[0]
        self.file, self.row, self.column = first.file, first.row, first.column
        lines = [str(problem) for problem in self.problems[:MAX_LISTED_PROBLEMS]]
        if len(self.problems) > MAX_LISTED_PROBLEMS:
            lines.append(f"... and {len(self.problems) - MAX_LISTED_PROBLEMS} more problems")
        super().__init__("\n".join(lines))


class UnknownNameError(CatalogError, PlannerError):
    """A GPU, region, snapshot or mode that the catalogue does not hold; `closest` lists close matches.

    `field` is the scenario input that named it, so a surface can say the flag or widget the user touched.
    """

    def __init__(
        self,
        message: str,
        *,
        field: str = "",
        problem: str = "",
        value: str | None = None,
        closest: Sequence[str] = (),
    ) -> None:
        PlannerError.__init__(self, field, problem or message, value=value, closest=closest)
        self.problems = [Problem("catalogue", None, None, message)]
        self.file, self.row, self.column = "catalogue", None, None
        self.args = (message,)

    def __str__(self) -> str:
        return str(self.args[0])


def read_bytes(source: Path | bytes, file_label: str) -> bytes:
    """A catalogue file's bytes: an upload held to the catalogue limit, or a regular file read within it."""
    try:
        if isinstance(source, bytes | bytearray):
            return check_limited(bytes(source), CATALOGUE_FILE, file_label)
        return read_limited(source, CATALOGUE_FILE, file_label)
    except ReadLimitError as err:
        raise CatalogError([Problem(err.label, None, None, err.problem)]) from None


def read_table(source: Path | bytes, spec: TableSpec, file_label: str) -> pl.DataFrame:
    """Parse, type and range-check one file against `spec`; key uniqueness is checked too."""
    records = _records(_decode(read_bytes(source, file_label), file_label), file_label)
    _check_size(records, spec, file_label)
    header = _check_header(records[0], spec, file_label)
    if not any(any(cell.strip() for cell in record) for record in records[1:]):
        raise CatalogError([Problem(file_label, 2, None, "has a header but no data rows")])
    raw = _raw_frame(records, header, spec, file_label)
    typed, problems = _typed(raw, spec, file_label)
    problems += _duplicates(typed, spec.key, file_label)
    if problems:
        raise CatalogError(sorted(problems, key=lambda p: (p.row or 0, p.column or "")))
    return typed


def _decode(data: bytes, file_label: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        before = data[: err.start]
        row = before.count(b"\n") + 1
        line_start = before.rfind(b"\n") + 1
        header = data.split(b"\n", 1)[0].decode("utf-8", errors="replace").split(",")
        cell = before[line_start:].count(b",")
        column = header[cell].strip() if row > 1 and cell < len(header) else None
        message = f"is not valid UTF-8 (byte 0x{data[err.start]:02x}); save the file as UTF-8"
        raise CatalogError([Problem(file_label, row, column, message)]) from err


def _records(text: str, file_label: str) -> list[list[str]]:
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        raise CatalogError([Problem(file_label, None, None, f"is not a valid CSV file ({err})")]) from err
    while records and not any(cell.strip() for cell in records[-1]):
        records.pop()
    if not records:
        raise CatalogError([Problem(file_label, None, None, "is empty (expected a header and data rows)")])
    return records


def _check_size(records: list[list[str]], spec: TableSpec, file_label: str) -> None:
    """At most `spec.max_rows` data rows and `MAX_CELL_CHARS` per cell, checked before any row is typed."""
    n_rows = len(records) - 1
    if n_rows > spec.max_rows:
        message = f"has {n_rows:,} data rows; a {spec.file_name} file may have at most {spec.max_rows:,}"
        raise CatalogError([Problem(file_label, spec.max_rows + 2, None, message)])
    header = [cell.strip() for cell in records[0]]
    for row, record in enumerate(records, start=1):
        for index, cell in enumerate(record):
            if len(cell) > MAX_CELL_CHARS:
                column = header[index] if index < len(header) and row > 1 else f"#{index + 1}"
                message = f"cell has {len(cell):,} characters; at most {MAX_CELL_CHARS:,} are allowed"
                raise CatalogError([Problem(file_label, row, column, message)])


def _check_header(cells: list[str], spec: TableSpec, file_label: str) -> list[str]:
    header = [cell.strip() for cell in cells]
    known = {column.name for column in spec.columns}
    problems = [
        Problem(
            file_label, 1, name or f"#{index + 1}", f"unknown or repeated column (expected: {_names(spec)})"
        )
        for index, name in enumerate(header)
        if name not in known or header.index(name) != index
    ]
    problems += [
        Problem(file_label, 1, column.name, f"column is missing (expected: {_names(spec)})")
        for column in spec.columns
        if column.required and column.name not in header
    ]
    if problems:
        raise CatalogError(problems)
    return header


def _raw_frame(records: list[list[str]], header: list[str], spec: TableSpec, file_label: str) -> pl.DataFrame:
    cells: dict[str, list[str | None]] = {name: [] for name in header}
    rows: list[int] = []
    problems = []
    for index, record in enumerate(records[1:], start=2):
        if not any(cell.strip() for cell in record):
            continue  # a blank line between rows is harmless
        if len(record) != len(header):
            column = header[min(len(record), len(header) - 1)]
            message = f"has {len(record)} cells but the header has {len(header)} (a stray or missing comma?)"
            problems.append(Problem(file_label, index, column, message))
            continue
        rows.append(index)
        for name, cell in zip(header, record, strict=True):
            cells[name].append(cell.strip() or None)
    if problems:
        raise CatalogError(problems)
    frame = pl.DataFrame(cells, schema={name: pl.String for name in header})
    missing = [pl.lit(None, pl.String).alias(c.name) for c in spec.columns if c.name not in header]
    return frame.with_columns(
        *missing, pl.Series(ROW_COL, rows, pl.Int64), pl.lit(file_label).alias(FILE_COL)
    )


def _typed(raw: pl.DataFrame, spec: TableSpec, file_label: str) -> tuple[pl.DataFrame, list[Problem]]:
    typed = raw.select(
        *(_cast(pl.col(column.name), column.dtype).alias(column.name) for column in spec.columns),
        FILE_COL,
        ROW_COL,
    )
    problems: list[Problem] = []
    for column in spec.columns:
        problems += _column_problems(raw, typed, column, file_label)
    return typed, problems


def _cast(expr: pl.Expr, dtype: type[pl.DataType]) -> pl.Expr:
    if dtype == pl.Date:
        return expr.str.to_date("%Y-%m-%d", strict=False)
    if dtype == pl.String:
        return expr
    return expr.cast(dtype, strict=False)


def _column_problems(
    raw: pl.DataFrame, typed: pl.DataFrame, column: Column, file_label: str
) -> list[Problem]:
    name = column.name
    given, value = pl.col(f"{name}_raw"), pl.col(name)
    checks: list[tuple[pl.Expr, str]] = [(given.is_not_null() & value.is_null(), _type_words(column.dtype))]
    if column.required:
        checks.append((given.is_null(), "a value is required"))
    if column.dtype == pl.Float64:
        checks.append((value.is_not_null() & ~value.is_finite(), "must be a finite number"))
    if column.low is not None:
        too_low = value <= column.low if column.low_open else value < column.low
        checks.append((too_low, f"must be {'>' if column.low_open else '>='} {column.low:g}"))
    if column.high is not None:
        checks.append((value > column.high, f"must be <= {column.high:g}"))
    if column.is_name:
        checks.append((~value.str.contains(f"^[{NAME_CHAR_CLASS}]*$"), f"a name may use only {NAME_CHARS}"))
    if column.choices is not None:
        checks.append(
            (value.is_not_null() & ~value.is_in(column.choices), f"must be one of {column.choices}")
        )
    both = typed.select(name, ROW_COL).with_columns(raw[name].alias(f"{name}_raw"))
    problems = []
    for failing, message in checks:
        for row, got in both.filter(failing.fill_null(False)).select(ROW_COL, f"{name}_raw").iter_rows():
            problems.append(Problem(file_label, row, name, f"{message} (got {got!r})"))
    return problems


def _duplicates(frame: pl.DataFrame, key: str, file_label: str) -> list[Problem]:
    folded = frame.with_columns(pl.col(key).str.to_lowercase().alias("_key"))
    repeated = folded.filter(pl.col("_key").is_duplicated() & ~pl.col("_key").is_first_distinct())
    first_row = dict(folded.group_by("_key").agg(pl.col(ROW_COL).min()).iter_rows())
    return [
        Problem(file_label, row, key, f"duplicate '{value}' (first given in row {first_row[lowered]})")
        for value, lowered, row in repeated.select(key, "_key", ROW_COL).iter_rows()
    ]


def _type_words(dtype: type[pl.DataType]) -> str:
    words = {
        pl.Float64: "must be a number",
        pl.Int64: "must be a whole number",
        pl.Date: "must be a date YYYY-MM-DD",
    }
    return words.get(dtype, "is not valid text")


def _names(spec: TableSpec) -> str:
    return ", ".join(column.name for column in spec.columns)
