"""Running summaries of a log's lines in constant memory: steady-state means and peaks.

A log of a million steps is read once, line by line; nothing per step is kept. A rate (step time, throughput,
TFLOP/s, MFU) is the mean over the logged windows after the first, because every trainer read here times its
first window with compilation, allocator warm-up and data-loader start (torchtitan's own summary skips its
warm-up steps for the same reason); with one window only, that window is the figure and a note says so.
Memory is the largest value seen (each trainer reports a peak since its last reset).
"""

from __future__ import annotations

from planner.runs.record import RunRecord


class Summary:
    def __init__(self) -> None:
        self._first: dict[str, float] = {}
        self._sum: dict[str, float] = {}
        self._count: dict[str, int] = {}
        self._peak: dict[str, float] = {}
        self._last: dict[str, float] = {}

    def rate(self, key: str, value: float) -> None:
        if key not in self._first:
            self._first[key] = value
            return
        self._sum[key] = self._sum.get(key, 0.0) + value
        self._count[key] = self._count.get(key, 0) + 1

    def peak(self, key: str, value: float) -> None:
        self._peak[key] = max(value, self._peak.get(key, value))

    def last(self, key: str, value: float) -> None:
        self._last[key] = value

    def empty(self) -> bool:
        return not (self._first or self._peak or self._last)

    def fill(self, record: RunRecord) -> None:
        for key, first in self._first.items():
            count = self._count.get(key, 0)
            record.figures[key] = self._sum[key] / count if count else first
            if not count:
                record.notes.append(f"{key} from one logged window only (warm-up included)")
        record.figures.update(self._peak)
        record.figures.update(self._last)
