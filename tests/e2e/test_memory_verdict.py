"""The memory verdict's three states in a real browser: QLoRA Llama 3.1 8B on one RTX 4090 (23.99 GiB) at 1,024,
2,048 and 4,096 tokens is "fits", "tight — may run out of memory" and "does not fit" (device totals 15.0, 21.6 and
34.8 GiB; the high end of the measured error band at 2,048 tokens, 27.4 GiB, is over the card). Each plan is opened
from its share URL; Overview's headline and breakdown and the Memory page's rows say the same verdict."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import pytest

from planner import Scenario, default_catalogs, estimate, scenario_to_query
from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e
QLORA_4090 = Scenario(model="Llama 3.1 8B", method="qlora", gpu="RTX 4090", n_gpus=1)
STATES = {1024: "fits", 2048: "tight — may run out of memory", 4096: "does not fit"}


def test_overview_and_memory_show_each_verdict(open_app_page: Callable[[str], AppPage]) -> None:
    for seq_len, verdict in STATES.items():
        plan = QLORA_4090.updated(seq_len=seq_len)
        assert estimate(plan, default_catalogs()).fit_verdict == verdict  # the library's own answer
        app = open_app_page("/?" + urlencode(scenario_to_query(plan)))
        app.expect_heading("Overview")
        headline = app.metrics()["Peak memory per GPU"]
        shown = "does NOT fit" if verdict == "does not fit" else verdict
        assert f"{shown} in " in headline, (seq_len, headline)
        main = app.page.get_by_test_id("stMain")
        assert "Memory verdict" in main.inner_text()
        if verdict != "fits":  # the box that offers fixes names the state and the band's high end
            head = "Does not fit" if verdict == "does not fit" else "Tight — may run out of memory"
            assert (
                head in main.inner_text() and "high end of the memory model's error band" in main.inner_text()
            )
        app.nav("Memory")
        text = app.page.get_by_test_id("stMain").inner_text()
        for row in ("Allocated peak", "Reserved peak", "Device total", "Device total, high end"):
            assert row in text, (seq_len, row)
        assert shown in text
        assert ("Ways to make it fit with margin" in text) == (verdict != "fits")
        app.shot(f"memory-{seq_len}")


# Every column of a grid's rows (the grid draws on a canvas and its accessibility table lists only the cells in
# view): scroll it from the left end to the right end, gathering {header: [cells of each row]}.
GRID_COLUMNS = """async (nth) => {
  const grid = document.querySelectorAll("[data-testid='stMain'] [data-testid='stDataFrame']")[nth];
  const scroller = grid.querySelector(".dvn-scroller");
  const out = {};
  for (let left = 0; ; left += scroller.clientWidth / 2) {
    scroller.scrollLeft = left;
    await new Promise(done => setTimeout(done, 300));
    const heads = [...grid.querySelectorAll("[role='columnheader']")];
    const rows = [...grid.querySelectorAll("tbody tr")];
    heads.forEach(h => {
      const column = h.getAttribute("aria-colindex");
      out[h.textContent] = rows.map(r => (r.querySelector(`[aria-colindex='${column}']`) || {}).textContent);
    });
    if (left >= scroller.scrollWidth - scroller.clientWidth) return out;
  }
}"""


def grid_columns(app: AppPage, nth: int = 0) -> dict[str, list[str]]:
    app.page.get_by_test_id("stMain").get_by_test_id("stDataFrame").nth(nth).wait_for()
    columns: dict[str, list[str]] = app.page.evaluate(GRID_COLUMNS, nth)
    return columns


def test_sheet_compare_and_search_show_the_verdict_and_the_high_end(
    open_app_page: Callable[[str], AppPage],
) -> None:
    """The tight plan (2,048 tokens): the plan sheet's row, the Compare page's card for the plan's GPU and the
    search's results each name the verdict beside the high end of the error band, over the card's 23.99 GiB."""
    plan = QLORA_4090.updated(seq_len=2048)
    expected = estimate(plan, default_catalogs())
    assert expected.fit_verdict == STATES[2048] and expected.peak_gib_high is not None
    app = open_app_page("/?" + urlencode(scenario_to_query(plan)))
    app.nav("Plan sheet")
    sheet = grid_columns(app)
    assert sheet["Memory verdict"][0] == STATES[2048], sheet
    assert float(sheet["Peak GiB/GPU, high end"][0]) == pytest.approx(expected.peak_gib_high, abs=0.05)
    assert float(sheet["Peak GiB/GPU, high end"][0]) > 23.99
    app.shot("sheet-verdict")

    app.nav("Compare GPUs")
    text = app.page.get_by_test_id("stMain").inner_text()
    assert "RTX 4090 (your GPU)" in text
    assert STATES[2048] in text
    assert f"up to {expected.peak_gib_high:,.1f} GiB at the high end of the memory model's error band" in text
    app.page.get_by_test_id("stMain").get_by_text(
        "All columns", exact=True
    ).click()  # the compact table has the verdict in a word ("tight")
    app.wait_idle()
    table = grid_columns(app)
    shown = table["Memory verdict"]  # the rows in view
    assert shown and set(shown) <= {"fits", STATES[2048], "does not fit"}, table
    assert all(float(cell) > 0 for cell in table["Peak, high end (GiB)"]), table
    app.shot("compare-verdict")

    app.nav("Plan search")
    app.page.get_by_role("button", name="Search").click()
    app.wait_idle()
    found = grid_columns(app)
    verdicts = found["Memory verdict"]
    assert verdicts and set(verdicts) <= {"fits", STATES[2048]}, verdicts  # search leaves out "does not fit"
    ranks = [verdict == STATES[2048] for verdict in verdicts]
    assert ranks == sorted(ranks), verdicts  # tight plans after those that fit
    assert all(float(cell) > 0 for cell in found["Peak GiB/GPU, high end"]), found
    app.shot("search-verdict")
