"""The Compare GPUs page (AppTest): renders, filters narrow the table, CSV download, figures match the Overview."""

from __future__ import annotations

import io
import json
import math

import polars as pl
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.compare import compare_gpus
from planner.decide.frontier import pareto_frontier
from planner.inputs.scenario import Scenario
from ui import compare_charts, compare_table
from ui import format as fmt
from ui.sidebar import OVERRIDES_OPEN_KEY

PAGE = "app_pages/compare.py"


@pytest.fixture
def compare(app):
    app.switch_page(PAGE).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def table(at) -> pl.DataFrame:
    return pl.from_pandas(at.dataframe[0].value)


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_page_renders_every_gpu_a_chart_and_a_download(compare):
    assert [t.value for t in compare.title] == ["Compare GPUs"]
    rows = table(compare)
    assert rows.height == default_catalogs().gpus.height
    assert rows["is_scenario_gpu"].sum() == 1
    charts = compare.get("vega_lite_chart")
    assert len(charts) == 1, "the cost against wall clock chart"
    spec = json.loads(charts[0].proto.spec)
    assert {"filter": "datum.on_frontier || datum.is_scenario_gpu"} in [
        step for layer in spec["layer"] for step in layer.get("transform", [])
    ]
    assert [d.name for d in charts[0].proto.datasets] == [compare_charts.DATASET]
    buttons = compare.get("download_button")
    assert len(buttons) == 1 and "Download CSV" in buttons[0].proto.label
    assert not compare.info, "no override, so no override notice"


def test_filters_narrow_the_rows(compare):
    everything = table(compare).height
    compare.multiselect(key="compare.vendors").set_value(["AMD"]).run()
    amd = table(compare)
    assert 0 < amd.height < everything and set(amd["vendor"]) == {"AMD"}
    compare.text_input(key="compare.min_memory_gib").input(str(200.0)).run()
    big_amd = table(compare)
    assert 0 < big_amd.height < amd.height and big_amd["memory_gib"].min() >= 200.0
    compare.multiselect(key="compare.vendors").set_value([]).run()
    compare.text_input(key="compare.min_memory_gib").input(str(0.0)).run()
    compare.checkbox(key="compare.priced_only").check().run()
    priced = table(compare)
    assert priced.height < everything and priced["cost_usd"].null_count() == 0
    assert any(f"{priced.height} of {everything} GPUs shown" in c.value for c in compare.caption)


def test_sorting_by_the_chosen_metric(compare):
    for metric, column, descending in (
        ("Wall clock", "wall_clock_h", False),
        ("Memory per GPU", "memory_gib", True),
    ):
        compare.selectbox(key="compare.sort").set_value(metric).run()
        rows = table(compare)
        fits = rows["fits_vram"].fill_null(False).to_list()
        assert fits == sorted(fits, reverse=True), "GPUs that fit come first"
        # among them, those that fit with the memory band's margin before the tight ones
        margin = (rows["fit_verdict"].fill_null("") == "fits").to_list()
        pairs = list(zip(fits, margin, strict=True))
        assert pairs == sorted(pairs, reverse=True)
        for group in ((True, True), (True, False), (False, False)):
            keep = (pl.col("fits_vram").fill_null(False) == group[0]) & (
                (pl.col("fit_verdict").fill_null("") == "fits") == group[1]
            )
            values = rows.filter(keep)[column].drop_nulls().to_list()
            assert values == sorted(values, reverse=descending)


def test_gpus_that_do_not_fit_are_greyed_and_say_what_they_would_need(app):
    app.sidebar.selectbox(key="w.gpu").set_value("H100 SXM").run()
    app.switch_page(PAGE).run()
    assert not app.exception
    rows = table(app)
    assert rows["fits_vram"].any(), "the default plan fits on some GPUs"
    for row in rows.iter_rows(named=True):
        fewest = row["min_gpus_to_fit"]  # pandas turns the nullable integers into floats
        fewest = None if fewest is None or math.isnan(fewest) else int(fewest)
        assert row["would_need"] == compare_table.would_need(row["fits_vram"], fewest)
        assert (row["would_need"] == "") == bool(row["fits_vram"])
    styles = app.dataframe[0].proto.arrow_data.styler.styles
    assert compare_table.GREY in styles or rows["fits_vram"].all()


