"""Point by point, what "readable everywhere" means, as the browser draws it: each memory component keeps its
colour from one plan to the next, the scaling chart's GPU axis is labelled at whole GPU counts only, a run that
ends before its first checkpoint says "no checkpoint needed", and one GPU is "1 GPU". The colours and wording
themselves are unit-tested in tests/test_chart_colours.py and tests/test_plan_warnings.py."""

from __future__ import annotations

import re

import pytest

from planner import Scenario
from tests.e2e.app_page import AppPage
from ui.charts import MEMORY_COMPONENT_COLOURS

pytestmark = pytest.mark.e2e
# Vega draws charts as SVG here: a legend entry is a symbol path (its fill) followed by its label.
LEGEND_COLOURS = """() => { const c = document.querySelector("[data-testid='stMain'] [data-testid='stVegaLiteChart']");
  const items = [...c.querySelectorAll('.role-legend-symbol path, .role-legend-label text')];
  const out = {};
  for (let i = 0; i + 1 < items.length; i += 2) out[items[i + 1].textContent] = items[i].getAttribute('fill');
  return out; }"""
# Each axis of each chart: its title and its tick labels.
AXES = """() => [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stVegaLiteChart'] .role-axis")]
  .map(a => ({title: [...a.querySelectorAll('.role-axis-title text')].map(t => t.textContent).join(' '),
              labels: [...a.querySelectorAll('.role-axis-label text')].map(t => t.textContent).filter(t => t)}))"""


def open_chart_page(app: AppPage, scenario: Scenario, page_path: str) -> AppPage:
    """The plan's page once its first chart has been drawn."""
    app.open_plan(scenario, page_path)
    app.page.locator("[data-testid='stMain'] [data-testid='stVegaLiteChart'] svg").first.wait_for()
    return app


def test_each_memory_component_keeps_its_colour_across_plans(app_page: AppPage) -> None:
    full = open_chart_page(app_page, Scenario(model="Llama 3.1 8B", n_gpus=8), "/memory").page.evaluate(
        LEGEND_COLOURS
    )
    grpo = Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo", zero_stage=0)
    colocated = open_chart_page(app_page, grpo, "/memory").page.evaluate(LEGEND_COLOURS)
    app_page.shot("grpo-legend")
    shared = set(full) & set(colocated)
    assert {"Weights", "Activations", "Optimizer states"} <= shared, (full, colocated)
    assert set(colocated) - set(full), "the second plan should bring components of its own"
    for name, colour in {**full, **colocated}.items():
        assert colour == MEMORY_COMPONENT_COLOURS[name], (name, colour)


def test_the_scaling_chart_labels_whole_gpu_counts_only(app_page: AppPage) -> None:
    axes = open_chart_page(app_page, Scenario(model="Llama 3.1 8B", n_gpus=8), "/compute").page.evaluate(AXES)
    gpu_axes = [a for a in axes if a["title"] == "GPUs"]
    assert gpu_axes, axes
    for axis in gpu_axes:
        assert axis["labels"], axis
        assert all(re.fullmatch(r"[\d,]+", label) for label in axis["labels"]), axis


def test_a_run_shorter_than_its_checkpoint_interval_needs_no_checkpoint(app_page: AppPage) -> None:
    one_gpu = Scenario(model="Llama 3.1 8B", n_gpus=1, gpu="H100 SXM", micro_batch=1, examples=2000)
    app_page.open_plan(one_gpu)
    text = app_page.page.get_by_test_id("stMain").inner_text()
    assert re.search(r"no checkpoint needed: the run ends \([^)]+\) before the first is due", text), text[
        -2000:
    ]
    assert "wall clock × 1 GPU" in text and "1 GPUs" not in text
