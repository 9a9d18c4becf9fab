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
    app.text_input(key="search.max_gpus").input(str(64))
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
    searched.text_input(key="search.deadline_h").input(str(deadline))
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
    searched.text_input(key="search.budget_usd").input(str(1.0))
    searched.button(key="search.run").click().run()
    assert not searched.exception
    assert any("No configuration meets the constraints" in e.value for e in searched.error)
    assert not searched.dataframe


def test_typed_limits_are_read_exactly_or_refused_beside_their_box(app):
    """Numbers typed as people type them: a number_input read `1e6` as 1 and `2.5` GPUs as 2 without a
    word; the search's own boxes now read scientific notation exactly and refuse what is not a count."""
    app.switch_page(PAGE).run()
    app.multiselect(key="search.gpus").set_value(GPUS)
    app.text_input(key="search.max_gpus").input("2.5")
    app.button(key="search.run").click().run()
    assert not app.exception
    refusals = [e.value for e in app.error]
    assert any(r.startswith("Most GPUs: '2.5' must be a whole number") for r in refusals), refusals
    assert not app.dataframe  # nothing was searched with a value the user did not type
    app.text_input(key="search.max_gpus").input("1e3")
    app.text_input(key="search.deadline_h").input("1e400")
    app.button(key="search.run").click().run()
    refusals = [e.value for e in app.error]
    assert any(r.startswith("Deadline (hours of wall clock): '1e400' is far too large") for r in refusals), (
        refusals
    )
    app.text_input(key="search.deadline_h").input("")
    app.button(key="search.run").click().run()
    assert not app.error and app.dataframe
    assert 1 < results(app)["n_gpus"].max() <= 1_000  # 1e3 read as a thousand GPUs (as 1, every plan had 1)


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_fixed_layout_choices_are_kept_and_any_frees_them(app):
    """Each searched dimension is 'any' or a value; a value keeps every plan at it."""
    app.switch_page(PAGE).run()
    app.multiselect(key="search.gpus").set_value(GPUS)
    app.text_input(key="search.max_gpus").input("64")
    for key, value in (("search.fix.tp", 1), ("search.fix.pp", 1), ("search.fix.zero_stage", 3)):
        app.selectbox(key=key).set_value(value)
    app.selectbox(key="search.fix.micro_batch").set_value(2)
    app.button(key="search.run").click().run()
    assert not app.exception, [e.value for e in app.exception]
    table = results(app)
    assert table.height and set(
        zip(table["tp"], table["pp"], table["zero_stage"], table["micro_batch"], strict=True)
    ) == {(1, 1, 3, 2)}
    words = _markdown(app)
    assert "Kept fixed: TP 1, PP 1, ZeRO stage 3, micro-batch 2." in words
    assert "Global batch target: 8 sequences per optimizer step." in words  # the scenario's 1 x 1 x 8
    assert {"mfu_low", "mfu", "mfu_high"} <= set(table.columns)
    assert all(
        lo <= m <= hi for lo, m, hi in zip(table["mfu_low"], table["mfu"], table["mfu_high"], strict=True)
    )
    for key in ("search.fix.tp", "search.fix.pp", "search.fix.zero_stage", "search.fix.micro_batch"):
        app.selectbox(key=key).set_value("any")
    app.text_input(key="search.global_batch_sequences").input("64")
    app.button(key="search.run").click().run()
    assert not app.exception
    words = _markdown(app)
    assert "Kept fixed" not in words and "Global batch target: 64 sequences per optimizer step." in words
    assert (
        len(
            set(zip(results(app)["tp"], results(app)["zero_stage"], results(app)["micro_batch"], strict=True))
        )
        > 1
    )


def test_fsdp_only_with_a_fixed_tp_names_the_choice(app):
    app.switch_page(PAGE).run()
    app.selectbox(key="search.fix.tp").set_value(2)
    app.checkbox(key="search.fsdp_only").check()
    app.button(key="search.run").click().run()
    assert not app.exception
    assert any("FSDP only keeps TP at 1" in e.value and "set TP to any" in e.value for e in app.error)
    assert not app.dataframe  # nothing was searched with choices that contradict each other
    app.selectbox(key="search.fix.tp").set_value("any")
    app.button(key="search.run").click().run()
    table = results(app)
    assert table.height and set(table["tp"]) == {1} and set(table["pp"]) == {1}
    assert "Kept fixed: FSDP only (TP 1, PP 1, ZeRO stage 0/2/3)." in _markdown(app)
