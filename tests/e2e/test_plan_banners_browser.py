"""The banners and greyed figures of a wasteful or impossible plan, as a browser shows them at 1440×900: a GRPO
plan with a handful of prompts per rollout step, a plan that more GPUs make slower, and a plan that does not fit,
whose time and cost are drawn in a lighter grey than a fitting plan's. (The communication-bound banner is in
test_first_minutes.py; the figures behind each banner in tests/test_plan_warnings.py.)"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from planner import Scenario, scenario_to_query
from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e
LAPTOP = {"width": 1440, "height": 900}
# The colour a metric's value is painted in, read from its innermost element (a coloured span when greyed).
VALUE_COLOURS = """() => Object.fromEntries([...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMetric']")]
  .map(m => { const label = m.querySelector("[data-testid='stMetricLabel']").innerText.trim();
              const value = m.querySelector("[data-testid='stMetricValue']");
              let inner = value; while (inner.firstElementChild) inner = inner.firstElementChild;
              return [label, getComputedStyle(inner).color]; }))"""


@pytest.fixture
def laptop(app_page: AppPage) -> AppPage:
    app_page.page.set_viewport_size(LAPTOP)
    return app_page


def open_plan(app: AppPage, scenario: Scenario, page_path: str = "/") -> AppPage:
    return app.goto(page_path + "?" + urlencode(scenario_to_query(scenario)))


def luminance(css_colour: str) -> float:
    """Relative brightness of a computed `rgb(r, g, b)` colour, 0 (black) to 1 (white)."""
    r, g, b = (float(x) for x in re.findall(r"[\d.]+", css_colour)[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255.0


def test_a_grpo_plan_with_four_prompts_per_rollout_step_says_so(laptop: AppPage) -> None:
    grpo = Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo", rollout_prompts=4)
    alerts = open_plan(laptop, grpo).alerts()
    laptop.shot("few-prompts")
    assert any("Each rollout step generates for only 4 prompts" in a for a in alerts), alerts
    assert any("trainers use 128-1,024" in a for a in alerts), alerts
    # the default rollout batch (1,024 prompts) gets no such banner
    default = open_plan(laptop, Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo")).alerts()
    assert not any("only" in a and "prompt" in a for a in default), default


def test_a_plan_that_more_gpus_make_slower_names_the_faster_count(laptop: AppPage) -> None:
    # 1,000 examples at micro-batch 1 on 16 GPUs: two nodes spend more on the network than they save in compute
    wide = Scenario(model="Llama 3.1 8B", n_gpus=16, micro_batch=1, examples=1000)
    alerts = open_plan(laptop, wide, "/compute").alerts()
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
    open_plan(laptop, Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=8))
    shown = laptop.page.evaluate(VALUE_COLOURS)
    open_plan(laptop, Scenario(model="Llama 3.1 70B", n_gpus=1, gpu="H100 SXM"))
    greyed = laptop.page.evaluate(VALUE_COLOURS)
    laptop.shot("greyed")
    metrics = laptop.metrics()
    for label in ("Wall clock", "GPU-hours", "Cost"):
        assert ":grey[" not in metrics[label], metrics[label]  # rendered, not shown as markup
        assert luminance(greyed[label]) > luminance(shown[label]) + 0.15, (label, greyed[label], shown[label])
