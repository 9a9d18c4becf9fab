"""Which plans the trace can follow, decided before torch is imported; the others are refused by name.

The trace runs the real modeling code of one GPU's model on fake tensors, so it follows what that code
does on one device. It refuses, with the field and the reason, what it would have to guess:
- QLoRA (bitsandbytes' 4-bit kernels have no fake-tensor implementation), fp8 training (Transformer Engine /
  torchao kernels), 8-bit, paged and Adafactor optimizers (their states live outside torch.optim);
- mixture-of-experts models (routing decides at run time which expert gets how many tokens) and families
  whose modeling code is not wired here;
- tensor, pipeline, context or expert parallelism, ZeRO-1/2 and hybrid sharding (several GPUs are traced only
  as FSDP FULL_SHARD over a fake process group, `planner.trace.sharded`), offloading, optimizer-in-backward
  and fused cross-entropy (kernels outside the Hugging Face model code).
"""

from __future__ import annotations

import importlib.util

from planner.errors import PlannerError
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape

TRACE_PACKAGES = ("torch", "transformers", "peft")
TRACE_ENABLE_HINT = "install the optional extra: pip install '.[trace]' (torch CPU build, transformers, peft)"
TRACED_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma2")
# transformers refuses SDPA for Gemma 2 (attention logit soft-capping): eager attention only on fake CPU tensors
EAGER_ONLY_FAMILIES = ("gemma2",)
# A rank's shard is 1/n of each block; past 1,024 ranks a shard of a small test model is a few elements and
# nothing is learnt that 1,024 does not show.
MAX_TRACED_GPUS = 1024
TRACED_OPTIMIZERS = ("adamw", "sgd", "sgd_momentum")
TRACED_PRECISIONS = ("bf16_mixed", "fp16_mixed", "bf16_pure", "fp32")


class TraceUnavailable(PlannerError):
    """The trace's packages are not installed (the optional extra)."""


def missing_packages() -> list[str]:
    """The trace's packages Python cannot find (without importing them: torch takes seconds to import)."""
    return [name for name in TRACE_PACKAGES if not _findable(name)]


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a finder that refuses the name, or a module set to None
        return False


def trace_available() -> bool:
    return not missing_packages()


def require_packages() -> None:
    missing = missing_packages()
    if missing:
        raise TraceUnavailable("trace", f"needs {', '.join(missing)}: {TRACE_ENABLE_HINT}")


def trace_refusal(s: Scenario, shape: ModelShape | None) -> PlannerError | None:
    """Why the trace cannot follow this plan (the input and the reason); None when it can."""
    try:
        check_traceable(s, shape)
    except PlannerError as err:
        return err
    return None


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
    if shape.family in EAGER_ONLY_FAMILIES and s.flash_attention:
        raise PlannerError("flash_attention", "Gemma 2's soft-capped attention has no SDPA path in transformers "
                           "(its flash kernel needs CUDA): trace it with flash attention off", value=True,
                           allowed="false", related=("model",))  # fmt: skip
    _check_choice("method", s.method, ("full", "lora"), "QLoRA's 4-bit kernels have no fake-tensor version")
    _check_choice("optimizer", s.optimizer, TRACED_OPTIMIZERS, "its states live outside torch.optim")
    _check_choice("precision", s.precision, TRACED_PRECISIONS, "fp8 kernels are not traced")
    _check_layout(s)
    for name in ("offload_optimizer", "offload_params", "offload_activations", "optimizer_in_backward",
                 "fused_cross_entropy", "dropout"):  # fmt: skip
        if getattr(s, name):
            raise PlannerError(name, "not traced: it runs outside the Hugging Face model code", value=True,
                               allowed="false")  # fmt: skip
    if s.recompute == "selective" and not s.flash_attention:
        raise PlannerError("recompute", "attention-score recompute without flash attention is not traced",
                           value=s.recompute, related=("flash_attention",))  # fmt: skip
    return shape


def _check_layout(s: Scenario) -> None:
    """One GPU, or FSDP FULL_SHARD (ZeRO-3) over data parallelism only (planner.trace.sharded)."""
    for name in ("tp", "pp", "cp"):
        if getattr(s, name) > 1:
            raise PlannerError(name, "tensor, pipeline and context parallelism are not traced", value=getattr(s, name),
                               allowed="1")  # fmt: skip
    if s.n_gpus > 1 and (s.zero_stage != 3 or s.hybrid_shard):
        raise PlannerError("zero_stage", "on several GPUs only FSDP FULL_SHARD (ZeRO-3) is traced", value=s.zero_stage,
                           allowed="3 without hybrid sharding, or 1 GPU", related=("n_gpus",))  # fmt: skip
    if s.n_gpus > MAX_TRACED_GPUS:
        raise PlannerError("n_gpus", "too many ranks for a fake process group", value=s.n_gpus,
                           allowed=f"1-{MAX_TRACED_GPUS}")  # fmt: skip


def _check_choice(field: str, value: str, allowed: tuple[str, ...], why: str) -> None:
    if value not in allowed:
        raise PlannerError(field, f"not traced ({why})", value=value, allowed=", ".join(allowed))
