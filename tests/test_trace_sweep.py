"""The trace as an instrument: 132 small plans (real models' shapes cut to two layers; 24 of them on 2 and 8 GPUs
under FSDP2) traced against the formulas.

The sweep runs once for the module (two to four minutes on two free cores). What must hold now:
- every plan traces (no refusal, no failure) and the sweep has at least 100 plans;
- where the optimizer step is the peak of both (full training, AdamW, no accumulation), the two agree
  within 1 %: the model-state arithmetic (bf16 weights and gradients, fp32 master, AdamW states, the fp32
  gradient copy, foreach's temporary) is the same in both;
- for LoRA the formulas' model states match the traced ones up to the adapters' gradients (PEFT's fp32
  adapters in pure bf16 as in mixed precision), so the disagreements sit in activations and logits;
- the target: the formulas' allocated peak within 10 % of the traced one on at least 90 % of the plans
  (docs/trace-vs-formula.md lists the plans outside it and what explains each).
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.catalogue.catalog import default_catalogs
from tests.trace_extra import require_trace_extra

# one process, the test's own: a pool of spawned workers was once ended abruptly late in a full CI run (the
# same sweep passed alone), and one process costs about a minute more
SWEEP_WORKERS = 1


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    require_trace_extra()
    from planner.trace.sweep import run_sweep

    return run_sweep(default_catalogs(), workers=SWEEP_WORKERS)


def test_every_plan_of_the_sweep_traces(rows):
    assert len(rows) >= 100
    assert {r["n_gpus"] for r in rows} == {1, 2, 8}
    assert {r["method"] for r in rows} == {"full", "lora"}
    assert {r["recompute"] for r in rows} == {"none", "full", "selective_op"}
    assert len({r["model"] for r in rows}) == 6
    assert all(r["traced_bytes"] > 0 for r in rows)


def test_optimizer_phase_peaks_agree_to_one_percent(rows):
    """Without accumulation: with it the formulas keep fp32 gradients (FSDP2, Megatron-LM and DeepSpeed
    accumulate in fp32) and the traced plain loop its 16-bit `.grad`, 2 B per parameter apart."""
    both = [
        r
        for r in rows
        if r["traced_phase"] == "optimizer"
        and r["formula_phase"] == "optimizer"
        and r["grad_accum"] == 1
        and r["n_gpus"] == 1  # a sharded plan's optimizer phase is the formulas' own (planner.trace.sharded)
    ]
    assert len(both) >= 10
    worst = max(both, key=lambda r: abs(r["rel_error"]))
    assert abs(worst["rel_error"]) <= 0.01, worst


def test_lora_model_states_agree(rows):
    """LoRA's states hardly change through the step (frozen base, small adapters). The formulas charge the
    adapters' gradients for the whole backward, the trace has made only part of them at its peak: under mixed
    precision the formulas' states are at least the traced ones and at most 8 % above (at rank 4 on width 256 the
    adapters' gradients are about 5 % of the states). In pure bf16 too: the formulas give PEFT's adapters fp32
    weights, gradients and AdamW states as PEFT makes them (planner.formulas.memory.recipes), where a 2-byte
    recipe fell up to 9 % below here (the adapters weigh 30 times more against the base than rank 16 on a
    4,096-wide model). With gradient accumulation the second micro-batch's backward holds every adapter's
    `.grad` from the first, and autograd makes each fresh gradient before adding it in: one adapter matrix's
    gradient the formulas do not charge, under 0.5 % of the states here. On one GPU: under FSDP2 the gathered
    weights are created inside the blocks' forward and so counted with the activations."""
    lora = [r for r in rows if r["method"] == "lora" and r["n_gpus"] == 1]
    assert {"bf16_pure", "bf16_mixed"} <= {r["precision"] for r in lora}
    for r in lora:
        low = 0.995 if r["grad_accum"] > 1 else 0.999
        assert (
            low * r["traced_states_bytes"] <= r["formula_states_bytes"] <= 1.08 * r["traced_states_bytes"]
        ), r


def test_formulas_within_ten_percent_on_ninety_percent_of_plans(rows):
    from planner.trace.sweep import REQUIRED_SHARE, within_share

    assert within_share(rows) >= REQUIRED_SHARE
