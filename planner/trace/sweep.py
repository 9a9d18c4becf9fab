"""The trace as an instrument: many small plans traced and set beside the formulas' allocated peak.

Each configuration is a real model's shape (Llama, Mistral, Qwen, Gemma presets of data/models.csv) cut to
`SMALL_LAYERS` layers of width `SMALL_HIDDEN`, keeping its proportions: the ratio of query to key/value heads,
the MLP width over the hidden width, and the vocabulary scaled by the same factors as the layer stack
(width x depth), so the logits weigh against the layers about as they do in the full model. Then every
recipe (full, LoRA; no, full and op-level recompute), three micro-batch x sequence-length points, and for
full training AdamW fused, AdamW foreach and SGD in turn, with gradient accumulation on every fourth plan;
every other LoRA plan in pure bf16 (PEFT's fp32 adapters then keep fp32 copies of their inputs), the others in
mixed precision (autocast: 16-bit copies; planner.trace.step);
then each model's full and LoRA plan at micro-batch 2 x 512 again on 2 and 8 GPUs under FSDP2 (24 plans).
Gemma 2 runs with flash attention off (transformers has no SDPA path for its soft-capped attention).
Each trace takes well under a second. `scripts/trace_sweep.py` writes the table of docs/trace-vs-formula.md;
tests/test_trace_sweep.py holds the formulas to it.
"""

from __future__ import annotations

import itertools
from typing import Any

from planner.catalogue.catalog import Catalogs
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape
from planner.trace.scope import EAGER_ONLY_FAMILIES, check_traceable
from planner.trace.traced import formula_allocated, with_formula_step

SWEEP_MODELS = ("Llama 3.1 8B", "Llama 3.2 1B", "Mistral 7B v0.3", "Qwen2.5 7B", "Qwen3 8B", "Gemma 2 2B")
RECIPES = (
    ("full", "none"),
    ("full", "full"),
    ("full", "selective_op"),
    ("lora", "none"),
    ("lora", "full"),
    ("lora", "selective_op"),
)
BATCH_POINTS = ((1, 256), (2, 512), (4, 128))  # (micro-batch, sequence length)
SHARDED_GPUS = (2, 8)  # FSDP2 FULL_SHARD degrees traced over a fake process group (planner.trace.sharded)
FULL_OPTIMIZERS = (("adamw", False), ("adamw", True), ("sgd", False))  # (optimizer, foreach)
SMALL_LAYERS = 2
SMALL_HIDDEN = 256
SMALL_HEAD_DIM = 32
SMALL_LORA_RANK = 4  # rank 16 at width 4096 is 1/256 of the width; 4 at 256 is as close as a small rank gets
TOLERANCE_FRAC = 0.10  # the formulas' allocated peak within 10 % of the traced one...
REQUIRED_SHARE = 0.90  # ...on at least 90 % of the configurations
# The trace's labels, grouped as the formulas' components are (everything else is a module's activations).
STATE_LABELS = {"weights", "gradients", "master weights", "optimizer states", "optimizer step temporaries"}
LOSS_LABELS = {"logits and loss", "backward temporaries", "inputs"}


