"""Defaults and ranges of the memory-tail inputs (what frameworks keep beyond the textbook states, and how the
caching allocator grows), with their reasons; `Scenario` reads them (`Field(**FIELDS[name])`)."""

from typing import Any

FIELDS: dict[str, dict[str, Any]] = {
    # Off by default: torchtune's LoRA recipes run lora_dropout 0.0; PEFT's examples use 0.1.
    "lora_dropout": {
        "default": False,
        "description": "LoRA adapters run dropout (each keeps a dropped copy of its input and a mask)",
    },
    # Off by default (the previous figures); on for Megatron-LM bf16 runs (its distributed optimizer included)
    # and DeepSpeed's bf16 optimizer.
    "fp32_grad_buffers": {
        "default": False,
        "description": "gradients kept in fp32 buffers for the whole step (Megatron main_grad)",
    },
    # Off by default: torchtitan, torchtune and DeepSpeed step with fused kernels that update in place; on for
    # plain torch.optim with foreach/fused unset, which picks foreach on CUDA (torch/optim/optimizer.py).
    "optimizer_foreach": {
        "default": False,
        "description": "torch.optim's foreach step: one parameter-sized temporary during the update",
    },
    # Off by default: torchao's float8 linears (torchtitan) cast the weights in every forward and keep no copy;
    # Transformer Engine keeps them (planner.formulas.memory.fp8_state).
    "fp8_weight_cache": {
        "default": False,
        "description": "fp8 training keeps an fp8 copy and transpose of each weight (Transformer Engine)",
    },
    # 0 by default: packed or fixed-length batches. The spread is (longest − shortest) / longest sequence over
    # the steps of a run; 1 = lengths from almost nothing to the full sequence (planner.formulas.memory.allocator).
    "seq_len_spread_frac": {
        "default": 0.0,
        "ge": 0,
        "le": 1,
        "description": "how much sequence lengths vary between steps, share of the longest (0 = packed)",
    },
    # Off by default: PyTorch's default allocator settings; torchtitan's launch script turns it on.
    "expandable_segments": {
        "default": False,
        "description": "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (one growing segment per stream)",
    },
}
