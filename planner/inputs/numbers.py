"""Numbers as people type them into a box: `30000`, `30,000`, `3e4`, `1.5e-3`, read exactly or refused.

One parser for every typed scenario number (the app's number boxes use it; pure, no streamlit). The text is read
as a decimal (never through a binary float first), so `3e4` is exactly 30000 and `1e6` exactly 1000000; an
integer field refuses `2.5` rather than rounding it; a value beyond what a float holds (`1e400`) or that a float
would turn into 0 (`1e-400`) is refused rather than changed. Range checks stay with the Scenario (its bounds
are the one source of the allowed range); this module only turns text into the number the user meant.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from planner.errors import PlannerError, numeric_range, shortened
from planner.inputs.scenario import Scenario

# Longer text is not a number anyone typed: 40 characters hold any float with all its digits and an exponent.
MAX_NUMBER_CHARS = 40
# Decimal exponents beyond this are refused before any integer is built from them (`1e999999999` would build a
# billion-digit integer); every Scenario bound is far below 10**30.
MAX_DECIMAL_EXPONENT = 30
# Digits with optional thousands separators (a comma, an apostrophe, a thin or plain space, an underscore
# between groups of three), an optional fraction and an optional exponent. A leading sign is kept so that `-5`
# reaches the range check and is reported as out of range rather than as "not a number".


def field_range(name: str) -> str:
    """The allowed range of a numeric field in words, for messages and help texts."""
    return numeric_range(Scenario, name) or "see `python -m planner schema`"


_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:([,' _\u202f])\d{3})(?:\1\d{3})*|\d+)?(?:\.\d*)?(?:[eE][+-]?\d+)?")


def parse_number(text: str, *, integer: bool) -> int | float | None:
    """The number `text` stands for; None for an empty box; ValueError (with the reason) for anything else."""
    stripped = text.strip()
    if not stripped:
        return None
    if len(stripped) > MAX_NUMBER_CHARS:
        raise ValueError(f"is {len(stripped):,} characters long; a number has at most {MAX_NUMBER_CHARS}")
    match = _NUMBER.fullmatch(stripped)
    if not match or not any(ch.isdigit() for ch in stripped.split("e")[0].split("E")[0]):
        raise ValueError("is not a number (write e.g. 30000, 30,000 or 3e4)")
    separator = match.group(1)
    plain = stripped.replace(separator, "") if separator else stripped
    try:
        exact = Decimal(plain)
    except InvalidOperation:
        raise ValueError("is not a number (write e.g. 30000, 30,000 or 3e4)") from None
    if exact != 0 and exact.adjusted() > MAX_DECIMAL_EXPONENT:
        raise ValueError("is far too large")
    if integer:
        if exact != exact.to_integral_value():
            raise ValueError("must be a whole number")
        return int(exact)
    value = float(exact)
    if not math.isfinite(value):
        raise ValueError("is far too large")
    if value == 0 and exact != 0:
        raise ValueError("is too small to be told from 0")
    return value


def is_integer_field(field: str) -> bool:
    return _number_type(field) is int


def accepts_empty(field: str) -> bool:
    """Whether an empty box means something for `field` (None: derive it from the catalogues or presets)."""
    annotation = Scenario.model_fields[field].annotation
    return get_origin(annotation) in (Union, UnionType) and NoneType in get_args(annotation)


def parse_field_number(field: str, text: str) -> int | float | None:
    """The number typed for a Scenario field; `PlannerError` naming the field, the text and its range."""
    try:
        value = parse_number(text, integer=is_integer_field(field))
    except ValueError as err:
        raise PlannerError(
            field, str(err), value=shortened(text.strip()), allowed=field_range(field)
        ) from None
    if value is None and not accepts_empty(field):
        raise PlannerError(field, "needs a number", allowed=field_range(field))
    return value


def number_text(value: Any) -> str:
    """A stored number as a box shows it: read back by `parse_number` to the same value ("" for None)."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = repr(float(value))  # the shortest text that reads back to the same float
    return text.removesuffix(".0")


def _number_type(field: str) -> Any:
    annotation = Scenario.model_fields[field].annotation
    if get_origin(annotation) in (Union, UnionType):
        return next(arg for arg in get_args(annotation) if arg is not NoneType)
    return annotation