def small_shape(full: ModelShape) -> ModelShape:
    """`full` cut to SMALL_LAYERS layers of SMALL_HIDDEN width, in proportion (module docstring)."""
    n_heads = SMALL_HIDDEN // SMALL_HEAD_DIM
    group = max(1, full.n_heads // full.n_kv_heads)
    n_kv_heads = max(1, n_heads // min(group, n_heads))
    width = SMALL_HIDDEN / full.hidden_size
    ffn = max(16, round(full.ffn_hidden * width / 16) * 16)
    vocab = max(64, round(full.vocab_size * width * SMALL_LAYERS / full.n_layers))
    return full.model_copy(
        update={
            "name": f"{full.name} (cut)",
            "hidden_size": SMALL_HIDDEN,
            "n_layers": SMALL_LAYERS,
            "n_heads": n_heads,
            "n_kv_heads": n_kv_heads,
            "head_dim": SMALL_HEAD_DIM,
            "ffn_hidden": ffn,
            "vocab_size": vocab,
        }
    )


def sweep_scenarios(cats: Catalogs) -> list[tuple[str, Scenario]]:
    """Every configuration of the sweep as (id, scenario), in a fixed order."""
    from planner.resolve import model_shape

    plans = []
    grid = itertools.product(SWEEP_MODELS, RECIPES, BATCH_POINTS)
    for index, (name, (method, recompute), (micro_batch, seq_len)) in enumerate(grid):
        shape = model_shape(Scenario(model=name), cats)
        assert shape is not None
        optimizer, foreach = FULL_OPTIMIZERS[index % 3] if method == "full" else ("adamw", False)
        precision = "bf16_pure" if method == "lora" and index % 2 else "bf16_mixed"
        scenario = Scenario(
            model="",
            model_shape=small_shape(shape),
            n_gpus=1,
            method=method,
            recompute=recompute,
            micro_batch=micro_batch,
            seq_len=seq_len,
            grad_accum=2 if index % 4 == 3 else 1,
            optimizer=optimizer,
            optimizer_foreach=foreach,
            precision=precision,
            lora_rank=SMALL_LORA_RANK,
            flash_attention=shape.family not in EAGER_ONLY_FAMILIES,
            hf_eager_code=True,  # the trace runs Hugging Face's modelling code and PEFT: the formulas' eager case
        )
        plans.append((f"{index:03d}", scenario))
    return plans + _sharded_plans(plans, cats)


def _sharded_plans(plans: list[tuple[str, Scenario]], cats: Catalogs) -> list[tuple[str, Scenario]]:
    """Each model's first full and first LoRA plan again under FSDP2 over SHARDED_GPUS fake ranks."""
    out: list[tuple[str, Scenario]] = []
    firsts = [s for _, s in plans if s.recompute == "none" and s.micro_batch == 2]
    for s, n_gpus in itertools.product(firsts, SHARDED_GPUS):
        out.append((f"{len(plans) + len(out):03d}", s.updated(n_gpus=n_gpus, zero_stage=3, grad_accum=1)))
    return out


def sweep_row(case_id: str, s: Scenario, cats: Catalogs) -> dict[str, Any]:
    """One configuration traced, with the traced and the formulas' bytes by component."""
    from planner.trace.run import traced_step

    resolved, out = formula_allocated(s, cats)
    shape = check_traceable(s, resolved.shape)
    phases, labels = with_formula_step(s, out, *traced_step(s, shape, resolved.seq_len))
    phase = max(phases, key=lambda name: phases[name])
    at_peak = labels[phase]
    states = sum(v for k, v in at_peak.items() if k in STATE_LABELS)
    loss = sum(v for k, v in at_peak.items() if k in LOSS_LABELS)
    formula_states = sum(
        out[k]
        for k in ("weights_bytes", "gradients_bytes", "optimizer_bytes", "master_bytes", "prefetch_bytes")
    )
    return {
        "id": case_id,
        "model": shape.name.removesuffix(" (cut)"),
        "n_gpus": s.n_gpus,
        "method": s.method,
        "recompute": s.recompute,
        "micro_batch": s.micro_batch,
        "seq_len": s.seq_len,
        "optimizer": f"{s.optimizer}{' foreach' if s.optimizer_foreach else ''}",
        "precision": s.precision,
        "grad_accum": s.grad_accum,
        "traced_bytes": phases[phase],
        "traced_phase": phase,
        "formula_bytes": out["allocated_peak_bytes"],
        "formula_phase": "optimizer" if out["training_peak_phase"] == 1 else "forward/backward",
        "rel_error": out["allocated_peak_bytes"] / phases[phase] - 1.0,
        "traced_states_bytes": states,
        "traced_loss_bytes": loss,
        "traced_activations_bytes": phases[phase] - states - loss,
        "formula_states_bytes": formula_states,
        "formula_loss_bytes": out["logits_bytes"],
        "formula_activations_bytes": out["activations_bytes"],
    }


def run_sweep(cats: Catalogs, workers: int = 1) -> list[dict[str, Any]]:
    """Every plan traced; with `workers` > 1 the bundled catalogues' sweep is split over that many child
    processes (each imports torch once and traces every `workers`-th plan), for the tests on two cores."""
    if workers <= 1:
        return [sweep_row(case_id, s, cats) for case_id, s in sweep_scenarios(cats)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked torch or process group
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        parts = list(pool.map(_bundled_rows, [(start, workers) for start in range(workers)]))
    return sorted((row for part in parts for row in part), key=lambda row: row["id"])


def _bundled_rows(share: tuple[int, int]) -> list[dict[str, Any]]:
    """Every `step`-th plan from `start`, on the bundled catalogues (a child process of `run_sweep`)."""
    from planner.catalogue.catalog import default_catalogs

    start, step = share
    cats = default_catalogs()
    return [sweep_row(case_id, s, cats) for case_id, s in sweep_scenarios(cats)[start::step]]


def within_share(rows: list[dict[str, Any]]) -> float:
    """Share of configurations whose formula peak is within TOLERANCE_FRAC of the traced one."""
    return sum(abs(r["rel_error"]) <= TOLERANCE_FRAC for r in rows) / len(rows)
