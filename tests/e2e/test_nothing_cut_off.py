"""No metric (label, value, delta) or caption is cut off with an ellipsis, on a wide screen and on a laptop.

Streamlit truncates a metric's text to one line of its column: a long value or delta loses its end without a
word. Long text belongs in a caption (which wraps) or in `help=`.
"""

from __future__ import annotations

import pytest

from tests.e2e.app_page import AppPage
from tests.e2e.test_offline import PAGES

pytestmark = pytest.mark.e2e

CUT_OFF_SCRIPT = """() => [...document.querySelectorAll(
    "[data-testid='stMetric'], [data-testid='stMetric'] *, [data-testid='stCaptionContainer'], "
    + "[data-testid='stCaptionContainer'] *")]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.slice(0, 80))"""
KNOWN: set[tuple[int, str]] = set()  # (width, page) pairs allowed to cut text off: none


@pytest.mark.parametrize("width", [1400, 1100])
def test_no_metric_or_caption_is_cut_off(
    page, app_url: str, request: pytest.FixtureRequest, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 1000})
    app = AppPage(page, app_url, request.node.name).goto("/")
    cut_off = {}
    for title in PAGES:
        app.nav(title)
        found = page.evaluate(CUT_OFF_SCRIPT)
        if found and (width, title) not in KNOWN:
            cut_off[title] = found
    assert cut_off == {}
