"""`AppPage`: a Playwright page on the running app with the moves the browser tests share.

Selectors follow reference/streamlit-notes.md §5: labels for inputs, test ids for metrics, alerts and the
navigation, and typing + Enter for selectboxes (clicking an option is flaky while charts reflow).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
RUN_TIMEOUT_MS = 30_000  # one script run takes well under a second; slack for cold imports on a 2-core CI


IDLE_SCRIPT = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  return app !== null && app.getAttribute("data-test-script-state") === "notRunning"
    && document.querySelectorAll("[data-testid='stSkeleton'], [data-stale='true']").length === 0;
}"""


CONTENT_HEIGHT_SCRIPT = """() => Math.max(...["stMain", "stSidebarContent"].map(
  id => { const el = document.querySelector(`[data-testid='${id}']`); return el ? el.scrollHeight : 0; }))"""


class AppPage:
    """A Playwright page on the running app, with the few moves every test needs."""

    def __init__(self, page: Any, base_url: str, test_name: str) -> None:
        self.page = page
        self.base_url = base_url
        self.test_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name)

    # --- navigation and waiting ------------------------------------------------------------------------
    def wait_idle(self) -> None:
        """Wait until the run triggered by the last action has finished AND its elements have painted.

        "notRunning" alone is not enough: the frontend still shows skeleton placeholders for ~0.3 s after a
        run ends (measured on the first load of a share link), and elements of the previous run stay stale.
        """
        self.page.wait_for_timeout(250)  # let the rerun start before looking for "notRunning"
        self.page.wait_for_function(IDLE_SCRIPT, timeout=RUN_TIMEOUT_MS)
        errors = self.exceptions()
        assert not errors, f"the app shows a traceback at {self.page.url}: {errors[0][:1500]}"

    def goto(self, path_and_query: str = "/", heading: str | None = None) -> AppPage:
        url = path_and_query if path_and_query.startswith("http") else self.base_url + path_and_query
        self.page.goto(url)
        # "notRunning" can be seen before the first run starts, so wait for content (or a crash) first.
        content = self.page.get_by_test_id("stHeading").or_(self.page.get_by_test_id("stException"))
        content.first.wait_for(timeout=RUN_TIMEOUT_MS)
        self.wait_idle()
        if heading:
            self.expect_heading(heading)
        return self

    def open_plan(self, scenario: Any, page_path: str = "/") -> AppPage:
        """Open a page on a plan, the way a share link does: the Scenario's fields in the query string."""
        from planner import scenario_to_query

        return self.goto(page_path + "?" + urlencode(scenario_to_query(scenario)))

    def expect_heading(self, title: str) -> None:
        from playwright.sync_api import expect

        expect(self.page.get_by_role("heading", name=title, exact=True).first).to_be_visible(
            timeout=RUN_TIMEOUT_MS
        )

    def has_page(self, title: str) -> bool:
        return self.nav_link(title).count() > 0

    def nav_link(self, title: str) -> Any:
        # The link text carries the icon's ligature name first ("bolt\n\nEnergy"), so match the end.
        return self.page.get_by_test_id("stSidebarNav").get_by_role(
            "link", name=re.compile(rf"(^|\s){re.escape(title)}$")
        )

    def nav(self, title: str) -> AppPage:
        self.nav_link(title).click()
        self.wait_idle()
        self.expect_heading(title)
        self.wait_idle()
        return self

    # --- inputs ---------------------------------------------------------------------------------------
    def _scope(self, sidebar: bool) -> Any:
        return self.page.get_by_test_id("stSidebar") if sidebar else self.page.get_by_test_id("stMain")

    def select(self, label: str, option: str, *, sidebar: bool = False) -> None:
        """Type into a selectbox and press Enter (clicking options is flaky while charts reflow)."""
        field = self._scope(sidebar).get_by_role("combobox", name=label, exact=True)
        field.click()
        field.fill(option)
        field.press("Enter")
        self.wait_idle()

    def selected(self, label: str, *, sidebar: bool = False) -> str:
        """The option a selectbox shows (its combobox input holds the chosen label)."""
        return self._scope(sidebar).get_by_role("combobox", name=label, exact=True).input_value()

    def number_input(self, label: str, *, sidebar: bool = False) -> Any:
        return self._scope(sidebar).get_by_label(label, exact=True)

    def set_number(self, label: str, value: str, *, sidebar: bool = False) -> None:
        box = self.number_input(label, sidebar=sidebar)
        box.fill(value)
        box.press("Enter")
        self.wait_idle()

    # --- reading --------------------------------------------------------------------------------------
    def metrics(self) -> dict[str, str]:
        """Main-area metrics as {label: "value | delta"} (what the user sees, browser formatting included)."""
        out: dict[str, str] = {}
        for metric in self.page.get_by_test_id("stMain").get_by_test_id("stMetric").all():
            label = metric.get_by_test_id("stMetricLabel").inner_text().strip()
            value = metric.get_by_test_id("stMetricValue").inner_text().strip()
            delta = metric.get_by_test_id("stMetricDelta")
            out[label] = value + (" | " + delta.inner_text().strip() if delta.count() else "")
        return out

    def dataframe_column(self, nth: int = 0, column: int = 1) -> list[str]:
        """The cells of one column (1 = first) of the nth main-area dataframe, as its accessible table holds
        them once the grid has painted (only the rows in view: fine for short tables)."""
        grid = self.page.get_by_test_id("stMain").get_by_test_id("stDataFrame").nth(nth)
        cells = grid.locator(f"tbody td[aria-colindex='{column}']")
        cells.first.wait_for(state="attached", timeout=RUN_TIMEOUT_MS)
        return [cell.text_content() or "" for cell in cells.all()]

    def captions(self) -> list[str]:
        return [
            c.inner_text()
            for c in self.page.get_by_test_id("stMain").get_by_test_id("stCaptionContainer").all()
        ]

    def alerts(self) -> list[str]:
        """Text of every warning/error/info box on the page (notices about rejected input land here)."""
        return [a.inner_text() for a in self.page.get_by_test_id("stAlert").all()]

    def exceptions(self) -> list[str]:
        return [e.inner_text() for e in self.page.get_by_test_id("stException").all()]

    def query(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.page.url).query))

    # --- evidence -------------------------------------------------------------------------------------
    def shot(self, step: str) -> Path:
        """Whole-page screenshot under tests/e2e/screenshots/ (git-ignored), after tables have painted.

        Streamlit scrolls inside its main container, so Playwright's full_page sees one viewport; the
        viewport is stretched to the content's height for the picture, then put back.
        """
        SCREENSHOTS.mkdir(exist_ok=True)
        size = self.page.viewport_size or {"width": 1400, "height": 1000}
        height = self.page.evaluate(CONTENT_HEIGHT_SCRIPT)
        self.page.set_viewport_size(
            {"width": size["width"], "height": max(size["height"], min(height, 8000))}
        )
        # Only a grid on screen paints its canvas (one inside a closed expander does not).
        grids = self.page.locator("[data-testid='stDataFrame']:visible")
        if grids.count():
            grids.first.locator("canvas").first.wait_for(state="attached", timeout=RUN_TIMEOUT_MS)
        self.page.wait_for_timeout(600)  # data grids and charts paint a moment after a resize
        path = SCREENSHOTS / f"{self.test_name}-{step}.png"
        self.page.screenshot(path=str(path))
        self.page.set_viewport_size(size)
        return path
