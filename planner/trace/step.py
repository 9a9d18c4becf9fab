"""One training step on fake tensors under the tracker: forward, backward and the optimizer update.

The step follows the plan's recipe the way the planner's formulas describe it
(`planner.formulas.memory.model_states`): with a master copy (bf16/fp16 mixed precision) the model holds
16-bit weights and gradients, the optimizer holds fp32 master weights and its states, and the update reads an
fp32 copy of the gradients (DeepSpeed's and Megatron-LM's mixed-precision optimizers do exactly this);
without one (pure bf16, fp32) the optimizer steps the model's own parameters. LoRA adapters stay fp32, as
PEFT keeps them, and are stepped directly; under mixed precision the forward and the loss run in
torch.autocast, as the Hugging Face Trainer runs `bf16=True` (accelerate wraps the model's forward in
autocast), so each adapter's matmul keeps a 16-bit cast of its fp32 input; a pure 16-bit plan runs without
it and keeps the fp32 copy (planner/formulas/memory/eager.py). The CPU autocast stands in for the CUDA one
on fake CPU tensors: both run matrix products in 16 bits and the loss in fp32. Optimizer states exist before the traced step (one warm-up update
with zero gradients creates them), as in every step after the first. torch.optim runs its foreach
implementation when the plan says so (the CUDA default when neither `foreach` nor `fused` is given,
torch/optim/optimizer.py `_default_to_fused_or_foreach`), its fused one otherwise (in place, as the fused
optimizers of torchtitan, torchtune and DeepSpeed are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from planner.trace.tracker import StorageTracker

OUTPUT_LABEL = "logits and loss"  # what the top module computes after its last layer: HF's loss
BACKWARD_LABEL = "backward temporaries"
_LAYER_INDEX = re.compile(r"\.layers\.\d+(?=\.|$)")
_ROOTS = ("", "base_model", "base_model.model")  # the causal-LM module (PEFT wraps it twice)
_WRAPPERS = ("base_model.model.", "_checkpoint_wrapped_module.", ".default")


@dataclass(frozen=True)
class StepPlan:
    micro_batch: int
    seq_len: int
    vocab: int
    micro_batches: int  # 1, or 2 when gradients accumulate (the second sees the first's gradients)
    master: bool  # fp32 master weights beside 16-bit model weights
    optimizer: str  # adamw, sgd, sgd_momentum
    foreach: bool
    sharded: bool = (
        False  # FSDP2 parameters (its optimizer phase comes from the formulas: planner.trace.sharded)
    )
    autocast: bool = False  # forward and loss under bf16 autocast (mixed precision of fp32 adapters)


def module_label(name: str) -> str:
    """`base_model.model.model.layers.7.mlp.down_proj.lora_A.default` -> `model.layers.*.mlp.down_proj.lora_A`."""
    if name in _ROOTS:
        return OUTPUT_LABEL
    for wrapper in _WRAPPERS:
        name = name.replace(wrapper, "")
    return _LAYER_INDEX.sub(".layers.*", name) or OUTPUT_LABEL


def label_modules(model: nn.Module, tracker: StorageTracker) -> list[Any]:
    """Forward hooks that label what each module creates (its name, "(rebuilt)" when recompute reruns it)."""
    stack: list[str] = []
    handles = []

    def enter(label: str) -> Any:
        def hook(*_: Any) -> None:
            stack.append(tracker.label)
            rebuilt = tracker.phase == "backward" and label != OUTPUT_LABEL
            tracker.label = f"{label} (rebuilt)" if rebuilt else label

        return hook

    def leave(*_: Any) -> None:
        tracker.label = stack.pop() if stack else tracker.label

    for name, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(enter(module_label(name))))
        handles.append(module.register_forward_hook(leave))
    return handles


def make_optimizer(params: list[nn.Parameter], plan: StepPlan) -> torch.optim.Optimizer:
    """The plan's torch.optim optimizer; the learning rate and momentum change no tensor size. Sharded
    parameters step one by one: the states are the same, and that phase is not read (`sharded`)."""
    foreach, fused = (False, False) if plan.sharded else (plan.foreach, not plan.foreach)
    if plan.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, foreach=foreach, fused=fused)
    momentum = 0.9 if plan.optimizer == "sgd_momentum" else 0.0
    return torch.optim.SGD(params, lr=1e-5, momentum=momentum, foreach=foreach, fused=fused)


def run_step(model: nn.Module, plan: StepPlan, tracker: StorageTracker) -> None:
    """Warm-up (optimizer states), then the traced forward, backward and optimizer phases."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    for p in trainable:
        p.register_post_accumulate_grad_hook(lambda q: tracker.relabel(q.grad, "gradients"))
    tracker.label = "master weights"
    masters = [nn.Parameter(p.detach().float()) for p in trainable] if plan.master else trainable
    optimizer = make_optimizer(masters, plan)
    tracker.label = "optimizer states"
    _update(trainable, masters, optimizer, warm_up=True)
    label_modules(model, tracker)
    for _ in range(plan.micro_batches):
        ids = torch.randint(0, plan.vocab, (plan.micro_batch, plan.seq_len))
        tracker.label = "inputs"
        tracker.start_phase("forward")
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=plan.autocast):
            loss = model(input_ids=ids, labels=ids).loss
        tracker.start_phase("backward")
        tracker.label = BACKWARD_LABEL
        loss.backward()
        del loss, ids
    tracker.start_phase("optimizer")
    tracker.label = "optimizer step temporaries"
    _update(trainable, masters, optimizer, warm_up=False)


def _update(
    trainable: list[nn.Parameter], masters: list[nn.Parameter], optimizer: Any, warm_up: bool
) -> None:
    """One optimizer update; with master weights the fp32 gradient copy is made, stepped and copied back."""
    if warm_up:
        for p in masters:
            p.grad = torch.zeros_like(p)
    elif masters is not trainable:
        for p, m in zip(trainable, masters, strict=True):
            m.grad = p.grad.float() if p.grad is not None else None
    optimizer.step()
    with torch.no_grad():
        if masters is not trainable and not warm_up:
            for p, m in zip(trainable, masters, strict=True):
                p.copy_(m)
    optimizer.zero_grad(set_to_none=True)
    for p in trainable:
        p.grad = None
