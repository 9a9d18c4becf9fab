"""numpy helpers that answer a one-value column without numpy's per-call cost.

A single estimate evaluates the formulas on Python floats (one row), the plan search on arrays. numpy's
convenience functions (`np.where`, `np.any`, `np.nan_to_num`, `np.isin`, `np.broadcast_to`) cost microseconds
a call even on one number, and an estimate makes dozens of such calls; these give the same answer on both
kinds of input and skip that cost for a scalar.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

SCALAR_TYPES = (int, float, np.generic)  # one value: a Python or numpy scalar (bool is an int)
_LARGEST_FLOAT = sys.float_info.max  # what np.nan_to_num puts in place of ±inf by default


def select(condition, if_true, if_false):
    """np.where that skips the element-wise pass when the condition is one value (a sweep usually holds
    most choices fixed); the result is the same either way."""
    # checked by type first: np.ndim converts its argument to an array each call
    if isinstance(condition, SCALAR_TYPES) or np.ndim(condition) == 0:
        return if_true if bool(condition) else if_false
    return np.where(condition, if_true, if_false)


def any_row(values: Any) -> bool:
    """`bool(np.any(values))`."""
    if isinstance(values, SCALAR_TYPES):
        return bool(values)
    return bool(np.any(values))


def all_rows(values: Any) -> bool:
    """`bool(np.all(values))`."""
    if isinstance(values, SCALAR_TYPES):
        return bool(values)
    return bool(np.all(values))


def nan_to_zero(values: Any) -> Any:
    """`np.nan_to_num(values)` with its defaults: NaN → 0, ±inf → ±the largest float."""
    if isinstance(values, SCALAR_TYPES):
        value = float(values)
        return 0.0 if value != value else min(max(value, -_LARGEST_FLOAT), _LARGEST_FLOAT)
    return np.nan_to_num(values)


def is_one_of(values: Any, choices: tuple[float, ...]) -> Any:
    """`np.isin(values, choices)` for a scalar or an array of codes (a bool, or an array of them)."""
    if isinstance(values, SCALAR_TYPES):
        return any(values == choice for choice in choices)
    return np.isin(values, choices)


def broadcast_like(values: Any, shape: tuple[int, ...]) -> Any:
    """`np.broadcast_to(values, shape)`, or `values` itself when it already has that shape."""
    if shape == () and isinstance(values, SCALAR_TYPES):
        return values
    return np.broadcast_to(values, shape)
