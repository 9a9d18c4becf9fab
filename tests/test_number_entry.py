"""Numbers typed as people type them: read exactly or refused with a message beside the box.

The parser (planner/inputs/numbers.py) is tested on its own; the boxes (ui/number_entry.py) through AppTest. The
real browser's part (what Streamlit's number_input used to do with `3e4`) is in tests/e2e/test_typed_numbers.py.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from planner.errors import PlannerError
from planner.inputs.numbers import number_text, parse_field_number, parse_number
from planner.inputs.scenario import Scenario
from tests.ci import n_examples
from tests.shown_text import shown
from ui.sidebar import OVERRIDES_OPEN_KEY
from ui.state import NOTICES_KEY, SCENARIO_KEY


@pytest.mark.parametrize(
    ("text", "integer", "expected"),
    [
        ("30000", True, 30000),
        ("30,000", True, 30000),
        ("30 000", True, 30000),
        ("3e4", True, 30000),
        ("1e6", True, 1_000_000),
        ("1E6", True, 1_000_000),
        ("2.0", True, 2),
        ("  16 ", True, 16),
        ("1e13", True, 10**13),
        ("3e4", False, 30000.0),
        ("1,000.5", False, 1000.5),
        ("1.5e-3", False, 0.0015),
        (".5", False, 0.5),
        ("", True, None),
        ("   ", False, None),
    ],
)
def test_typed_numbers_are_read_exactly(text: str, integer: bool, expected: float | None) -> None:
    got = parse_number(text, integer=integer)
    assert got == expected and type(got) is type(expected), (text, got)


@pytest.mark.parametrize(
    ("text", "integer", "reason"),
    [
        ("2.5", True, "whole number"),
        ("1e-400", True, "whole number"),
        ("1e400", False, "too large"),
        ("1e400", True, "too large"),
        ("1e999999999", True, "too large"),  # refused before a billion-digit integer is built
        ("1e-400", False, "too small"),
        ("9" * 4000, True, "characters long"),
        ("nan", False, "not a number"),
        ("inf", False, "not a number"),
        ("0x10", True, "not a number"),
        ("1,5", False, "not a number"),  # a decimal comma is ambiguous: refused, never read as 15
        ("12,34,567", True, "not a number"),
        ("e5", True, "not a number"),
        ("1e", False, "not a number"),
    ],
)
def test_numbers_that_cannot_be_read_exactly_are_refused(text: str, integer: bool, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_number(text, integer=integer)


def test_a_field_error_names_the_field_its_range_and_a_shortened_entry() -> None:
    with pytest.raises(PlannerError) as caught:
        parse_field_number("n_gpus", "2.5")
    assert caught.value.describe("Number of GPUs") == (
        "Number of GPUs: must be a whole number (allowed: >= 1 and <= 1e+06; got '2.5')"
    )
    with pytest.raises(PlannerError, match="needs a number"):
        parse_field_number("examples", "")
    assert parse_field_number("mfu", "") is None  # empty: take the preset
    long_entry = PlannerError("examples", "x", value="9" * 4000).describe()
    assert "9" * 41 not in long_entry and "…" in long_entry


@settings(max_examples=n_examples(300), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**15), 10**15))
@example(0.1)
@example(1e-05)
@example(30000.0)
def test_what_a_box_shows_reads_back_to_the_same_value(value: float) -> None:
    integer = isinstance(value, int)
    if not integer and value != 0 and not 1e-300 < abs(value) < 1e30:
        return  # outside every field's range: such values are never stored, so never shown
    assert parse_number(number_text(value), integer=integer) == value


# ---------------------------------------------------------------------------------------------- the app


def _type(at, key: str, text: str):
    at.sidebar.text_input(key=key).input(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state[SCENARIO_KEY]


def test_scientific_notation_in_the_sidebar_is_taken_exactly(app) -> None:
    assert _type(app, "w.examples", "3e4").examples == 30_000
    assert _type(app, "w.examples", "1.2e5").examples == 120_000
    assert _type(app, "w.n_gpus", "1e6").n_gpus == 1_000_000
    assert _type(app, "w.epochs", "2.5e0").epochs == 2.5
    assert _type(app, "w.examples", "45,000").examples == 45_000
    assert not app.sidebar.error


def test_a_refused_entry_stays_in_the_box_with_its_message_beside_it(app) -> None:
    kept = _type(app, "w.epochs", "1e400")
    assert kept.epochs == Scenario().epochs  # the plan keeps its value
    assert app.sidebar.text_input(key="w.epochs").value == "1e400"  # nothing the user typed is lost
    messages = [shown(e.value) for e in app.sidebar.error]  # the text a reader sees (messages are escaped)
    assert len(messages) == 1 and messages[0].startswith(
        "Epochs: is far too large (allowed: >= 0.001 and <= 10000"
    )
    assert "not applied; the plan keeps 3" in messages[0]
    assert not any("Epochs" in w.value for w in app.warning)  # said beside the box, not at the top
    assert not app.session_state[NOTICES_KEY]
    app.run()  # still there on the next run
    assert [shown(e.value) for e in app.sidebar.error] == messages
    _type(app, "w.epochs", "4")  # a good entry clears it
    assert not app.sidebar.error and app.session_state[SCENARIO_KEY].epochs == 4


@pytest.mark.parametrize(
    ("key", "label", "text", "expected"),
    [
        ("w.n_gpus", "Number of GPUs", "2.5", "must be a whole number"),
        ("w.n_gpus", "Number of GPUs", "-4", ">= 1"),
        ("w.n_gpus", "Number of GPUs", "1e7", "<= 1e+06"),
        ("w.examples", "Training examples", "lots", "not a number"),
        ("w.examples", "Training examples", "", "needs a number"),
        ("w.mfu", "MFU (model FLOPs utilisation)", "1.5", "<= 1"),
    ],
)
def test_out_of_range_entries_are_refused_beside_the_box(app, key, label, text, expected) -> None:
    app.session_state[OVERRIDES_OPEN_KEY] = True  # MFU is among the overrides, drawn only while open
    app.run()
    before = app.session_state[SCENARIO_KEY]
    assert _type(app, key, text) == before
    messages = [shown(e.value) for e in app.sidebar.error]
    assert len(messages) == 1 and messages[0].startswith(f"{label}: ") and expected in messages[0], messages
    assert "allowed: " in messages[0]


def test_a_plan_change_made_elsewhere_replaces_a_refused_entry(app) -> None:
    _type(app, "w.n_gpus", "2.5")
    app.session_state[SCENARIO_KEY] = app.session_state[SCENARIO_KEY].updated(n_gpus=16)
    app.run()
    assert app.sidebar.text_input(key="w.n_gpus").value == "16" and not app.sidebar.error


BOUND_BOXES = ("w.examples", "w.tokens_per_example", "w.epochs", "w.n_gpus")


def test_boxes_get_their_value_from_the_plan_only_when_it_differs(app) -> None:
    """A box whose value is written through session state reaches the browser marked "set value", and the
    browser then re-applies it; writing every box on every run cost ~25 ms per edit (ui/state.py `bound`). After
    an edit only the edited box may be rewritten (its text normalised), and a plain rerun rewrites none."""
    _type(app, "w.n_gpus", "1.6e1")
    boxes = {key: app.sidebar.text_input(key=key) for key in BOUND_BOXES}
    assert boxes["w.n_gpus"].value == "16"  # normalised from what was typed, so rewritten once
    assert [key for key, box in boxes.items() if box.proto.set_value] == ["w.n_gpus"]
    assert not app.sidebar.selectbox(key="w.model").proto.set_value
    assert not app.sidebar.selectbox(key="w.gpu").proto.set_value
    app.run()
    assert [key for key in BOUND_BOXES if app.sidebar.text_input(key=key).proto.set_value] == []
    app.session_state[SCENARIO_KEY] = app.session_state[SCENARIO_KEY].updated(epochs=5)  # a change elsewhere
    app.run()
    assert app.sidebar.text_input(key="w.epochs").value == "5"
