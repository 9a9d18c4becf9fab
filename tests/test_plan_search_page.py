"""The Plan search page (AppTest): search, read the winner, Apply it, and every page shows the same plan."""

from __future__ import annotations

import polars as pl
import pytest

from ui import format as fmt

PAGE = "app_pages/plan_search.py"
GPUS = ["H100 SXM", "H200 SXM"]


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


@pytest.fixture
def searched(app):
    app.switch_page(PAGE).run()
    assert not app.exception, [e.value for e in app.exception]
    app.multiselect(key="search.gpus").set_value(GPUS)
    app.number_input(key="search.max_gpus").set_value(64)
    app.button(key="search.run").click().run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def results(at) -> pl.DataFrame:
    return pl.from_pandas(at.dataframe[0].value)


def test_page_asks_for_a_search_first(app):
    app.switch_page(PAGE).run()
    assert not app.exception
    assert [t.value for t in app.title] == ["Plan search"]
    assert any("press Search" in i.value for i in app.info)
    assert not app.dataframe


def test_search_lists_ranked_results_a_chart_and_the_reason(searched):
    table = results(searched)
    assert 1 <= table.height <= 10 and set(table["gpu"]) <= set(GPUS)
    assert table["cost_usd"].to_list() == sorted(table["cost_usd"].to_list())
    assert table["n_gpus"].max() <= 64
    assert searched.get("vega_lite_chart"), "the Pareto chart"
    reason = searched.success[0].value
    assert "the cheapest configuration that fits in memory" in reason
    assert any("configurations evaluated" in c.value for c in searched.caption)


def test_apply_loads_the_configuration_on_every_page(searched):
    table = results(searched)
    top = table.row(0, named=True)
    searched.button(key="search.apply").click().run()
    assert not searched.exception
    s = searched.session_state["scenario"]
    assert (s.gpu, s.n_gpus, s.tp, s.pp, s.zero_stage, s.recompute, s.micro_batch, s.grad_accum) == (
        top["gpu"],
        top["n_gpus"],
        top["tp"],
        top["pp"],
        top["zero_stage"],
        top["recompute"],
        top["micro_batch"],
        top["grad_accum"],
    )
    assert any("Applied" in m.value for m in searched.success)
    searched.switch_page("app_pages/overview.py").run()
    assert not searched.exception
    assert metric(searched, "Wall clock") == fmt.hours(top["wall_clock_h"])
    assert metric(searched, "Cost") == fmt.usd(top["cost_usd"])


def test_apply_another_rank_and_a_deadline(searched):
    deadline = float(results(searched)["wall_clock_h"].min()) * 0.999
    searched.number_input(key="search.deadline_h").set_value(deadline)
    searched.selectbox(key="search.objective").set_value("wall_clock")
    searched.button(key="search.run").click().run()
    table = results(searched)
    assert table["wall_clock_h"].max() <= deadline
    assert table["wall_clock_h"].to_list() == sorted(table["wall_clock_h"].to_list())
    second = table.row(1, named=True)
    searched.selectbox(key="search.pick").set_value(2).run()
    searched.button(key="search.apply").click().run()
    assert searched.session_state["scenario"].n_gpus == second["n_gpus"]
    searched.switch_page("app_pages/overview.py").run()
    assert metric(searched, "Wall clock") == fmt.hours(second["wall_clock_h"])


def test_impossible_constraints_show_why(searched):
    searched.number_input(key="search.budget_usd").set_value(1.0)
    searched.button(key="search.run").click().run()
    assert not searched.exception
    assert any("No configuration meets the constraints" in e.value for e in searched.error)
    assert not searched.dataframe
