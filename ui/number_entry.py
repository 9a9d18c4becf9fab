"""A number box that reads what people type: `30000`, `30,000`, `3e4`, `1e6` exactly, anything else refused.

Streamlit's number_input leaves the parsing to the browser, which reads `3e4` in an integer box as 3, `1e6` as 1
and `1e400` as the box's minimum, all without a word. This box is a text input bound to the scenario
(`ui.state.bound`, key `w.<field>`); the text goes through `planner.inputs.numbers.parse_field_number`, and the
Scenario's own bounds decide the range, so the message beside the box names the label and the allowed range.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from planner import number_text, parse_field_number, parse_number, shortened
from ui.safe_text import plain
from ui.state import bound


def number_entry(label: str, field: str, *, placeholder: str | None = None, help: str | None = None) -> Any:
    """Render the box for `scenario().<field>` and return the plan's current value."""
    return bound(
        st.text_input,
        label,
        field,
        to_widget=number_text,
        to_model=partial(parse_field_number, field),
        beside=True,
        placeholder=placeholder,
        help=help,
    )


def typed_number(
    container: Any,
    label: str,
    key: str,
    *,
    integer: bool,
    low: float,
    high: float | None = None,
    default: float | None = None,
    placeholder: str | None = None,
) -> tuple[float | None, bool]:
    """A page's own number box (not a scenario field), read like `number_entry`: (value, ok).

    Empty gives `default`; text that is not a number, or lies outside [low, high], gives (default, False) and a
    message under the box naming the label, the text and the allowed range, so nothing is truncated silently.
    """
    if key not in st.session_state:
        st.session_state[key] = number_text(default)
    text = container.text_input(label, key=key, placeholder=placeholder)
    allowed = f">= {number_text(low)}" + (f" and <= {number_text(high)}" if high is not None else "")
    try:
        value = parse_number(text, integer=integer)
    except ValueError as err:
        return _refused(container, label, text, str(err), allowed, default)
    if value is None:
        return default, True
    if value < low or (high is not None and value > high):
        return _refused(container, label, text, "is out of range", allowed, default)
    return value, True


def _refused(
    container: Any, label: str, text: str, problem: str, allowed: str, default: float | None
) -> tuple[float | None, bool]:
    container.error(plain(f"{label}: '{shortened(text.strip())}' {problem} (allowed: {allowed})."))
    return default, False
