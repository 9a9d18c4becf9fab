"""The memory model's measured error band (data/memory_error_band.csv), read once.

scripts/memory_scores.py --write-band writes the file from `validate --category memory --refit source`; the
fit verdict (`planner.formulas.memory.verdict`) reads it. A missing or malformed file is an error naming the
file, row and column, like every catalogue.
"""

from __future__ import annotations

import csv
from functools import lru_cache
from pathlib import Path

from planner.catalogue.paths import bundled_data_dir
from planner.formulas.memory.verdict import REGIMES, MemoryBand

BAND_FILE_NAME = "memory_error_band.csv"
# A ratio outside this range would say the formulas miss by more than a factor of two on most runs of a regime:
# a broken scoring run, not a band to plan with.
RATIO_RANGE = (0.5, 2.0)


def band_file() -> Path:
    return bundled_data_dir() / BAND_FILE_NAME


def read_band(path: Path) -> MemoryBand:
    """The band in `path`; ValueError naming the row and column of a bad cell."""
    ratios: dict[str, float] = {}
    counts: dict[str, int] = {}
    sources = set()
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            where = f"{path.name} row {number}"
            regime = row.get("regime", "")
            if regime not in (*REGIMES, "all"):
                raise ValueError(
                    f"{where}, column regime: {regime!r} is not one of all, {', '.join(REGIMES)}"
                )
            try:
                ratio = float(row.get("ratio_high", ""))
            except ValueError:
                raise ValueError(f"{where}, column ratio_high: not a number") from None
            if not RATIO_RANGE[0] <= ratio <= RATIO_RANGE[1]:
                raise ValueError(
                    f"{where}, column ratio_high: {ratio} outside {RATIO_RANGE[0]}..{RATIO_RANGE[1]}"
                )
            if not row.get("source"):
                raise ValueError(f"{where}, column source: empty (the band must say where it comes from)")
            ratios[regime] = ratio
            try:
                counts[regime] = int(row.get("n_rows", ""))
            except ValueError:
                raise ValueError(f"{where}, column n_rows: not a whole number") from None
            sources.add(row["source"])
    if "all" not in ratios:
        raise ValueError(f"{path.name}: no row for regime 'all'")
    return MemoryBand(ratio_high=ratios, n_rows=counts, source="; ".join(sorted(sources)))


@lru_cache(maxsize=1)
def memory_band() -> MemoryBand:
    """The shipped band (cached: the file changes only when the script is rerun)."""
    return read_band(band_file())
