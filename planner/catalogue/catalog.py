"""Load and validate the CSV catalogues in `data/` (GPUs, price snapshots, pricing modes, grid, PUE, storage).

`load_catalogs` reads the bundled files and, optionally, a team folder with files in the same formats whose
rows win over bundled rows with the same name (an `origin` column says "bundled" or "team" on GPUs, prices and
grid rows). Any problem raises `CatalogError` naming the file, the spreadsheet row (header = row 1) and the
column. The loaded frames are never mutated; planner functions take them (or rows of them) as arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from pathlib import Path

import polars as pl

from planner.catalogue.catalog_lookup import (
    PeakRate,
    closest,
    find_gpu,
    find_region,
    gpu_name_keys,
    gpu_price,
    latest_snapshot_id,
    normalise_name,
    peak_rate,
    peak_tflops,
    pricing_discount,
    snapshot_ids,
)
from planner.catalogue.catalog_read import (
    FILE_COL,
    ROW_COL,
    CatalogError,
    Problem,
    UnknownNameError,
    read_table,
)
from planner.catalogue.catalog_schema import (
    GPUS,
    GRID,
    PRICES,
    PRICING,
    PRICING_MODES,
    PUE,
    STORAGE,
    TFLOPS_COLUMNS,
    WORLD_REGION,
    TableSpec,
)
from planner.catalogue.efficiency import load_efficiency_table
from planner.catalogue.models import load_model_presets
from planner.catalogue.paths import bundled_data_dir

__all__ = [
    "DATA_DIR",
    "CatalogError",
    "Catalogs",
    "PeakRate",
    "UnknownNameError",
    "default_catalogs",
    "find_gpu",
    "find_region",
    "gpu_price",
    "latest_snapshot_id",
    "load_catalogs",
    "load_gpus_csv",
    "load_prices_csv",
    "peak_rate",
    "peak_tflops",
    "pricing_discount",
    "snapshot_ids",
]

DATA_DIR = bundled_data_dir()
BUNDLED, TEAM = "bundled", "team"
_SNAPSHOT_ID = re.compile(r"^(\d{4}-\d{2}-\d{2})([_-][A-Za-z0-9_-]+)?$")


@dataclass(frozen=True)
class Catalogs:
    """Every catalogue as a polars frame. `prices` stacks all snapshots with a `snapshot` column.

    `models` are the model presets (data/models.csv) and `efficiency` the compute-efficiency presets
    (data/efficiency.csv); validation's `--refit` modes hand `resolve` a copy with a rebuilt `efficiency`.
    """

    gpus: pl.DataFrame
    prices: pl.DataFrame
    pricing_modes: pl.DataFrame
    grid: pl.DataFrame
    pue: pl.DataFrame
    storage: pl.DataFrame
    models: pl.DataFrame
    efficiency: pl.DataFrame


@lru_cache(maxsize=1)
def default_catalogs() -> Catalogs:
    """The bundled catalogues, read once per process (frames are never mutated)."""
    return load_catalogs()


def load_catalogs(data_dir: Path = DATA_DIR, overlay_dir: Path | None = None) -> Catalogs:
    """Bundled catalogues, with a team folder's files (same formats, any subset) merged over them."""
    gpus = _merged(data_dir, overlay_dir, GPUS, _gpus_table)
    _check_gpu_names(gpus)
    prices = _load_prices(data_dir, overlay_dir, gpus)
    grid = _merged(data_dir, overlay_dir, GRID, _plain_table(GRID))
    if grid.filter(pl.col("region") == WORLD_REGION).is_empty():
        raise CatalogError(
            f"{GRID.file_name}: the '{WORLD_REGION}' row is missing (it is the fallback region)"
        )
    modes = _merged(data_dir, overlay_dir, PRICING, _pricing_table)
    missing_modes = sorted(set(PRICING_MODES) - set(modes["mode"].to_list()))
    if missing_modes:
        raise CatalogError(f"{PRICING.file_name}: no row for mode(s) {', '.join(missing_modes)}")
    pue = _merged(data_dir, overlay_dir, PUE, _plain_table(PUE))
    storage = _merged(data_dir, overlay_dir, STORAGE, _plain_table(STORAGE))
    return Catalogs(
        gpus=_public(gpus),
        prices=_public(prices),
        pricing_modes=_public(modes).drop("origin"),  # origin is kept only where the UI shows it
        grid=_public(grid),
        pue=_public(pue).drop("origin"),
        storage=_public(storage).drop("origin"),
        models=load_model_presets(data_dir / "models.csv"),
        efficiency=load_efficiency_table(data_dir / "efficiency.csv"),
    )


