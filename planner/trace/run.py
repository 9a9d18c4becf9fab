"""The torch side of the trace: fake tensors, the model, the step; imported only when a trace runs."""

from __future__ import annotations

import warnings

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape
from planner.trace.build import add_lora, build_model, enable_recompute, to_fake
from planner.trace.step import StepPlan, run_step
from planner.trace.tracker import StorageTracker

# precision -> (model weight dtype, fp32 master copy): planner.formulas.memory.recipes' table. fp16 mixed
# precision holds the same bytes as bf16 (loss scaling costs no memory), so it is traced in bf16.
_RECIPES = {
    "bf16_mixed": (torch.bfloat16, True),
    "fp16_mixed": (torch.bfloat16, True),
    "bf16_pure": (torch.bfloat16, False),
    "fp32": (torch.float32, False),
}
PHASES = ("forward", "backward", "optimizer")
Traced = tuple[dict[str, int], dict[str, dict[str, int]]]


def traced_step(s: Scenario, shape: ModelShape, seq_len: int) -> Traced:
    """Peak bytes of each phase (forward, backward, optimizer) and each label's bytes at that peak."""
    dtype, master = _RECIPES[s.precision]
    plan = StepPlan(
        micro_batch=s.micro_batch,
        seq_len=seq_len,
        vocab=shape.vocab_size,
        micro_batches=2 if s.grad_accum > 1 else 1,
        master=master and s.method == "full",
        optimizer=s.optimizer,
        foreach=s.optimizer_foreach,
        sharded=s.n_gpus > 1,
        autocast=master and s.method == "lora",  # fp32 adapters, 16-bit base (planner.trace.step)
    )
    with warnings.catch_warnings():  # transformers' deprecation notes: the library never prints
        warnings.simplefilter("ignore")
        model = build_model(shape, s.flash_attention, dtype)
        if s.method == "lora":
            model = add_lora(model, s.lora_rank, s.lora_targets == "all_linear", s.lora_dropout)
        enable_recompute(model, s.recompute)
        return _trace(model, plan, s.n_gpus)


def _trace(model: torch.nn.Module, plan: StepPlan, world_size: int) -> Traced:
    tracker = StorageTracker()
    mode = FakeTensorMode()
    to_fake(model, mode)
    if plan.sharded:
        from planner.trace.sharded import shard

        shard(model, world_size)
    with mode:
        for tensor in [*model.parameters(), *model.buffers()]:
            tracker.count(tensor, "weights")
        with tracker:
            run_step(model, plan, tracker)
    phases = {name: tracker.phase_peak_bytes[name] for name in PHASES}
    labels = {name: tracker.phase_peak_labels[name] for name in PHASES}
    return phases, labels
