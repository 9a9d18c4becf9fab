"""Saved scenarios as CSV: one row per scenario, every input plus the headline results, read back exactly.

File format (UTF-8, comma separated, header on the first row):
- `name`, then one column per `Scenario` input in declaration order, then the headline results
  (`RESULT_COLUMNS`, recomputed on every write and ignored on read).
- Empty cell = `None` for optional inputs (`params_b`, `mfu`, ...), the empty string for text inputs.
  Booleans are `true`/`false`, floats use Python's shortest round-trip form, `model_shape` is JSON text.
- Every cell goes through `planner.inputs.safe_csv.neutralise_cell` so a spreadsheet never runs it as a formula. To keep
  the round trip exact, a value that already *looks* neutralised (quotes then a formula character) gets one
  more quote, and the reader removes exactly one quote from such cells (`guard_cell` / `unguard_cell`).

Reading policy (decided here, the page follows it):
- A file with ANY problem is meant to be rejected whole: `problems` lists every bad row (spreadsheet row number,
  column, allowed range) and `scenarios` then only serves to count the rows that were fine.
- Unknown columns are ignored with a notice (a notes column added in a spreadsheet is harmless); input columns
  missing from the header take their default value, also with a notice (files from older versions still load).
- Every row must also resolve against the catalogues (known GPU, model preset, region, price snapshot).
- Names follow the page's rules (`planner.inputs.scenario_set.name_problem`), surrounding spaces dropped, and are unique.
- At most `MAX_ROWS` rows and `MAX_CSV_BYTES` bytes; UTF-8 with or without the byte-order mark Excel writes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from planner.catalogue.catalog import Catalogs
from planner.estimate import estimate, resolve
from planner.inputs.errors import describe_validation_error
from planner.inputs.safe_csv import FORMULA_PREFIXES, neutralise_cell
from planner.inputs.scenario import Scenario, field_range
from planner.inputs.scenario_set import MAX_SAVED, name_problem

NAME_COLUMN = "name"
INPUT_COLUMNS: tuple[str, ...] = tuple(Scenario.model_fields)
RESULT_COLUMNS: tuple[str, ...] = (
    "training_tokens",
    "wall_clock_h",
    "device_hours",
    "cost_usd",
    "usd_per_million_tokens",
    "tokens_per_s",
    "mfu_used",
    "peak_gib_per_device",
    "fits_vram",
    "energy_kwh",
    "co2e_kg",
    "estimate_problem",
)
# `mfu` is an input (an override, usually empty); the utilisation the estimate used is exported as `mfu_used`.
_RESULT_SOURCE = {"mfu_used": "mfu"}

MAX_ROWS = MAX_SAVED
# 1,000 rows, each with an imported shape, measured 0.77 MB; 2 MB leaves room for a notes column or two.
MAX_CSV_BYTES = 2_000_000
HEADER_ROW = 1  # spreadsheet numbering: the header is row 1, the first scenario row 2

_LOOKS_GUARDED = re.compile("^'+[" + re.escape("".join(FORMULA_PREFIXES)) + "]")
_LOOKS_FORMULA = re.compile("^'*[" + re.escape("".join(FORMULA_PREFIXES)) + "]")


class ScenarioImport(NamedTuple):
    """What a CSV held: good rows by name, one message per bad row, and notices that did not block it."""

    scenarios: dict[str, Scenario]
    problems: list[str]
    notices: list[str]


def guard_cell(text: str) -> str:
    """Neutralise a formula-like cell, reversibly (see the module docstring)."""
    if _LOOKS_FORMULA.match(text) and not text.startswith(FORMULA_PREFIXES):
        return "'" + text  # already looks neutralised: one more quote so the reader can tell
    return neutralise_cell(text)


def unguard_cell(text: str) -> str:
    """Undo `guard_cell`: only cells that start with quotes then a formula character lose one quote."""
    return text[1:] if _LOOKS_GUARDED.match(text) else text


# ------------------------------------------------------------------------------------------------- writing


def headline_results(scenario: Scenario, catalogs: Catalogs) -> dict[str, Any]:
    """The result columns for one scenario; an estimate that fails leaves them empty and says why."""
    try:
        flat = estimate(scenario, catalogs).to_flat()
    except ValueError as err:
        return {column: None for column in RESULT_COLUMNS} | {"estimate_problem": str(err)}
    out = {column: flat.get(_RESULT_SOURCE.get(column, column)) for column in RESULT_COLUMNS}
    out["estimate_problem"] = ""
    return out


def scenarios_to_csv(
    scenarios: Mapping[str, Scenario],
    results: Mapping[str, Mapping[str, Any]] | None,
    catalogs: Catalogs,
) -> str:
    """CSV text of the saved scenarios; `results` (by name) may carry already computed headline results."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow((NAME_COLUMN, *INPUT_COLUMNS, *RESULT_COLUMNS))
    for name, scenario in scenarios.items():
        found = (results or {}).get(name) or headline_results(scenario, catalogs)
        cells = [name, *(_input_text(getattr(scenario, column)) for column in INPUT_COLUMNS)]
        cells += [_result_text(found.get(column)) for column in RESULT_COLUMNS]
        writer.writerow(guard_cell(cell) for cell in cells)
    return buffer.getvalue()


