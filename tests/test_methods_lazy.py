"""The Methods page draws its big tables and runs its accuracy scoring only when asked (AppTest)."""

from __future__ import annotations

from tests.test_methods_page import (  # noqa: F401  (the fixture resets the caches)
    fresh_data,
    markdown_tables,
    methods_page,
)
from ui import methods_data


def columns_of(at) -> list[list[str]]:
    return [list(frame.value.columns) for frame in at.dataframe] + [
        list(frame.columns) for frame in markdown_tables(at)
    ]


def test_first_load_scores_nothing_and_draws_no_source_or_case_table(monkeypatch):
    calls: list[int] = []
    real = methods_data.accuracy_report
    monkeypatch.setattr(methods_data, "accuracy_report", lambda: calls.append(1) or real())
    at = methods_page()
    assert not calls  # the planner is not run over the calibration cases on arrival
    tables = columns_of(at)
    assert not any("Median |error| %" in columns for columns in tables)
    assert not any("case_id" in columns or "Case" in columns for columns in tables)
    # the catalogue summary and the price snapshots are small and shown, as markdown (no Arrow code for the
    # browser to load); each file's sources wait for a click
    assert any("Catalogue" in columns for columns in tables) and len(tables) <= 3
    assert len(at.dataframe) == 0 and len(at.table) == 0


def test_opening_the_scores_runs_them_and_shows_the_summary():
    at = methods_page()
    at.session_state["methods.accuracy"] = True
    at.run()
    assert any("Median |error| %" in columns for columns in columns_of(at))
