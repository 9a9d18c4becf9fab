"""Which plans the trace can follow, decided before torch is imported; the others are refused by name.

The trace runs the real modeling code of one GPU's model on fake tensors, so it follows what that code
does on one device. It refuses, with the field and the reason, what it would have to guess:
- QLoRA (bitsandbytes' 4-bit kernels have no fake-tensor implementation), fp8 training (Transformer Engine /
  torchao kernels), 8-bit, paged and Adafactor optimizers (their states live outside torch.optim);
- mixture-of-experts models (routing decides at run time which expert gets how many tokens) and families
  whose modeling code is not wired here;
- more than one GPU with sharding, tensor, pipeline, context or expert parallelism (collectives over a fake
  process group are not traced here), offloading, optimizer-in-backward and fused cross-entropy (kernels
  outside the Hugging Face model code).
"""

from __future__ import annotations

import importlib.util

from planner.errors import PlannerError
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape

TRACE_PACKAGES = ("torch", "transformers", "peft")
ENABLE_HINT = "install the optional extra: pip install '.[trace]' (torch CPU build, transformers, peft)"
TRACED_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma2")
TRACED_OPTIMIZERS = ("adamw", "sgd", "sgd_momentum")
TRACED_PRECISIONS = ("bf16_mixed", "fp16_mixed", "bf16_pure", "fp32")


class TraceUnavailable(PlannerError):
    """The trace's packages are not installed (the optional extra)."""


def missing_packages() -> list[str]:
    return [name for name in TRACE_PACKAGES if importlib.util.find_spec(name) is None]


def trace_available() -> bool:
    return not missing_packages()


def require_packages() -> None:
    missing = missing_packages()
    if missing:
        raise TraceUnavailable("trace", f"needs {', '.join(missing)}: {ENABLE_HINT}")


def check_traceable(s: Scenario, shape: ModelShape | None) -> ModelShape:
    """The shape to trace, or a PlannerError naming the input the trace cannot follow."""
    if shape is None:
        raise PlannerError(
            "model", "the trace builds the model from its shape: choose a preset or import a config"
        )
    if shape.n_experts or shape.kv_lora_rank:
        kind = "mixture-of-experts routing" if shape.n_experts else "multi-head latent attention"
        raise PlannerError("model", f"the trace does not follow {kind}", value=shape.name)
    if shape.family not in TRACED_FAMILIES:
        raise PlannerError("model", "no traced modeling code for this family", value=shape.family,
                           allowed=", ".join(TRACED_FAMILIES))  # fmt: skip
    _check_choice("method", s.method, ("full", "lora"), "QLoRA's 4-bit kernels have no fake-tensor version")
    _check_choice("optimizer", s.optimizer, TRACED_OPTIMIZERS, "its states live outside torch.optim")
    _check_choice("precision", s.precision, TRACED_PRECISIONS, "fp8 kernels are not traced")
    if s.n_gpus > 1:
        raise PlannerError("n_gpus", "the trace follows one GPU: sharded and parallel layouts are not traced",
                           value=s.n_gpus, allowed="1")  # fmt: skip
    for name in ("offload_optimizer", "offload_params", "offload_activations", "optimizer_in_backward",
                 "fused_cross_entropy", "dropout"):  # fmt: skip
        if getattr(s, name):
            raise PlannerError(name, "not traced: it runs outside the Hugging Face model code", value=True,
                               allowed="false")  # fmt: skip
    if s.recompute == "selective" and not s.flash_attention:
        raise PlannerError("recompute", "attention-score recompute without flash attention is not traced",
                           value=s.recompute, related=("flash_attention",))  # fmt: skip
    return shape


def _check_choice(field: str, value: str, allowed: tuple[str, ...], why: str) -> None:
    if value not in allowed:
        raise PlannerError(field, f"not traced ({why})", value=value, allowed=", ".join(allowed))
