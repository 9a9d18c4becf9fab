"""The trace as an instrument: 132 small plans (real models' shapes cut to two layers; 24 of them on 2 and 8 GPUs
under FSDP2) traced against the formulas.

The sweep runs once for the module (two to four minutes on two free cores). What must hold now:
- every plan traces (no refusal, no failure) and the sweep has at least 100 plans;
- where the optimizer step is the peak of both (full training, AdamW, no accumulation), the two agree
  within 1 %: the model-state arithmetic (bf16 weights and gradients, fp32 master, AdamW states, the fp32
  gradient copy, foreach's temporary) is the same in both;
- for LoRA the formulas' model states match the traced ones up to the adapters' gradients, so the
  disagreements sit in activations and logits;
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
    adapters' gradients are about 5 % of the states). In pure bf16 the formulas' recipe gives the adapters 2-byte
    weights and gradients where PEFT keeps them in fp32: up to 9 % below here, where the adapters weigh 30 times
    more against the base than rank 16 on a 4,096-wide model. On one GPU: under FSDP2 the gathered weights are
    created inside the blocks' forward and so counted with the activations."""
    for r in (r for r in rows if r["method"] == "lora" and r["n_gpus"] == 1):
        low = 0.91 if r["precision"] == "bf16_pure" else 0.999
        assert (
            r["traced_states_bytes"] * low <= r["formula_states_bytes"] <= 1.08 * r["traced_states_bytes"]
        ), r


def test_formulas_within_ten_percent_on_ninety_percent_of_plans(rows):
    from planner.trace.sweep import REQUIRED_SHARE, within_share

    assert within_share(rows) >= REQUIRED_SHARE
