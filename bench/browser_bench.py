"""Browser input-to-figure timing (bench/run.py merges `measure()` when Debian's chromium is present).

- browser_input_to_figure_ms: a real Streamlit server on app.py and Playwright driving Debian's chromium: type a
  new GPU count into the sidebar's "Number of GPUs" on Overview, press Enter, and time until the page's figures
  (its metric values, read together) show new values; the median of N_TIMED edits after N_WARMUP.
- browser_floor_ms: bench/browser_floor_app.py (one number input, one metric) on its own server, measured the
  same way in the same run, edits alternating between the two pages (so a busy moment of the machine slows
  both), so the ratio reads the app's own cost against what Streamlit and the browser cost.
- browser_input_to_figure_over_floor: the ratio of the two.

Each edit sets a value the session has not had before (9, 10, 11, ...), so no memo answers it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.server import launch, stop  # noqa: E402  (the browser tests start their servers the same way)

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
N_WARMUP, N_TIMED = 3, 25  # 25: the median of 15 moved by 0.1-0.2 in the ratio between runs
FIRST_VALUE = 9
FIGURE = '[data-testid="stMain"] [data-testid="stMetricValue"]'
# The figures as one text: a single figure can read the same at two GPU counts once rounded ("12 min").
FIGURES_TEXT = "(selector) => [...document.querySelectorAll(selector)].map(e => e.innerText).join('|')"
CHANGED = f"([selector, before]) => ({FIGURES_TEXT})(selector) !== before"


@contextmanager
def _server(script: Path, log_dir: Path) -> Iterator[str]:
    server, url = launch(script, log_dir / f"{script.stem}.log")
    try:
        yield url
    finally:
        stop(server)


class _EditTimer:
    """One page with a "Number of GPUs" box: each `edit()` types a new count and times until the figures change."""

    def __init__(self, browser: Any, url: str, scope: str) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.goto(url)
        self.page.wait_for_selector(FIGURE, timeout=60_000)
        self.page.wait_for_timeout(1000)  # let the first run finish painting
        self.box = self.page.locator(scope).get_by_label("Number of GPUs")
        self.next_value = FIRST_VALUE

    def edit(self) -> float:
        before = self.page.evaluate(FIGURES_TEXT, FIGURE)
        self.box.fill(str(self.next_value))
        self.next_value += 1
        start = time.perf_counter()
        self.box.press("Enter")
        self.page.wait_for_function(CHANGED, arg=[FIGURE, before], timeout=60_000, polling="raf")
        elapsed_ms = (time.perf_counter() - start) * 1e3
        self.page.wait_for_timeout(300)  # the run's tail (other elements) settles before the next edit
        return elapsed_ms


def measure() -> dict[str, float]:
    if not Path(CHROMIUM).exists():
        return {}
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver, tempfile.TemporaryDirectory() as logs:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        with (
            _server(ROOT / "app.py", Path(logs)) as app_url,
            _server(ROOT / "bench" / "browser_floor_app.py", Path(logs)) as floor_url,
        ):
            app = _EditTimer(browser, app_url, '[data-testid="stSidebar"]')
            floor = _EditTimer(browser, floor_url, '[data-testid="stMain"]')
            # Edits alternate between the two pages, so a busy moment of the machine falls on both alike.
            times = [(app.edit(), floor.edit()) for _ in range(N_WARMUP + N_TIMED)][N_WARMUP:]
        browser.close()
    app_ms = statistics.median(t[0] for t in times)
    floor_ms = statistics.median(t[1] for t in times)
    return {
        "browser_input_to_figure_ms": app_ms,
        "browser_floor_ms": floor_ms,
        "browser_input_to_figure_over_floor": app_ms / floor_ms,
    }


if __name__ == "__main__":
    import json

    print(json.dumps({k: round(v, 1) for k, v in measure().items()}, indent=2))