@pytest.mark.parametrize(
    ("fits", "fewest", "text"),
    [(True, 8, ""), (False, 16, "16 GPUs"), (False, None, "more than 4,096 GPUs"), (None, None, "unknown")],
)
def test_would_need(fits, fewest, text):
    assert compare_table.would_need(fits, fewest) == text


def test_download_holds_the_filtered_table(compare, monkeypatch):
    # AppTest does not expose download bytes; capture them where Streamlit stores them (streamlit-notes §4.1).
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    captured: list[bytes] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        if filename == "gpu-comparison.csv":
            captured.append(path_or_data)
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    compare.multiselect(key="compare.vendors").set_value(["Google"]).run()
    assert captured, "the page offered a CSV"
    data = captured[-1]
    downloaded = pl.read_csv(io.BytesIO(data if isinstance(data, bytes) else data.encode()))
    shown = table(compare)
    assert set(shown["vendor"]) == {"Google"}
    assert downloaded.height == shown.height
    # the CSV holds what the table draws: the same columns, in the same order, under the same headers
    drawn = list(compare.dataframe[0].proto.column_order)
    assert downloaded.columns == [compare_table.TABLE_COLUMNS[name]["label"] for name in drawn]
    assert downloaded["GPU"].to_list() == shown["gpu"].to_list()
    assert downloaded["Wall clock"].to_list() == shown["wall_clock"].to_list()
    compare.toggle(key="compare.all_columns").set_value(True).run()
    everything = pl.read_csv(
        io.BytesIO(captured[-1] if isinstance(captured[-1], bytes) else captured[-1].encode())
    )
    assert {"Vendor", "Fewest GPUs that fit", "Pareto", "Price source"} <= set(everything.columns)
    assert len(everything.columns) > len(downloaded.columns)
    text = (captured[-1] if isinstance(captured[-1], bytes) else captured[-1].encode()).decode()
    floats = [c for line in text.splitlines()[1:] for c in line.split(",") if "." in c or "e" in c]
    assert floats and all(significant_digits(c) <= 4 for c in floats if c[:1].isdigit()), text[:500]


def significant_digits(cell: str) -> int:
    mantissa = cell.lower().split("e")[0].lstrip("-").replace(".", "")
    return len(mantissa.strip("0")) if "." in cell or "e" in cell.lower() else len(mantissa.lstrip("0"))


@pytest.mark.parametrize("gpu", ["H100 SXM", "A100 80GB SXM"])
def test_scenario_gpu_row_matches_the_overview(app, gpu):
    app.sidebar.selectbox(key="w.gpu").set_value(gpu).run()
    app.switch_page("app_pages/overview.py").run()
    overview = {label: metric(app, label) for label in ("Wall clock", "GPU-hours", "Cost")}
    app.switch_page(PAGE).run()
    row = table(app).filter(pl.col("is_scenario_gpu")).row(0, named=True)
    assert row["gpu"] == gpu
    assert fmt.hours(row["wall_clock_h"]) == overview["Wall clock"]
    assert fmt.count(row["device_hours"], 1) == overview["GPU-hours"]
    assert fmt.usd(row["cost_usd"]) == overview["Cost"]


def test_a_price_quote_stays_with_the_scenario_gpu(app):
    app.session_state[OVERRIDES_OPEN_KEY] = True  # the overrides draw their inputs only when open
    app.run()
    app.sidebar.text_input(key="w.usd_per_gpu_hour").input("1.0").run()
    app.switch_page("app_pages/overview.py").run()
    overview_cost = metric(app, "Cost")
    app.switch_page(PAGE).run()
    rows = table(app)
    mine = rows.filter(pl.col("is_scenario_gpu")).row(0, named=True)
    assert mine["usd_per_gpu_hour"] == 1.0 and fmt.usd(mine["cost_usd"]) == overview_cost
    assert (rows.filter(~pl.col("is_scenario_gpu"))["usd_per_gpu_hour"].drop_nulls() != 1.0).all()
    assert any("applies to" in i.value and "only" in i.value for i in app.info)


