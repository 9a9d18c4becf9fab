"""Rejected input in the app names the widget by the label shown on screen (AppTest), and keeps the old value."""

from __future__ import annotations

from ui.state import NOTICES_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY


def told(at) -> list[str]:
    """Notices shown as warnings, messages beside a number box (errors), and any still queued for the next run."""
    return [w.value for w in at.warning] + [e.value for e in at.error] + list(at.session_state[NOTICES_KEY])


def test_a_bad_gpu_count_names_the_sidebar_widget(app):
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.tp").input("4").run()
    app.text_input(key="w.n_gpus").input("6").run()
    assert not app.exception
    assert any(
        t.startswith("Number of GPUs: must be a multiple of tp x pp x cp = 4 (got 6)") for t in told(app)
    )
    assert app.session_state[SCENARIO_KEY].n_gpus == 8  # the previous valid value stays


def test_a_rule_broken_from_another_widget_names_that_widget_and_the_input_it_is_about(app):
    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.text_input(key="w.tp").input("3").run()
    assert not app.exception
    expected = "Tensor parallel: Number of GPUs must be a multiple of tp x pp x cp = 3 (got 8)"
    assert any(text.startswith(expected) for text in told(app)), told(app)
    assert app.session_state[SCENARIO_KEY].tp == 1
    assert not any("n_gpus:" in text or text.startswith("tp:") for text in told(app))
