"""The NVIDIA H20 (96 GB HBM3) catalogue row: its figures against the cited sources, the CLI, and the paths an
unpriced GPU takes (comparison, plan search) and the calibration rows it unblocks (VERL-01...04).

Sources (data/gpus.csv, the row's `source` cell):
* NVIDIA's HGX H20 table as listed by Vipera and reproduced by Tom's Hardware: 96 GB HBM3, 4.0 TB/s, FP8 296,
  BF16 | FP16 148 | 148, TF32 74 TFLOP/s. TweakTown: 400 W TDP, 900 GB/s NVLink, 8-way HGX.
* nvidia-smi on an NVIDIA H20: "97871MiB" total memory.
* A measured BF16 GEMM on an NVIDIA H20 (zzc0721/torch-performance-test-data issue #77): 142.25 TFLOP/s at
  10240 x 10240 x 10240.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner import Scenario, estimate
from planner.cases.case_file import default_case_file, load_case_file
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import default_catalogs
from planner.catalogue.precisions import supported_precisions
from planner.decide.compare import NO_PRICE, compare_gpus
from planner.decide.sweep import priced_gpus

ROOT = Path(__file__).resolve().parent.parent
CATS = default_catalogs()
VERL_ROWS = ("VERL-01", "VERL-02", "VERL-03", "VERL-04")  # the H20 rows of data/calibration.csv


def test_dense_bf16_rate_is_the_printed_148_not_halved() -> None:
    h20 = CATS.gpu("H20")
    # NVIDIA's H100 sheet prints 2:4-sparsity rates (1,979 BF16 -> 989.5 dense); the H20 table is dense as
    # printed: a measured BF16 GEMM reaches 142.25 TFLOP/s = 96.1 % of 148 (142.25 / 148 = 0.961), which a
    # halved 74 could not allow (142.25 / 74 = 1.92, above any peak).
    assert h20["tflops_bf16"] == 148.0 and h20["tflops_fp16"] == 148.0
    assert 142.25 / h20["tflops_bf16"] == pytest.approx(0.961, abs=0.001)
    assert 142.25 / (h20["tflops_bf16"] / 2) > 1.0  # the with-sparsity reading is refuted
    # FP8 and TF32 as printed: 296 = 2 x 148, 74 = 148 / 2 (Hopper's usual ratios)
    assert (h20["tflops_fp8"], h20["tflops_tf32"]) == (296.0, 74.0)


def test_memory_and_links_match_the_sources() -> None:
    h20 = CATS.gpu("H20")
    # nvidia-smi "97871MiB" / 1024 = 95.577 GiB, stored to two decimals like the other rows
    assert h20["memory_gib"] == pytest.approx(97871 / 1024, abs=0.005) == 95.58
    assert h20["memory_bw_tb_per_s"] == 4.0 and h20["tdp_w"] == 400
    # NVLink 900 GB/s counts both directions; the column is per direction: 900 / 2 = 450
    assert h20["intra_node_gb_per_s"] == 450 and h20["generation"] == "hopper"


@pytest.mark.parametrize("typed", ["H20", "h20", "H20 96GB", "hgx-h20", "NVIDIA H20"])
def test_the_names_people_type_find_the_row(typed: str) -> None:
    assert CATS.gpu(typed)["name"] == "H20"


def test_hopper_precisions_run_including_fp8() -> None:
    assert supported_precisions(CATS.gpu("H20")) == [
        "bf16_mixed",
        "fp16_mixed",
        "bf16_pure",
        "fp8_mixed",
        "fp32",
    ]


def test_h20_takes_the_hopper_preset_of_the_h100() -> None:
    # Presets key on generation x size x method x precision, so the H20 reads the H100's hopper cell.
    assert CATS.efficiency_band("hopper", 8e9, "full", "bf16") == CATS.efficiency_band(
        str(CATS.gpu("H20")["generation"]), 8e9, "full", "bf16"
    )


def test_cli_estimate_on_the_h20() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "estimate",
            "--gpu",
            "H20",
            "--model",
            "Llama 3.1 8B",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["peak_tflops"] == 148.0
    # per-GPU rate = dense peak x MFU: 148e12 x mfu
    assert out["per_device_flops_per_s"] == pytest.approx(148e12 * out["mfu"], rel=1e-9)
    assert out["cost_usd"] is None  # no bundled price
    assert out["wall_clock_h"] > 0 and out["fits_vram"] is True


def test_unpriced_h20_is_compared_without_cost_and_left_out_of_the_search() -> None:
    s = Scenario(gpu="H100 SXM")
    assert "H20" not in priced_gpus(s, CATS)
    row = compare_gpus(s, CATS).filter(gpu="H20").row(0, named=True)
    assert row["cost_usd"] is None and NO_PRICE in row["status"]
    assert row["wall_clock_h"] == pytest.approx(estimate(s.updated(gpu="H20"), CATS).wall_clock_h, rel=1e-9)


def test_the_verl_rows_are_no_longer_skipped_for_their_gpu() -> None:
    """VERL-01/02 are predicted; VERL-03/04 only carry verl's length caps (max_response_length 28K), so they
    are skipped for that, never for the GPU."""
    cases = [row for row in load_case_file(default_case_file()) if row["case_id"] in VERL_ROWS]
    assert len(cases) == 4
    for row in validate_cases(cases, CATS)["rows"]:
        if row["case_id"] in ("VERL-01", "VERL-02"):
            assert row["skipped_reason"] is None and row["predicted"] > 0, row
        else:
            assert "length caps" in row["skipped_reason"] and "GPU" not in row["skipped_reason"], row
