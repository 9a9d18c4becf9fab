"""Display formatting: the planner computes in bytes and seconds; people read GiB, hours and dollars."""

from __future__ import annotations

import math


def is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def gib(value: float | None, digits: int = 2) -> str:
    return "n/a" if is_missing(value) else f"{value:,.{digits}f} GiB"


# (unit, seconds in one, the value at which the next unit takes over): "45 s", "20 min", "5.4 h", "3.2 days".
DURATION_UNITS = (("s", 1.0, 60.0), ("min", 60.0, 60.0), ("h", 3600.0, 48.0), ("days", 86400.0, math.inf))


def hours(value: float | None) -> str:
    """A duration given in hours, in the unit that reads best: seconds, minutes, hours or days.

    Below 10 of a unit one decimal is shown ("5.4 h"; two significant figures below 1 s), from 10 up whole
    numbers ("20 min"). A value that would round up to the next unit's threshold ("60 s") takes that unit.
    """
    if is_missing(value):
        return "n/a"
    assert value is not None
    seconds = value * 3600.0
    for unit, size, limit in DURATION_UNITS:
        amount = seconds / size
        text = _duration_amount(amount)
        if float(text.replace(",", "")) < limit:
            return f"{text} {unit}"
    raise AssertionError("the last unit has no limit")


def _duration_amount(amount: float) -> str:
    if amount == 0:
        return "0"
    if amount < 0.95:  # only seconds get here: "0.36 s"
        return f"{amount:.2g}"
    return f"{amount:,.1f}" if amount < 10 else f"{amount:,.0f}"


def micro_batch(value: float | None) -> str:
    """The largest micro-batch that fits; 0 means that even one sequence per GPU does not fit."""
    if is_missing(value):
        return "n/a"
    assert value is not None
    return "none: even 1 does not fit" if value < 1 else f"{value:,.0f}"


def usd(value: float | None) -> str:
    if is_missing(value):
        return "n/a"
    assert value is not None
    return f"${value:,.2f}" if value < 1e6 else f"${value / 1e6:,.2f} M"


def count(value: float | None, digits: int = 0) -> str:
    return "n/a" if is_missing(value) else f"{value:,.{digits}f}"


def sci(value: float | None, unit: str = "") -> str:
    return "n/a" if is_missing(value) else f"{value:.2e}{(' ' + unit) if unit else ''}"


def billions(value: float | None) -> str:
    return "n/a" if is_missing(value) else f"{value / 1e9:,.2f} B"


def band(low: float | None, high: float | None, fmt: str = "usd") -> str:
    formatter = {"usd": usd, "hours": hours, "count": count}[fmt]
    return f"{formatter(low)} – {formatter(high)}"


def sig(value: float | None, digits: int = 3) -> str:
    """Significant digits for figures that span orders of magnitude (kg CO2e from grams to tonnes)."""
    if is_missing(value):
        return "n/a"
    assert value is not None
    return f"{value:,.0f}" if abs(value) >= 10 ** (digits - 1) else f"{value:.{digits}g}"
