"""Numbers typed into the real boxes: Streamlit's number_input let the browser read `3e4` in
an integer box as 3, `1e6` as 1 and `1e400` as the box's minimum, silently. The app's number boxes
(ui/number_entry.py) take the first two exactly and refuse the third with a message right under the box."""

from __future__ import annotations

import re

import pytest

from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage

pytestmark = pytest.mark.e2e


def _typed(app_page: AppPage, label: str, text: str, shown: str) -> None:
    """Type into a sidebar box and wait until the run it triggers shows `shown` in the box (under load the
    rerun can start later than AppPage.wait_idle's grace period)."""
    from playwright.sync_api import expect

    app_page.set_number(label, text, sidebar=True)
    expect(app_page.number_input(label, sidebar=True)).to_have_value(shown, timeout=RUN_TIMEOUT_MS)
    app_page.wait_idle()


def test_scientific_notation_is_taken_exactly_in_the_real_boxes(app_page: AppPage) -> None:
    _typed(app_page, "Number of GPUs", "1e6", "1000000")
    app_page.page.wait_for_url(re.compile(r"n_gpus=1000000\b"), timeout=RUN_TIMEOUT_MS)
    _typed(app_page, "Training examples", "1.2e5", "120000")
    app_page.page.wait_for_url(re.compile(r"examples=120000\b"), timeout=RUN_TIMEOUT_MS)
    _typed(app_page, "Training examples", "3e4", "30000")
    app_page.page.wait_for_function("() => !location.search.includes('examples=')", timeout=RUN_TIMEOUT_MS)
    assert app_page.query().get("n_gpus") == "1000000"  # 30,000 is the default, so it left the link
    assert not app_page.page.get_by_test_id("stSidebar").get_by_test_id("stAlert").count()


def test_an_overflowing_entry_is_refused_beside_its_box(app_page: AppPage) -> None:
    _typed(app_page, "Epochs", "1e400", "1e400")  # what the user typed stays to be corrected
    sidebar = app_page.page.get_by_test_id("stSidebar")
    alert = sidebar.get_by_test_id("stAlert").filter(has_text="Epochs: is far too large")
    alert.wait_for(timeout=RUN_TIMEOUT_MS)
    assert alert.count() == 1, [a.inner_text() for a in sidebar.get_by_test_id("stAlert").all()]
    assert "0.001" in alert.inner_text() and "10000" in alert.inner_text()  # the range (drawn as ≥ and ≤)
    assert "epochs" not in app_page.query()  # the plan kept its 3 epochs
    box_at = app_page.number_input("Epochs", sidebar=True).bounding_box()
    alert_at = alert.bounding_box()
    assert box_at is not None and alert_at is not None
    gap_px = alert_at["y"] - (box_at["y"] + box_at["height"])
    assert 0 <= gap_px < 60, (box_at, alert_at)  # right under the box, not at the top of the page
    _typed(app_page, "Epochs", "2", "2")
    app_page.page.wait_for_url(re.compile(r"epochs=2\b"), timeout=RUN_TIMEOUT_MS)
    assert sidebar.get_by_test_id("stAlert").filter(has_text="Epochs:").count() == 0
