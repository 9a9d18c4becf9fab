"""The bundled catalogues load and hold sane figures; broken files fail naming file, row and column; lookups.

Golden figures come from reference/hardware-and-prices.md (§1 specs, §2 prices) and energy.md (A4, A7); the
comment beside each says where.
"""

from __future__ import annotations

import csv
import io
import shutil
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from planner.catalogue.catalog import (
    DATA_DIR,
    UPLOAD,
    CatalogError,
    Catalogs,
    LayerFile,
    UnknownNameError,
    default_catalogs,
    load_catalogs,
    overlay,
    peak_rate,
    peak_tflops,
)
from planner.catalogue.catalog_schema import GPUS, GRID, PRICES, PUE, STORAGE, TFLOPS_COLUMNS


@pytest.fixture(scope="module")
def cats() -> Catalogs:
    return load_catalogs()


# --- bundled files --------------------------------------------------------------------------------------

BRIEF_GPUS = [
    "H100 SXM", "H100 PCIe", "H100 NVL", "A100 80GB SXM", "A100 40GB SXM", "A100 80GB PCIe", "H200 SXM",
    "B200", "GB200", "B300", "L40S", "L4", "A10G", "A10", "RTX 4090", "RTX 6000 Ada", "V100 32GB", "T4",
    "MI250X", "MI300X", "MI325X", "MI355X", "Gaudi 2", "Gaudi 3", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e",
    "RTX A6000",  # named by the torchtune rows of calibration.csv (validate predicts through the catalogue)
    "H100 SXM 96GB HBM2e (500 W)",  # a power-capped variant, named by the torchtitan rows
    "H20",  # named by the verl rows VERL-01...04 of calibration.csv (tests/test_gpu_h20.py)
]  # fmt: skip


def test_every_accelerator_of_the_reference_is_catalogued(cats: Catalogs) -> None:
    assert sorted(cats.gpus["name"].to_list()) == sorted(BRIEF_GPUS)


@pytest.mark.parametrize(
    ("frame", "spec"),
    [("gpus", GPUS), ("grid", GRID), ("pue", PUE), ("storage", STORAGE), ("prices", PRICES)],
)
def test_frames_have_the_declared_types(cats: Catalogs, frame: str, spec) -> None:
    schema = getattr(cats, frame).schema
    for column in spec.columns:
        assert schema[column.name] == column.dtype, column.name


def test_every_row_has_source_and_date(cats: Catalogs) -> None:
    for name in ("gpus", "prices", "pricing_modes", "grid", "pue", "storage"):
        frame = getattr(cats, name)
        assert frame["source"].null_count() == 0 and frame["as_of"].null_count() == 0, name
        assert frame["as_of"].max() <= date(2026, 12, 2), name  # H20 row recorded 2026-12-02


@pytest.mark.parametrize(
    ("gpu", "column", "expected"),
    [
        ("H100 SXM", "tflops_bf16", 1979 / 2),  # datasheet 1,979 with sparsity, halved (§0, §1b)
        ("H100 SXM", "tflops_fp8", 3958 / 2),  # 3,958 with sparsity, halved
        ("H100 SXM", "memory_gib", 81_559 / 1024),  # nvidia-smi 81,559 MiB (§1d)
        ("H200 SXM", "memory_gib", 143_771 / 1024),  # nvidia-smi 143,771 MiB (§1d)
        ("A100 80GB SXM", "tflops_bf16", 312.0),  # datasheet "312 | 624*" (dense | sparse)
        ("A100 80GB SXM", "tflops_tf32", 156.0),
        ("B200", "tflops_fp4", 72_000 / 8),  # HGX B200 NVFP4 "144 | 72 PF" system, 8 GPUs (§1b)
        ("B300", "tflops_fp4", 108_000 / 8),  # system "144 | 108 PF" / 8 (§1c note 8)
        ("MI250X", "tflops_bf16", 383 / 2),  # per GCD: the package's 383 over two GCDs (§1c note 10)
        ("Gaudi 3", "tflops_bf16", 1677.0),  # as shipped, MME at 1,600 MHz (§1c note 12)
        ("RTX 4090", "tflops_bf16", 165.2),  # FP32 accumulate, not 330 (§1c note 16)
        ("TPU v4", "tdp_w", 192.0),  # Google's measured maximum per chip (§1a)
    ],
)
def test_golden_spec_figures(cats: Catalogs, gpu: str, column: str, expected: float) -> None:
    assert cats.gpu(gpu)[column] == pytest.approx(expected, rel=1e-3)


