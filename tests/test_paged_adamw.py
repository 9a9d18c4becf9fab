"""Paged 32-bit AdamW (bitsandbytes PagedAdamW, the QLoRA paper's paged optimizer): fp32 states paged to the host."""

from __future__ import annotations

import pytest

from planner.cases.case_words import read_optimizer
from planner.catalogue.catalog import default_catalogs
from planner.estimate import estimate
from planner.formulas.memory.recipes import PAGED_OPTIMIZERS, recipe_bytes_per_param
from planner.inputs.scenario import Scenario

CATS = default_catalogs()


def test_paged_32bit_adamw_keeps_two_fp32_states_per_parameter():
    # bitsandbytes' 32-bit optimizers keep fp32 moments whatever the weights' precision: 2 × 4 B
    assert recipe_bytes_per_param("qlora", "paged_adamw", "bf16_pure")["optimizer"] == 8.0
    assert recipe_bytes_per_param("qlora", "paged_adamw_8bit", "bf16_pure")["optimizer"] == pytest.approx(
        2.0039, 1e-3
    )
    assert "paged_adamw" in PAGED_OPTIMIZERS


@pytest.mark.parametrize(
    ("cell", "optimizer"),
    [
        ("paged AdamW (32-bit paged optimizer)", "paged_adamw"),
        ("PagedAdamW8bit (bitsandbytes)", "paged_adamw_8bit"),
        ("AdamW (torch)", "adamw"),
    ],
)
def test_case_cells_name_the_paged_optimizers(cell, optimizer):
    assert read_optimizer(cell) == optimizer


def test_a_full_fine_tune_that_runs_short_pages_its_states_instead_of_failing():
    # Llama 3.1 8B full fine-tune on one H100 (80 GiB): 8 B/param of fp32 moments = 59.8 GiB; with the weights,
    # gradients and master copy the plan is over the card, so the paged optimizer moves the shortfall to the host
    plan = Scenario(
        model="Llama 3.1 8B", method="full", gpu="H100 SXM", n_gpus=1, seq_len=1024, micro_batch=1
    )
    resident = estimate(plan, CATS)
    paged = estimate(plan.updated(optimizer="paged_adamw"), CATS)
    assert resident.fits_vram is False
    assert paged.host_offload_gib > 0
    assert paged.optimizer_gib + paged.host_offload_gib == pytest.approx(resident.optimizer_gib, rel=1e-6)
