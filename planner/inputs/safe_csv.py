"""Spreadsheet-safe CSV cells: text that a spreadsheet would run as a formula is neutralised.

OWASP "CSV Injection": cells starting with =, +, -, @, tab or carriage return are evaluated by Excel, LibreOffice
and Google Sheets. Prefixing a single quote makes them plain text. Numbers are left alone (a negative number is a
number, not a formula).

Numbers: every CSV the product writes (the CLI's `--format csv`, the app's comparison and search downloads, the
results columns of a saved-scenario file) shows results to `CSV_SIGNIFICANT_DIGITS` significant figures through
`csv_number`, so a spreadsheet reads 0.3169 rather than 0.31689999999999996. Integers and booleans are written
as they are; JSON keeps full precision; the scenario inputs of a saved-scenario file keep Python's shortest
round-trip form (planner/inputs/scenario_io.py) so a restored scenario equals the saved one.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CSV_SIGNIFICANT_DIGITS = 4
# Between these magnitudes a number is written in plain decimals (0.0001234, 123500); outside them in
# exponent form (1.235e+20), which every spreadsheet also reads as a number.
PLAIN_RANGE = (1e-4, 1e15)


def csv_number(value: float, digits: int = CSV_SIGNIFICANT_DIGITS) -> str:
    """A float as CSV text to `digits` significant figures; NaN and infinities as an empty cell."""
    if not math.isfinite(value):
        return ""
    if value == 0:
        return "0"
    if not PLAIN_RANGE[0] <= abs(value) < PLAIN_RANGE[1]:
        return f"{value:.{digits}g}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))  # negative above 10**digits: 123457 -> 123500
    text = f"{round(value, decimals):.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def csv_cell(value: Any) -> Any:
    """A cell for a CSV writer: floats rounded by `csv_number`, text neutralised, anything else unchanged."""
    if isinstance(value, float):
        return csv_number(value)
    return neutralise_cell(value)


def neutralise_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def safe_csv(frame: pl.DataFrame) -> str:
    """The frame as CSV text: every string cell neutralised, every float through `csv_number`."""
    text_columns = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    float_columns = [name for name, dtype in frame.schema.items() if dtype.is_float()]
    guarded = frame.with_columns(
        pl.when(pl.col(name).str.contains(r"^[=+\-@\t\r]"))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in text_columns
    ).with_columns(
        pl.Series(name, [None if v is None else csv_number(v) for v in frame[name].to_list()], pl.String)
        for name in float_columns
    )
    return guarded.write_csv()
