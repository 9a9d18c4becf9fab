"""One catalogue file each, read and checked: GPUs, price snapshots, pricing modes and the plain tables.

Every frame returned here keeps the hidden `_file` and `_row` columns of `planner.catalogue.catalog_read`
and gains an `origin` column ("bundled", "team" or "upload"), so checks made after an overlay can still name
the file and row of a problem; `planner.catalogue.catalog_overlay` drops the hidden columns at the end.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import polars as pl

from planner.catalogue.catalog_lookup import closest, gpu_name_keys, name_keys, normalise_name
from planner.catalogue.catalog_read import FILE_COL, ROW_COL, CatalogError, Problem, read_table
from planner.catalogue.catalog_schema import GPUS, PRICES, PRICING, TFLOPS_COLUMNS, TableSpec
from planner.formulas.energy.power_cap import MIN_POWER_LIMIT_FRAC

# A snapshot id is a price file's name without `.csv`: a calendar date YYYY-MM-DD, optionally followed by "-" or
# "_" and a suffix of letters, digits, "-" and "_" (2026-12-01, 2026-12-01-acme); data/README.md states the same.
# ASCII digits only, and \Z rather than $ (which would let a trailing newline through).
SNAPSHOT_ID = re.compile(r"^(\d{4}-\d{2}-\d{2})([_-][A-Za-z0-9_-]+)?\Z", re.ASCII)
MAX_SNAPSHOT_ID_CHARS = 40  # long enough for "2026-12-01-our-negotiated-quote"; a file name, not an essay
SNAPSHOT_ID_WORDS = (
    "a date YYYY-MM-DD, optionally followed by -suffix or _suffix of letters, digits, - and _ "
    f"(at most {MAX_SNAPSHOT_ID_CHARS} characters), e.g. 2026-12-01 or 2026-12-01-acme"
)


def snapshot_date(snapshot_id: str) -> date:
    """The date a snapshot id starts with; ValueError for anything that is not a valid id (SNAPSHOT_ID)."""
    match = SNAPSHOT_ID.match(snapshot_id)
    if match is None or len(snapshot_id) > MAX_SNAPSHOT_ID_CHARS:
        raise ValueError(f"snapshot id {snapshot_id[:MAX_SNAPSHOT_ID_CHARS]!r} is not {SNAPSHOT_ID_WORDS}")
    return date.fromisoformat(match.group(1))  # ValueError for a month 13 or a February 30


def gpus_table(source: Path | bytes, origin: str, file_label: str) -> pl.DataFrame:
    frame = read_table(source, GPUS, file_label)
    no_rate = frame.filter(pl.all_horizontal(pl.col(c).is_null() for c in TFLOPS_COLUMNS))
    problems = [
        Problem(file_label, row, "tflops_bf16", "give at least one tflops_* rate")
        for row in no_rate[ROW_COL].to_list()
    ]
    problems += power_limit_problems(frame, file_label)
    if problems:
        raise CatalogError(problems)
    check_gpu_names(frame)
    return frame.with_columns(pl.lit(origin).alias("origin"))


def power_limit_problems(frame: pl.DataFrame, file_label: str) -> list[Problem]:
    """A variant's power limit lies within [MIN_POWER_LIMIT_FRAC x TDP, TDP] (planner.formulas.energy.power_cap)."""
    if "power_limit_w" not in frame.columns:
        return []
    low = pl.col("tdp_w") * MIN_POWER_LIMIT_FRAC
    bad = frame.filter(
        ((pl.col("power_limit_w") < low) | (pl.col("power_limit_w") > pl.col("tdp_w"))).fill_null(False)
    )
    return [
        Problem(
            file_label,
            row,
            "power_limit_w",
            f"must lie between {MIN_POWER_LIMIT_FRAC:g} x tdp_w = {MIN_POWER_LIMIT_FRAC * tdp:g} W and tdp_w = "
            f"{tdp:g} W (got {limit:g})",
        )
        for row, limit, tdp in bad.select(ROW_COL, "power_limit_w", "tdp_w").iter_rows()
    ]


