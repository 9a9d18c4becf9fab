"""No page shows an internal key (`tp_size`, `bf16_mixed`): the visible text of every page is scanned for
snake_case words.

What is left out of the scan, and why: Material icons are drawn from their ligature names (`menu_book`), which the
browser shows as a glyph (Streamlit marks them aria-hidden); text in `code` elements is a deliberate quote of another tool's name (vLLM's
`gpu_memory_utilization`), set apart as code; and a formula's subscripts (`d_in`) are written as code too.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.app_page import AppPage
from tests.e2e.test_offline import PAGES

pytestmark = pytest.mark.e2e

# Every visible text node of the app outside icons and code, joined by line.
VISIBLE_TEXT_SCRIPT = """() => {
  const skip = "[aria-hidden='true'], code, pre";
  const walker = document.createTreeWalker(document.querySelector("[data-testid='stApp']"), NodeFilter.SHOW_TEXT);
  const out = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(skip) || !parent.checkVisibility()) continue;
    out.push(node.textContent);
  }
  return out.join("\\n");
}"""
# A snake_case word standing alone: not part of a file name, a path or a URL (`data/gpus.csv`, `ds_config.json`).
SNAKE_CASE = re.compile(r"(?<![\w./-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w./-])")


def test_snake_case_pattern_finds_keys_and_spares_file_names() -> None:
    assert SNAKE_CASE.findall("precision bf16_mixed, tp_size 2") == ["bf16_mixed", "tp_size"]
    assert SNAKE_CASE.findall("see data/pricing_modes.csv and ds_config.json; Llama 3.1 8B") == []


def test_no_page_shows_an_internal_key(page, app_url: str, request: pytest.FixtureRequest) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    app = AppPage(page, app_url, request.node.name).goto("/")
    found = {}
    for title in PAGES:
        app.nav(title)
        words = sorted(set(SNAKE_CASE.findall(page.evaluate(VISIBLE_TEXT_SCRIPT))))
        if words:
            found[title] = words
    assert found == {}
