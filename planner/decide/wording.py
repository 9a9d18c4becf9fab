"""How figures read in words, shared by the dashboard and the command line so both say a duration, a count of
things and a GiB figure the same way ("5.4 h", "1 GPU", "3 GPUs")."""

from __future__ import annotations

import math

# (unit, seconds in one, the value at which the next unit takes over): "45 s", "20 min", "5.4 h", "3.2 days".
DURATION_UNITS = (("s", 1.0, 60.0), ("min", 60.0, 60.0), ("h", 3600.0, 48.0), ("days", 86400.0, math.inf))


def human_duration(hours: float | None) -> str:
    """A duration given in hours, in the unit that reads best: seconds, minutes, hours or days.

    Below 10 of a unit one decimal is shown ("5.4 h"; two significant figures below 1 s), from 10 up whole
    numbers ("20 min"). A value that would round up to the next unit's threshold ("60 s") takes that unit.
    """
    if hours is None or math.isnan(hours):
        return "n/a"
    seconds = hours * 3600.0
    for unit, size, limit in DURATION_UNITS:
        text = _duration_amount(seconds / size)
        if float(text.replace(",", "")) < limit:
            return f"{text} {unit}"
    raise AssertionError("the last unit has no limit")


def _duration_amount(amount: float) -> str:
    if amount == 0:
        return "0"
    if amount < 0.95:  # only seconds get here: "0.36 s"
        return f"{amount:.2g}"
    return f"{amount:,.1f}" if amount < 10 else f"{amount:,.0f}"


def plural(n: float, noun: str, nouns: str | None = None) -> str:
    """ "1 GPU", "8 GPUs", "1.5 days": the count with the noun that agrees with it (singular only for exactly 1)."""
    shown = f"{n:,.0f}" if float(n).is_integer() else f"{n:,.1f}"
    return f"{shown} {noun if n == 1 else (nouns or noun + 's')}"
