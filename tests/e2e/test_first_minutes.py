"""The first minutes in a real browser at 1440×900: the banners of a wasteful plan, a refused entry that applies
once its conflict is gone, and the plan sheet's results in view without scrolling."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest

from planner import Scenario, scenario_to_query
from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage

pytestmark = pytest.mark.e2e
LAPTOP = {"width": 1440, "height": 900}
# The grid's accessibility table lists the header cells in view (the grid draws on a canvas).
# The scatter's GPU names (Vega's text marks, not its axis or legend labels) and its points, as drawn on screen.
LABELS_AND_POINTS = """() => {
  const chart = document.querySelector("[data-testid='stMain'] [data-testid='stVegaLiteChart']");
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {labels: [...chart.querySelectorAll('.mark-text.role-mark text')].filter(t => t.textContent).map(
            t => [t.textContent, ...box(t)]),
          points: [...chart.querySelectorAll('.mark-symbol.role-mark path')].map(box)}; }"""
HEADERS_IN_VIEW = """() => [...document.querySelectorAll("[data-testid='stDataFrame'] [role='columnheader']")]
  .filter(e => { const r = e.getBoundingClientRect(); return r.right <= innerWidth && r.bottom <= innerHeight; })
  .map(e => e.textContent)"""


@pytest.fixture
def laptop(app_page: AppPage) -> AppPage:
    app_page.page.set_viewport_size(LAPTOP)
    app_page.goto("/")
    return app_page


def test_a_plan_over_eight_nodes_says_it_is_communication_bound(laptop: AppPage) -> None:
    # the default plan in one node hides its communication behind compute; 64 GPUs at micro-batch 1 do not
    assert not any("Communication is" in a for a in laptop.alerts())
    wide = Scenario(model="Llama 3.1 8B", n_gpus=64, micro_batch=1)
    alerts = laptop.goto("/?" + urlencode(scenario_to_query(wide))).alerts()
    assert any("Communication is 94% of the step: raise the micro-batch" in a for a in alerts), alerts


def test_a_refused_gpu_count_applies_once_the_tensor_parallel_degree_allows_it(laptop: AppPage) -> None:
    laptop.nav("Memory")  # arriving on Memory opens the training setup in the sidebar
    laptop.set_number("Tensor parallel", "4", sidebar=True)
    laptop.set_number("Number of GPUs", "6", sidebar=True)
    sidebar = laptop.page.get_by_test_id("stSidebar")
    refused = sidebar.get_by_test_id("stAlert").filter(has_text="Number of GPUs: must be a multiple")
    refused.wait_for(timeout=RUN_TIMEOUT_MS)
    assert "until this is valid or cleared" in refused.inner_text()
    assert laptop.number_input("Number of GPUs", sidebar=True).input_value() == "6"  # shown, as refused
    assert "n_gpus" not in laptop.query()  # the plan kept its 8 GPUs
    laptop.shot("refused")
    laptop.set_number("Tensor parallel", "2", sidebar=True)  # the conflict goes away
    laptop.page.wait_for_url(re.compile(r"n_gpus=6\b"), timeout=RUN_TIMEOUT_MS)
    assert laptop.query().get("tp") == "2"
    assert sidebar.get_by_test_id("stAlert").filter(has_text="Number of GPUs:").count() == 0
    laptop.shot("applied")


def test_the_plan_sheet_shows_its_results_at_1440_by_900_without_scrolling(laptop: AppPage) -> None:
    laptop.nav("Plan sheet")
    laptop.page.get_by_test_id("stDataFrame").first.wait_for()
    laptop.page.wait_for_timeout(500)
    headers = laptop.page.evaluate(HEADERS_IN_VIEW)
    laptop.shot("sheet")
    assert headers[0] == "Name", headers  # pinned first
    for result in ("Memory verdict", "Wall clock (h)", "Cost (USD)", "Bound by", "Peak GiB/GPU"):
        assert result in headers, headers


def test_the_compare_table_fits_the_page_width_and_the_csv_holds_its_columns(laptop: AppPage) -> None:
    laptop.nav("Compare GPUs")
    grid = laptop.page.get_by_test_id("stDataFrame").first
    grid.wait_for()
    laptop.page.wait_for_timeout(500)
    overflow = laptop.page.evaluate(
        """() => { const s = document.querySelector("[data-testid='stDataFrame'] .dvn-scroller");
                   return s.scrollWidth - s.clientWidth; }"""
    )
    assert overflow <= 1, f"the table scrolls sideways by {overflow} px at 1440 px"
    headers = laptop.page.evaluate(HEADERS_IN_VIEW)
    assert {"GPU", "Wall clock", "Cost (USD)", "Bound by", "Notes"} <= set(headers), headers
    with laptop.page.expect_download() as download:
        laptop.page.get_by_role("button", name="Download CSV").click()
    first_line = Path(download.value.path()).read_text(encoding="utf-8").splitlines()[0]
    assert first_line.split(",") == headers, (first_line, headers)


def overlap_px(a: list[float], b: list[float]) -> float:
    """How far two screen boxes [left, top, right, bottom] overlap, in px along the shorter side (0 if apart)."""
    return max(0.0, min(min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])))


def test_the_compare_chart_names_its_gpus_without_overlapping_labels_or_points(laptop: AppPage) -> None:
    laptop.nav("Compare GPUs")
    laptop.page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart'] svg").first.wait_for()
    drawn = laptop.page.evaluate(LABELS_AND_POINTS)
    laptop.shot("compare-chart")
    labels = {name: box for name, *box in drawn["labels"]}
    assert len(labels) >= 3 and len(drawn["points"]) >= len(labels), drawn  # several GPUs named and drawn
    names = sorted(labels)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert overlap_px(labels[a], labels[b]) <= 1.0, (a, labels[a], b, labels[b])
        covered = [p for p in drawn["points"] if overlap_px(labels[a], p) > 1.0]
        assert not covered, (a, labels[a], covered)
