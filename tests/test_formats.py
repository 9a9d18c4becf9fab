"""Number and duration formats: CSV to four significant figures (JSON keeps full precision), durations in the
unit that reads best, and the micro-batch wording."""

from __future__ import annotations

import csv
import io
import json
import math

import polars as pl
import pytest

from planner.cli.cli_common import render_records
from planner.inputs.safe_csv import csv_cell, csv_number, safe_csv
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import RESULT_COLUMNS, read_scenarios_csv, scenarios_to_csv
from ui import format as fmt

# The float the issue quotes: 0.1 + 0.2 style binary noise that a spreadsheet shows in full.
NOISY = 0.31689999999999996


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (NOISY, "0.3169"),
        (0.1 + 0.2, "0.3"),
        (2.0, "2"),
        (100.0, "100"),
        (1234.5, "1234"),  # 1234.5 is stored a hair below .5
        (123456.7, "123500"),
        (9999.9, "10000"),
        (-0.5, "-0.5"),
        (0.000123456, "0.0001235"),
        (1e-7, "1e-07"),
        (1.2345e20, "1.234e+20"),
        (0.0, "0"),
        (math.nan, ""),
        (math.inf, ""),
    ],
)
def test_csv_number_keeps_four_significant_figures(value: float, text: str) -> None:
    assert csv_number(value) == text


def test_csv_cells_keep_integers_booleans_and_neutralise_text() -> None:
    assert [csv_cell(v) for v in (4096, True, None, "=1+1", "H100", NOISY)] == [
        4096,
        True,
        None,
        "'=1+1",
        "H100",
        "0.3169",
    ]


def test_cli_csv_rounds_while_json_keeps_full_precision() -> None:
    rows = [{"gpu": "X", "cost_usd": NOISY, "n_gpus": 8, "fits_vram": True}]
    record = next(csv.DictReader(io.StringIO(render_records(rows, "csv"))))
    assert record == {"gpu": "X", "cost_usd": "0.3169", "n_gpus": "8", "fits_vram": "True"}
    assert json.loads(render_records(rows, "json"))[0]["cost_usd"] == NOISY


def test_frame_csv_rounds_floats_and_keeps_integer_columns() -> None:
    frame = pl.DataFrame(
        {"gpu": ["-A", "B"], "cost_usd": [NOISY, None], "n": [4096, 1]},
        schema={"gpu": pl.String, "cost_usd": pl.Float64, "n": pl.Int64},
    )
    assert safe_csv(frame).splitlines() == ["gpu,cost_usd,n", "'-A,0.3169,4096", "B,,1"]


def test_saved_scenarios_round_results_but_keep_inputs_exact() -> None:
    plan = Scenario(mfu=NOISY, examples=30_001, epochs=1.0 / 3.0)
    results = {"a": {"cost_usd": NOISY, "wall_clock_h": 123456.7, "fits_vram": True}}
    text = scenarios_to_csv({"a": plan}, results)
    row = next(csv.DictReader(io.StringIO(text)))
    assert (row["cost_usd"], row["wall_clock_h"], row["fits_vram"]) == ("0.3169", "123500", "true")
    assert row["mfu"] == repr(NOISY) and "cost_usd" in RESULT_COLUMNS
    restored = read_scenarios_csv(text)
    assert restored.problems == [] and restored.scenarios["a"] == plan


@pytest.mark.parametrize(
    ("hours", "text"),
    [
        (0.0, "0 s"),
        (0.0001, "0.36 s"),
        (45 / 3600, "45 s"),
        (59.97 / 3600, "1.0 min"),  # would round to "60 s"
        (4.5 / 60, "4.5 min"),
        (20 / 60, "20 min"),
        (0.34, "20 min"),
        (5.4, "5.4 h"),
        (21.3, "21 h"),
        (47.9, "2.0 days"),  # would round to "48 h"
        (3.2 * 24, "3.2 days"),
        (1000 * 24, "1,000 days"),
        (None, "n/a"),
        (math.nan, "n/a"),
    ],
)
def test_durations_take_the_unit_that_reads_best(hours: float | None, text: str) -> None:
    assert fmt.hours(hours) == text


def test_a_tiny_range_is_not_all_zeros() -> None:
    assert fmt.band(0.00005, 0.0002, "hours") == "0.18 s – 0.72 s"


@pytest.mark.parametrize(("value", "text"), [(0, "none: even 1 does not fit"), (8, "8"), (None, "n/a")])
def test_micro_batch_says_when_even_one_does_not_fit(value: int | None, text: str) -> None:
    assert fmt.micro_batch(value) == text
