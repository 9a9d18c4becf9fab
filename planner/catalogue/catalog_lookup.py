"""Lookups in loaded catalogues: GPUs by name or alias, peak rates by precision, prices, regions, modes.

Name lookups forgive case, spaces, hyphens and underscores ("h100-sxm5", "A100 80GB SXM"); an unknown name
raises `UnknownNameError` listing the three closest names (difflib), so a typo gets a useful answer.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, NamedTuple

import polars as pl

from planner.catalogue.catalog_read import UnknownNameError

_SEPARATORS = re.compile(r"[\s\-_]+")


def normalise_name(name: str) -> str:
    """Lower case without spaces, hyphens or underscores: the key every tolerant lookup compares."""
    return _SEPARATORS.sub("", name.strip().lower())


def gpu_name_keys(gpus: pl.DataFrame) -> dict[str, str]:
    """Normalised name or alias -> catalogue name. (Clashes are rejected when the catalogue is loaded.)"""
    keys: dict[str, str] = {}
    for name, aliases in gpus.select("name", "aliases").iter_rows():
        for key in [name, *(aliases or "").split(";")]:
            if key.strip():
                keys.setdefault(normalise_name(key), name)
    return keys


def closest(query: str, candidates: dict[str, str], n: int = 3) -> list[str]:
    """The display names of the `n` candidates whose keys are closest to `query`, best first, no repeats."""
    ranked = difflib.get_close_matches(normalise_name(query), list(candidates), n=len(candidates), cutoff=0.0)
    names = list(dict.fromkeys(candidates[key] for key in ranked))
    return names[:n]


# The scenario input each kind of name comes from, carried by the error so a surface names what the user set.
_FIELD_OF_KIND = {"GPU": "gpu", "region": "region", "price snapshot": "snapshot", "pricing mode": "pricing"}


def _unknown(kind: str, query: str, candidates: dict[str, str]) -> UnknownNameError:
    names = closest(query, candidates)
    return UnknownNameError(
        f"unknown {kind} {query!r}; closest matches: {', '.join(names) or 'none'}",
        field=_FIELD_OF_KIND.get(kind, ""),
        problem=f"unknown {kind}",
        value=query,
        closest=names,
    )


def find_gpu(gpus: pl.DataFrame, name: str) -> dict[str, Any]:
    """The catalogue row (as a dict) for a GPU name or alias; "H100" is the SXM part, "A100" the 80GB SXM."""
    keys = gpu_name_keys(gpus)
    match = keys.get(normalise_name(name))
    if match is None:
        raise _unknown("GPU", name, keys)
    return gpus.row(by_predicate=pl.col("name") == match, named=True)


class PeakRate(NamedTuple):
    """A dense peak rate, the catalogue column it came from, and a sentence when a fallback was used."""

    tflops: float | None
    column: str | None
    note: str


# Columns tried in order for each training precision (Scenario.precision). Mixed precision runs its matmuls
# in the low-precision type; fp32 training uses TF32 tensor cores where the chip has them (PyTorch's
# allow_tf32 / torch.set_float32_matmul_precision("high")), else plain FP32.
PRECISION_COLUMNS: dict[str, tuple[str, ...]] = {
    "bf16_mixed": ("tflops_bf16", "tflops_fp16"),
    "bf16_pure": ("tflops_bf16", "tflops_fp16"),
    "fp16_mixed": ("tflops_fp16", "tflops_bf16"),
    "fp8_mixed": ("tflops_fp8", "tflops_bf16", "tflops_fp16"),
    "fp32": ("tflops_tf32", "tflops_fp32"),
}


def peak_rate(gpu_row: dict[str, Any], precision: str) -> PeakRate:
    """The dense peak TFLOP/s for `precision`, saying which column it used and why when it fell back.

    V100 and T4 have no BF16: bf16 precisions run at their FP16 tensor rate (in practice such runs use fp16).
    Chips without FP8 (A100, V100, TPU v4...) report the BF16 rate, since an fp8 recipe cannot run there.
    """
    if precision not in PRECISION_COLUMNS:
        raise UnknownNameError(
            f"unknown precision {precision!r}; choose one of {', '.join(PRECISION_COLUMNS)}",
            field="precision",
            problem="unknown precision",
            value=precision,
            closest=list(PRECISION_COLUMNS),
        )
    wanted, *fallbacks = PRECISION_COLUMNS[precision]
    for column in (wanted, *fallbacks):
        value = gpu_row.get(column)
        if value is not None:
            note = "" if column == wanted else _fallback_note(gpu_row["name"], wanted, column)
            if precision == "fp32" and column == "tflops_tf32":
                note = "fp32 training at the TF32 tensor-core rate (matmuls in TF32)"
            return PeakRate(float(value), column, note)
    return PeakRate(None, None, f"{gpu_row['name']} lists no rate for {precision}; enter peak TFLOP/s")


def _fallback_note(gpu: str, wanted: str, used: str) -> str:
    short = {column: column.removeprefix("tflops_").upper() for column in (wanted, used)}
    return f"{gpu} lists no {short[wanted]} rate; its {short[used]} rate is used"


def peak_tflops(gpu_row: dict[str, Any], precision: str) -> float | None:
    """Dense peak TFLOP/s at the training precision (fallbacks: see `peak_rate`); None if none exists."""
    return peak_rate(gpu_row, precision).tflops


def snapshot_ids(prices: pl.DataFrame) -> list[str]:
    """Snapshot ids, oldest first (ids start with their date, so text order is date order)."""
    return sorted(prices["snapshot"].unique().to_list())


def latest_snapshot_id(prices: pl.DataFrame) -> str:
    ids = snapshot_ids(prices)
    if not ids:
        raise UnknownNameError("no price snapshots are loaded")
    return ids[-1]


def gpu_price(prices: pl.DataFrame, gpu_name: str, snapshot_id: str | None = None) -> dict[str, Any] | None:
    """The price row for a GPU in a snapshot, or in the most recent earlier snapshot that lists it.

    An empty `snapshot_id` means the latest. The result names the snapshot it came from (`snapshot`), the one
    asked for (`requested_snapshot`) and whether it fell back (`is_fallback`). None if no snapshot up to the
    requested one lists the GPU.
    """
    ids = snapshot_ids(prices)
    requested = snapshot_id or latest_snapshot_id(prices)
    if requested not in ids:
        raise _unknown("price snapshot", requested, {normalise_name(i): i for i in ids})
    rows = prices.filter(
        (pl.col("gpu").str.to_lowercase() == gpu_name.strip().lower()) & (pl.col("snapshot") <= requested)
    ).sort("snapshot")
    if rows.is_empty():
        return None
    row = rows.row(-1, named=True)
    return {
        **row,
        "requested_snapshot": requested,
        "is_fallback": row["snapshot"] != requested,
    }


def find_region(grid: pl.DataFrame, region: str) -> dict[str, Any]:
    """The grid-intensity row for a region id, label or "provider region" (e.g. "aws us-east-1", "France").

    The exact id wins; a loose spelling that fits two ids (AWS "us-east-1" and GCP "us-east1") is refused with
    both named rather than guessed.
    """
    exact = grid.filter(pl.col("region").str.to_lowercase() == region.strip().lower())
    if exact.height == 1:
        return exact.row(0, named=True)
    keys: dict[str, list[str]] = {}
    for region_id, label, provider in grid.select("region", "label", "provider").iter_rows():
        for key in (region_id, label, f"{provider or ''} {region_id}"):
            keys.setdefault(normalise_name(key), [])
            if region_id not in keys[normalise_name(key)]:
                keys[normalise_name(key)].append(region_id)
    matches = keys.get(normalise_name(region), [])
    if len(matches) > 1:
        raise UnknownNameError(
            f"region {region!r} is ambiguous: give the exact id, one of {', '.join(matches)}",
            field="region",
            problem="ambiguous region: give the exact id",
            value=region,
            closest=matches,
        )
    if not matches:
        raise _unknown("region", region, {key: ids[0] for key, ids in keys.items()})
    return grid.row(by_predicate=pl.col("region") == matches[0], named=True)


def pricing_discount(modes: pl.DataFrame, mode: str) -> dict[str, Any]:
    """The discount row (typical, low, high fractions off on-demand, source, note) for a pricing mode."""
    match = modes.filter(pl.col("mode") == mode.strip().lower())
    if match.is_empty():
        names = {normalise_name(m): m for m in modes["mode"].to_list()}
        raise _unknown("pricing mode", mode, names)
    return match.row(0, named=True)