def _input_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BaseModel):
        return json.dumps(value.model_dump(mode="json"), separators=(",", ":"))
    if isinstance(value, float):
        return repr(value)  # shortest text that parses back to the same float
    return str(value)


def _result_text(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"  # results are recomputed on read; six digits are for people
    return str(value)


# ------------------------------------------------------------------------------------------------- reading


def read_scenarios_csv(data: bytes | str, catalogs: Catalogs) -> ScenarioImport:
    """Parse a scenarios CSV. Reject the file whole when `problems` is not empty (module docstring)."""
    records, problem = _records(data)
    if problem:
        return ScenarioImport({}, [problem], [])
    header = [cell.strip() for cell in records[0]]
    problem = _header_problem(header, n_rows=len(records) - 1)
    if problem:
        return ScenarioImport({}, [problem], [])
    notices = _header_notices(header)
    scenarios: dict[str, Scenario] = {}
    problems: list[str] = []
    first_row_of: dict[str, int] = {}
    for index, cells in enumerate(records[1:]):
        row_number = HEADER_ROW + 1 + index
        if not any(cell.strip() for cell in cells):
            continue  # blank lines and rows of empty cells that spreadsheets leave at the end
        if len(cells) != len(header):
            problems.append(
                f"Row {row_number}: {len(cells)} cells, but the header has {len(header)} columns."
            )
            continue
        name, scenario, row_problem = _row(dict(zip(header, cells, strict=True)), row_number, catalogs)
        if name in first_row_of:
            row_problem = f"Row {row_number}, column name: '{name}' already names row {first_row_of[name]}."
        first_row_of.setdefault(name, row_number)
        if row_problem:
            problems.append(row_problem)
        elif scenario is not None:
            scenarios[name] = scenario
    if not scenarios and not problems:
        problems.append("The file has a header but no scenario rows.")
    return ScenarioImport(scenarios, problems, notices)


def _records(data: bytes | str) -> tuple[list[list[str]], str | None]:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_CSV_BYTES:
        return [], f"The file has {len(raw):,} bytes; at most {MAX_CSV_BYTES:,} are accepted."
    try:
        text = raw.decode("utf-8-sig")  # the -sig variant drops the byte-order mark Excel writes
    except UnicodeDecodeError as err:
        return [], f"Not a UTF-8 text file (undecodable byte at position {err.start}); save it as CSV UTF-8."
    if "\x00" in text:
        return [], "Not a text file (it contains NUL bytes); save it as CSV UTF-8."
    if not text.strip():
        return [], "The file is empty."
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        return [], f"Not readable as CSV: {err}."
    if len(records) - 1 > MAX_ROWS:
        return [], f"The file has {len(records) - 1:,} rows; at most {MAX_ROWS:,} scenarios are accepted."
    return records, None


def _header_problem(header: list[str], n_rows: int) -> str | None:
    if NAME_COLUMN not in header:
        if len(header) == 1 and ";" in header[0]:
            return "Row 1: the columns are separated by ';'. Save the file with commas (CSV UTF-8)."
        return f"Row 1: no '{NAME_COLUMN}' column. The header must name the columns, starting with '{NAME_COLUMN}'."
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:
        return f"Row 1: column {', '.join(repr(c) for c in repeated)} appears more than once."
    if n_rows == 0:
        return "The file has a header but no scenario rows."
    return None


def _header_notices(header: list[str]) -> list[str]:
    known = {NAME_COLUMN, *INPUT_COLUMNS, *RESULT_COLUMNS}
    unknown = [column for column in header if column not in known]
    missing = [column for column in INPUT_COLUMNS if column not in header]
    notices = []
    if unknown:
        notices.append(f"Ignored columns that are not scenario inputs: {', '.join(unknown)}.")
    if missing:
        notices.append(f"Inputs missing from the file take their default value: {', '.join(missing)}.")
    return notices


def _row(
    cells: dict[str, str], row_number: int, catalogs: Catalogs
) -> tuple[str, Scenario | None, str | None]:
    """(name, scenario or None, problem or None) for one data row."""
    name = unguard_cell(cells[NAME_COLUMN]).strip()
    problem = name_problem(name)
    if problem:
        return name, None, f"Row {row_number}, column name: {problem}."
    fields: dict[str, Any] = {}
    for column in INPUT_COLUMNS:
        if column in cells:
            try:
                fields[column] = _input_value(column, unguard_cell(cells[column]).strip())
            except ValueError as err:
                return name, None, f"Row {row_number}, column {column}: not valid JSON ({err})."
    try:
        scenario = Scenario.model_validate(fields)
    except ValidationError as err:
        return name, None, f"Row {row_number}, {_locate(err)}"
    try:
        resolve(scenario, catalogs)
    except ValueError as err:
        column = _column_named_in(str(err))
        return name, None, f"Row {row_number}, column {column}: {str(err).removeprefix(column + ': ')}."
    return name, scenario, None


def _input_value(column: str, text: str) -> Any:
    if column == "model_shape":
        return json.loads(text) if text else None
    if text == "":
        return None if Scenario.model_fields[column].default is None else _empty_for(column)
    return text


def _empty_for(column: str) -> Any:
    # Text inputs may be empty (a custom model, the latest price snapshot); other required inputs may not, so
    # None goes to validation, which names the column and its allowed range.
    return "" if Scenario.model_fields[column].annotation is str else None


def _locate(err: ValidationError) -> str:
    """ "column X: what is wrong (allowed ...)" from the first error, plus how many more the row has."""
    text = describe_validation_error(err)
    loc = err.errors()[0]["loc"]
    column = str(loc[0]) if loc else _column_named_in(text)
    for prefix in (f"{column}: ", f"{column}."):
        text = text.removeprefix(prefix)
    if column in Scenario.model_fields and Scenario.model_fields[column].annotation is bool:
        text = text.replace(f"allowed: {field_range(column)}", "allowed: true or false")
    more = len(err.errors()) - 1
    return f"column {column}: {text}" + (
        f" (and {more} more problem{'s' * (more > 1)} in this row)" if more else ""
    )


_CATALOGUE_KINDS = {"GPU": "gpu", "region": "region", "price snapshot": "snapshot", "pricing mode": "pricing"}


def _column_named_in(message: str) -> str:
    """The input a planner message is about: "field: ..." or "unknown <kind> ..." (catalogue lookups)."""
    head = message.split(":")[0].strip()
    if head in Scenario.model_fields:
        return head
    for kind, column in _CATALOGUE_KINDS.items():
        if message.startswith(f"unknown {kind} "):
            return column
    return "(several)"
