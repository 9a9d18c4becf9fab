"""torch.optim's foreach step (memory tails): one temporary the size of the updated parameters.

Source of the mechanism: torch/optim/optimizer.py `_foreach_doc` — "the foreach implementation uses ~ sizeof(params)
more peak memory than the for-loop version due to the intermediates being a tensorlist vs just one tensor", and
foreach is what torch picks on CUDA when neither `foreach` nor `fused` is set (Adam's `_multi_tensor_adam` builds
`torch._foreach_sqrt(exp_avg_sqs)` for every parameter at once).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.cases.case_file import load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import case_scenario
from planner.cases.case_words import optimizer_foreach
from planner.cases.validate import checked_rows
from planner.catalogue.catalog import default_catalogs
from planner.formulas.memory.peak import memory_per_gpu
from tests.test_memory import llama

N_PARAMS = 8.03e9  # Llama 3.1 8B, as `llama()` builds it


def test_foreach_adds_the_fp32_master_size_under_mixed_precision():
    # bf16 mixed AdamW on one GPU: the step updates the fp32 master copy, so the temporary is
    # 8.03e9 × 4 B = 32.12e9 B on top of the 4 B fp32 gradient copy the master update reads (also 32.12e9 B).
    fused = memory_per_gpu(llama(seq_len=2048))
    foreach = memory_per_gpu(llama(seq_len=2048, optimizer_foreach=1))
    assert float(fused.optimizer_step_temp_bytes) == pytest.approx(N_PARAMS * 4.0, rel=1e-12)
    assert float(foreach.optimizer_step_temp_bytes) == pytest.approx(N_PARAMS * 8.0, rel=1e-12)
    # The optimizer step is the peak here (weights 2 + grads 2 + Adam 8 + master 4 + temps 8 = 24 B/param),
    # so the allocated peak grows by exactly the temporary.
    grown = float(foreach.allocated_peak_bytes - fused.allocated_peak_bytes)
    assert grown == pytest.approx(N_PARAMS * 4.0, rel=1e-12)
    assert float(foreach.peak_phase) == 1.0


def test_foreach_temporary_is_the_weights_size_in_pure_fp32():
    # fp32 AdamW keeps no master copy: the step updates the 4 B weights themselves, 8.03e9 × 4 B = 32.12e9 B,
    # where the fused step needs no temporary at all.
    fused = memory_per_gpu(llama(seq_len=2048, precision="fp32"))
    foreach = memory_per_gpu(llama(seq_len=2048, precision="fp32", optimizer_foreach=1))
    assert float(fused.optimizer_step_temp_bytes) == 0.0
    assert float(foreach.optimizer_step_temp_bytes) == pytest.approx(N_PARAMS * 4.0, rel=1e-12)


def test_foreach_temporary_follows_the_optimizer_shard_and_offload():
    # ZeRO-1 over 8 ranks: each rank steps its 1/8 of the master copy, 8.03e9 × 4 / 8 = 4.015e9 B of temporary
    # beside the 4.015e9 B gradient copy; with the optimizer offloaded the step runs on the CPU: nothing on the GPU.
    sharded = memory_per_gpu(llama(seq_len=2048, dp=8, zero_stage=1, optimizer_foreach=1))
    assert float(sharded.optimizer_step_temp_bytes) == pytest.approx(N_PARAMS * 8.0 / 8, rel=1e-12)
    offloaded = llama(seq_len=2048, dp=8, zero_stage=1, offload_optimizer=1)
    assert float(memory_per_gpu(replace(offloaded, optimizer_foreach=1.0)).optimizer_step_temp_bytes) == 0.0


def test_lora_foreach_temporary_is_the_adapters_only():
    # LoRA steps only the adapters: the temporary is n_adapter_params × 4 B (fp32 master), a few tens of MB.
    base = llama(method="lora", seq_len=2048)
    grown = memory_per_gpu(replace(base, optimizer_foreach=1.0)).optimizer_step_temp_bytes
    assert float(grown - memory_per_gpu(base).optimizer_step_temp_bytes) == pytest.approx(
        base.n_adapter_params * 4.0, rel=1e-12
    )


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("AdamW (torch)", True),
        ("AdamW (torch; TrainingArguments default, inferred)", True),
        ("AdamW", False),  # no framework named: the fused default of torchtitan/torchtune stands
        ("AdamW (fused, CPU-offloaded)", False),
        ("Adam (DeepSpeed FusedAdam; inferred)", False),
        ("PagedAdamW8bit (bitsandbytes) + optimizer_in_bwd", False),
    ],
)
def test_case_rows_read_a_plain_torch_optimizer_as_foreach(cell, expected):
    assert optimizer_foreach(cell) is expected


def test_peft_full_fine_tune_row_is_read_as_foreach():
    # PEFT-1 (PEFT README, T0_3B full fine-tune, "AdamW (torch)"): the example script builds
    # torch.optim.AdamW(model.parameters(), lr=lr) with no implementation named, so the row runs foreach.
    cats = default_catalogs()
    rows = {row["case_id"]: row for row in load_case_file("data/calibration.csv")}
    made = case_scenario(dict(checked_rows([("PEFT-1", rows["PEFT-1"])])[0]), cats, GpuMatcher(cats))
    assert not isinstance(made, str)
    assert made[0].optimizer_foreach is True


def test_optimizer_foreach_travels_in_share_links_and_cli_and_reaches_the_estimate():
    from planner import Scenario
    from planner.cli.cli_args import flag_name
    from planner.estimate import estimate
    from planner.inputs.query import scenario_from_query, scenario_to_query

    chosen = Scenario(optimizer_foreach=True)
    back, notices = scenario_from_query(scenario_to_query(chosen))
    assert (back.optimizer_foreach, notices) == (True, [])
    assert flag_name("optimizer_foreach") == "--optimizer-foreach"
    # The default plan (8B full bf16 mixed AdamW, FSDP over 8 GPUs) steps its 1/8 shard of the fp32 master
    # copy: the temporary is 4 B × parameters / 8, on top of the fp32 gradient copy of the same size.
    cats = default_catalogs()
    off, on = estimate(Scenario(), cats), estimate(chosen, cats)
    assert on.optimizer_step_temp_gib == pytest.approx(2 * off.optimizer_step_temp_gib, rel=1e-9)


def test_app_checkbox_sets_optimizer_foreach(app):
    from ui.state import SCENARIO_KEY
    from ui.training_setup import OPEN_KEY

    app.session_state[OPEN_KEY] = True  # the sidebar's training setup draws its inputs only while open
    app.switch_page("app_pages/compute.py").run()
    app.checkbox(key="w.optimizer_foreach").check().run()
    assert not app.exception
    assert app.session_state[SCENARIO_KEY].optimizer_foreach is True