def load_gpus_csv(source: Path | bytes, origin: str, file_label: str | None = None) -> pl.DataFrame:
    """One GPU file (a path, or the bytes of an upload), validated alone; `origin` fills the origin column."""
    frame = _gpus_table(source, origin, file_label or _label(source, GPUS.file_name))
    _check_gpu_names(frame)
    return _public(frame)


def load_prices_csv(
    source: Path | bytes,
    snapshot_id: str,
    origin: str,
    known_gpus: pl.DataFrame | Iterable[str],
    file_label: str | None = None,
) -> pl.DataFrame:
    """One price snapshot, validated; GPU names (or aliases) must be in `known_gpus` (a GPU frame or names).

    The `gpu` column comes back as the catalogue's own name, so "h100" in an upload is stored as "H100 SXM".
    """
    label = file_label or _label(source, f"prices/{snapshot_id}.csv")
    if not isinstance(known_gpus, pl.DataFrame):
        known_gpus = pl.DataFrame(
            {"name": list(known_gpus), "aliases": None}, schema={"name": pl.String, "aliases": pl.String}
        )
    return _public(_prices_table(source, snapshot_id, origin, label, known_gpus))


# --- one file each --------------------------------------------------------------------------------------


def _gpus_table(source: Path | bytes, origin: str, file_label: str) -> pl.DataFrame:
    frame = read_table(source, GPUS, file_label)
    no_rate = frame.filter(pl.all_horizontal(pl.col(c).is_null() for c in TFLOPS_COLUMNS))
    problems = [
        Problem(file_label, row, "tflops_bf16", "give at least one tflops_* rate")
        for row in no_rate[ROW_COL].to_list()
    ]
    if problems:
        raise CatalogError(problems)
    return frame.with_columns(pl.lit(origin).alias("origin"))


def _plain_table(spec: TableSpec):  # type: ignore[no-untyped-def]
    def load(source: Path | bytes, origin: str, file_label: str) -> pl.DataFrame:
        return read_table(source, spec, file_label).with_columns(pl.lit(origin).alias("origin"))

    return load


def _pricing_table(source: Path | bytes, origin: str, file_label: str) -> pl.DataFrame:
    frame = read_table(source, PRICING, file_label)
    _check_band(frame, file_label, "discount_frac", "discount_frac_low", "discount_frac_high")
    return frame.with_columns(pl.lit(origin).alias("origin"))


def _prices_table(
    source: Path | bytes, snapshot_id: str, origin: str, file_label: str, gpus: pl.DataFrame
) -> pl.DataFrame:
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
    _check_band(frame, file_label, "usd_per_gpu_hour_median", "usd_per_gpu_hour_low", "usd_per_gpu_hour_high")
    return frame.with_columns(pl.lit(snapshot_id).alias("snapshot"), pl.lit(origin).alias("origin"))


def _snapshot_date(snapshot_id: str, file_label: str) -> date:
    match = _SNAPSHOT_ID.match(snapshot_id)
    try:
        if match is None or len(snapshot_id) > 40:
            raise ValueError
        return date.fromisoformat(match.group(1))
    except ValueError as err:
        message = f"snapshot id {snapshot_id!r} must start with a date YYYY-MM-DD (at most 40 characters)"
        raise CatalogError([Problem(file_label, None, None, message)]) from err


