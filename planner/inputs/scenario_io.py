"""Saved scenarios as CSV: one row per scenario, every input plus the headline results, read back exactly.

File format (UTF-8, comma separated, header on the first row):
- `name`, then one column per `Scenario` input in declaration order, then the headline results
  (`RESULT_COLUMNS`, ignored on read). This module only writes the results it is given: computing them runs the
  pipeline, which the inputs package does not import (`planner.decide.scenario_results` composes the two).
- Empty cell = `None` for optional inputs (`params_b`, `mfu`, ...), the empty string for text inputs.
  Booleans are `true`/`false`, input floats use Python's shortest round-trip form (exact on read), result
  floats four significant figures (`planner.inputs.safe_csv.csv_number`), `model_shape` is JSON text.
- Every cell goes through `planner.inputs.safe_csv.neutralise_cell` so a spreadsheet never runs it as a formula. To keep
  the round trip exact, a value that already *looks* neutralised (quotes then a formula character) gets one
  more quote, and the reader removes exactly one quote from such cells (`guard_cell` / `unguard_cell`).

Reading policy (decided here, the page follows it):
- A file with ANY problem is meant to be rejected whole: `problems` lists every bad row as an `ImportProblem`
  (spreadsheet row number, column, what is wrong and the allowed range) and `scenarios` then only serves to
  count the rows that were fine.
- Unknown columns are ignored with a notice (a notes column added in a spreadsheet is harmless); input columns
  missing from the header take their default value, also with a notice (files from older versions still load).
- A caller may pass `check`, run on every valid row (the app checks that it resolves against the catalogues:
  known GPU, model preset, region, price snapshot); a `PlannerError` it raises is reported like any other.
- Names follow the page's rules (`planner.inputs.scenario_set.name_problem`), surrounding spaces dropped, and are unique.
- At most `MAX_ROWS` rows and `MAX_CSV_BYTES` bytes; UTF-8 with or without the byte-order mark Excel writes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from planner.errors import PlannerError, shortened
from planner.inputs.errors import scenario_error
from planner.inputs.safe_csv import FORMULA_PREFIXES, csv_number, neutralise_cell
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_set import MAX_SAVED, name_problem
from planner.model.hf_json import parse_json_text

NAME_COLUMN = "name"
INPUT_COLUMNS: tuple[str, ...] = tuple(Scenario.model_fields)
# the multimodal figures (each part's GiB, image tokens, images/s) are empty for a text model
RESULT_COLUMNS: tuple[str, ...] = (
    "training_tokens", "wall_clock_h", "device_hours", "cost_usd", "usd_per_million_tokens", "tokens_per_s",
    "mfu_used", "peak_gib_per_device", "fits_vram", "energy_kwh", "co2e_kg",
    "vision_encoder_gib", "text_encoders_gib", "vae_gib", "image_tokens_per_example", "images_per_s",
    "estimate_problem",
)  # fmt: skip
# `mfu` is an input (an override, usually empty); the utilisation the estimate used is exported as `mfu_used`.
RESULT_SOURCE = {"mfu_used": "mfu"}

MAX_ROWS = MAX_SAVED
# 1,000 rows, each with an imported shape, measured 0.77 MB; 2 MB leaves room for a notes column or two.
MAX_CSV_BYTES = 2_000_000
HEADER_ROW = 1  # spreadsheet numbering: the header is row 1, the first scenario row 2

_LOOKS_GUARDED = re.compile("^'+[" + re.escape("".join(FORMULA_PREFIXES)) + "]")
_LOOKS_FORMULA = re.compile("^'*[" + re.escape("".join(FORMULA_PREFIXES)) + "]")


Check = Callable[[Scenario], object]  # raises PlannerError for a row the caller cannot use


@dataclass(frozen=True)
class ImportProblem:
    """One reason a file is refused: the spreadsheet row (header = 1) and column when known, and what is wrong."""

    row: int | None
    column: str | None
    problem: str

    def __str__(self) -> str:
        where = [f"Row {self.row}"] if self.row is not None else []
        where += [f"column {self.column}"] if self.column is not None else []
        return f"{', '.join(where)}: {self.problem}" if where else self.problem


class ScenarioImport(NamedTuple):
    """What a CSV held: good rows by name, one problem per bad row, and notices that did not block it."""

    scenarios: dict[str, Scenario]
    problems: list[ImportProblem]
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


def scenarios_to_csv(
    scenarios: Mapping[str, Scenario], results: Mapping[str, Mapping[str, Any]] | None = None
) -> str:
    """CSV text of the saved scenarios; `results` (by name) holds the headline results, empty where absent."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow((NAME_COLUMN, *INPUT_COLUMNS, *RESULT_COLUMNS))
    for name, scenario in scenarios.items():
        found = (results or {}).get(name) or {}
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
        return csv_number(value)  # results are recomputed on read; four significant figures are for people
    return str(value)


# ------------------------------------------------------------------------------------------------- reading


