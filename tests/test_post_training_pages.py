"""Post-training on the pages (AppTest): Compare GPUs, the Plan sheet and Plan search show the post-training
figures for a post-training plan, from the same estimate, and keep their columns for supervised fine-tuning."""

from __future__ import annotations

import polars as pl
import pytest

from planner import Scenario, default_catalogs, estimate, open_library
from ui.state import SCENARIO_KEY

GRPO = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8, post_training="grpo")


def on_page(app, page: str, plan: Scenario | None = None):
    if plan is not None:
        app.session_state[SCENARIO_KEY] = plan
    app.switch_page(page).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_compare_page_shows_the_post_training_columns_only_for_a_post_training_plan(app):
    sft = pl.from_pandas(on_page(app, "app_pages/compare.py").dataframe[0].value)
    assert "kv_cache_gib" not in sft.columns and "generation_frac" not in sft.columns
    grpo = pl.from_pandas(on_page(app, "app_pages/compare.py", GRPO).dataframe[0].value)
    assert {"reference_model_gib", "kv_cache_gib", "generation_time_h", "training_time_h"} <= set(
        grpo.columns
    )
    h100 = grpo.filter(pl.col("gpu") == "H100 SXM").row(0, named=True)
    one = estimate(GRPO, default_catalogs())
    assert h100["generation_time_h"] == pytest.approx(one.generation_time_h, rel=1e-9)
    assert h100["generation_frac"] == pytest.approx(one.generation_frac, rel=1e-9)
    assert h100["peak_phase"] == one.peak_phase


def test_plan_sheet_with_an_sft_and_a_grpo_row(app, fresh_library):
    open_library(fresh_library).create("grpo", GRPO, author="Ann")
    frame = on_page(app, "app_pages/plan_sheet.py").data_editor[0].value
    assert list(frame["Name"]) == ["Current plan", "grpo"]
    assert list(frame["Objective"]) == ["sft", "grpo"]
    assert "KV cache GiB" in frame.columns  # a row is post-training
    cats = default_catalogs()
    for index, plan in enumerate([Scenario(), GRPO]):
        one = estimate(plan, cats)
        assert frame["Wall clock (h)"][index] == pytest.approx(one.wall_clock_h, rel=1e-9)
        assert frame["Generation (h)"][index] == pytest.approx(one.generation_time_h, rel=1e-9, abs=1e-12)
        assert frame["KV cache GiB"][index] == pytest.approx(one.kv_cache_gib, rel=1e-9, abs=1e-12)
    assert frame["Generation (h)"][0] == 0.0 and frame["Generation (h)"][1] > 0


def test_plan_sheet_of_sft_plans_keeps_its_columns(app, fresh_library):
    frame = on_page(app, "app_pages/plan_sheet.py").data_editor[0].value
    assert "KV cache GiB" not in frame.columns and "Generation (h)" not in frame.columns


def test_plan_search_page_searches_generation_gpus_and_obeys_a_fixed_count(app):
    at = on_page(app, "app_pages/plan_search.py")
    assert not [t for t in at.text_input if t.key == "search.fix.generation_gpus"]  # SFT: no such choice
    at = on_page(app, "app_pages/plan_search.py", GRPO)
    at.multiselect(key="search.gpus").set_value(["H100 SXM"])
    at.text_input(key="search.max_gpus").input("16")
    at.button(key="search.run").click().run()
    assert not at.exception
    free = pl.from_pandas(at.dataframe[0].value)
    assert {"generation_gpus", "generation_frac"} <= set(free.columns)
    assert (free["n_gpus"] + free["generation_gpus"]).max() <= 16
    at.text_input(key="search.fix.generation_gpus").input("2")
    at.button(key="search.run").click().run()
    assert not at.exception
    fixed = pl.from_pandas(at.dataframe[0].value)
    assert fixed.height and set(fixed["generation_gpus"]) == {2}
    assert "Kept fixed: generation GPUs 2." in " ".join(m.value for m in at.markdown)
