"""What fp8 training keeps beyond the bf16 recipe, in bytes per parameter of the transformer layers' matmuls.

torchao's float8 linears (torchtitan) cast the 16-bit weight to fp8 in every forward and keep no copy, so
`fp8_mixed` costs what `bf16_mixed` costs (`planner.formulas.memory.recipes`). Transformer Engine keeps one:
its modules cache the fp8 weight between micro-batches (`is_first_microbatch`, the `_fp8_workspaces` of
transformer_engine/pytorch/module/base.py) together with its transpose for the backward GEMM on Hopper, whose
fp8 tensor cores read only the "TN" layout: 1 B + 1 B per weight element. Embedding, norms and output head
stay 16-bit (TE replaces the linear layers only). The routed experts are cached the same way: TE's
GroupedLinear, Megatron-Core's expert layer, caches each expert's weight (`cache_name=f"weight{i}"` in
transformer_engine/pytorch/module/grouped_linear.py at NVIDIA/TransformerEngine 3ea13561). So is a frozen LoRA
base run through TE linears: the weight is cast and cached whether or not it trains, and
the transpose is made whenever the layer's input needs a gradient (`columnwise_usage = is_grad_enabled and
inp.requires_grad`, same file and module/linear.py), which a frozen layer's input does under LoRA. Not for
QLoRA's base, which bitsandbytes' 4-bit kernels run outside TE, nor for the adapters (plain torch linears in
PEFT and torchtune). The delayed-scaling recipe's amax history, 1024 fp32 values
(DelayedScaling `amax_history_len=1024`, docs/api/common.rst at NVIDIA/TransformerEngine 11c0399e) for each of
a GEMM's 3 forward and 2 backward scaled tensors, is 20 KiB per linear layer, 0.1 MiB per transformer layer:
left out.
"""

from __future__ import annotations

FP8_WEIGHT_BYTES = 1.0
FP8_TRANSPOSE_BYTES = 1.0


def fp8_cache_bytes_per_param(precision: str, fp8_weight_cache: bool) -> float:
    """Bytes per layer matmul parameter of the cached fp8 weight and transpose; 0 unless fp8 with a cache."""
    return FP8_WEIGHT_BYTES + FP8_TRANSPOSE_BYTES if precision == "fp8_mixed" and fp8_weight_cache else 0.0
