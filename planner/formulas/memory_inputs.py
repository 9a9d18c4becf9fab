"""The numbers the memory model takes (`MemoryInputs`) and what it returns (`MemoryBreakdown`), in bytes.

Every field is a float or a numpy array; arrays broadcast together, so one call evaluates one scenario, a
GPU catalogue or a sweep. Categorical choices arrive as numbers (codes and bytes per parameter from
`planner.formulas.recipes`); `planner.cases.memory_cases` builds these inputs from a Scenario or a case row.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from planner.formulas.activations import FloatOrArray
from planner.formulas.recipes import METHOD_CODES, RECOMPUTE_CODES, recipe_bytes_per_param
from planner.formulas.units import GIB_BYTES as GIB
from planner.inputs.scenario import Scenario
from planner.model.architecture import count_params, lora_adapter_params
from planner.model.shape import ModelShape

# CUDA context, cuBLAS/NCCL workspaces and communication buffers outside PyTorch's caching allocator: the
# seed's 2 GiB (Scenario.overhead_gib). nvidia-smi shows it on top of the allocator's reserved memory.
DEFAULT_OVERHEAD_BYTES = 2.0 * GIB
# Caching-allocator slack, reserved over allocated (Scenario.fragmentation_frac). PyTorch rounds blocks up
# (512 B; 2 MiB and 20 MiB segments) and cannot reuse a freed block for a larger request, so reserved
# exceeds allocated by a few GiB at 80-96 GiB peaks (calibration-sources.md, pitfall 2). 10 % puts the
# torchtitan reserved-memory rows of reference/calibration.csv within -13 %..+11 % of the prediction.
DEFAULT_FRAGMENTATION_FRAC = 0.10


@dataclass(frozen=True)
class MemoryInputs:
    """Inputs of `planner.formulas.memory.memory_per_gpu`; defaults: bf16 mixed-precision AdamW, one GPU."""

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
    method: FloatOrArray = 0.0  # recipes.METHOD_CODES: 0 full, 1 LoRA, 2 QLoRA
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
    recompute: FloatOrArray = (
        0.0  # recipes.RECOMPUTE_CODES: 0 none, 1 selective, 2 full, 3 op-level selective
    )
    fused_cross_entropy: FloatOrArray = 0.0
    dropout: FloatOrArray = 0.0  # 1 when dropout masks are stored; fine-tuning usually runs with dropout 0
    offload_optimizer: FloatOrArray = 0.0
    offload_params: FloatOrArray = 0.0
    offload_activations: FloatOrArray = 0.0
    optimizer_in_backward: FloatOrArray = 0.0  # each parameter is stepped as its gradient arrives (torchtune)
    overhead_bytes: FloatOrArray = DEFAULT_OVERHEAD_BYTES
    fragmentation_frac: FloatOrArray = DEFAULT_FRAGMENTATION_FRAC


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
    optimizer_step_temp_bytes: FloatOrArray  # fp32 gradient copy read by the master-weight update
    overhead_bytes: FloatOrArray
    fragmentation_bytes: FloatOrArray
    allocated_peak_bytes: FloatOrArray  # what torch.cuda.max_memory_allocated would show
    reserved_peak_bytes: FloatOrArray  # torch.cuda.max_memory_reserved: allocated + fragmentation
    peak_bytes: FloatOrArray  # device memory needed (nvidia-smi): reserved + overhead
    peak_phase: FloatOrArray  # 0 forward/backward, 1 optimizer step
    pp_stage: FloatOrArray  # 0 first pipeline stage, 1 last
    host_offload_bytes: FloatOrArray  # moved to CPU memory (optimizer, parameters, activations)

    def as_dict(self) -> dict[str, FloatOrArray]:
        return {field.name: getattr(self, field.name) for field in fields(self)}


def build_memory_inputs(shape: ModelShape, n_params: float, **choices: Any) -> MemoryInputs:
    """MemoryInputs for a shape and the Scenario-style choices (method, optimizer, precision, tp, ...).

    `n_params` is the count the model states use (a published total, or `count_params(shape).total`).
    Categorical choices become numbers here (planner.formulas.recipes); the rest pass through unchanged.
    """
    method, optimizer, precision = choices.pop("method"), choices.pop("optimizer"), choices.pop("precision")
    rank, targets = choices.pop("lora_rank", 16), choices.pop("lora_targets", "all_linear")
    recipe = recipe_bytes_per_param(method, optimizer, precision, choices.pop("qlora_double_quant", True))
    recompute = choices.pop("recompute", "none")
    counts = count_params(shape)
    return MemoryInputs(
        n_params=n_params,
        n_embedding_params=float(counts.embedding + counts.position),
        n_head_params=float(counts.head),
        n_layers=float(shape.n_layers),
        hidden=float(shape.hidden_size),
        n_heads=float(shape.n_heads),
        n_kv_heads=float(shape.n_kv_heads),
        head_dim=float(shape.head_dim),
        # the width a token passes through: the dense MLP, or its top-k + shared experts
        ffn_hidden=float(counts.mlp_active / (shape.n_layers * _matrices(shape) * shape.hidden_size)),
        n_mlp_matrices=float(_matrices(shape)),
        vocab=float(shape.vocab_size),
        method=float(METHOD_CODES[method]),
        n_adapter_params=float(lora_adapter_params(shape, rank, targets)) if method != "full" else 0.0,
        weight_bytes=recipe["weights"],
        grad_bytes=recipe["grads"],
        master_bytes=recipe["master"],
        optimizer_bytes=recipe["optimizer"],
        frozen_weight_bytes=recipe["frozen_weights"],
        frozen_other_weight_bytes=recipe["frozen_other_weights"],
        activation_bytes=recipe["activation_element"],
        recompute=float(RECOMPUTE_CODES[recompute] if isinstance(recompute, str) else recompute),
        **{key: float(value) for key, value in choices.items()},
    )


def _matrices(shape: ModelShape) -> int:
    return 3 if shape.mlp_kind == "swiglu" else 2


def memory_inputs_from_scenario(scenario: Scenario, shape: ModelShape, n_params: float) -> MemoryInputs:
    """MemoryInputs for one Scenario (the planner's own inputs), with a resolved shape and parameter count."""
    s = scenario
    return build_memory_inputs(
        shape, n_params, method=s.method, optimizer=s.optimizer, precision=s.precision, lora_rank=s.lora_rank,
        lora_targets=s.lora_targets, qlora_double_quant=s.qlora_double_quant, recompute=s.recompute,
        seq_len=s.seq_len, micro_batch=s.micro_batch, grad_accum=s.grad_accum, tp=s.tp, pp=s.pp, cp=s.cp,
        dp=s.dp, zero_stage=s.zero_stage, hybrid_shard=s.hybrid_shard, gpus_per_node=s.gpus_per_node,
        sequence_parallel=s.sequence_parallel, flash_attention=s.flash_attention,
        fused_cross_entropy=s.fused_cross_entropy, offload_optimizer=s.offload_optimizer,
        offload_params=s.offload_params, overhead_bytes=s.overhead_gib * GIB,
        fragmentation_frac=s.fragmentation_frac, bytes_per_param=s.bytes_per_param or np.nan,
    )  # fmt: skip