def test_rates_are_ordered_like_the_hardware(cats: Catalogs) -> None:
    """Narrower types never run slower: fp8 >= bf16 >= tf32 where both are listed (dense figures)."""
    gpus = cats.gpus
    for low, high in [
        ("tflops_tf32", "tflops_bf16"),
        ("tflops_bf16", "tflops_fp8"),
        ("tflops_fp8", "tflops_fp4"),
    ]:
        both = gpus.filter(pl.col(low).is_not_null() & pl.col(high).is_not_null())
        assert (both[high] >= both[low]).all(), (low, high)
    assert gpus.select(pl.any_horizontal(pl.col(c).is_not_null() for c in TFLOPS_COLUMNS)).to_series().all()


def test_price_snapshots(cats: Catalogs) -> None:
    ids = cats.snapshot_ids()
    assert len(ids) >= 3 and ids == sorted(ids) and cats.latest_snapshot() == "2026-11-09"
    assert set(cats.prices["gpu"]) <= set(cats.gpus["name"])
    banded = cats.prices.filter(pl.col("usd_per_gpu_hour_low").is_not_null())
    assert (banded["usd_per_gpu_hour_low"] <= banded["usd_per_gpu_hour_median"]).all()
    assert (banded["usd_per_gpu_hour_median"] <= banded["usd_per_gpu_hour_high"]).all()
    assert set(cats.prices["origin"]) == {"bundled"}


def test_h100_price_trend(cats: Catalogs) -> None:
    """cloud-gpus medians 4.25 (2023-Q1), 2.95 (2025-Q3); late-2026 list median 3.93, n=12 (§2.3, §2.4)."""
    series = [cats.price("H100 SXM", snap) for snap in ("2023-03-31", "2025-09-30", "2026-11-09")]
    assert [row["usd_per_gpu_hour_median"] for row in series if row] == [4.25, 2.95, 3.93]
    assert series[2]["n_providers"] == 12


def test_pricing_modes(cats: Catalogs) -> None:
    assert cats.pricing_mode("on_demand")["discount_frac"] == 0.0
    # median of ten observed spot discounts: (0.42 + 0.50) / 2 (pricing_modes.csv note, §2.5)
    assert cats.pricing_mode("spot")["discount_frac"] == pytest.approx(0.46)
    typical = cats.pricing_modes["discount_frac"]
    assert (cats.pricing_modes["discount_frac_low"] <= typical).all()
    assert (typical <= cats.pricing_modes["discount_frac_high"]).all()
    with pytest.raises(UnknownNameError, match="spot"):
        cats.pricing_mode("spott")


@pytest.mark.parametrize(
    ("region", "g_co2e_per_kwh"),
    [
        ("world-average", 480.0),  # Ember Global Electricity Review 2024 (energy.md A7)
        ("us-east-1", 400.2),  # PJM, Electricity Maps 2024 life-cycle
        ("us-west-2", 106.3),  # BPA
        ("eu-west-1", 396.8),  # Ireland
        ("eu-central-1", 333.8),  # Germany
        ("ap-northeast-1", 539.7),  # Tokyo zone
        ("us-central1", 485.4),  # GCP Iowa, MISO
        ("westeurope", 262.9),  # Azure Netherlands
        ("France", 33.4),  # by label
        ("aws eu-north-1", 20.4),  # "provider region", SE3
    ],
)
def test_grid_regions(cats: Catalogs, region: str, g_co2e_per_kwh: float) -> None:
    assert cats.region(region)["g_co2e_per_kwh"] == pytest.approx(g_co2e_per_kwh)


def test_grid_covers_many_regions(cats: Catalogs) -> None:
    assert cats.grid.height >= 30
    assert {"aws", "gcp", "azure"} <= set(cats.grid["provider"].drop_nulls())


