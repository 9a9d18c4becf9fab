"""The catalogues object: every CSV catalogue of `data/` loaded once, with name indexes built once.

`load_catalogs` reads the bundled folder, then lays a team folder and a session's uploads over it through the
one overlay of `planner.catalogue.catalog_overlay` (rows say where they came from in an `origin` column:
"bundled", "team" or "upload"). `catalogs_from_environment` is what the app and the CLI both call: the
bundled data with the team folder named by `PLANNER_DATA_DIR` over it. Any problem raises `CatalogError`
naming the file, the spreadsheet row (header = row 1) and the column.

Lookups are methods (`cats.gpu("h100")`, `cats.price("H100 SXM", snapshot)`, `cats.model("Llama 3.1 8B")`):
each index is built from its frame on first use and kept on the object, so a lookup is a dictionary get.
Frames are never mutated; `dataclasses.replace(cats, efficiency=other)` makes a new object whose indexes are
built from its own frames.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import polars as pl

from planner.catalogue.catalog_lookup import (
    GpuIndex,
    ModeIndex,
    PriceIndex,
    RegionIndex,
)
from planner.catalogue.catalog_overlay import (
    BUNDLED,
    TEAM,
    UPLOAD,
    LayerFile,
    folder_files,
    overlay_frames,
)
from planner.catalogue.catalog_read import CatalogError, UnknownNameError
from planner.catalogue.efficiency import EfficiencyIndex, load_efficiency_table
from planner.catalogue.microbench import residual_table
from planner.catalogue.models import ModelIndex, load_model_presets
from planner.catalogue.paths import bundled_data_dir
from planner.catalogue.precisions import (
    PeakRate,
    check_precision,
    peak_rate,
    peak_tflops,
    precision_problem,
    supported_precisions,
)
from planner.formulas.step.compute import Number
from planner.model.shape import ModelShape

__all__ = [
    "BUNDLED",
    "DATA_DIR",
    "DATA_DIR_ENV",
    "TEAM",
    "UPLOAD",
    "CatalogError",
    "Catalogs",
    "LayerFile",
    "PeakRate",
    "UnknownNameError",
    "catalogs_from_environment",
    "check_precision",
    "default_catalogs",
    "load_catalogs",
    "overlay",
    "peak_rate",
    "peak_tflops",
    "precision_problem",
    "supported_precisions",
]

DATA_DIR = bundled_data_dir()
DATA_DIR_ENV = "PLANNER_DATA_DIR"  # a team's folder of CSV files in the formats of data/ (data/README.md)
_OVERLAID = ("gpus", "prices", "pricing_modes", "grid", "pue", "storage")  # the tables a layer may hold


@dataclass(frozen=True, eq=False)  # eq=False: compared and hashed by identity (frames are not hashable)
class Catalogs:
    """Every catalogue as a polars frame, with lookups by name. `prices` stacks all snapshots with a
    `snapshot` column; `models` are the model presets (data/models.csv) and `efficiency` the
    compute-efficiency presets (data/efficiency.csv); validation's `--refit` modes use a copy with a rebuilt
    `efficiency`.
    """

    gpus: pl.DataFrame
    prices: pl.DataFrame
    pricing_modes: pl.DataFrame
    grid: pl.DataFrame
    pue: pl.DataFrame
    storage: pl.DataFrame
    models: pl.DataFrame
    efficiency: pl.DataFrame
    # the operator step model's residual per GPU generation (data/microbench/residual.csv when None)
    operator_residual: Any = None  # a mapping generation -> residual_frac, or None

    # --- indexes, each built from its own frame on first use -------------------------------------------

    @cached_property
    def _gpus(self) -> GpuIndex:
        return GpuIndex(self.gpus)

    @cached_property
    def _prices(self) -> PriceIndex:
        return PriceIndex(self.prices)

    @cached_property
    def _regions(self) -> RegionIndex:
        return RegionIndex(self.grid)

    @cached_property
    def _modes(self) -> ModeIndex:
        return ModeIndex(self.pricing_modes)

    @cached_property
    def _models(self) -> ModelIndex:
        return ModelIndex(self.models)

    @cached_property
    def _efficiency(self) -> EfficiencyIndex:
        return EfficiencyIndex(self.efficiency)

    # --- lookups -------------------------------------------------------------------------------------

    def residual_frac(self, generation: str) -> float:
        """The operator model's residual for a GPU generation (planner.catalogue.microbench)."""
        table = residual_table() if self.operator_residual is None else self.operator_residual
        return float(table.get(generation, table.get("default", 1.0)))

    def gpu(self, name: str) -> dict[str, Any]:
        """The GPU row for a name or alias (case, spaces, hyphens ignored); unknown: the closest names."""
        return self._gpus.find(name)

    def gpu_names(self) -> list[str]:
        """Catalogue names in catalogue order."""
        return list(self._gpus.rows)

    def region(self, name: str) -> dict[str, Any]:
        """The grid row for a region id, label or "provider region" (an ambiguous spelling is refused)."""
        return self._regions.find(name)

    def price(self, gpu: str, snapshot: str | None = None) -> dict[str, Any] | None:
        """A GPU's price row in a snapshot ("" or None: the latest), or the latest earlier one listing it."""
        return self._prices.find(gpu, snapshot)

    def snapshot_ids(self) -> list[str]:
        """Price snapshot ids, oldest first."""
        return list(self._prices.snapshot_ids)

    def latest_snapshot(self) -> str:
        return self._prices.latest()

    def pricing_mode(self, mode: str) -> dict[str, Any]:
        """The discount row (typical, low, high fraction off on-demand, source, note) of a pricing mode."""
        return self._modes.find(mode)

    def model(self, name: str) -> ModelShape:
        """The model preset called `name` (case and surrounding spaces ignored)."""
        return self._models.find(name)

    def published_params(self, name: str) -> int:
        return self._models.published_params(name)

    def efficiency_band(
        self, generation: str, n_params: Number, method: str, precision: str
    ) -> tuple[Number, Number, Number]:
        """(low, typical, high) compute efficiency for a generation, total size, method and preset precision."""
        return self._efficiency.band(generation, n_params, method, precision)


