"""The numbers the memory model takes (`MemoryInputs`) and what it returns (`MemoryBreakdown`), in bytes.

Every field is a float or a numpy array; arrays broadcast together, so one call evaluates one scenario, a
GPU catalogue or a sweep. Categorical choices arrive as numbers (codes and bytes per parameter from
`planner.formulas.memory.recipes`); `planner.resolve` builds them (as columns) from a Scenario, and a published
case row becomes a Scenario first (`planner.cases.case_row`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.units import GIB_BYTES as GIB  # noqa: F401  (imported from here by the memory modules)

# The three statistics (planner.formulas.memory.verdict reports them): allocated (the tensors alive at the worst
# moment), reserved = allocated × (1 + fragmentation), device total = reserved + overhead (+ the loading peak).
# CUDA context, cuBLAS workspaces and NCCL communicator buffers, outside the tensors (nvidia-smi shows them on top
# of the allocator's reserved memory): NaN asks `planner.formulas.memory.device_overhead` to model them from the
# layout (0.81 GiB on one GPU, + 0.25 GiB per communicator); Scenario.overhead_gib states a figure instead.
DEFAULT_OVERHEAD_BYTES = float("nan")
# Caching-allocator slack, reserved over allocated (Scenario.fragmentation_frac). PyTorch's allocator
# (c10/cuda/CUDACachingAllocator.cpp at pytorch eb42ad6e) rounds every request to 512 B (kMinBlockSize), packs
# requests up to 1 MiB into 2 MiB segments (kSmallBuffer), serves 1-10 MiB requests from 20 MiB segments
# (kLargeBuffer) and rounds larger ones to 2 MiB (kRoundLarge); a freed block serves a later request only if it
# is large enough, so sizes that vary from step to step (sequence lengths of unpacked batches) leave slivers and
# new segments: its Note [Expandable Segments] describes that growth, which expandable_segments:True avoids by
# mapping pages into one growing segment. Reserved therefore exceeds allocated by a few GiB at 80-96 GiB peaks
# (calibration-sources.md, pitfall 2). 10 % puts the torchtitan reserved-memory rows of reference/calibration.csv
# within -13 %..+11 % of the prediction; the H200 rows (data/microbench/) score the reserved statistic too.
DEFAULT_FRAGMENTATION_FRAC = 0.10


# Model columns (planner.columns.ModelColumns) read under their own names
SAME_NAMED_MODEL = ("n_expert_params", "n_expert_adapter_params", "gemma_block", "qk_norm")


@dataclass(frozen=True)
class MemoryInputs:
    """Inputs of `planner.formulas.memory.peak.memory_per_gpu`; defaults: bf16 mixed-precision AdamW, one GPU."""

    n_params: FloatOrArray  # every parameter (total, not active, for MoE: all experts are stored)
    n_embedding_params: FloatOrArray  # token (+ learned position) table, on the first pipeline stage
    n_head_params: FloatOrArray  # output head, on the last stage; 0 when tied to the embedding
    n_layers: FloatOrArray
    hidden: FloatOrArray
    n_heads: FloatOrArray
    n_kv_heads: FloatOrArray
    head_dim: FloatOrArray
    ffn_hidden: FloatOrArray  # MLP width a token passes through (top-k + shared experts for MoE)
    n_mlp_matrices: FloatOrArray  # 2 (GeLU) or 3 (SwiGLU)
    vocab: FloatOrArray
    seq_len: FloatOrArray
    micro_batch: FloatOrArray = 1.0
    grad_accum: FloatOrArray = 1.0  # micro-batches per optimizer step (pipeline micro-batches under PP)
    method: FloatOrArray = 0.0  # recipes.Method: 0 full, 1 LoRA, 2 QLoRA
    n_adapter_params: FloatOrArray = 0.0  # trainable LoRA parameters (ignored for full training)
    # bytes per parameter (recipes.recipe_bytes_per_param)
    weight_bytes: FloatOrArray = 2.0
    grad_bytes: FloatOrArray = 2.0
    master_bytes: FloatOrArray = 4.0
    optimizer_bytes: FloatOrArray = 8.0
    frozen_weight_bytes: FloatOrArray = 0.0  # frozen linear-layer weights (LoRA base, QLoRA NF4)
    frozen_other_weight_bytes: FloatOrArray = 0.0  # frozen embedding and head
    activation_bytes: FloatOrArray = 2.0  # bytes per saved activation element
    bytes_per_param: FloatOrArray = np.nan  # the seed's shortcut: model states = this × n_params (NaN: off)
    tp: FloatOrArray = 1.0
    pp: FloatOrArray = 1.0
    cp: FloatOrArray = 1.0
    dp: FloatOrArray = 1.0  # data-parallel degree, n_gpus / (tp·pp·cp)
    zero_stage: FloatOrArray = 0.0
    hybrid_shard: FloatOrArray = 0.0
    gpus_per_node: FloatOrArray = 8.0
    sequence_parallel: FloatOrArray = 0.0
    flash_attention: FloatOrArray = 1.0
    recompute: FloatOrArray = 0.0  # recipes.Recompute: 0 none, 1 selective, 2 full, 3 op-level selective
    fused_cross_entropy: FloatOrArray = 0.0
    dropout: FloatOrArray = 0.0  # 1 when dropout masks are stored; fine-tuning usually runs with dropout 0
    offload_optimizer: FloatOrArray = 0.0
    offload_params: FloatOrArray = 0.0
    offload_activations: FloatOrArray = 0.0
    optimizer_in_backward: FloatOrArray = 0.0  # each parameter is stepped as its gradient arrives (torchtune)
    overhead_bytes: FloatOrArray = DEFAULT_OVERHEAD_BYTES
    fragmentation_frac: FloatOrArray = DEFAULT_FRAGMENTATION_FRAC
    # pipeline schedule: model chunks per GPU; 1 = plain 1F1B
    n_virtual_stages: FloatOrArray = 1.0
    # offload and paged optimizers: share of a paged optimizer's states in host memory
    page_optimizer: FloatOrArray = 0.0
    # memory tails: LoRA adapters' saved activations, fp32 gradient buffers
    lora_rank: FloatOrArray = 0.0  # adapter rank (read only when method is LoRA or QLoRA)
    lora_all_linear: FloatOrArray = 0.0  # 1 when the MLP matrices are adapted too, 0 for attention only
    lora_dropout: FloatOrArray = (
        0.0  # 1 when the adapters run dropout (each keeps a dropped input and a mask)
    )
    fp32_grad_buffers: FloatOrArray = (
        0.0  # 1: gradients live in fp32 buffers (Megatron main_grad, DeepSpeed bf16)
    )
    # 1: torch.optim's foreach step (one temporary the size of the updated parameters; `state_factors`)
    optimizer_foreach: FloatOrArray = 0.0
    # 1: Hugging Face transformers / PEFT eager code keeps more for backward (planner.formulas.memory.eager)
    hf_eager_code: FloatOrArray = 0.0
    gemma_block: FloatOrArray = 0.0  # 1: Gemma 2's layer (four norms, soft-capped scores; memory/eager.py)
    qk_norm: FloatOrArray = 0.0  # 1: RMS norms on the query and key heads (Qwen3; memory/eager.py)
    # expert parallelism: routed experts' weights and adapters, spread over ep GPUs
    n_expert_params: FloatOrArray = 0.0
    n_expert_adapter_params: FloatOrArray = 0.0
    ep: FloatOrArray = 1.0
    etp: FloatOrArray = 0.0  # expert tensor-parallel degree; 0 = follows tp (planner.formulas.step.moe)
    # model loading: 1 = the whole model on each GPU before sharding (planner.formulas.memory.loading)
    full_model_load: FloatOrArray = 0.0
    # reserved grows by this share of activations + logits: varying sequence lengths (formulas.memory.allocator)
    allocator_growth_frac: FloatOrArray = 0.0
    # cached fp8 weight + transpose per layer matmul parameter, Transformer Engine (formulas.memory.fp8_state)
    fp8_cache_bytes_per_param: FloatOrArray = 0.0


@dataclass(frozen=True)
class MemoryBreakdown:
    """Per-GPU bytes of the worst pipeline stage; components as they stand at that stage's peak."""

    weights_bytes: FloatOrArray
    gradients_bytes: FloatOrArray
    optimizer_bytes: FloatOrArray
    master_bytes: FloatOrArray
    activations_bytes: FloatOrArray
    logits_bytes: FloatOrArray
    prefetch_bytes: FloatOrArray  # ZeRO-3 gathered (unsharded) weights and their gradients
    optimizer_step_temp_bytes: FloatOrArray  # fp32 gradient copy of the master update, foreach temporary
    overhead_bytes: FloatOrArray
    fragmentation_bytes: FloatOrArray
    allocated_peak_bytes: FloatOrArray  # what torch.cuda.max_memory_allocated would show
    reserved_peak_bytes: FloatOrArray  # torch.cuda.max_memory_reserved: allocated + fragmentation
    peak_bytes: FloatOrArray  # device memory needed (nvidia-smi): reserved + overhead
    peak_phase: FloatOrArray  # 0 forward/backward, 1 optimizer step, 3 model loading (PEAK_PHASE_NAMES)
    pp_stage: FloatOrArray  # 0 first pipeline stage, 1 last
    host_offload_bytes: FloatOrArray  # moved to CPU memory (optimizer, parameters, activations)
    # its parts, for the transfer times of `planner.formulas.step.offload`
    host_optimizer_bytes: FloatOrArray = 0.0  # offloaded optimizer states and master copy
    host_weights_bytes: FloatOrArray = 0.0
    host_grads_bytes: FloatOrArray = 0.0
    host_activations_bytes: FloatOrArray = 0.0
    host_paged_bytes: FloatOrArray = 0.0  # a paged optimizer's states, moved out as VRAM ran short
    # device bytes while the model is loaded whole before sharding; 0 when loaded sharded (formulas.loading)
    loading_peak_bytes: FloatOrArray = 0.0
    training_peak_phase: FloatOrArray = 0.0  # peak_phase of the training step alone (0 or 1)

    def as_dict(self) -> dict[str, FloatOrArray]:
        return {field.name: getattr(self, field.name) for field in fields(self)}
