"""The Methods & data page: every formula section with its anchor, every catalogue with its row count, the
accuracy table, the version; and the link from a figure to its section."""

from __future__ import annotations

import re

import pandas as pd
import polars as pl
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from planner.catalogue.catalog import default_catalogs
from tests.conftest import APP
from ui import data as ui_data
from ui.methods_data import accuracy_summary_table, app_version, calibration_path, snapshot_table
from ui.methods_link import TOPICS, methods_link

PAGE = "app_pages/methods.py"


@pytest.fixture(autouse=True)
def fresh_data(monkeypatch):
    monkeypatch.delenv(ui_data.OVERLAY_ENV, raising=False)
    st.cache_data.clear()  # the accuracy report (st.cache_resource, ~3 s) may stay: its input never changes
    ui_data.clear_data_cache()


def methods_page(topic: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if topic is not None:
        at.query_params["topic"] = topic
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown_tables(at: AppTest) -> list[pd.DataFrame]:
    """The page's small tables (ui.blocks.small_table: markdown), read back cell by cell, escapes removed."""
    tables = []
    for element in at.main.markdown:
        lines = element.value.splitlines()
        if len(lines) < 2 or not lines[0].startswith("| ") or not lines[1].startswith("|:--|"):
            continue
        rows = [[re.sub(r"\\(.)", r"\1", cell.strip()) for cell in line[2:-2].split(" | ")] for line in lines]
        frame = pd.DataFrame(rows[2:], columns=rows[0])
        tables.append(frame.apply(_numeric_if_possible))
    return tables


def _numeric_if_possible(column: pd.Series) -> pd.Series:
    try:
        return pd.to_numeric(column)
    except ValueError:
        return column


def table_with(at: AppTest, column: str):
    for frame in [d.value for d in at.dataframe] + markdown_tables(at):
        if column in frame.columns:
            return frame
    raise AssertionError(f"no table with a {column!r} column")


def test_every_section_has_its_anchor_in_page_order():
    at = methods_page()
    anchors = [h.proto.anchor for h in at.main.header]
    assert anchors == list(TOPICS)
    assert at.title[0].value == "Methods & data"


def test_a_link_topic_puts_its_section_first():
    at = methods_page("memory")
    anchors = [h.proto.anchor for h in at.main.header]
    assert anchors[0] == "memory" and sorted(anchors) == sorted(TOPICS)


def test_an_unknown_topic_is_ignored():
    at = methods_page("nonsense")
    assert [h.proto.anchor for h in at.main.header] == list(TOPICS)


def test_every_catalogue_is_listed_with_its_row_count():
    at = methods_page()
    summary = table_with(at, "Catalogue").set_index("Catalogue")
    cats = default_catalogs()
    expected = {
        "GPUs": cats.gpus.height,
        "Price snapshots": cats.prices.height,
        "Pricing modes": 4,  # on_demand, spot, commit_1y, commit_3y (data/README.md)
        "Grid carbon intensity": cats.grid.height,
        "PUE presets": cats.pue.height,
        "Storage presets": cats.storage.height,
        "Model presets": default_catalogs().models.height,
        "Efficiency presets": default_catalogs().efficiency.height,
    }
    for name, rows in expected.items():
        assert summary.loc[name, "Rows"] == rows, name
    assert summary.loc["GPUs", "Team or uploaded rows"] == 0
    assert (summary.loc[list(expected), "Distinct sources"] > 0).all()
    # every GPU row was checked on 2026-11-09, the RTX A6000 (added for the calibration rows) on 2026-12-01,
    # the H20 (for the verl rows) on 2026-12-02
    assert summary.loc["GPUs", "date"] == "2026-11-09 … 2026-12-02"
    # data/README.md lists six bundled snapshots, the newest 2026-11-09.
    snapshots = table_with(at, "GPUs priced")
    assert len(snapshots) == 6 and snapshots["snapshot"].iloc[0] == "2026-11-09"


def test_team_rows_are_counted_apart(tmp_path, monkeypatch):
    from tests.test_team_data import ACME_GPU

    (tmp_path / "gpus.csv").write_text(ACME_GPU)
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    summary = table_with(methods_page("catalogues"), "Catalogue").set_index("Catalogue")
    assert summary.loc["GPUs", "Team or uploaded rows"] == 1
    assert summary.loc["GPUs", "Rows"] == default_catalogs().gpus.height + 1


def test_version_and_snapshot_in_use_are_shown():
    at = methods_page()
    text = "\n".join(m.value for m in at.main.markdown)
    assert f"App version: **{app_version()}**" in text
    assert "Price snapshot in use: **2026-11-09** (the newest)" in text
    assert app_version() != "unknown"


def test_accuracy_table_has_one_row_per_category():
    at = methods_page("accuracy")
    assert calibration_path().is_file()
    table = table_with(at, "Median |error| %")
    # One row per category with every case of the bundled file counted (skipped ones included).
    cases = pl.read_csv(calibration_path(), infer_schema_length=0)["category"].value_counts()
    assert dict(zip(table["Category"], table["Cases"], strict=True)) == dict(cases.iter_rows())
    assert (table["Skipped"] < table["Cases"]).all()
    assert (table["Median |error| %"] <= table["Largest |error| %"]).all()


def test_accuracy_table_reports_three_scores_and_which_to_trust():
    at = methods_page("accuracy")
    table = table_with(at, "Median |error| %, source holdout").set_index("Category")
    assert "Median |error| %, row holdout" in table.columns
    # the shipped presets were derived from the throughput rows (in-sample); either holdout removes the row's
    # own information, so its error grows (which holdout is worse depends on the cells rows fall back to)
    shipped, row, source = (
        table.loc["throughput", column]
        for column in (
            "Median |error| %",
            "Median |error| %, row holdout",
            "Median |error| %, source holdout",
        )
    )
    assert shipped < min(row, source)
    # memory uses no presets: one score whatever the holdout
    assert table.loc["memory", "Median |error| %"] == table.loc["memory", "Median |error| %, source holdout"]
    text = "\n".join(m.value for m in at.main.markdown)
    assert "trust the source-holdout figures" in text


def test_accuracy_summary_converts_fractions_to_percent():
    report = {
        "summary": {
            "memory": {
                "n": 3,
                "n_skipped": 1,
                "median_abs_rel_error": 0.125,
                "p90_abs_rel_error": 0.3,
                "max_abs_rel_error": 0.41,
            }
        }
    }
    row = accuracy_summary_table(report).row(0, named=True)
    assert row == {
        "Category": "memory",
        "Cases": 3,
        "Skipped": 1,
        "Median |error| %": 12.5,
        "90th percentile |error| %": 30.0,
        "Largest |error| %": 41.0,
    }


def test_snapshot_table_counts_gpus_per_snapshot():
    table = snapshot_table(default_catalogs().prices)
    prices = default_catalogs().prices
    for snapshot, n in table.select("snapshot", "GPUs priced").iter_rows():
        assert n == prices.filter(prices["snapshot"] == snapshot).height


def test_methods_link_refuses_an_unknown_topic():
    with pytest.raises(ValueError, match="unknown methods topic"):
        methods_link("colour")