# --- checks across rows and files ------------------------------------------------------------------------


def _check_band(frame: pl.DataFrame, file_label: str, typical: str, low: str, high: str) -> None:
    """low <= typical <= high wherever the bounds are given."""
    problems = []
    for column, bad in ((low, pl.col(low) > pl.col(typical)), (high, pl.col(high) < pl.col(typical))):
        for row, got, mid in frame.filter(bad.fill_null(False)).select(ROW_COL, column, typical).iter_rows():
            side = "above" if column == low else "below"
            problems.append(Problem(file_label, row, column, f"is {side} {typical} {mid:g} (got {got:g})"))
    if problems:
        raise CatalogError(sorted(problems, key=lambda p: p.row or 0))


def _check_gpu_names(gpus: pl.DataFrame) -> None:
    """No name or alias may point at two GPUs once spaces, hyphens, underscores and case are ignored."""
    owner: dict[str, tuple[str, str, int]] = {}
    problems = []
    for name, aliases, file_label, row in gpus.select("name", "aliases", FILE_COL, ROW_COL).iter_rows():
        for column, key in [("name", name), *(("aliases", a) for a in (aliases or "").split(";"))]:
            if not key.strip():
                continue
            first = owner.setdefault(normalise_name(key), (name, file_label, row))
            if first[0] != name:
                where = f"{first[1]} row {first[2]}"
                problems.append(
                    Problem(file_label, row, column, f"{key.strip()!r} already names {first[0]} ({where})")
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


# --- bundled + team --------------------------------------------------------------------------------------


def _merged(data_dir: Path, overlay_dir: Path | None, spec: TableSpec, load) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    """The bundled table, with a team file's rows replacing rows of the same key and adding new ones."""
    bundled = load(data_dir / spec.file_name, BUNDLED, _display(data_dir / spec.file_name))
    team_path = overlay_dir / spec.file_name if overlay_dir is not None else None
    if team_path is None or not team_path.exists():
        return bundled
    team = load(team_path, TEAM, _display(team_path))
    return _overlay(bundled, team, key=lambda frame: frame[spec.key])


def _overlay(bundled: pl.DataFrame, team: pl.DataFrame, key) -> pl.DataFrame:  # type: ignore[no-untyped-def]
    """Bundled rows whose (normalised) key the team file also gives are dropped; team rows are appended."""
    team_keys = {normalise_name(value) for value in key(team).to_list()}
    kept = [normalise_name(value) not in team_keys for value in key(bundled).to_list()]
    return pl.concat([bundled.filter(pl.Series(kept)), team], how="vertical_relaxed")


def _load_prices(data_dir: Path, overlay_dir: Path | None, gpus: pl.DataFrame) -> pl.DataFrame:
    frames = [
        _prices_table(path, path.stem, BUNDLED, _display(path), gpus)
        for path in sorted((data_dir / "prices").glob("*.csv"))
    ]
    if not frames:
        raise CatalogError(f"{_display(data_dir / 'prices')}: no price snapshot files (*.csv)")
    prices = pl.concat(frames, how="vertical_relaxed")
    team_dir = overlay_dir / "prices" if overlay_dir is not None else None
    for path in sorted(team_dir.glob("*.csv")) if team_dir is not None and team_dir.is_dir() else []:
        team = _prices_table(path, path.stem, TEAM, _display(path), gpus)
        prices = _overlay(prices, team, key=lambda f: f["snapshot"] + "|" + f["gpu"])
    return prices.sort("snapshot", "gpu")


def _public(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop(FILE_COL, ROW_COL)


def _label(source: Path | bytes, fallback: str) -> str:
    return _display(Path(source)) if isinstance(source, Path) else f"uploaded {fallback}"


def _display(path: Path) -> str:
    """A path relative to the repository when it lies inside it, so messages stay short."""
    try:
        return str(path.resolve().relative_to(DATA_DIR.parent))
    except ValueError:
        return str(path)
