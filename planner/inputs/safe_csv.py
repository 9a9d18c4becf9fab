"""Spreadsheet-safe CSV cells: text that a spreadsheet would run as a formula is neutralised.

OWASP "CSV Injection": cells starting with =, +, -, @, tab or carriage return are evaluated by Excel, LibreOffice
and Google Sheets. Prefixing a single quote makes them plain text. Numbers are left alone (a negative number is a
number, not a formula).
"""

from __future__ import annotations

from typing import Any

import polars as pl

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def safe_csv(frame: pl.DataFrame) -> str:
    """The frame as CSV text with every string cell neutralised."""
    text_columns = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    guarded = frame.with_columns(
        pl.when(pl.col(name).str.contains(r"^[=+\-@\t\r]"))
        .then(pl.lit("'") + pl.col(name))
        .otherwise(pl.col(name))
        .alias(name)
        for name in text_columns
    )
    return guarded.write_csv()