def read_scenarios_csv(data: bytes | str, check: Check | None = None) -> ScenarioImport:
    """Parse a scenarios CSV. Reject the file whole when `problems` is not empty (module docstring)."""
    records, problem = _records(data)
    if problem:
        return ScenarioImport({}, [problem], [])
    header = [cell.strip() for cell in records[0]]
    problem = _header_problem(header, n_rows=len(records) - 1)
    if problem:
        return ScenarioImport({}, [problem], [])
    scenarios: dict[str, Scenario] = {}
    problems: list[ImportProblem] = []
    first_row_of: dict[str, int] = {}
    for index, cells in enumerate(records[1:]):
        row_number = HEADER_ROW + 1 + index
        if not any(cell.strip() for cell in cells):
            continue  # blank lines and rows of empty cells that spreadsheets leave at the end
        if len(cells) != len(header):
            text = f"{len(cells)} cells, but the header has {len(header)} columns."
            problems.append(ImportProblem(row_number, None, text))
            continue
        name, scenario, row_problem = _row(dict(zip(header, cells, strict=True)), row_number, check)
        if name in first_row_of:
            text = f"'{name}' already names row {first_row_of[name]}."
            row_problem = ImportProblem(row_number, NAME_COLUMN, text)
        first_row_of.setdefault(name, row_number)
        if row_problem:
            problems.append(row_problem)
        elif scenario is not None:
            scenarios[name] = scenario
    if not scenarios and not problems:
        problems.append(ImportProblem(None, None, "The file has a header but no scenario rows."))
    return ScenarioImport(scenarios, problems, _header_notices(header))


def _records(data: bytes | str) -> tuple[list[list[str]], ImportProblem | None]:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > MAX_CSV_BYTES:
        return [], _whole(f"The file has {len(raw):,} bytes; at most {MAX_CSV_BYTES:,} are accepted.")
    try:
        text = raw.decode("utf-8-sig")  # the -sig variant drops the byte-order mark Excel writes
    except UnicodeDecodeError as err:
        return [], _whole(
            f"Not a UTF-8 text file (undecodable byte at position {err.start}); save it as CSV UTF-8."
        )
    if "\x00" in text:
        return [], _whole("Not a text file (it contains NUL bytes); save it as CSV UTF-8.")
    if not text.strip():
        return [], _whole("The file is empty.")
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:
        return [], _whole(f"Not readable as CSV: {err}.")
    if len(records) - 1 > MAX_ROWS:
        return [], _whole(
            f"The file has {len(records) - 1:,} rows; at most {MAX_ROWS:,} scenarios are accepted."
        )
    return records, None


def _whole(text: str) -> ImportProblem:
    return ImportProblem(None, None, text)


def _header_problem(header: list[str], n_rows: int) -> ImportProblem | None:
    if NAME_COLUMN not in header:
        if len(header) == 1 and ";" in header[0]:
            return ImportProblem(
                HEADER_ROW, None, "the columns are separated by ';'. Save the file with commas."
            )
        text = f"no '{NAME_COLUMN}' column. The header must name the columns, starting with '{NAME_COLUMN}'."
        return ImportProblem(HEADER_ROW, None, text)
    repeated = sorted({column for column in header if header.count(column) > 1})
    if repeated:
        return ImportProblem(HEADER_ROW, repeated[0], f"'{repeated[0]}' appears more than once.")
    if n_rows == 0:
        return _whole("The file has a header but no scenario rows.")
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
    cells: dict[str, str], row_number: int, check: Check | None
) -> tuple[str, Scenario | None, ImportProblem | None]:
    """(name, scenario or None, problem or None) for one data row."""
    name = unguard_cell(cells[NAME_COLUMN]).strip()
    problem = name_problem(name)
    if problem:
        return name, None, ImportProblem(row_number, NAME_COLUMN, f"{problem}.")
    fields: dict[str, Any] = {}
    for column in INPUT_COLUMNS:
        if column in cells:
            text = unguard_cell(cells[column]).strip()
            try:
                fields[column] = _input_value(column, text)
            except ValueError as err:
                problem = f"the JSON text {err} (got {shortened(text)!r})."
                return name, None, ImportProblem(row_number, column, problem)
    try:
        scenario = Scenario.model_validate(fields)
        if check is not None:
            check(scenario)
    except ValidationError as err:
        return name, None, _located(scenario_error(err), row_number, cells)
    except PlannerError as err:
        return name, None, _located(err, row_number, cells)
    except ValueError as err:  # a check's own failure that names no input: the row, in its words
        return name, None, ImportProblem(row_number, None, str(err))
    return name, scenario, None


def _input_value(column: str, text: str) -> Any:
    if column == "model_shape":
        return parse_json_text(text) if text else None
    if text == "":
        return None if Scenario.model_fields[column].default is None else _empty_for(column)
    return text


def _empty_for(column: str) -> Any:
    # Text inputs may be empty (a custom model, the latest price snapshot); other required inputs may not, so
    # None goes to validation, which names the column and its allowed range.
    return "" if Scenario.model_fields[column].annotation is str else None


def _located(error: PlannerError, row_number: int, cells: Mapping[str, str]) -> ImportProblem:
    """The problem at the column of the file it is about: its field, else a field its rule involves."""
    column = next((field for field in error.fields if field in cells), error.field or None)
    more = len(error.more)
    subject = error.field if column != error.field else ""  # the sentence is about another input: say which
    text = error.describe("", subject=subject)
    text += f" (and {more} more problem{'s' * (more > 1)} in this row)" if more else ""
    return ImportProblem(row_number, column, text)
