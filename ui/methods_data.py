"""What the Methods & data page reports about the data: catalogue summaries, accuracy table, version."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import streamlit as st

from planner import Catalogs, bundle_dir, bundled_data_dir, default_catalogs, load_case_file, validate_cases

DIST_NAME = "training-run-planner"
CALIBRATION_CSV = "calibration.csv"
BUNDLED = "bundled"


def app_version() -> str:
    """The installed distribution's version, else the checkout's pyproject.toml, else "unknown"."""
    try:
        return importlib.metadata.version(DIST_NAME)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        with (bundle_dir() / "pyproject.toml").open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def catalogue_frames(cats: Catalogs) -> list[tuple[str, str, pl.DataFrame]]:
    """(name, file, frame) of every catalogue the estimates read, in the order the page lists them."""
    frames = [
        ("GPUs", "gpus.csv", cats.gpus),
        ("Price snapshots", "prices/*.csv", cats.prices),
        ("Pricing modes", "pricing_modes.csv", cats.pricing_modes),
        ("Grid carbon intensity", "grid_intensity.csv", cats.grid),
        ("PUE presets", "pue.csv", cats.pue),
        ("Storage presets", "storage.csv", cats.storage),
        ("Model presets", "models.csv", cats.models),
        ("Efficiency presets", "efficiency.csv", cats.efficiency),
    ]
    cases = calibration_cases()
    if cases is not None:
        frames.append(("Calibration cases", CALIBRATION_CSV, cases))
    return frames


def catalogue_summary(cats: Catalogs) -> pl.DataFrame:
    """One row per catalogue: rows, rows from team or uploaded files, distinct sources, as_of range."""
    records = []
    for name, file_name, frame in catalogue_frames(cats):
        records.append(
            {
                "Catalogue": name,
                "File": f"data/{file_name}",
                "Rows": frame.height,
                "Team or uploaded rows": _non_bundled_rows(frame),
                "Distinct sources": frame["source"].n_unique() if "source" in frame.columns else 0,
                "as_of": _date_range(frame),
            }
        )
    return pl.DataFrame(records)


def sources_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Each distinct source of a catalogue with how many rows cite it, most cited first."""
    if "source" not in frame.columns:
        return pl.DataFrame({"source": [], "rows": []}, schema={"source": pl.String, "rows": pl.UInt32})
    return (
        frame.group_by("source")
        .agg(pl.len().alias("rows"))
        .sort(["rows", "source"], descending=[True, False])
    )


def snapshot_table(prices: pl.DataFrame) -> pl.DataFrame:
    """One row per price snapshot: GPUs priced, where its rows come from, the as_of range, price bases."""
    origin = (
        pl.col("origin").unique().sort().str.join(", ") if "origin" in prices.columns else pl.lit(BUNDLED)
    )
    return (
        prices.group_by("snapshot")
        .agg(
            pl.len().alias("GPUs priced"),
            origin.alias("origin"),
            pl.col("as_of").min().cast(pl.String).alias("earliest as_of"),
            pl.col("as_of").max().cast(pl.String).alias("latest as_of"),
            pl.col("price_basis").unique().sort().str.join(", ").alias("price basis"),
        )
        .sort("snapshot", descending=True)
    )


def _non_bundled_rows(frame: pl.DataFrame) -> int:
    if "origin" not in frame.columns:
        return 0
    return frame.filter(pl.col("origin") != BUNDLED).height


def _date_range(frame: pl.DataFrame) -> str:
    if "as_of" not in frame.columns or frame.is_empty():
        return "—"
    dates = frame["as_of"].cast(pl.String).drop_nulls()
    if dates.is_empty():
        return "—"
    low, high = dates.min(), dates.max()
    return str(low) if low == high else f"{low} … {high}"


# --- calibration and accuracy ------------------------------------------------------------------------------


def calibration_path() -> Path:
    return bundled_data_dir() / CALIBRATION_CSV


def calibration_cases() -> pl.DataFrame | None:
    """The bundled case file as text columns (empty cells are "not published"), or None if not bundled."""
    path = calibration_path()
    if not path.is_file():
        return None
    return _read_cases(str(path), path.stat().st_mtime_ns)


@st.cache_resource(show_spinner=False)
def _read_cases(path: str, _stamp: int) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema_length=0)


@st.cache_resource(show_spinner="Scoring the planner against the published measurements…")
def accuracy_report() -> dict[str, Any] | str:
    """`planner.cases.validate.validate_cases` on the bundled case file, once per process (else a reason)."""
    if not calibration_path().is_file():
        return f"The accuracy table needs data/{CALIBRATION_CSV}, which this installation lacks."
    try:
        cases = load_case_file(calibration_path())
        # the shipped presets: what a plan gets
        report = validate_cases(cases, default_catalogs(), include_basis=True)
        # cross-validation: presets rebuilt without each row's source document, or without the row
        report["holdout"] = {
            mode: validate_cases(cases, default_catalogs(), refit=mode)["summary"] for mode in HOLDOUT_MODES
        }
        return report
    except ValueError as err:  # a malformed case file: say so instead of a traceback
        return f"The calibration file could not be scored: {err}"


HOLDOUT_MODES = ("source", "row")  # `validate --refit`, in the order the page shows them


def accuracy_summary_table(report: dict[str, Any]) -> pl.DataFrame:
    """Per category: cases (skipped included), skipped, the median and 90th percentile |error| in % on the
    shipped presets, then (when the report has them) the same under source and row holdout, and the largest
    |error| on the shipped presets."""
    records = []
    holdout = report.get("holdout", {})
    for category, stats in sorted(report.get("summary", {}).items()):
        record = {
            "Category": category,
            "Cases": int(stats.get("n") or 0),  # every row of the category, skipped ones included
            "Skipped": int(stats.get("n_skipped") or 0),
            "Median |error| %": _percent(stats.get("median_abs_rel_error")),
            "90th percentile |error| %": _percent(stats.get("p90_abs_rel_error")),
        }
        for mode in HOLDOUT_MODES:
            if mode in holdout:
                held = holdout[mode].get(category, {})
                record[f"Median |error| %, {mode} holdout"] = _percent(held.get("median_abs_rel_error"))
                record[f"90th percentile |error| %, {mode} holdout"] = _percent(held.get("p90_abs_rel_error"))
        record["Largest |error| %"] = _percent(stats.get("max_abs_rel_error"))
        records.append(record)
    return pl.DataFrame(records)


def accuracy_rows_table(report: dict[str, Any]) -> pl.DataFrame:
    """Every case: what was predicted against what was published, or why it was skipped."""
    keys = (
        "case_id",
        "category",
        "predicted",
        "measured",
        "measured_unit",
        "rel_error",
        "basis",
        "skipped_reason",
    )
    rows = [{key: row.get(key) for key in keys} for row in report.get("rows", [])]
    if not rows:
        return pl.DataFrame()
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return frame.with_columns((pl.col("rel_error").cast(pl.Float64) * 100).round(1).alias("error %")).drop(
        "rel_error"
    )


def _percent(value: Any) -> float | None:
    return None if value is None else round(float(value) * 100, 1)
