"""The scalar fast paths give numpy's own answers, on one value and on arrays, NaN and infinities included."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.formulas.scalars import all_rows, any_row, broadcast_like, is_one_of, nan_to_zero

VALUES = [0.0, 1.0, -2.5, math.nan, math.inf, -math.inf, True, False, 3, np.float64(math.nan), np.bool_(True)]


@pytest.mark.parametrize("value", VALUES)
def test_one_value_gets_numpys_answer(value):
    assert any_row(value) == bool(np.any(value))
    assert all_rows(value) == bool(np.all(value))
    expected = float(np.nan_to_num(value))
    assert nan_to_zero(value) == expected and isinstance(nan_to_zero(value), float)
    assert bool(is_one_of(value, (1.0, 3.0))) == bool(np.isin(value, (1.0, 3.0)))


def test_arrays_get_numpys_answer():
    values = np.array([0.0, 1.0, math.nan, math.inf, -math.inf, 3.0])
    assert any_row(values) and not all_rows(values)
    assert not any_row(np.zeros(3)) and all_rows(np.ones(3))
    np.testing.assert_array_equal(nan_to_zero(values), np.nan_to_num(values))
    np.testing.assert_array_equal(is_one_of(values, (1.0, 3.0)), [False, True, False, False, False, True])


def test_broadcast_like_keeps_a_value_of_the_right_shape_and_broadcasts_the_rest():
    assert broadcast_like(2.0, ()) == 2.0
    np.testing.assert_array_equal(broadcast_like(2.0, (3,)), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(broadcast_like(np.array([1.0, 2.0]), (2,)), [1.0, 2.0])
