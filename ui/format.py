"""Display formatting: the planner computes in bytes and seconds; people read GiB, hours and dollars."""

from __future__ import annotations

import math

from planner import human_duration


def is_missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def gib(value: float | None, digits: int = 2) -> str:
    return "n/a" if is_missing(value) else f"{value:,.{digits}f} GiB"


def hours(value: float | None) -> str:
    """A duration given in hours, in the unit that reads best (the command line's format too:
    `planner.decide.wording.human_duration`)."""
    return human_duration(value)


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