def test_pue_and_storage_presets(cats: Catalogs) -> None:
    pue = dict(cats.pue.select("preset", "pue").iter_rows())
    assert (
        pue["planner_default"] == 1.20 and pue["hyperscaler"] < pue["colocation_average"] < pue["on_premises"]
    )
    assert {"local_nvme_node", "network_file_system_node", "object_store"} <= set(cats.storage["preset"])


# --- lookups --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("H100", "H100 SXM"),
        ("h100-sxm5", "H100 SXM"),
        ("a100 80gb sxm", "A100 80GB SXM"),
        ("A100", "A100 80GB SXM"),
        ("H200", "H200 SXM"),
        ("  h100_pcie ", "H100 PCIe"),
        ("tpu-v6e", "TPU v6e"),
        ("trillium", "TPU v6e"),
        ("RTX4090", "RTX 4090"),
    ],
)
def test_gpu_aliases(cats: Catalogs, query: str, name: str) -> None:
    assert cats.gpu(query)["name"] == name


def test_unknown_gpu_lists_the_closest_names(cats: Catalogs) -> None:
    with pytest.raises(UnknownNameError) as caught:
        cats.gpu("H1OO SXM")
    assert isinstance(caught.value, ValueError)
    assert "closest matches: H100 SXM" in str(caught.value)
    assert str(caught.value).count(",") == 2  # three names


# No fallback to another datatype's rate. A chip without the precision's rate cannot run it,
# so the rate is None and the note says why and what it runs (it used to borrow the FP16 or BF16 rate).
@pytest.mark.parametrize(
    ("gpu", "precision", "tflops", "column"),
    [
        ("H100 SXM", "bf16_mixed", 989.5, "tflops_bf16"),
        ("H100 SXM", "fp8_mixed", 1979.0, "tflops_fp8"),
        ("H100 SXM", "fp32", 494.5, "tflops_tf32"),  # TF32 tensor cores for fp32 training
        ("V100 32GB", "fp16_mixed", 125.0, "tflops_fp16"),
        ("V100 32GB", "bf16_mixed", None, None),  # no BF16 on Volta (was: its FP16 rate, 125)
        ("T4", "bf16_pure", None, None),
        ("V100 32GB", "fp32", 15.7, "tflops_fp32"),  # no TF32 on Volta: plain FP32 is still fp32 training
        ("A100 80GB SXM", "fp8_mixed", None, None),  # no FP8 on Ampere (was: its BF16 rate, 312)
        ("TPU v5e", "fp16_mixed", None, None),  # TPUs multiply in BF16, not FP16 (was: 197)
        ("TPU v5e", "fp32", None, None),  # Google publishes no FP32 rate
    ],
)
def test_peak_rate_by_precision(cats: Catalogs, gpu: str, precision: str, tflops, column) -> None:
    rate = peak_rate(cats.gpu(gpu), precision)
    assert (rate.tflops, rate.column) == (tflops, column)
    assert peak_tflops(cats.gpu(gpu), precision) == tflops
    if tflops is None:
        assert f"{precision} cannot run on {gpu}" in rate.note and "it runs " in rate.note
    else:
        assert bool(rate.note) == (column == "tflops_tf32")


def test_gpu_price_falls_back_to_an_earlier_snapshot(cats: Catalogs) -> None:
    row = cats.price("A10", "2026-05-20")  # 2026-05-20 has no A10; 2025-Q3 median 0.75
    assert row is not None
    assert (row["usd_per_gpu_hour_median"], row["snapshot"], row["is_fallback"]) == (0.75, "2025-09-30", True)
    assert cats.price("TPU v4", "") is None  # TPU prices in the reference are undated
    assert cats.price("L4", "2023-03-31")["is_fallback"] is False
    with pytest.raises(UnknownNameError, match="snapshot"):
        cats.price("L4", "2019-01-01")


