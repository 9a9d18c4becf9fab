"""Where each point's name goes on a scatter chart, so that no two names overlap and no name covers a point.

Vega-Lite has no label layout (Vega's `label` transform is not exposed), and a fixed offset put the names of
neighbouring points on top of each other (the plan sheet's rows, Compare's MI325X over another GPU's point). Here
each name tries four places around its point in turn (above right, below right, above left, below left) and
takes the first that overlaps no name already placed and no other point, preferring one inside the plot area (a
name past the right edge ran into the legend); a name with no free place is left off
the chart (it stays in the tooltip and the table). The chart reads the chosen place from the `label_side`
column: one text layer per place (`text_layers`).

Positions are laid out on a nominal plot area (PLOT_WIDTH_PX × PLOT_HEIGHT_PX, the plot area of a chart drawn
full width at 1440 px, measured on the screenshots of both pages), so a much narrower window can still crowd them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import altair as alt

PLOT_WIDTH_PX, PLOT_HEIGHT_PX = 780.0, 280.0
CHAR_WIDTH_PX = 6.0  # Source Sans at 10-11 px: about 6 px per character on average
TEXT_HEIGHT_PX = 12.0
POINT_RADIUS_PX = 6.0  # a 70-90 px² filled mark
OFFSET_PX = 7.0
# place -> (align, dx, dy): the text's anchor offset from the point; the box is worked out from these
SIDES = {
    "above right": ("left", OFFSET_PX, -OFFSET_PX),
    "below right": ("left", OFFSET_PX, OFFSET_PX),
    "above left": ("right", -OFFSET_PX, -OFFSET_PX),
    "below left": ("right", -OFFSET_PX, OFFSET_PX),
}
HIDDEN = "none"

Box = tuple[float, float, float, float]  # left, top, right, bottom in pixels


def _to_px(values: Sequence[float], log: bool, length_px: float, flip: bool) -> list[float]:
    data = [math.log10(v) if log else v for v in values]
    low, high = (min(data), max(data)) if data else (0.0, 1.0)
    if not log:
        low = min(low, 0.0)  # linear axes keep zero
    span = (high - low) or 1.0
    return [(length_px * (1 - (v - low) / span)) if flip else (length_px * (v - low) / span) for v in data]


def _box(x: float, y: float, side: str, name: str) -> Box:
    align, dx, dy = SIDES[side]
    width = CHAR_WIDTH_PX * len(name)
    left = x + dx if align == "left" else x + dx - width
    middle = y + dy  # Vega-Lite centres text on its anchor vertically (baseline "middle")
    return (left, middle - TEXT_HEIGHT_PX / 2, left + width, middle + TEXT_HEIGHT_PX / 2)


def _inside_plot(box: Box) -> bool:
    return box[0] >= 0.0 and box[1] >= 0.0 and box[2] <= PLOT_WIDTH_PX and box[3] <= PLOT_HEIGHT_PX


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_sides(
    xs: Sequence[float], ys: Sequence[float], names: Sequence[str | None], log: bool = False
) -> list[str]:
    """Per point, the place of its name (a key of SIDES), or HIDDEN; a None name is not drawn at all. Names are
    placed in the order given, so the first rows get the best places."""
    px = _to_px(xs, log, PLOT_WIDTH_PX, flip=False)
    py = _to_px(ys, log, PLOT_HEIGHT_PX, flip=True)
    r = POINT_RADIUS_PX
    points = [(x - r, y - r, x + r, y + r) for x, y in zip(px, py, strict=True)]
    placed: list[Box] = []
    sides = []
    for i, name in enumerate(names):
        side = HIDDEN
        if name:
            others = points[:i] + points[i + 1 :]
            # a place inside the plot first: a name past the right edge ran into the legend (the sheet's
            # slowest plan); outside it only where no place inside is free
            free = [
                (candidate, box)
                for candidate in SIDES
                for box in [_box(px[i], py[i], candidate, name)]
                if not any(_overlaps(box, other) for other in placed + others)
            ]
            inside = [(candidate, box) for candidate, box in free if _inside_plot(box)]
            if free:
                side, box = (inside or free)[0]
                placed.append(box)
        sides.append(side)
    return sides


def text_layers(base: Any, font_size: int, text: str) -> list[Any]:
    """One altair text layer per place, each drawing the rows whose `label_side` is that place."""
    return [
        base.transform_filter(alt.datum.label_side == side)
        .mark_text(align=align, dx=dx, dy=dy, fontSize=font_size)
        .encode(text=text)
        for side, (align, dx, dy) in SIDES.items()
    ]
