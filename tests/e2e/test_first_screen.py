"""At 1280×720, a common laptop window, Overview's six headline figures show without scrolling, and the
training setup is in the sidebar on every page (it used to be on the Memory page only, and the Memory
page then showed inputs and no result)."""

from __future__ import annotations

import pytest

from tests.e2e.app_page import AppPage
from tests.e2e.test_offline import PAGES

pytestmark = pytest.mark.e2e
LAPTOP = {"width": 1280, "height": 720}
HEADLINES = {
    "Wall clock",
    "GPU-hours",
    "Cost",
    "Peak memory per GPU",
    "Throughput (tokens/s)",
    "Energy and carbon",
}
METRIC_BOXES = """() => [...document.querySelectorAll("[data-testid='stMetric']")].map(m => {
  const box = m.getBoundingClientRect();
  const label = m.querySelector("[data-testid='stMetricLabel']");
  return {label: label ? label.textContent.trim() : "", bottom: box.bottom, top: box.top};
})"""


def test_overview_headlines_are_on_the_first_screen_of_a_laptop(
    page, app_url: str, request: pytest.FixtureRequest
) -> None:
    page.set_viewport_size(LAPTOP)
    app = AppPage(page, app_url, request.node.name).goto("/")
    app.expect_heading("Overview")
    boxes = {box["label"]: box for box in page.evaluate(METRIC_BOXES)}
    app.shot("laptop")
    assert set(boxes) >= HEADLINES, boxes
    below = {
        label: box["bottom"] for label, box in boxes.items() if label in HEADLINES and box["bottom"] > 720
    }
    assert below == {}, f"below the fold at 1280×720: {below}"


def test_the_training_setup_is_in_the_sidebar_of_every_page(
    page, app_url: str, request: pytest.FixtureRequest
) -> None:
    page.set_viewport_size(LAPTOP)
    app = AppPage(page, app_url, request.node.name).goto("/")
    sidebar = page.get_by_test_id("stSidebar")
    for title in PAGES:
        app.nav(title)
        setup = sidebar.get_by_text("Method, batch, sharding, memory savers")
        assert setup.count() == 1, title
    app.nav("Cost")
    sidebar.get_by_text("Method, batch, sharding, memory savers").click()
    app.set_number("Micro-batch (sequences per GPU)", "4", sidebar=True)
    assert app.query().get("micro_batch") == "4"
    assert "micro-batch 4 × 1 accumulation" in sidebar.inner_text()