def test_region_lookup_refuses_to_guess(cats: Catalogs) -> None:
    with pytest.raises(UnknownNameError, match="us-east-1, us-east1"):
        cats.region("us east 1")  # AWS us-east-1 (PJM) or GCP us-east1 (South Carolina)?
    with pytest.raises(UnknownNameError, match="closest matches"):
        cats.region("mars-north-1")


# --- broken files ---------------------------------------------------------------------------------------


def _bundled_copy(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(
        DATA_DIR, target, ignore=shutil.ignore_patterns("README.md", "models.csv", "efficiency.csv")
    )
    return target


def _edit_cell(path: Path, row: int, column: str, value: str) -> None:
    """Set one cell; `row` is the spreadsheet row (header = 1)."""
    records = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    records[row - 1][records[0].index(column)] = value
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(records)
    path.write_text(buffer.getvalue(), encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "row", "column", "value", "words"),
    [
        ("gpus.csv", 3, "tdp_w", "lots", "must be a number"),
        ("gpus.csv", 4, "memory_gib", "-80", "must be > 0"),
        ("gpus.csv", 5, "name", "H100 SXM", "duplicate"),
        ("gpus.csv", 6, "source", "", "a value is required"),
        ("gpus.csv", 7, "as_of", "09/11/2026", "must be a date"),
        ("gpus.csv", 8, "generation", "pascal", "must be one of"),
        ("gpus.csv", 9, "aliases", "h100", "already names H100 SXM"),
        ("gpus.csv", 10, "launch_year", "2024.5", "whole number"),
        ("prices/2026-11-09.csv", 3, "gpu", "H900 SXM", "unknown GPU"),
        ("prices/2026-11-09.csv", 2, "usd_per_gpu_hour_low", "4.5", "is above usd_per_gpu_hour_median"),
        ("prices/2026-11-09.csv", 2, "as_of", "2027-01-01", "after the snapshot date"),
        ("grid_intensity.csv", 4, "g_co2e_per_kwh", "-3", "must be >= 0"),
        ("pue.csv", 2, "pue", "0.9", "must be >= 1"),
        ("pricing_modes.csv", 3, "mode", "lottery", "must be one of"),
        ("storage.csv", 2, "read_gb_per_s", "inf", "finite"),
    ],
)
def test_broken_cell_names_file_row_and_column(
    tmp_path: Path, file: str, row: int, column: str, value: str, words: str
) -> None:
    data = _bundled_copy(tmp_path)
    _edit_cell(data / file, row, column, value)
    with pytest.raises(CatalogError) as caught:
        load_catalogs(data)
    message = str(caught.value)
    assert file in message and f"row {row}" in message and f"column '{column}'" in message, message
    assert words in message
    assert (caught.value.row, caught.value.column) == (row, column)


def test_bad_utf8_names_row_and_column(tmp_path: Path) -> None:
    data = _bundled_copy(tmp_path)
    lines = (data / "gpus.csv").read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"NVIDIA", b"NVID\xffA", 1)  # row 4, vendor column
    (data / "gpus.csv").write_bytes(b"\n".join(lines))
    with pytest.raises(CatalogError, match=r"gpus\.csv, row 4, column 'vendor': is not valid UTF-8"):
        load_catalogs(data)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"", "is empty"),
        (b"name,vendor\n", "column is missing"),
        (",".join(c.name for c in GPUS.columns if c.required).encode() + b"\n", "header but no data rows"),
        (b"\xef\xbb\xbfname,nonsense\nx,y\n", "unknown or repeated column"),
    ],
)
def test_upload_of_an_empty_or_malformed_gpu_file(content: bytes, words: str) -> None:
    with pytest.raises(CatalogError, match=words) as caught:
        _upload("gpus.csv", content)
    assert "uploaded gpus.csv" in str(caught.value)


def test_ragged_row_is_located(tmp_path: Path) -> None:
    text = (DATA_DIR / "gpus.csv").read_text(encoding="utf-8").splitlines()
    text[2] += ",extra"
    with pytest.raises(CatalogError, match=r"row 3, column .*cells but the header has"):
        _upload("gpus.csv", "\n".join(text).encode())


