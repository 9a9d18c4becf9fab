"""The three memory statistics and the fit verdict with its measured error band."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.memory_band import band_file, memory_band, read_band
from planner.estimate import estimate
from planner.formulas.memory.verdict import (
    DOES_NOT_FIT,
    FITS,
    MIN_REGIME_ROWS,
    TIGHT,
    MemoryBand,
    fit_verdict,
    peak_high_bytes,
)
from planner.inputs.scenario import Scenario

CATS = default_catalogs()
GIB = 2.0**30


def test_verdict_states_on_a_toy_band():
    # band 1.25: an 80 GiB GPU holds a 60 GiB estimate with margin (75 high), 70 GiB only without (87.5 high)
    band = MemoryBand(ratio_high={"all": 1.25, "full": 1.25}, n_rows={"all": 36, "full": 24})
    estimates = [60 * GIB, 70 * GIB, 85 * GIB]
    high = peak_high_bytes(np.array(estimates), 0.0, band)
    assert list(high / GIB) == pytest.approx([75.0, 87.5, 106.25])
    assert list(fit_verdict(np.array(estimates), high, 80 * GIB)) == [
        FITS,
        TIGHT,
        DOES_NOT_FIT,
    ]
    # a colocated engine without room makes any plan "does not fit"
    assert fit_verdict(60 * GIB, 75 * GIB, 80 * GIB, room_for_rest=0.0) == DOES_NOT_FIT
    assert math.isnan(fit_verdict(float("nan"), float("nan"), 80 * GIB))


def test_a_regime_with_few_rows_falls_back_to_the_pooled_band():
    band = MemoryBand(
        ratio_high={"all": 1.2, "adapters": 1.7}, n_rows={"all": 36, "adapters": MIN_REGIME_ROWS - 1}
    )
    assert band.high("adapters") == 1.2
    enough = MemoryBand(
        ratio_high={"all": 1.2, "adapters": 1.7}, n_rows={"all": 36, "adapters": MIN_REGIME_ROWS}
    )
    assert enough.high("adapters") == 1.7
    below_one = MemoryBand(ratio_high={"all": 0.9}, n_rows={"all": 36})
    assert below_one.high("full") == 1.0  # the high end never lies under the estimate


def test_the_shipped_band_comes_from_the_script_with_its_provenance():
    band = memory_band()
    assert "scripts/memory_scores.py" in band.source and "refit source" in band.source
    # the pooled 90th percentile of measured / predicted on data/calibration.csv's memory rows
    assert 1.05 < band.high("full") < 1.4


def test_a_bad_band_file_names_row_and_column(tmp_path: Path):
    bad = tmp_path / "band.csv"
    bad.write_text("regime,n_rows,ratio_low,ratio_high,source,as_of\nall,36,0.9,7.5,script,2026-01-01\n")
    with pytest.raises(ValueError, match="row 2, column ratio_high"):
        read_band(bad)
    assert band_file().name == "memory_error_band.csv"


def test_estimate_reports_three_statistics_and_the_verdict():
    result = estimate(
        Scenario(model="Llama 3.1 8B", method="full", gpu="H100 SXM", n_gpus=8, zero_stage=3), CATS
    )
    assert result.peak_allocated_gib < result.peak_reserved_gib < result.device_total_gib
    assert result.device_total_gib == result.peak_gib_per_device
    assert result.peak_gib_high == pytest.approx(result.device_total_gib * memory_band().high("full"))
    assert result.fit_verdict == "fits"
    flat = result.to_flat()
    assert {
        "peak_allocated_gib",
        "peak_reserved_gib",
        "device_total_gib",
        "peak_gib_high",
        "fit_verdict",
    } <= set(flat)


# QLoRA Llama 3.1 8B on one RTX 4090 (23.99 GiB): device totals 15.0, 21.6 and 34.8 GiB at 1k, 2k and 4k tokens;
# with the adapters' band (x1.27) the 2k plan's high end, 27.4 GiB, is over the card: tight.
@pytest.mark.parametrize(
    ("seq_len", "verdict"),
    [(1024, "fits"), (2048, "tight — may run out of memory"), (4096, "does not fit")],
)
def test_qlora_8b_on_a_4090(seq_len, verdict):
    scenario = Scenario(model="Llama 3.1 8B", method="qlora", gpu="RTX 4090", n_gpus=1, seq_len=seq_len)
    assert estimate(scenario, CATS).fit_verdict == verdict