# --- building them ---------------------------------------------------------------------------------------


def overlay(below: Catalogs, files: Sequence[LayerFile], origin: str) -> Catalogs:
    """`below` with a layer of files (a team folder, a session's uploads) over it; see catalog_overlay."""
    frames = overlay_frames({name: getattr(below, name) for name in _OVERLAID}, files, origin)
    return replace(below, **frames)


def load_catalogs(
    data_dir: Path = DATA_DIR, overlay_dir: Path | None = None, uploads: Sequence[LayerFile] = ()
) -> Catalogs:
    """The bundled folder's catalogues, a team folder's files (any subset) over them, then uploads over both."""
    frames = overlay_frames(None, folder_files(data_dir, required=True), BUNDLED)
    cats = Catalogs(
        **frames,
        models=load_model_presets(data_dir / "models.csv"),
        efficiency=load_efficiency_table(data_dir / "efficiency.csv"),
    )
    if overlay_dir is not None:
        cats = overlay(cats, folder_files(overlay_dir), TEAM)
    return overlay(cats, uploads, UPLOAD) if uploads else cats


@lru_cache(maxsize=1)
def default_catalogs() -> Catalogs:
    """The bundled catalogues, read once per process (frames are never mutated)."""
    return load_catalogs()


def team_folder(environ: Mapping[str, str] | None = None) -> str:
    """The team folder `PLANNER_DATA_DIR` names, "" when unset."""
    return (os.environ if environ is None else environ).get(DATA_DIR_ENV, "").strip()


def catalogs_from_environment(environ: Mapping[str, str] | None = None) -> Catalogs:
    """The bundled catalogues with the team folder of `PLANNER_DATA_DIR` over them (the app and the CLI).

    Raises CatalogError naming the file, row and column of a bad team file, or the folder when it is missing.
    """
    folder = team_folder(environ)
    if not folder:
        return default_catalogs()
    if not Path(folder).is_dir():
        raise CatalogError(f"{DATA_DIR_ENV}={folder}: no such folder")
    return overlay(default_catalogs(), folder_files(Path(folder)), TEAM)