def plain_table(spec: TableSpec, source: Path | bytes, origin: str, file_label: str) -> pl.DataFrame:
    frame = read_table(source, spec, file_label)
    if spec is PRICING:
        check_band(frame, file_label, "discount_frac", "discount_frac_low", "discount_frac_high")
    return frame.with_columns(pl.lit(origin).alias("origin"))


def prices_table(
    source: Path | bytes, snapshot_id: str, origin: str, file_label: str, gpus: pl.DataFrame
) -> pl.DataFrame:
    """One snapshot; its GPU names (or aliases) must be in `gpus` and come back as the catalogue's names."""
    snapshot_date = _snapshot_date(snapshot_id, file_label)
    frame = read_table(source, PRICES, file_label)
    keys = gpu_name_keys(gpus)
    canonical = [keys.get(normalise_name(name)) for name in frame["gpu"].to_list()]
    problems = [
        Problem(file_label, row, "gpu", f"unknown GPU {given!r}; closest: {', '.join(closest(given, keys))}")
        for given, name, row in zip(frame["gpu"], canonical, frame[ROW_COL], strict=True)
        if name is None
    ]
    too_new = frame.filter(pl.col("as_of") > snapshot_date)
    problems += [
        Problem(file_label, row, "as_of", f"is after the snapshot date {snapshot_date} (got {as_of})")
        for as_of, row in too_new.select("as_of", ROW_COL).iter_rows()
    ]
    if problems:
        raise CatalogError(problems)
    frame = frame.with_columns(pl.Series("gpu", canonical, pl.String))
    duplicates = _repeated(frame, "gpu", file_label)  # "h100" and "H100 SXM" are the same GPU
    if duplicates:
        raise CatalogError(duplicates)
    check_band(frame, file_label, "usd_per_gpu_hour_median", "usd_per_gpu_hour_low", "usd_per_gpu_hour_high")
    return frame.with_columns(
        pl.lit(snapshot_id).alias("snapshot"),
        pl.lit(snapshot_date, pl.Date).alias("snapshot_date"),  # from the validated id: never parsed again
        pl.lit(origin).alias("origin"),
    )


def _snapshot_date(snapshot_id: str, file_label: str) -> date:
    try:
        return snapshot_date(snapshot_id)
    except ValueError:
        message = f"the file name must be {SNAPSHOT_ID_WORDS} (got {snapshot_id[:MAX_SNAPSHOT_ID_CHARS]!r})"
        raise CatalogError([Problem(file_label, None, None, message)]) from None


def check_band(frame: pl.DataFrame, file_label: str, typical: str, low: str, high: str) -> None:
    """low <= typical <= high wherever the bounds are given."""
    problems = []
    for column, bad in ((low, pl.col(low) > pl.col(typical)), (high, pl.col(high) < pl.col(typical))):
        for row, got, mid in frame.filter(bad.fill_null(False)).select(ROW_COL, column, typical).iter_rows():
            side = "above" if column == low else "below"
            problems.append(Problem(file_label, row, column, f"is {side} {typical} {mid:g} (got {got:g})"))
    if problems:
        raise CatalogError(sorted(problems, key=lambda p: p.row or 0))


def check_gpu_names(gpus: pl.DataFrame) -> None:
    """No name or alias may point at two GPUs once spaces, hyphens, underscores and case are ignored."""
    owner: dict[str, tuple[str, str, int]] = {}
    problems = []
    for name, aliases, file_label, row in gpus.select("name", "aliases", FILE_COL, ROW_COL).iter_rows():
        for column, text in name_keys(name, aliases):
            first = owner.setdefault(normalise_name(text), (name, file_label, row))
            if first[0] != name:
                where = f"{first[1]} row {first[2]}"
                problems.append(
                    Problem(file_label, row, column, f"{text!r} already names {first[0]} ({where})")
                )
    if problems:
        raise CatalogError(problems)


def _repeated(frame: pl.DataFrame, key: str, file_label: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for value, row in frame.select(key, ROW_COL).iter_rows():
        if value.lower() in seen:
            problems.append(
                Problem(file_label, row, key, f"duplicate '{value}' (first in row {seen[value.lower()]})")
            )
        seen.setdefault(value.lower(), row)
    return problems
