"""The plan sheet in a real browser: a cell typed into the grid reaches the plan (AppTest can only seed the
grid's edit state; this is the path a person takes: click a cell, type, press Enter)."""

from __future__ import annotations

import pytest

from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e
GPUS_COLUMN = 4  # Name, Model, Method, GPU, GPUs: arrow presses from the first cell


def test_typing_a_gpu_count_into_the_sheet_changes_the_current_plan(app_page: AppPage) -> None:
    app_page.nav("Overview")
    before = app_page.metrics()["GPU-hours"]
    app_page.nav("Plan sheet")
    grid = app_page.page.get_by_test_id("stDataFrame").first
    grid.wait_for()
    box = grid.bounding_box()
    assert box is not None
    # The first body row sits under the header row; click its first cell, then walk right to "GPUs".
    app_page.page.mouse.click(box["x"] + 40, box["y"] + 35 + 17)
    for _ in range(GPUS_COLUMN):
        app_page.page.keyboard.press("ArrowRight")
    app_page.page.keyboard.press("Enter")  # open the cell's editor
    app_page.page.wait_for_timeout(300)
    app_page.page.keyboard.press("Control+A")
    app_page.page.keyboard.type("32")
    app_page.shot("typing")
    app_page.page.keyboard.press("Enter")
    app_page.wait_idle()
    app_page.shot("after-edit")
    assert app_page.query().get("n_gpus") == "32"  # the URL carries the changed current plan
    app_page.nav("Overview")
    assert app_page.metrics()["GPU-hours"] != before
