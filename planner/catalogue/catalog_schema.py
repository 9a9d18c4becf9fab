"""Explicit schemas of the CSV catalogues in `data/`: column types, allowed ranges and choices.

Every file has a unique key column, a `source` and an `as_of` date on every row (DESIGN.md §2 "Data"). The
ranges are sanity bounds that catch typos (a negative price, TFLOP/s typed in FLOP/s), not physical limits;
where a bound is a real constraint (a PUE below 1, a fraction above 1) it says so. `data/README.md` documents
each column and its unit.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

# Architecture families; the efficiency presets key on them. "other" lets a team add an unlisted chip.
GENERATIONS = (
    "volta",
    "turing",
    "ampere",
    "ada",
    "hopper",
    "blackwell",
    "cdna2",
    "cdna3",
    "cdna4",
    "gaudi",
    "tpu",
    "other",
)
PRICE_BASES = ("neocloud_list", "index", "hyperscaler_list")
PRICING_MODES = ("on_demand", "spot", "commit_1y", "commit_3y")  # the Scenario's `Pricing` choices
GRID_BASES = ("life-cycle", "operational")
TFLOPS_COLUMNS = ("tflops_fp32", "tflops_tf32", "tflops_bf16", "tflops_fp16", "tflops_fp8", "tflops_fp4")
WORLD_REGION = "world-average"

# Sanity ceilings: ten times beyond anything shipping in 2026 (B300/GB200 are the top rows).
MAX_TFLOPS = 1_000_000.0  # the Scenario's peak_tflops ceiling
MAX_USD_PER_GPU_HOUR = 10_000.0

# Rows a team or uploaded file may hold: bounded work per input. The bundled GPU file has 31 rows; a
# team lists the chips it can rent, tens at most. Every page evaluates one row per GPU somewhere (Compare GPUs
# evaluates each GPU at every candidate count), so page time grows with this number: at 200 rows each page
# stays within seconds (tests/test_bounded_inputs.py). A price snapshot has one row per GPU, so the same cap.
MAX_GPU_ROWS = 200
# Electricity Maps publishes about 350 zones and AWS, GCP and Azure about 150 regions together (the bundled file
# holds 132 rows); 2,000 is four times both, and a region lookup is a dictionary get whatever the count.
MAX_GRID_ROWS = 2_000
# PUE and storage presets are a short list people pick from (11 and 12 bundled); pricing modes are exactly four.
MAX_PRESET_ROWS = 100


@dataclass(frozen=True)
class Column:
    """One CSV column: its polars type and what a valid cell looks like."""

    name: str
    dtype: type[pl.DataType]
    required: bool = True  # every row must give a value; an optional column may be left out of the header
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # True: the value must be strictly above `low`
    choices: tuple[str, ...] | None = None
    is_name: bool = False  # an identifier (planner.errors.NAME_CHARS only): it travels in share links


@dataclass(frozen=True)
class TableSpec:
    """A catalogue file: its columns and the column whose values must be unique."""

    file_name: str
    columns: tuple[Column, ...]
    key: str
    max_rows: int = MAX_PRESET_ROWS  # data rows one file may hold (a team or upload file; bundled ones too)

    @property
    def schema(self) -> dict[str, type[pl.DataType]]:
        return {column.name: column.dtype for column in self.columns}

    def column(self, name: str) -> Column:
        return next(column for column in self.columns if column.name == name)


def _text(name: str, required: bool = True, choices: tuple[str, ...] | None = None) -> Column:
    return Column(name, pl.String, required=required, choices=choices)


def _name(name: str) -> Column:
    return Column(name, pl.String, is_name=True)


def _positive(name: str, high: float, required: bool = True) -> Column:
    return Column(name, pl.Float64, required=required, low=0.0, high=high, low_open=True)


_PROVENANCE = (_text("source"), Column("as_of", pl.Date))
_NOTE = Column("note", pl.String, required=False)

GPUS = TableSpec(
    "gpus.csv",
    (
        _name("name"),
        _text("vendor"),
        _text("aliases", required=False),
        _text("generation", choices=GENERATIONS),
        *(_positive(name, MAX_TFLOPS, required=False) for name in TFLOPS_COLUMNS),
        _positive("memory_gib", 100_000.0),
        _positive("memory_bw_tb_per_s", 1_000.0),
        _positive("tdp_w", 100_000.0),
        # A variant run below its TDP: the enforced limit, blank = the TDP. Within
        # [MIN_POWER_LIMIT_FRAC x tdp_w, tdp_w] (catalog_tables.check_power_limits); the tflops_* columns stay
        # the datasheet's rates at TDP and planner.formulas.energy.power_cap derates them.
        _positive("power_limit_w", 100_000.0, required=False),
        _text("interconnect", required=False),
        Column("intra_node_gb_per_s", pl.Float64, low=0.0, high=100_000.0),  # 0 = none, PCIe carries it
        Column("pcie_gen", pl.Int64, required=False, low=1, high=7),
        _positive("pcie_gb_per_s", 10_000.0),
        _text("form_factor", required=False),
        Column("launch_year", pl.Int64, low=1990, high=2100),
        _NOTE,
        *_PROVENANCE,
    ),
    key="name",
    max_rows=MAX_GPU_ROWS,
)

PRICES = TableSpec(
    "prices/<snapshot>.csv",
    (
        _name("gpu"),
        _positive("usd_per_gpu_hour_median", MAX_USD_PER_GPU_HOUR),
        _positive("usd_per_gpu_hour_low", MAX_USD_PER_GPU_HOUR, required=False),
        _positive("usd_per_gpu_hour_high", MAX_USD_PER_GPU_HOUR, required=False),
        Column("n_providers", pl.Int64, required=False, low=1, high=100_000),
        _text("price_basis", choices=PRICE_BASES),
        _NOTE,
        *_PROVENANCE,
    ),
    key="gpu",
    max_rows=MAX_GPU_ROWS,
)

PRICING = TableSpec(
    "pricing_modes.csv",
    (
        _text("mode", choices=PRICING_MODES),
        # A discount is a fraction of the on-demand price; 1 would mean free compute.
        Column("discount_frac", pl.Float64, low=0.0, high=0.99),
        Column("discount_frac_low", pl.Float64, low=0.0, high=0.99),
        Column("discount_frac_high", pl.Float64, low=0.0, high=0.99),
        _NOTE,
        *_PROVENANCE,
    ),
    key="mode",
)

GRID = TableSpec(
    "grid_intensity.csv",
    (
        _name("region"),
        _text("label"),
        _text("country", required=False),
        _text("provider", required=False),
        _text("zone", required=False),
        # The dirtiest national grids sit near 800 g/kWh (energy.md A7); 2,000 leaves room for odd zones.
        Column("g_co2e_per_kwh", pl.Float64, low=0.0, high=2_000.0),
        _text("basis", choices=GRID_BASES),
        Column("year", pl.Int64, low=1990, high=2100),
        _NOTE,
        *_PROVENANCE,
    ),
    key="region",
    max_rows=MAX_GRID_ROWS,
)

PUE = TableSpec(
    "pue.csv",
    (
        _text("preset"),
        Column("pue", pl.Float64, low=1.0, high=5.0),  # PUE < 1 is impossible; 5 is the Scenario's ceiling
        _text("year", required=False),  # "2024" or a fiscal year such as "FY25"
        _NOTE,
        *_PROVENANCE,
    ),
    key="preset",
)

STORAGE = TableSpec(
    "storage.csv",
    (
        _text("preset"),
        _positive("read_gb_per_s", 100_000.0),
        _positive("write_gb_per_s", 100_000.0, required=False),
        _NOTE,
        *_PROVENANCE,
    ),
    key="preset",
)
