"""A number box that reads what people type: `30000`, `30,000`, `3e4`, `1e6` exactly, anything else refused.

Streamlit's number_input leaves the parsing to the browser, which reads `3e4` in an integer box as 3, `1e6` as 1
and `1e400` as the box's minimum, all without a word (issue 18). This box is a text input bound to the scenario
(`ui.state.bound`, key `w.<field>`); the text goes through `planner.inputs.numbers.parse_field_number`, and the
Scenario's own bounds decide the range, so the message beside the box names the label and the allowed range.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from planner import number_text, parse_field_number
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
