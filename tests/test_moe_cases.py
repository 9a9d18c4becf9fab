"""Mixture-of-experts case rows: the expert layout from the model catalogue, the
expert-parallel degree from the notes, and the published MoE / interleaved / LoRA rows predicted, not skipped.

Before this, every row whose active parameters differ from its total was skipped ("the expert layout is not in
the case columns"), so no published MoE throughput could be scored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cases.case_file import CASE_FILE_COLUMNS, load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import case_scenario
from planner.cases.case_words import expert_parallel_degree
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import default_catalogs

CATS = default_catalogs()
CASES = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"

# NeMo Automodel performance summary (commit 01926a5c), Qwen3 MoE 30B on 8 H100: GBS 512, MBS 4, GA 16,
# seq 4096, TP 1, PP 1, EP 8, FSDP 8 -> 12,040 tokens/s/GPU (row AM-1 of data/calibration.csv).
QWEN3_ROW = {
    "case_id": "toy-qwen3-moe",
    "category": "throughput",
    "model": "Qwen3 30B A3B",
    "params_b": "30.53",
    "active_params_b": "3.3",
    "n_layers": "48",
    "hidden": "2048",
    "n_heads": "32",
    "n_kv_heads": "4",
    "ffn_hidden": "768",
    "vocab": "151936",
    "seq_len": "4096",
    "micro_batch": "4",
    "global_batch": "512",
    "grad_accum": "16",
    "method": "full",
    "precision": "bf16",
    "zero_stage_or_fsdp": "FSDP2 (8-way)",
    "tp": "1",
    "pp": "1",
    "dp": "8",
    "cp": "1",
    "gpu": "H100 80GB SXM",
    "n_gpus": "8",
    "measured_value": "12040",
    "measured_unit": "tokens_per_s_per_gpu",
    "notes": "Expert parallel degree 8 (table column EP).",
}


def scenario_of(row):
    return case_scenario({**{column: "" for column in CASE_FILE_COLUMNS}, **row}, CATS, GpuMatcher(CATS))


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ("Expert parallel degree 8 (table column EP).", 8),
        ("expert-parallel size 64, VP 8", 64),
        ("Expert parallelism 4", 4),
        ("Virtual pipeline size 6. Tensor parallel 8.", None),  # other degrees are not the expert degree
        ("", None),
    ],
)
def test_expert_parallel_degree_read_from_notes(notes, expected):
    assert expert_parallel_degree(notes) == expected


def test_moe_row_takes_the_catalogue_expert_layout_and_the_stated_ep():
    made = scenario_of(QWEN3_ROW)
    assert not isinstance(made, str), made
    scenario, facts = made
    shape = scenario.model_shape
    # models.csv, Qwen3 30B A3B (Hub config.json): 128 routed experts of width 768, top-8, head_dim 128
    assert (shape.n_experts, shape.n_experts_active, shape.moe_ffn_hidden, shape.head_dim) == (
        128,
        8,
        768,
        128,
    )
    assert scenario.ep == 8
    assert any("expert layout from the model catalogue" in line for line in facts.assumptions)


def test_moe_row_without_stated_ep_runs_at_ep_1():
    scenario, _ = scenario_of({**QWEN3_ROW, "notes": ""})
    assert scenario.ep == 1


@pytest.mark.parametrize(
    ("change", "reason_words"),
    [
        ({"model": "Some private MoE"}, ("'Some private MoE'", "not in the model catalogue")),
        ({"model": "Llama 3.1 8B"}, ("has no experts",)),
        # ep must divide the 128 routed experts and dp 8: the Scenario's own rule refuses 16
        ({"notes": "Expert parallel degree 16"}, ("inconsistent configuration",)),
    ],
)
def test_moe_rows_that_cannot_be_predicted_say_why(change, reason_words):
    reason = scenario_of({**QWEN3_ROW, **change})
    assert isinstance(reason, str)
    for word in reason_words:
        assert word in reason


@pytest.mark.skipif(not CASES.exists(), reason="data/calibration.csv is not beside this checkout")
def test_new_regime_rows_are_predicted():
    """The Automodel MoE / LoRA rows and the NeMo interleaved / LoRA rows all get a prediction (none skipped)."""
    ids = {"AM-1", "AM-2", "AM-3", "AM-4", "NM-10", "NM-11", "NM-12"}
    rows = [row for row in load_case_file(CASES) if row["case_id"] in ids]
    assert {row["case_id"] for row in rows} == ids
    report = validate_cases(rows, CATS)
    for result in report["rows"]:
        assert result["skipped_reason"] in (None, ""), result
        assert result["rel_error"] is not None
