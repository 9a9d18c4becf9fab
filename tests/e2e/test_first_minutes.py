"""The first minutes in a real browser at 1440×900: the banners of a wasteful plan (communication-bound, few
prompts per rollout step, more GPUs slower) and the grey time and cost of one that does not fit, a refused entry
that applies once its conflict is gone, the plan sheet's results in view without scrolling, and Compare's table
and chart. The figures behind each banner are in tests/test_plan_warnings.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planner import Scenario
from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage

pytestmark = pytest.mark.e2e
LAPTOP = {"width": 1440, "height": 900}
# The grid's accessibility table lists the header cells in view (the grid draws on a canvas).
HEADERS_IN_VIEW = """() => [...document.querySelectorAll("[data-testid='stDataFrame'] [role='columnheader']")]
  .filter(e => { const r = e.getBoundingClientRect(); return r.right <= innerWidth && r.bottom <= innerHeight; })
  .map(e => e.textContent)"""
# The scatter's GPU names (Vega's text marks, not its axis or legend labels) and its points, as drawn on screen.
LABELS_AND_POINTS = """() => {
  const chart = document.querySelector("[data-testid='stMain'] [data-testid='stVegaLiteChart']");
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {labels: [...chart.querySelectorAll('.mark-text.role-mark text')].filter(t => t.textContent).map(
            t => [t.textContent, ...box(t)]),
          points: [...chart.querySelectorAll('.mark-symbol.role-mark path')].map(box)}; }"""
# The colour a metric's value is painted in, read from its innermost element (a coloured span when greyed).
VALUE_COLOURS = """() => Object.fromEntries([...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMetric']")]
  .map(m => { const label = m.querySelector("[data-testid='stMetricLabel']").innerText.trim();
              const value = m.querySelector("[data-testid='stMetricValue']");
              let inner = value; while (inner.firstElementChild) inner = inner.firstElementChild;
              return [label, getComputedStyle(inner).color]; }))"""


@pytest.fixture
def laptop(app_page: AppPage) -> AppPage:
    app_page.page.set_viewport_size(LAPTOP)
    app_page.goto("/")
    return app_page


def test_a_plan_over_eight_nodes_says_it_is_communication_bound(laptop: AppPage) -> None:
    # the default plan in one node hides its communication behind compute; 64 GPUs at micro-batch 1 do not
    assert not any("Communication is" in a for a in laptop.alerts())
    wide = Scenario(model="Llama 3.1 8B", n_gpus=64, micro_batch=1)
    alerts = laptop.open_plan(wide).alerts()
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


def luminance(css_colour: str) -> float:
    """Relative brightness of a computed `rgb(r, g, b)` colour, 0 (black) to 1 (white)."""
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", css_colour)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255.0


def test_a_grpo_plan_with_four_prompts_per_rollout_step_says_so(laptop: AppPage) -> None:
    grpo = Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo", rollout_prompts=4)
    alerts = laptop.open_plan(grpo).alerts()
    laptop.shot("few-prompts")
    assert any("Each rollout step generates for only 4 prompts" in a for a in alerts), alerts
    assert any("trainers use 128-1,024" in a for a in alerts), alerts
    # the default rollout batch (1,024 prompts) gets no such banner
    default = laptop.open_plan(Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo")).alerts()
    assert not any("only" in a and "prompt" in a for a in default), default


def test_a_plan_that_more_gpus_make_slower_names_the_faster_count(laptop: AppPage) -> None:
    # 1,000 examples at micro-batch 1 on 16 GPUs: two nodes spend more on the network than they save in compute
    wide = Scenario(model="Llama 3.1 8B", n_gpus=16, micro_batch=1, examples=1000)
    alerts = laptop.open_plan(wide, "/compute").alerts()
    laptop.shot("more-gpus-slower")
    # the banner's icon name comes first in its text, so search within it
    said = [
        re.search(r"More GPUs make this plan slower: 8 GPUs take ([\d.]+) min, 16 GPUs take ([\d.]+) min", a)
        for a in alerts
    ]
    found = [m for m in said if m]
    assert found, alerts
    assert float(found[0].group(1)) < float(found[0].group(2))


def test_a_plan_that_does_not_fit_draws_its_time_and_cost_in_grey(laptop: AppPage) -> None:
    laptop.open_plan(Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=8))
    shown = laptop.page.evaluate(VALUE_COLOURS)
    laptop.open_plan(Scenario(model="Llama 3.1 70B", n_gpus=1, gpu="H100 SXM"))
    greyed = laptop.page.evaluate(VALUE_COLOURS)
    laptop.shot("greyed")
    metrics = laptop.metrics()
    for label in ("Wall clock", "GPU-hours", "Cost"):
        assert ":grey[" not in metrics[label], metrics[label]  # rendered, not shown as markup
        assert luminance(greyed[label]) > luminance(shown[label]) + 0.15, (label, greyed[label], shown[label])
