"""Which of a target's own model builders a preset is: small tables, checked against the targets' sources.

torchtune v0.6.1 builders (torchtune/models/<family>/_model_builders.py): the base builder's module and name;
the LoRA builder is `lora_<name>`, the QLoRA one `qlora_<name>` where torchtune defines it (Qwen2.5 has none:
its LoRA builder takes `quantize_base=True` instead). Mistral 7B is left out on purpose: torchtune's
`mistral_7b` is v0.1 (32,000-token vocabulary), the preset is v0.3 (32,768).

torchtitan v0.2.2 (torchtitan/models/<name>/__init__.py): model name and flavor.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TorchtuneModel:
    module: str  # e.g. torchtune.models.llama3_1
    name: str  # the base builder, e.g. llama3_1_8b
    has_qlora_builder: bool = True
    tp_plan: str | None = None  # a tensor-parallel plan component, where torchtune ships one


_LLAMA3_TP_PLAN = "torchtune.models.llama3.base_llama_tp_plan"  # recipes/configs/llama3_1/70B_full.yaml


def _tt(module: str, name: str, qlora: bool = True, tp_plan: str | None = None) -> TorchtuneModel:
    return TorchtuneModel(f"torchtune.models.{module}", name, qlora, tp_plan)


TORCHTUNE_MODELS: dict[str, TorchtuneModel] = {
    "Llama 2 7B": _tt("llama2", "llama2_7b"),
    "Llama 2 13B": _tt("llama2", "llama2_13b"),
    "Llama 2 70B": _tt("llama2", "llama2_70b"),
    "Llama 3.1 8B": _tt("llama3_1", "llama3_1_8b", tp_plan=_LLAMA3_TP_PLAN),
    "Llama 3.1 70B": _tt("llama3_1", "llama3_1_70b", tp_plan=_LLAMA3_TP_PLAN),
    "Llama 3.1 405B": _tt("llama3_1", "llama3_1_405b", tp_plan=_LLAMA3_TP_PLAN),
    "Llama 3.2 1B": _tt("llama3_2", "llama3_2_1b", tp_plan=_LLAMA3_TP_PLAN),
    "Llama 3.2 3B": _tt("llama3_2", "llama3_2_3b", tp_plan=_LLAMA3_TP_PLAN),
    "Qwen2.5 0.5B": _tt("qwen2_5", "qwen2_5_0_5b", qlora=False),
    "Qwen2.5 1.5B": _tt("qwen2_5", "qwen2_5_1_5b_base", qlora=False),
    "Qwen2.5 3B": _tt("qwen2_5", "qwen2_5_3b", qlora=False),
    "Qwen2.5 7B": _tt("qwen2_5", "qwen2_5_7b_base", qlora=False),
    "Qwen2.5 14B": _tt("qwen2_5", "qwen2_5_14b_base", qlora=False),
    "Qwen2.5 32B": _tt("qwen2_5", "qwen2_5_32b_base", qlora=False),
    "Qwen2.5 72B": _tt("qwen2_5", "qwen2_5_72b_base", qlora=False),
    "Gemma 2 2B": _tt("gemma2", "gemma2_2b"),
    "Gemma 2 9B": _tt("gemma2", "gemma2_9b"),
    "Gemma 2 27B": _tt("gemma2", "gemma2_27b"),
    "Phi-3 mini 4k": _tt("phi3", "phi3_mini"),
}

TORCHTITAN_MODELS: dict[str, tuple[str, str]] = {
    "Llama 3.1 8B": ("llama3", "8B"),
    "Llama 3.1 70B": ("llama3", "70B"),
    "Llama 3.1 405B": ("llama3", "405B"),
    "Qwen3 8B": ("qwen3", "8B"),
    "Qwen3 30B A3B": ("qwen3", "30B-A3B"),
    "DeepSeek-V3": ("deepseek_v3", "671B"),
}


def preset_of(model: str, has_custom_shape: bool) -> str | None:
    """The preset name a builder table is keyed by; an edited or imported shape is no preset."""
    return None if has_custom_shape or not model else model


@dataclass(frozen=True)
class Positions:
    """What Megatron needs beyond the shape: rotary base, norm epsilon, Llama 3.x rope scaling factor (None: none)."""

    rotary_base: int
    norm_eps: float
    llama3_rope_factor: float | None = None


# From each model's Hugging Face config.json (rope_theta, rms_norm_eps / layer_norm_epsilon, rope_scaling.factor
# where rope_type is "llama3"); Megatron otherwise trains with its defaults, base 10000 and epsilon 1e-5, which
# differ from most of these. DeepSeek-V3 (YaRN, MLA) and the ALiBi/learned-position models are left out on purpose.
_LLAMA31 = Positions(500_000, 1e-5, 8.0)
_LLAMA32 = Positions(500_000, 1e-5, 32.0)
_QWEN = Positions(1_000_000, 1e-6)
_QWEN_LARGE = Positions(1_000_000, 1e-5)  # Qwen2.5 14B, 32B and 72B's config.json: rms_norm_eps 1e-05
MEGATRON_POSITIONS: dict[str, Positions] = {
    "Llama 2 7B": Positions(10_000, 1e-5),
    "Llama 2 13B": Positions(10_000, 1e-5),
    "Llama 2 70B": Positions(10_000, 1e-5),
    "Llama 3.1 8B": _LLAMA31,
    "Llama 3.1 70B": _LLAMA31,
    "Llama 3.1 405B": _LLAMA31,
    "Llama 3.2 1B": _LLAMA32,
    "Llama 3.2 3B": _LLAMA32,
    "Mistral 7B v0.3": Positions(1_000_000, 1e-5),
    "Mixtral 8x7B": Positions(1_000_000, 1e-5),
    "Mixtral 8x22B": Positions(1_000_000, 1e-5),
    **{f"Qwen2.5 {size}": _QWEN for size in ("0.5B", "1.5B", "3B", "7B")},
    **{f"Qwen2.5 {size}": _QWEN_LARGE for size in ("14B", "32B", "72B")},
    "Qwen1.5 MoE A2.7B": _QWEN,
    "Qwen3 8B": _QWEN,
    "Qwen3 30B A3B": _QWEN,
    "Gemma 2 2B": Positions(10_000, 1e-6),
    "Gemma 2 9B": Positions(10_000, 1e-6),
    "Gemma 2 27B": Positions(10_000, 1e-6),
    "Phi-3 mini 4k": Positions(10_000, 1e-5),
    "Phi-3 medium 4k": Positions(10_000, 1e-5),
}
