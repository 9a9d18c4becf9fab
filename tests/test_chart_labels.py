"""Scatter-chart names are placed so that none overlaps another name or covers a point (ui/chart_labels.py)."""

from __future__ import annotations

import itertools

import polars as pl

from ui import charts, compare_charts
from ui.chart_labels import HIDDEN, SIDES, _box, _overlaps, _to_px, label_sides


def test_points_far_apart_are_named_above_right_but_the_corner_one_inside_the_plot():
    assert label_sides([1, 2, 3], [10, 20, 30], ["a", "b", "c"]) == [
        "above right",
        "above right",
        "below left",
    ]


def test_a_name_stays_inside_the_plot_where_it_can():
    # the sheet's one plan sits at the top right corner of its own axes: its name went past the right edge into
    # the legend; the slowest and dearest plan of several likewise
    assert label_sides([0.54], [16.86], ["Current plan"]) == ["below left"]
    sides = label_sides([0.2, 0.54], [5.0, 16.86], ["Cheap plan", "Current plan"])
    assert sides == ["above right", "below left"]


def test_stacked_points_take_the_four_places_in_turn_then_go_unnamed():
    # five plans with the same time and cost (duplicated sheet rows): four names fit around the point
    sides = label_sides([0.42] * 5, [13.3] * 5, [f"Plan {i}" for i in range(5)])
    # the point is the top right corner of its axes: the one place inside the plot first
    assert sides == ["below left", "above right", "below right", "above left", HIDDEN]
    assert set(sides[:4]) == set(SIDES)


def test_a_name_never_covers_a_neighbouring_point():
    # Compare's case: MI325X (0.43 h, $6.6) beside another GPU's point (0.48 h, $7.0) on log axes; with one
    # fixed offset the name was drawn over that point; the slow GPUs (6 h, $70) set the axes' span
    xs, ys = [0.21, 0.43, 0.48, 0.42, 6.0], [7.0, 6.6, 7.0, 13.0, 70.0]
    names = ["GB200", "MI325X", None, "H100 SXM", None]
    sides = label_sides(xs, ys, names, log=True)
    assert sides[2] == sides[4] == HIDDEN and HIDDEN not in (sides[0], sides[1], sides[3])
    px, py = _to_px(xs, True, 780.0, flip=False), _to_px(ys, True, 280.0, flip=True)
    boxes = [_box(px[i], py[i], sides[i], names[i]) for i in (0, 1, 3)]
    points = [(x - 6, y - 6, x + 6, y + 6) for x, y in zip(px, py, strict=True)]
    assert not any(_overlaps(a, b) for a, b in itertools.combinations(boxes, 2))
    for i, box in zip((0, 1, 3), boxes, strict=True):
        assert not any(_overlaps(box, p) for j, p in enumerate(points) if j != i)
    assert sides[1] != "above right"  # the default place would have covered the 0.48 h point


def test_the_sheet_chart_draws_each_name_at_its_place():
    frame = pl.DataFrame(
        {"plan": ["A", "B"], "wall_clock_h": [0.42, 0.42], "cost_usd": [13.3, 13.3], "fit": ["fits"] * 2}
    )
    spec = charts.labelled_cost_vs_time(frame)
    assert spec["datasets"]["plans"]["label_side"].to_list() == ["below left", "above right"]
    texts = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert len(texts) == len(SIDES)


def test_compare_names_only_the_frontier_and_your_gpu():
    data = pl.DataFrame(
        {
            "gpu": ["GB200", "MI325X", "A100"],
            "wall_clock_h": [0.21, 0.43, 3.0],
            "cost_usd": [7.0, 6.6, 70.0],
            "on_frontier": [True, True, False],
            "is_scenario_gpu": [False, False, False],
        }
    )
    spec = compare_charts.cost_vs_time_spec(data)
    assert spec["datasets"][compare_charts.DATASET]["label_side"].to_list() == [
        "above right",
        "above right",
        HIDDEN,
    ]