def test_side_by_side_shows_up_to_four_gpus(compare):
    picks = ["H100 SXM", "H200 SXM", "MI300X", "Gaudi 3"]
    compare.multiselect(key="compare.detail").set_value(picks).run()
    assert not compare.exception
    walls = [m.value for m in compare.metric if m.label == "Wall clock"]
    assert len(walls) == 4
    rows = table(compare)
    expected = [fmt.hours(rows.filter(pl.col("gpu") == g)["wall_clock_h"][0]) for g in picks]
    assert walls == expected
    # Gaudi 3 has no catalogue price: its cost reads n/a instead of a number.
    assert [m.value for m in compare.metric if m.label == "Cost"][-1] == "n/a"


def test_chart_data_and_axes():
    rows = pareto_frontier(compare_gpus(Scenario(), default_catalogs()), among="fits_vram").drop_nulls(
        ["cost_usd", "wall_clock_h"]
    )
    data = compare_charts.cost_vs_time_data(rows)
    assert data.columns == list(compare_charts.DATA_COLUMNS)
    assert set(data["fit"]) <= {"fits", "does not fit", "unknown"}
    assert data.filter(pl.col("on_frontier"))["frontier"].unique().to_list() == ["on the frontier"]
    spec = compare_charts.cost_vs_time_spec(data)
    shown = spec["datasets"][compare_charts.DATASET]  # the rows, with each name's place (ui/chart_labels.py)
    assert shown.drop("label_side").equals(data)
    named = shown.filter(pl.col("on_frontier") | pl.col("is_scenario_gpu"))
    assert (shown.filter(~(pl.col("on_frontier") | pl.col("is_scenario_gpu")))["label_side"] == "none").all()
    assert (named["label_side"] != "none").sum() >= 1
    assert spec["layer"][1]["encoding"]["x"]["scale"]["type"] == "log"
    # A free quote gives a zero cost: no logarithm, so the axes turn linear.
    free = data.with_columns(pl.lit(0.0).alias("cost_usd"))
    assert "type" not in compare_charts.cost_vs_time_spec(free)["layer"][1]["encoding"]["x"]["scale"]
    spec["layer"].clear()  # each call hands out its own copy of the cached spec
    assert compare_charts.cost_vs_time_spec(data)["layer"]


def test_the_compact_table_says_the_fit_in_words_so_a_tight_plan_does_not_look_ticked(compare):
    drawn = list(compare.dataframe[0].proto.column_order)
    assert "fit" in drawn and "fits_vram" not in drawn and "fit_verdict" not in drawn
    assert set(table(compare)["fit"]) <= {"fits", "tight", "does not fit", "unknown"}
    # QLoRA Llama 3.1 8B on one RTX 4090 at 2,048 tokens: the estimate fits its 23.99 GiB, the high end of the
    # memory model's error band does not (the three states of tests/e2e/test_memory_verdict.py)
    plan = Scenario(model="Llama 3.1 8B", method="qlora", gpu="RTX 4090", n_gpus=1, seq_len=2048)
    rows = compare_table.table_frame(compare_gpus(plan, default_catalogs()))
    by_gpu = dict(zip(rows["gpu"], rows["fit"], strict=True))
    assert by_gpu["RTX 4090"] == "tight"
    assert rows.filter(pl.col("fits_vram") == False)["fit"].unique().to_list() == ["does not fit"]  # noqa: E712
    assert rows.filter(pl.col("fit_verdict") == "fits")["fit"].unique().to_list() == ["fits"]
    assert compare_table.column_order(rows, all_columns=False).index("fit") == 1  # next to the GPU's name
    everything = compare_table.column_order(rows, all_columns=True)
    assert "fit_verdict" in everything and "fit" not in everything  # the verdict once, in full


def test_the_compact_table_names_the_bound_without_its_detail_to_keep_within_the_page():
    rows = compare_table.table_frame(compare_gpus(Scenario(), default_catalogs()))
    pairs = dict(zip(rows["bound_by"], rows["bound"], strict=True))
    assert pairs["communication-bound: data-parallel gradient sync"] == "communication-bound"
    assert pairs["matmul-bound (GEMMs)"] == "matmul-bound"
    assert "bound" in compare_table.column_order(rows, all_columns=False)
    everything = compare_table.column_order(rows, all_columns=True)
    assert "bound_by" in everything and "bound" not in everything
