"""The one overlay: a layer of catalogue files (the bundled folder, a team folder, a session's uploads) laid
over the catalogues below it, with the rules every layer follows.

- Plain tables (grid, pricing modes, PUE, storage): a row replaces the row below with the same key (case,
  spaces, hyphens and underscores ignored); new keys are added.
- GPUs: a row replaces the GPU below that its **name** names, as a name or an alias. The replaced GPU's name
  and aliases stay as aliases of the new row, so a scenario or a price file that named it still finds it.
  An **alias** that names a GPU below other than the one the row replaces, and two rows of one layer that
  name the same GPU below, are rejected with the file, row and column: a row never takes over a second GPU.
- Price snapshots: a row replaces the same GPU in the same snapshot; new snapshots are added.

Each row keeps the `origin` of its layer ("bundled", "team", "upload"); data/README.md states these rules.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from planner.catalogue.catalog_lookup import gpu_name_keys, name_keys, normalise_name
from planner.catalogue.catalog_read import FILE_COL, ROW_COL, CatalogError, Problem
from planner.catalogue.catalog_schema import GPUS, GRID, PRICING, PRICING_MODES, PUE, STORAGE, WORLD_REGION
from planner.catalogue.catalog_tables import SNAPSHOT_ID, gpus_table, plain_table, prices_table
from planner.catalogue.paths import bundled_data_dir

BUNDLED, TEAM, UPLOAD = "bundled", "team", "upload"
# Catalogues field -> file spec, for the tables whose rows are replaced by key.
PLAIN_TABLES = {"grid": GRID, "pricing_modes": PRICING, "pue": PUE, "storage": STORAGE}
NO_ORIGIN = ("pricing_modes", "pue", "storage")  # origin is kept only where the UI shows it
TEAM_FILES = tuple(spec.file_name for spec in (GPUS, *PLAIN_TABLES.values()))
PRICES_FOLDER = "prices"
# Snapshot files a folder may hold: a weekly snapshot for almost four years. Each is read and checked on load, so
# the count bounds the load time of a team folder (bounded work per input).
MAX_SNAPSHOT_FILES = 200
MAX_UNREAD_NOTICES = 5  # stray files named one by one; past this, a count
Frames = dict[str, pl.DataFrame]  # Catalogs field -> frame, for the six tables a layer may hold


@dataclass(frozen=True)
class LayerFile:
    """One file of a layer: where it sits in a data folder, its content, and how messages name it."""

    path: str  # "gpus.csv", "prices/2026-12-01.csv", ...
    source: Path | bytes
    label: str


def folder_files(folder: Path, *, required: bool = False) -> list[LayerFile]:
    """The catalogue files of a data folder; `required` (the bundled folder) lists absent ones too, so
    reading them says which file is missing. A name that exists as anything (a FIFO, a device, a dangling
    symlink) is listed, so reading it refuses it by name instead of it being skipped in silence."""
    names = [name for name in TEAM_FILES if required or os.path.lexists(folder / name)]
    files = [LayerFile(name, folder / name, display(folder / name)) for name in names]
    price_dir = folder / PRICES_FOLDER
    prices = sorted(price_dir.glob("*.csv")) if price_dir.is_dir() else []
    if required and not prices:
        raise CatalogError(f"{display(price_dir)}: no price snapshot files (*.csv)")
    if len(prices) > MAX_SNAPSHOT_FILES:
        message = f"holds {len(prices):,} snapshot files; at most {MAX_SNAPSHOT_FILES:,} are read"
        raise CatalogError([Problem(display(price_dir), None, None, message)])
    files += [LayerFile(f"{PRICES_FOLDER}/{path.name}", path, display(path)) for path in prices]
    return files


def unread_files(folder: Path) -> list[str]:
    """A line for each file of a team folder that looks meant for a catalogue but is not read (a typo in its
    name, a snapshot outside prices/), naming the closest name that would be read."""
    expected = [*TEAM_FILES, f"{PRICES_FOLDER}/"]
    notices = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        name = path.name
        if name.startswith(".") or name in TEAM_FILES or name == PRICES_FOLDER:
            continue
        if SNAPSHOT_ID.match(Path(name).stem) and name.lower().endswith(".csv"):
            closest = f"{PRICES_FOLDER}/{name}"  # a snapshot beside the catalogues instead of in prices/
        elif name.lower().endswith(".csv") or path.is_dir():
            found = difflib.get_close_matches(name.lower(), expected, n=1, cutoff=0.5)
            closest = found[0] if found else ""
        else:
            continue  # a README or notes file is not meant for the planner
        hint = f"; did you mean {closest}?" if closest else f"; the names read are {', '.join(expected)}"
        notices.append(f"{display(path)} is not read: no catalogue has that name{hint}")
    price_dir = folder / PRICES_FOLDER
    for path in sorted(price_dir.iterdir()) if price_dir.is_dir() else []:
        if not path.name.startswith(".") and path.suffix != ".csv":
            hint = f"; did you mean {path.stem}.csv?" if path.suffix.lower() == ".csv" else ""
            notices.append(f"{display(path)} is not read: only *.csv files are price snapshots{hint}")
    if len(notices) > MAX_UNREAD_NOTICES:  # a folder of thousands of stray files gets a count, not a wall
        notices[MAX_UNREAD_NOTICES:] = [f"... and {len(notices) - MAX_UNREAD_NOTICES:,} more files not read"]
    return notices


def overlay_frames(
    below: Mapping[str, pl.DataFrame] | None, files: Sequence[LayerFile], origin: str
) -> Frames:
    """`files` (tagged `origin`) over the frames `below` (None: this is the bottom layer)."""
    by_path = {file.path: file for file in files}
    frames: Frames = dict(below or {})
    gpu_file = by_path.get(GPUS.file_name)
    if gpu_file is not None:
        top = gpus_table(gpu_file.source, origin, gpu_file.label)
        frames["gpus"], renamed = (_public(top), {}) if below is None else _overlay_gpus(frames["gpus"], top)
        if renamed:  # prices below named a GPU that a row of this layer replaced under a new name
            frames["prices"] = frames["prices"].with_columns(pl.col("gpu").replace(renamed))
    for field, spec in PLAIN_TABLES.items():
        file = by_path.get(spec.file_name)
        if file is not None:
            top = _public(plain_table(spec, file.source, origin, file.label))
            top = top.drop("origin") if field in NO_ORIGIN else top
            frames[field] = top if below is None else _replace_by_key(frames[field], top, spec.key)
    price_files = sorted(path for path in by_path if path.startswith(f"{PRICES_FOLDER}/"))
    for path in price_files:
        file = by_path[path]
        snapshot_id = Path(path).stem
        top = _public(prices_table(file.source, snapshot_id, origin, file.label, frames["gpus"]))
        below_prices = frames.get("prices")
        frames["prices"] = top if below_prices is None else _replace_prices(below_prices, top)
    frames["prices"] = frames["prices"].sort("snapshot", "gpu")
    _check_required_rows(frames)
    return frames


def _overlay_gpus(below: pl.DataFrame, top: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str]]:
    """The GPU rule of the module docstring; returns the frame and {replaced name: new name}."""
    owner = gpu_name_keys(below)
    origin_of = dict(below.select("name", "origin").iter_rows())
    replaced: dict[str, tuple[str, int]] = {}  # name below -> (new name, row of the layer that replaces it)
    problems = []
    for name, aliases, label, row in top.select("name", "aliases", FILE_COL, ROW_COL).iter_rows():
        target = owner.get(normalise_name(name))
        if target is not None and target in replaced:
            first = replaced[target][1]
            problems.append(
                Problem(label, row, "name", f"{name!r} names {target}, which row {first} replaces")
            )
        elif target is not None:
            replaced[target] = (name, row)
        for column, text in name_keys(name, aliases)[1:]:
            hit = owner.get(normalise_name(text))
            if hit is not None and hit != target:
                message = f"{text!r} already names {hit} ({origin_of[hit]}); a row replaces only the GPU its name names"
                problems.append(Problem(label, row, column, message))
    if problems:
        raise CatalogError(sorted(problems, key=lambda p: p.row or 0))
    inherited = {new: old for old, (new, _) in replaced.items()}
    old_aliases = dict(below.select("name", "aliases").iter_rows())
    merged_aliases = [
        _alias_text(name, aliases, inherited[name], old_aliases[inherited[name]])
        if name in inherited
        else aliases
        for name, aliases in top.select("name", "aliases").iter_rows()
    ]
    top = _public(top.with_columns(pl.Series("aliases", merged_aliases, pl.String)))
    kept = below.filter(~pl.col("name").is_in(list(replaced)))
    renamed = {old: new for old, (new, _) in replaced.items() if old != new}
    return pl.concat([kept, top], how="vertical_relaxed"), renamed


def _alias_text(name: str, aliases: str | None, old_name: str, old_aliases: str | None) -> str | None:
    """The new row's aliases, then the replaced row's name and aliases; each spelling once, never its name."""
    seen = {normalise_name(name)}
    kept = []
    for _, text in name_keys(name, aliases)[1:] + name_keys(old_name, old_aliases):
        if normalise_name(text) not in seen:
            seen.add(normalise_name(text))
            kept.append(text)
    return ";".join(kept) or None


def _replace_by_key(below: pl.DataFrame, top: pl.DataFrame, key: str) -> pl.DataFrame:
    """Rows below whose (normalised) key the layer also gives are dropped; the layer's rows are appended."""
    top_keys = {normalise_name(value) for value in top[key].to_list()}
    kept = [normalise_name(value) not in top_keys for value in below[key].to_list()]
    return pl.concat([below.filter(pl.Series(kept, dtype=pl.Boolean)), top], how="vertical_relaxed")


def _replace_prices(below: pl.DataFrame, top: pl.DataFrame) -> pl.DataFrame:
    replaced = (top["snapshot"] + "|" + top["gpu"].str.to_lowercase()).to_list()
    kept = below.filter(~(pl.col("snapshot") + "|" + pl.col("gpu").str.to_lowercase()).is_in(replaced))
    return pl.concat([kept, top], how="vertical_relaxed")


def _check_required_rows(frames: Frames) -> None:
    grid, modes = frames["grid"], frames["pricing_modes"]
    if grid.filter(pl.col("region") == WORLD_REGION).is_empty():
        raise CatalogError(
            f"{GRID.file_name}: the '{WORLD_REGION}' row is missing (it is the fallback region)"
        )
    missing_modes = sorted(set(PRICING_MODES) - set(modes["mode"].to_list()))
    if missing_modes:
        raise CatalogError(f"{PRICING.file_name}: no row for mode(s) {', '.join(missing_modes)}")


def _public(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.drop(FILE_COL, ROW_COL)


def display(path: Path) -> str:
    """A path relative to the repository when it lies inside it, so messages stay short."""
    try:
        return str(path.resolve().relative_to(bundled_data_dir().parent))
    except ValueError:
        return str(path)
