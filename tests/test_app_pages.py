"""Every page renders without an exception, and the shared sidebar drives every page (AppTest)."""

from __future__ import annotations

import pytest

from ui.sidebar import OVERRIDES_OPEN_KEY

PAGES = [
    "app_pages/overview.py",
    "app_pages/compute.py",
    "app_pages/memory.py",
    "app_pages/cost.py",
    "app_pages/energy.py",
]


def metric(at, label: str) -> str:
    for element in at.metric:
        if element.label == label:
            return element.value
    raise AssertionError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception(app, page):
    app.switch_page(page).run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.title, "every page has a title"


def test_sidebar_change_reaches_another_page(app):
    before = metric(app, "GPU-hours")
    app.sidebar.text_input(key="w.epochs").input("6.0").run()
    app.switch_page("app_pages/cost.py").run()
    assert not app.exception
    after_cost = metric(app, "Cost")
    app.switch_page("app_pages/overview.py").run()
    after = metric(app, "GPU-hours")
    assert float(after.replace(",", "")) == pytest.approx(2 * float(before.replace(",", "")), rel=0.02)
    assert after_cost.startswith("$")


def test_gpu_choice_fills_vram_and_price(app):
    app.sidebar.selectbox(key="w.gpu").set_value("H200 SXM").run()
    assert app.session_state["scenario"].gpu == "H200 SXM"
    # H200 SXM: 140.40 GiB usable (data/gpus.csv, nvidia-smi 143,771 MiB)
    assert any("140.4 GiB" in str(m.delta) for m in app.metric)


def test_invalid_entry_keeps_previous_value_and_says_why(app):
    app.session_state[OVERRIDES_OPEN_KEY] = True  # the overrides draw their inputs only when open
    app.run()
    app.sidebar.text_input(key="w.mfu").input("0.0").run()
    assert app.session_state["scenario"].mfu is None
    # the notice names the widget's label and the allowed range, not the internal field name
    assert any(
        e.value.startswith("MFU (model FLOPs utilisation): ") and ">= 0.001" in e.value
        for e in app.sidebar.error
    )


def test_override_is_marked(app):
    app.session_state[OVERRIDES_OPEN_KEY] = True  # the overrides draw their inputs only when open
    app.run()
    app.sidebar.text_input(key="w.peak_tflops").input("400.0").run()
    assert any("Override" in c.value for c in app.sidebar.caption)
