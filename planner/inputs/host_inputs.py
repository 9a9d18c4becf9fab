"""The inputs about the host and the training code around the GPUs, kept here so the Scenario stays short:
the host memory a CPU optimizer step streams through, and whether the model runs as Hugging Face eager code.
"""

from __future__ import annotations

from typing import Any, Final, Literal

# The fused attention kernel's generation: FlashAttention-2 (flash-attn 2.x, PyTorch SDPA's flash backend) or a
# FlashAttention-1-era kernel (flash-attn 1.x, or its Triton port that MPT/llm-foundry ran as attn_impl triton).
AttentionKernel = Literal["flash2", "flash1"]

FIELDS: Final[dict[str, dict[str, Any]]] = {
    # Read by the CPU optimizer step of optimizer offload (planner.formulas.step.offload). A DGX H100 / HGX H200
    # host has two Xeon Platinum 8480C with eight DDR5-4800 channels each: 2 × 8 × 38.4 GB/s = 614.4 GB/s
    # theoretical (4800 MT/s × 8 bytes per channel). A multi-threaded update that also computes (AdamW's
    # square root and division, across both sockets' NUMA domains) sustains about half of that: 300 GB/s is
    # that stated judgement, an input for anyone who measured their own host.
    "host_memory_gb_per_s": dict(
        default=300.0,
        ge=1,
        le=100_000,
        description="host memory bandwidth per node for a CPU optimizer step, GB/s",
    ),
    # Off: fused kernels (torchtitan, compiled torchtune, Megatron); on for Hugging Face transformers/PEFT eager
    # code, which keeps more activations (planner/formulas/memory/eager.py) and dispatches more, unfused
    # kernels (planner/formulas/operators/eager.py).
    "hf_eager_code": dict(
        default=False, description="Hugging Face Trainer/PEFT eager code, not fused (torchtitan, Megatron)"
    ),
    # Read only with flash_attention on; the rate each runs at is in planner/formulas/operators/attention.py.
    "attention_kernel": dict(
        default="flash2",
        description="fused attention kernel: flash2 (FlashAttention-2, SDPA) or flash1 (flash-attn 1.x, Triton)",
    ),
}
