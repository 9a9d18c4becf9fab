"""Compute-efficiency presets: how much of the dense peak GPUs reach, by generation, model size and method.

`data/efficiency.csv` is written by `scripts/derive_efficiency.py` from the published measurements in
`reference/calibration.csv`. Its `mfu_*` columns are *compute-only* utilisation on hardware FLOPs (see
`planner.formulas.step.timing`): measured throughput with the modelled exposed communication and pipeline bubble taken
out; equal to MFU when nothing is recomputed and communication is fully hidden. Each row says how it was
obtained (`rule`): measured, or filled from a neighbour by one of the stated rules in `fill_missing`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
import polars as pl

from planner.catalogue.paths import bundled_data_dir
from planner.formulas.step.compute import Number

EFFICIENCY_CSV = bundled_data_dir() / "efficiency.csv"

# Model size buckets, total parameters: <3B, 3-20B, 20-100B, >100B.
SIZE_EDGES = (3e9, 20e9, 100e9)
SIZE_BUCKETS = ("<3B", "3-20B", "20-100B", ">100B")
METHODS = ("full", "lora", "qlora")
PRECISIONS = ("bf16", "fp8")
# Generations of data/gpus.csv; "default" serves a GPU whose generation is unknown.
GENERATIONS = (
    "hopper", "ampere", "ada", "blackwell", "volta", "turing",
    "cdna2", "cdna3", "cdna4", "gaudi", "tpu", "default",
)  # fmt: skip
REFERENCE_GENERATION = "hopper"  # the best-measured generation; others without data scale from it
# Maximum achievable BF16 matmul throughput as a share of peak (stas00/ml-engineering MAMF table,
# reference/hardware-and-prices.md §1e): H100 SXM 80.3 %, A100 SXM 86.9 %, B200 77.6 %, MI300X 51.4 %,
# MI355X 68.0 %, Gaudi 3 74.1 %. A generation without measurements gets the reference generation's
# efficiency × (its MAMF / the reference's MAMF); one without a MAMF figure gets the reference unscaled.
MAMF_FRAC = {
    "hopper": 0.803,
    "ampere": 0.869,
    "blackwell": 0.776,
    "cdna3": 0.514,
    "cdna4": 0.680,
    "gaudi": 0.741,
}
# A cell's low/high band is at least this far around its median (one or two rows cannot show the spread of
# first attempts versus tuned runs that the seed describes: "a factor of two between naive and tuned").
MIN_BAND_FRAC = 0.20
MAX_EFFICIENCY = 0.80  # no preset above the best measured matmul ceiling (A100 86.9 % MAMF less headroom)

EFFICIENCY_SCHEMA = {
    "generation": pl.String,
    "size_bucket": pl.String,
    "method": pl.String,
    "precision": pl.String,
    "mfu_low": pl.Float64,
    "mfu_typical": pl.Float64,
    "mfu_high": pl.Float64,
    "n_rows": pl.Int64,
    "source_case_ids": pl.String,
    "rule": pl.String,
    "source": pl.String,
    "as_of": pl.String,
}


def size_bucket_index(n_params: Number) -> Any:
    """Bucket index 0-3 of a total parameter count (vectorised)."""
    return np.searchsorted(np.asarray(SIZE_EDGES), n_params, side="right")


def precision_class(precision: str) -> str:
    """Scenario precision → preset precision: FP8 recipes have their own presets against the FP8 peak."""
    return "fp8" if precision.startswith("fp8") else "bf16"


def load_efficiency_table(path: Path = EFFICIENCY_CSV) -> pl.DataFrame:
    table = pl.read_csv(path, schema=EFFICIENCY_SCHEMA)
    bad = table.filter(
        (pl.col("mfu_low") > pl.col("mfu_typical")) | (pl.col("mfu_typical") > pl.col("mfu_high"))
    )
    if bad.height or table["mfu_low"].min() <= 0 or table["mfu_high"].max() > 1:  # type: ignore[operator]
        raise ValueError(f"{path}: efficiencies must satisfy 0 < low <= typical <= high <= 1")
    return table


def efficiency_preset(
    table: pl.DataFrame, generation: str, n_params: Number, method: str, precision: str = "bf16"
) -> tuple[Number, Number, Number]:
    """(low, typical, high) from a bare table (a `Catalogs` keeps its index: `cats.efficiency_band`)."""
    return EfficiencyIndex(table).band(generation, n_params, method, precision)


class EfficiencyIndex:
    """Efficiency cells by (generation, method, precision): the (low, typical, high) of each size bucket."""

    def __init__(self, table: pl.DataFrame) -> None:
        cells: dict[tuple[str, str, str], dict[str, tuple[float, float, float]]] = {}
        for row in table.iter_rows(named=True):
            key = (row["generation"], row["method"], row["precision"])
            cells.setdefault(key, {})[row["size_bucket"]] = (
                row["mfu_low"],
                row["mfu_typical"],
                row["mfu_high"],
            )
        self._bands: dict[tuple[str, str, str], np.ndarray] = {
            key: np.array([by_bucket[bucket] for bucket in SIZE_BUCKETS], dtype=float)
            for key, by_bucket in cells.items()
            if len(by_bucket) == len(SIZE_BUCKETS)
        }

    def band(
        self, generation: str, n_params: Number, method: str, precision: str = "bf16"
    ) -> tuple[Number, Number, Number]:
        """(low, typical, high) compute efficiency for a GPU generation, model size, method and precision.

        `n_params` may be an array (one lookup per size); an unknown generation falls back to "default".
        """
        generation = generation.lower() if generation.lower() in GENERATIONS else "default"
        bands = self._bands.get((generation, method, precision))
        if bands is None:
            raise ValueError(
                f"efficiency table lacks {generation}/{method}/{precision} rows for every size bucket"
            )
        if (
            np.ndim(n_params) == 0
        ):  # one size: bisect_right is searchsorted(side="right") without numpy's overhead
            low, typical, high = bands[bisect.bisect_right(SIZE_EDGES, float(n_params))]
            return float(low), float(typical), float(high)
        picked = bands[size_bucket_index(n_params)]  # (n, 3): one row per size
        return picked[..., 0], picked[..., 1], picked[..., 2]


# --- building the table from measurements ---------------------------------------------------------------

Key = tuple[str, str, str, str]  # generation, size bucket, method, precision


def _band(values: list[float]) -> tuple[float, float, float]:
    typical = median(values)
    low = min(min(values), typical * (1 - MIN_BAND_FRAC))
    high = min(max(max(values), typical * (1 + MIN_BAND_FRAC)), MAX_EFFICIENCY)
    return low, min(typical, high), high


def _measured_cells(records: Iterable[Mapping[str, Any]]) -> dict[Key, dict[str, Any]]:
    grouped: dict[Key, list[Mapping[str, Any]]] = {}
    for rec in records:
        bucket = SIZE_BUCKETS[int(size_bucket_index(rec["n_params"]))]
        grouped.setdefault((rec["generation"], bucket, rec["method"], rec["precision"]), []).append(rec)
    cells = {}
    for key, recs in grouped.items():
        low, typical, high = _band([r["efficiency"] for r in recs])
        ids = ";".join(sorted(str(r["case_id"]) for r in recs))
        cells[key] = {
            "low": low,
            "typical": typical,
            "high": high,
            "n": len(recs),
            "ids": ids,
            "rule": "measured",
        }
    return cells


def _ratio(cells: Mapping[Key, Mapping[str, Any]], differs: int, value: str, base: str) -> float:
    """Median ratio of measured typicals between keys that differ only in position `differs`."""
    ratios = []
    for key, cell in cells.items():
        if key[differs] == value:
            base_key = tuple(base if i == differs else part for i, part in enumerate(key))
            if base_key in cells:
                ratios.append(cell["typical"] / cells[base_key]["typical"])  # type: ignore[index]
    return median(ratios) if ratios else 1.0


def _scaled(cell: Mapping[str, Any], factor: float, rule: str) -> dict[str, Any]:
    low, typical, high = (min(cell[k] * factor, MAX_EFFICIENCY) for k in ("low", "typical", "high"))
    return {"low": low, "typical": min(typical, high), "high": high, "n": 0, "ids": "", "rule": rule}


def fill_missing(cells: dict[Key, dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """Every generation × bucket × method × precision, filled by these rules, in this order:

    1. nearest measured size bucket of the same generation, method and precision (ties: the smaller);
    2. LoRA/QLoRA from full training (and FP8 from BF16) of the same cell × the median ratio between such
       pairs where both are measured;
    3. other generations: the reference generation × MAMF ratio (`MAMF_FRAC`), else unscaled.
    """
    measured = dict(cells)
    method_ratio = {m: _ratio(measured, 2, m, "full") for m in METHODS}
    fp8_ratio = _ratio(measured, 3, "fp8", "bf16")
    filled = dict(measured)

    def nearest_bucket(gen: str, method: str, precision: str) -> None:
        for b, bucket in enumerate(SIZE_BUCKETS):
            key = (gen, bucket, method, precision)
            if key in filled:
                continue
            order = sorted(range(len(SIZE_BUCKETS)), key=lambda other: (abs(other - b), other))
            for other in order:
                source = measured.get((gen, SIZE_BUCKETS[other], method, precision))
                if source:
                    filled[key] = _scaled(source, 1.0, f"nearest size bucket {SIZE_BUCKETS[other]}")
                    break

    def transfer(gen: str, method: str, precision: str) -> None:
        for bucket in SIZE_BUCKETS:
            key = (gen, bucket, method, precision)
            if key in filled:
                continue
            if method != "full" and (gen, bucket, "full", precision) in filled:
                base = filled[(gen, bucket, "full", precision)]
                filled[key] = _scaled(
                    base, method_ratio[method], f"full x {method} ratio {method_ratio[method]:.2f}"
                )
            elif precision == "fp8" and (gen, bucket, method, "bf16") in filled:
                base = filled[(gen, bucket, method, "bf16")]
                filled[key] = _scaled(base, fp8_ratio, f"bf16 x fp8 ratio {fp8_ratio:.2f}")

    combos = [(m, p) for p in PRECISIONS for m in METHODS]
    for gen in GENERATIONS:
        for method, precision in combos:
            nearest_bucket(gen, method, precision)
        for method, precision in combos:
            transfer(gen, method, precision)
    reference = REFERENCE_GENERATION
    for gen in GENERATIONS:
        factor = MAMF_FRAC.get(gen, MAMF_FRAC[reference]) / MAMF_FRAC[reference]
        for bucket in SIZE_BUCKETS:
            for method, precision in combos:
                key = (gen, bucket, method, precision)
                base = filled.get((reference, bucket, method, precision))
                if key not in filled and base is not None:  # no reference cell: left out, lookups say so
                    filled[key] = _scaled(base, factor, f"{reference} x MAMF ratio {factor:.2f}")
    return filled


def build_efficiency_table(records: Iterable[Mapping[str, Any]], source: str, as_of: str) -> pl.DataFrame:
    """The full preset table from per-measurement records.

    Each record: case_id, generation, n_params (total), method, precision, efficiency (compute-only).
    """
    cells = fill_missing(_measured_cells(records))
    rows = [
        {
            "generation": gen,
            "size_bucket": bucket,
            "method": method,
            "precision": precision,
            "mfu_low": round(cell["low"], 4),
            "mfu_typical": round(cell["typical"], 4),
            "mfu_high": round(cell["high"], 4),
            "n_rows": cell["n"],
            "source_case_ids": cell["ids"],
            "rule": cell["rule"],
            "source": source,
            "as_of": as_of,
        }
        for (gen, bucket, method, precision), cell in filled_items(cells)
    ]
    return pl.DataFrame(rows, schema=EFFICIENCY_SCHEMA)


def filled_items(cells: Mapping[Key, dict[str, Any]]) -> list[tuple[Key, dict[str, Any]]]:
    """Cells ordered by generation (as in GENERATIONS), bucket, method, precision."""
    order = {name: i for i, name in enumerate(GENERATIONS + SIZE_BUCKETS + METHODS + PRECISIONS)}
    return sorted(cells.items(), key=lambda item: tuple(order[part] for part in item[0]))
