"""The plan sheet in a real browser: a cell typed into the grid changes that row's result columns and reaches the plan (AppTest can only seed the
grid's edit state; this is the path a person takes: click a cell, type, press Enter)."""

from __future__ import annotations

import pytest

from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e
# Name, then the results (Memory verdict, Wall clock, Cost, Bound by, Peak, Peak high end, Headroom,
# GPU-hours, USD per M tokens, Energy, CO2e), Problem, then the inputs Model, Method, Objective, GPU, GPUs: arrow
# presses from the first cell
GPUS_COLUMN = 17
# The grid draws on a canvas; its accessibility table lists the cells in view. The results come first, so with
# the grid scrolled to its left end they are in that table.
RESULT_CELLS = """() => {
  const grid = document.querySelector("[data-testid='stDataFrame']");
  const scroller = grid.querySelector(".dvn-scroller");
  scroller.scrollLeft = 0;
  return new Promise(done => setTimeout(() => {
    const heads = [...grid.querySelectorAll("[role='columnheader']")].map(e => e.textContent);
    const first = [...grid.querySelectorAll("tbody tr")][0];
    const cells = [...first.querySelectorAll("[role='gridcell']")].map(e => e.textContent);
    done(Object.fromEntries(heads.map((h, i) => [h, cells[i]])));
  }, 500));
}"""


def result_cells(app_page: AppPage) -> dict[str, str]:
    return app_page.page.evaluate(RESULT_CELLS)


def test_typing_a_gpu_count_into_the_sheet_changes_its_results_and_the_current_plan(
    app_page: AppPage,
) -> None:
    app_page.nav("Overview")
    before = app_page.metrics()["GPU-hours"]
    app_page.nav("Plan sheet")
    grid = app_page.page.get_by_test_id("stDataFrame").first
    grid.wait_for()
    results_before = result_cells(app_page)
    assert float(results_before["Cost (USD)"]) > 0, results_before
    box = grid.bounding_box()
    assert box is not None
    # The first body row sits under the header row; click its first cell, then walk right to "GPUs".
    app_page.page.mouse.click(box["x"] + 40, box["y"] + 35 + 17)
    for _ in range(GPUS_COLUMN):
        app_page.page.keyboard.press("ArrowRight")
    app_page.page.keyboard.press("Enter")  # open the cell's editor
    app_page.page.wait_for_timeout(300)
    app_page.page.keyboard.press("Control+A")
    app_page.page.keyboard.type("4")
    app_page.shot("typing")
    app_page.page.keyboard.press("Enter")
    app_page.wait_idle()
    app_page.shot("after-edit")
    assert app_page.query().get("n_gpus") == "4"  # the URL carries the changed current plan
    results_after = result_cells(app_page)
    # 8 -> 4 GPUs at the same work, all in one node: the wall clock grows, GPU-hours and so the cost fall (less to
    # synchronise: 3.37 -> 3.05 GPU-hours by the library's own estimate)
    assert float(results_after["Wall clock (h)"]) > float(results_before["Wall clock (h)"])
    assert float(results_after["Cost (USD)"]) < float(results_before["Cost (USD)"])
    app_page.nav("Overview")
    assert app_page.metrics()["GPU-hours"] != before