def test_price_upload_accepts_aliases_and_rejects_unknown_names() -> None:
    header = "gpu,usd_per_gpu_hour_median,price_basis,source,as_of\n"
    good = (header + "h100,2.5,neocloud_list,our quote,2026-11-20\n").encode()
    row = _upload("prices/2026-11-20-team.csv", good).price("H100 SXM", "2026-11-20-team")
    assert (row["gpu"], row["usd_per_gpu_hour_median"], row["origin"]) == ("H100 SXM", 2.5, UPLOAD)
    bad = (header + "h100,2.5,neocloud_list,our quote,2026-11-20\nZ9000,1,index,x,2026-11-20\n").encode()
    with pytest.raises(CatalogError, match=r"row 3, column 'gpu': unknown GPU 'Z9000'"):
        _upload("prices/2026-11-20.csv", bad)
    with pytest.raises(CatalogError, match="file name must be a date YYYY-MM-DD"):
        _upload("prices/latest.csv", good)


def _upload(path: str, content: bytes) -> Catalogs:
    """The bundled catalogues with one uploaded file over them (the overlay a session's upload goes through)."""
    return overlay(default_catalogs(), [LayerFile(path, content, f"uploaded {Path(path).name}")], UPLOAD)


# --- overlay --------------------------------------------------------------------------------------------


def _team_gpus(tmp_path: Path, extra_alias: str = "mychip") -> Path:
    team = tmp_path / "team"
    (team / "prices").mkdir(parents=True)
    records = list(csv.reader(io.StringIO((DATA_DIR / "gpus.csv").read_text(encoding="utf-8"))))
    header, h100 = records[0], dict(zip(records[0], records[1], strict=True))
    assert h100["name"] == "H100 SXM"
    ours = {**h100, "memory_gib": "75", "source": "our nvidia-smi"}  # a team reading of the same card
    new = {**h100, "name": "MyChip 9000", "aliases": extra_alias, "tflops_bf16": "1234", "source": "vendor"}
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, header, lineterminator="\n")
    writer.writeheader()
    writer.writerows([ours, new])
    (team / "gpus.csv").write_text(buffer.getvalue(), encoding="utf-8")
    return team


def test_overlay_adds_a_gpu_and_wins_on_a_duplicate(tmp_path: Path) -> None:
    team = _team_gpus(tmp_path)
    (team / "prices" / "2026-11-09.csv").write_text(
        "gpu,usd_per_gpu_hour_median,price_basis,source,as_of\n"
        "MyChip 9000,9.99,neocloud_list,our contract,2026-11-01\n"
        "H100 SXM,2.10,neocloud_list,our contract,2026-11-01\n",
        encoding="utf-8",
    )
    cats = load_catalogs(overlay_dir=team)
    assert cats.gpus.height == len(BRIEF_GPUS) + 1
    h100 = cats.gpu("h100")
    assert (h100["memory_gib"], h100["origin"]) == (75.0, "team")
    assert cats.gpu("mychip")["tflops_bf16"] == 1234.0
    assert cats.gpu("B200")["origin"] == "bundled"
    price = cats.price("H100 SXM", "")
    assert (price["usd_per_gpu_hour_median"], price["origin"]) == (2.10, "team")
    assert cats.price("B200", "")["origin"] == "bundled"  # the rest of the snapshot stays


def test_overlay_errors_name_the_overlay_file(tmp_path: Path) -> None:
    team = _team_gpus(tmp_path, extra_alias="a100")  # clashes with the bundled A100 80GB SXM
    with pytest.raises(CatalogError, match=r"team/gpus\.csv, row 3, column 'aliases': 'a100' already names"):
        load_catalogs(overlay_dir=team)


def test_overlay_prices_must_name_known_gpus(tmp_path: Path) -> None:
    team = tmp_path / "team"
    (team / "prices").mkdir(parents=True)
    (team / "prices" / "2026-12-01.csv").write_text(
        "gpu,usd_per_gpu_hour_median,price_basis,source,as_of\nH1000,3,index,x,2026-12-01\n", encoding="utf-8"
    )
    with pytest.raises(CatalogError, match=r"team/prices/2026-12-01\.csv, row 2, column 'gpu'"):
        load_catalogs(overlay_dir=team)
