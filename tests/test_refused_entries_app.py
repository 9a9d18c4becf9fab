"""A refused entry stays in its box, marked refused, until it is valid or cleared, and applies by itself once the
input it conflicted with changes (AppTest)."""

from __future__ import annotations

from planner import Scenario
from tests.shown_text import shown
from ui.state import REJECTED_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY


def box_errors(at, label_start: str) -> list[str]:
    return [shown(e.value) for e in at.error if shown(e.value).startswith(label_start)]


def test_a_gpu_count_refused_for_the_parallel_degrees_applies_when_they_change(app):
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.tp").input("4").run()
    app.text_input(key="w.n_gpus").input("6").run()
    assert app.session_state[SCENARIO_KEY].n_gpus == 8  # refused: 6 is not a multiple of tp 4
    assert app.text_input(key="w.n_gpus").value == "6"  # still in the box ...
    (message,) = box_errors(app, "Number of GPUs: must be a multiple of tp x pp x cp = 4 (got 6)")
    assert "not applied; the plan keeps 8 until this is valid or cleared" in message  # ... marked refused
    app.text_input(key="w.tp").input("2").run()  # the conflict goes away
    assert app.session_state[SCENARIO_KEY].n_gpus == 6  # the entry the box showed now applies
    assert app.session_state[SCENARIO_KEY].tp == 2
    assert not box_errors(app, "Number of GPUs") and not app.session_state[REJECTED_KEY]
    assert app.text_input(key="w.n_gpus").value == "6"


def test_a_completion_refused_for_the_sequence_length_applies_when_the_sequences_grow(app):
    app.session_state[SCENARIO_KEY] = Scenario(post_training="grpo", tokens_per_example=1000)
    app.session_state[OPEN_KEY] = True
    app.run()
    app.text_input(key="w.completion_tokens").input("1500").run()
    assert app.session_state[SCENARIO_KEY].completion_tokens is None  # the plan uses the default (half) ...
    (message,) = box_errors(app, "Completion tokens (generated): must be shorter than tokens per example")
    assert (
        "the plan uses the default (an empty box) until this is valid or cleared" in message
    )  # ... and says so
    app.text_input(key="w.tokens_per_example").input("2000").run()
    assert app.session_state[SCENARIO_KEY].completion_tokens == 1500
    assert not box_errors(app, "Completion tokens")


def test_a_valid_entry_replaces_a_refused_one_and_drops_the_message(app):
    app.session_state[OPEN_KEY] = True
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.tp").input("4").run()
    app.text_input(key="w.n_gpus").input("6").run()
    assert box_errors(app, "Number of GPUs")
    app.text_input(key="w.n_gpus").input("8").run()  # a valid entry
    assert not box_errors(app, "Number of GPUs") and app.session_state[SCENARIO_KEY].n_gpus == 8
