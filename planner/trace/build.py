"""The traced model: a Hugging Face model class built from the planner's model shape, on fake tensors.

Which class: the family's own modeling code in transformers (Llama, Mistral, Qwen2, Qwen3, Gemma 2), so
the trace sees each family's real operators (Gemma 2's four norms per layer, Qwen2's query/key/value biases).
Attention runs through `scaled_dot_product_attention` as transformers calls it on a GPU (`CAUSAL_SDPA`); on
fake CPU tensors PyTorch picks its CPU flash kernel, which, like the CUDA flash kernel a GPU run picks, saves
the output and the log-sum-exp rows and never an s x s score matrix. With the planner's flash-attention switch off the eager path is traced, which
keeps the softmax scores (what a GPU run without a fused kernel keeps).

LoRA comes from PEFT (`get_peft_model`), whose adapters stay fp32 by default (`autocast_adapter_dtype`);
recompute from transformers' `gradient_checkpointing_enable` (non-reentrant `torch.utils.checkpoint`),
with torchtitan's op-level policy for "selective_op" (`op_policy`).
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import Any

import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

from planner.model.shape import ModelShape

# planner family -> transformers model_type with its own modeling code
FAMILY_MODEL_TYPES = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma2": "gemma2",
}
ATTENTION_MATRICES = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_MATRICES = ("gate_proj", "up_proj", "down_proj")
# LoRA scaling alpha: it changes no tensor size, so the planner has no input for it; 2 x rank is PEFT's usual.
LORA_ALPHA_PER_RANK = 2
# The dropout probability when the plan says the adapters run dropout: PEFT's examples use 0.1.
LORA_DROPOUT = 0.1


# What transformers' SDPA path does on a GPU for an unpadded causal batch: no mask tensor (`is_causal=True`) and
# grouped-query attention inside the kernel (`enable_gqa`), so neither a b x s x s mask nor repeated key/value
# heads exist (transformers/integrations/sdpa_attention.py `use_gqa_in_sdpa` and masking_utils.py
# `_ignore_causal_mask_sdpa`). On fake tensors transformers cannot read the padding mask's values, so it would
# build the mask and repeat the heads; this attention function, registered under its own name with a mask
# function that builds nothing, makes the choice the GPU run makes.
CAUSAL_SDPA = "planner_causal_sdpa"


def _causal_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any) -> Any:
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, dropout_p=kwargs.get("dropout", 0.0), scale=kwargs.get("scaling"), is_causal=True,
        enable_gqa=query.shape[1] != key.shape[1],
    )  # fmt: skip
    return out.transpose(1, 2).contiguous(), None


def _no_mask(*args: Any, **kwargs: Any) -> None:
    return None


def _register_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface

    AttentionInterface.register(CAUSAL_SDPA, _causal_sdpa)
    AttentionMaskInterface.register(CAUSAL_SDPA, _no_mask)


def hf_config(shape: ModelShape, flash_attention: bool) -> Any:
    """The transformers config of `shape` (its family's class), with SDPA or eager attention."""
    from transformers import CONFIG_MAPPING

    model_type = FAMILY_MODEL_TYPES[shape.family]
    fields: dict[str, Any] = {
        "vocab_size": shape.vocab_size,
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.ffn_hidden,
        "num_hidden_layers": shape.n_layers,
        "num_attention_heads": shape.n_heads,
        "num_key_value_heads": shape.n_kv_heads,
        "head_dim": shape.head_dim,
        "tie_word_embeddings": shape.tied_embeddings,
        "max_position_embeddings": shape.context_len,
        "use_cache": False,
    }
    if model_type == "llama":
        fields |= {"attention_bias": shape.attn_bias, "mlp_bias": shape.mlp_bias}
    config = CONFIG_MAPPING[model_type](**fields)
    _register_attention()
    config._attn_implementation = CAUSAL_SDPA if flash_attention else "eager"
    return config


def build_model(shape: ModelShape, flash_attention: bool, dtype: torch.dtype) -> nn.Module:
    """The model with its weights in `dtype` on the meta device (shapes only; `to_fake` gives it storage)."""
    from transformers import AutoModelForCausalLM

    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(hf_config(shape, flash_attention))
    finally:
        torch.set_default_dtype(previous)
    return model.train()


def to_fake(model: nn.Module, mode: FakeTensorMode) -> None:
    """Replace every meta parameter and buffer by a fake CPU tensor of its shape and dtype (tied ones stay
    tied). Built on meta first because a module holding fake tensors cannot be converted (`Module.to`
    swaps fake parameters, which the fake mode's weak references forbid), and PEFT converts its adapters."""
    done: dict[int, torch.Tensor] = {}

    def fake(tensor: torch.Tensor) -> torch.Tensor:
        if id(tensor) not in done:
            with mode:
                data = torch.empty(tensor.shape, dtype=tensor.dtype, device="cpu")
            if isinstance(tensor, nn.Parameter):
                data = nn.Parameter(data, requires_grad=tensor.requires_grad)
            done[id(tensor)] = data
        return done[id(tensor)]

    for module in model.modules():
        groups: tuple[dict[str, Any], ...] = (module._parameters, module._buffers)
        for group in groups:
            for name, tensor in group.items():
                if tensor is not None:
                    group[name] = fake(tensor)


def add_lora(model: nn.Module, rank: int, all_linear: bool, dropout: bool) -> nn.Module:
    """PEFT LoRA adapters on the attention matrices (and the MLP's with `all_linear`); the base frozen."""
    from peft import LoraConfig, get_peft_model

    targets = list(ATTENTION_MATRICES) + (list(MLP_MATRICES) if all_linear else [])
    config = LoraConfig(
        r=rank,
        lora_alpha=LORA_ALPHA_PER_RANK * rank,
        lora_dropout=LORA_DROPOUT if dropout else 0.0,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


# What torchtitan's op-level selective checkpointing saves instead of recomputing: matrix products and the
# attention kernels' outputs (torchtitan/distributed/activation_checkpoint.py, `_save_list` and the
# `_get_custom_policy` it applies per transformer block); of the matrix products only every other one, the
# rest is rebuilt in backward. The CPU flash kernel stands in for the CUDA one on fake CPU tensors.
_OP_SAVED = {
    torch.ops.aten.mm.default,
    torch.ops.aten.addmm.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
}
_MATMULS = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default}


def op_policy(counts: dict[str, int], ctx: Any, func: Any, *args: Any, **kwargs: Any) -> CheckpointPolicy:
    """Save the attention kernels' outputs and the 1st, 3rd, 5th ... matrix product of a block's forward."""
    key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
    if func in _MATMULS:
        counts[key] += 1
    keep = func in _OP_SAVED and not (func in _MATMULS and counts[key] % 2 == 0)
    return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE


def _op_context() -> Any:
    return create_selective_checkpoint_contexts(partial(op_policy, defaultdict(int)))


def enable_recompute(model: Any, mode: str) -> None:
    """Recompute each transformer block: all of it ("full") or what `op_policy` does not save."""
    if mode not in ("full", "selective_op"):
        return
    kwargs: dict[str, Any] = {"use_reentrant": False}
    if mode == "selective_op":
        kwargs["context_fn"] = _op_context
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
