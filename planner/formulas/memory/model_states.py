"""Model states per GPU: weights, gradients, optimizer states, master copy and ZeRO-3 gather buffers.

Bytes per parameter come from the recipe (`planner.formulas.memory.recipes`). Placement:
- tensor parallelism splits every matrix (layers, vocabulary-parallel embedding and head) over t;
- pipeline parallelism gives each stage n_layers/pp layers, the embedding to the first stage and the head
  to the last (Megatron-LM's layout; peers.md §3.3);
- ZeRO shards over the data-parallel replicas only (Rajbhandari et al. 2020, §5: stage 1 the optimizer
  states and master copy, stage 2 also the gradients, stage 3 also the weights); `zero_shard_degree`;
- LoRA/QLoRA: the frozen base holds weights only; adapters get gradients, optimizer states and master.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.memory.activations import FloatOrArray
from planner.formulas.memory.memory_inputs import MemoryInputs
from planner.formulas.memory.recipes import Method
from planner.formulas.scalars import nan_to_zero, select
from planner.formulas.step.moe import expert_tensor_degree

FP32_BYTES = 4.0
# ZeRO-3/FSDP keep the layer being computed and the prefetched next one unsharded (FSDP forward/backward
# prefetch); DeepSpeed's estimator charges 4·LL, 2 B weights + 2 B gradients of the largest layer (§3.4).
GATHERED_UNITS = 2.0


def zero_shard_degree(dp, hybrid_shard=0.0, gpus_per_node=8.0, tp=1.0, pp=1.0, cp=1.0):
    """GPUs that share one copy of the sharded states (ZeRO, Rajbhandari et al. 2020).

    The data-parallel replicas, dp, times the context-parallel ranks, which hold the same parameters and
    join the sharding group (Megatron-LM's distributed optimizer shards over DP×CP; torchtitan applies FSDP
    over its dp_shard×cp mesh); never the tensor or pipeline ranks. Hybrid sharding (FSDP HYBRID_SHARD,
    DeepSpeed ZeRO++ hpZ) shards within a node only: min(dp·cp, gpus_per_node/(tp·pp)), at least 1.
    """
    replicas = dp * cp
    in_node = np.maximum(np.floor(gpus_per_node / (tp * pp)), 1.0)
    return select(hybrid_shard, np.minimum(replicas, in_node), replicas)


def model_state_bytes(n_params, bytes_per_param):
    """Model states of the whole model, parameters × bytes per parameter (the seed: 16 B for mixed AdamW)."""
    return n_params * bytes_per_param


def override_scale(p: MemoryInputs):
    """Factor that rescales every model-state component so they total `bytes_per_param × n_params`.

    The seed's shortcut (an explicit bytes per parameter) keeps the recipe's split between components, so
    ZeRO and offloading still shard or move the right parts; without an override the factor is 1.
    """
    full = np.asarray(p.method) == Method.FULL
    edge = p.n_embedding_params + p.n_head_params
    trainable = np.where(full, p.n_params, p.n_adapter_params)
    frozen = np.where(full, 0.0, p.n_params - edge) * p.frozen_weight_bytes
    frozen = frozen + np.where(full, 0.0, edge) * p.frozen_other_weight_bytes
    recipe_bytes = trainable * (p.weight_bytes + p.grad_bytes + p.master_bytes + p.optimizer_bytes) + frozen
    wanted = nan_to_zero(p.bytes_per_param) * p.n_params
    return select(np.isfinite(p.bytes_per_param), wanted / np.maximum(recipe_bytes, 1.0), 1.0)


def has_experts(p: MemoryInputs) -> bool:
    """Whether any row has routed experts; a dense model (a scalar 0) skips the expert terms, so the dense
    plan search pays nothing for them."""
    return bool(np.ndim(p.n_expert_params) or p.n_expert_params > 0)


def layer_parameters(p: MemoryInputs) -> dict[str, FloatOrArray]:
    """Per-layer parameters on one tensor-parallel rank: trainable count and weight bytes, and the bytes per
    parameter of the (frozen or trainable) embedding and head.

    Transformer Engine's cached fp8 weight and transpose (`planner.formulas.memory.fp8_state`) count with the
    layer's weight bytes: they live as long as the weights, split like them over tensor-parallel ranks; for the
    routed experts and a LoRA base too, not for QLoRA's 4-bit base (that module explains why).
    The routed experts (and their adapters) are kept apart as `expert_trainable` / `expert_weight_bytes`,
    before expert parallelism spreads them (`state_factors`); 0 for a dense model.
    """
    full = np.asarray(p.method) == Method.FULL
    cached = select(np.asarray(p.method) == Method.QLORA, 0.0, p.fp8_cache_bytes_per_param)  # `fp8_state`
    per_layer = p.n_layers * p.tp
    dense = (p.n_params - p.n_embedding_params - p.n_head_params) / per_layer
    adapters = p.n_adapter_params / per_layer
    expert_trainable: FloatOrArray = 0.0
    expert_weight_bytes: FloatOrArray = 0.0
    if has_experts(p):  # a dense model skips these (the dense plan search pays nothing for them)
        expert = p.n_expert_params / per_layer
        dense, adapters = dense - expert, adapters - p.n_expert_adapter_params / per_layer
        expert_trainable = select(full, expert, p.n_expert_adapter_params / per_layer)
        expert_weight_bytes = (
            expert_trainable * p.weight_bytes
            + select(full, 0.0, expert * p.frozen_weight_bytes)
            + expert * cached
        )
    trainable = select(full, dense, adapters)
    return {
        "full": full,
        "trainable": trainable,
        "weight_bytes": trainable * p.weight_bytes
        + select(full, 0.0, dense * p.frozen_weight_bytes)
        + dense * cached,
        "expert_trainable": expert_trainable,
        "expert_weight_bytes": expert_weight_bytes,
        "edge_bytes_per_param": select(full, p.weight_bytes, p.frozen_other_weight_bytes),
    }


def stage_parameters(p: MemoryInputs, layer: dict, has_embedding, has_head) -> dict[str, FloatOrArray]:
    """Parameters and unsharded weight bytes on one tensor-parallel rank of a pipeline stage.

    `layer` is `layer_parameters(p)`. Keys: `trainable`, `weight_bytes` (before ZeRO-3) of the replicated
    parameters, `expert_trainable`, `expert_weight_bytes` of all routed experts (before expert parallelism),
    and for the largest unit ZeRO-3 gathers at once (a layer, or the embedding/head when larger)
    `unit_weight_bytes` and `unit_trainable`: a layer's routed experts count with the 1/ep a rank holds,
    and only while the expert data-parallel group, shard / ep, still has something to gather (or the
    parameters are offloaded to the host, so the layer's experts are brought in however few shards there are).
    """
    embedding, head = p.n_embedding_params * has_embedding / p.tp, p.n_head_params * has_head / p.tp
    largest_edge = np.maximum(embedding, head)
    layers = p.n_layers / p.pp
    unit_weights, unit_trainable = layer["weight_bytes"], layer["trainable"]
    # optimizer-in-backward steps a layer's parameters as their gradients arrive, the routed experts this rank
    # holds included, whether or not ZeRO-3 has anything to gather for them
    layer_grad_trainable = unit_trainable
    if has_experts(p):
        layer_grad_trainable = unit_trainable + layer["expert_trainable"] / expert_split(p)
        # gathered like the dense part (`state_factors`' `gathers`): while the expert group has other shards
        # to fetch, or when the parameters live on the host and every layer's experts come in over PCIe
        fetched = (expert_shard_degree(p) > 1) | (np.asarray(p.offload_params) > 0)
        expert_gathered = select(fetched, 1.0 / expert_split(p), 0.0)
        unit_weights = unit_weights + expert_gathered * layer["expert_weight_bytes"]
        unit_trainable = unit_trainable + expert_gathered * layer["expert_trainable"]
    return {
        "trainable": layers * layer["trainable"] + select(layer["full"], embedding + head, 0.0),
        "weight_bytes": layers * layer["weight_bytes"] + (embedding + head) * layer["edge_bytes_per_param"],
        "expert_trainable": layers * layer["expert_trainable"] if has_experts(p) else 0.0,
        "expert_weight_bytes": layers * layer["expert_weight_bytes"] if has_experts(p) else 0.0,
        "unit_weight_bytes": np.maximum(unit_weights, largest_edge * layer["edge_bytes_per_param"]),
        "unit_trainable": np.maximum(unit_trainable, select(layer["full"], largest_edge, 0.0)),
        "layer_grad_trainable": np.maximum(layer_grad_trainable, select(layer["full"], largest_edge, 0.0)),
    }


def expert_split(p: MemoryInputs):
    """Ways the routed experts split beyond the tensor split of `layer_parameters` (which divides by tp):
    ep · etp / tp, so a GPU holds 1/(etp·ep) of them; ep at etp = tp (`planner.formulas.step.moe`)."""
    return p.ep * expert_tensor_degree(p.etp, p.tp) / p.tp


def expert_shard_degree(p: MemoryInputs):
    """GPUs that share one copy of a routed expert's sharded states: the expert data-parallel group.

    Megatron-Core's distributed optimizer shards expert parameters over the expert data-parallel group,
    tp·dp·cp / (etp·ep) ranks (parallel_state's expert-data-parallel group: world / (etp·ep·pp)), because
    each expert shard lives on only those ranks; dp·cp / ep at etp = tp; at least 1 (hybrid sharding inside a
    node may leave fewer shards than ep).
    """
    shard = zero_shard_degree(p.dp, p.hybrid_shard, p.gpus_per_node, p.tp, p.pp, p.cp)
    return np.maximum(shard / expert_split(p), 1.0)


def state_factors(p: MemoryInputs) -> dict[str, FloatOrArray]:
    """Stage-independent factors: bytes per stage parameter of each component after ZeRO sharding.

    ZeRO-3 gathers `GATHERED_UNITS` units plus one unit's gradients (when there is something to gather:
    more than one shard, or parameters offloaded). With pipeline parallelism every micro-batch passes
    through the stage, so ZeRO-3 keeps the whole stage gathered and gradients wait unsharded for the last
    micro-batch (torchtitan disables reshard_after_forward under PP; DeepSpeed refuses ZeRO-2/3 with its
    pipeline engine); the gathered stage includes the rank's own shard, so ZeRO-3 never exceeds ZeRO-2.
    Gradients summed over several micro-batches are kept in fp32 under mixed precision (FSDP2's fp32
    reduce dtype, Megatron's fp32 main_grad, DeepSpeed's fp32 accumulation for bf16). `fp32_grad_buffers`
    keeps them in fp32 even without accumulation, as frameworks that allocate the buffer up front do:
    Megatron-LM's DDP allocates a `main_grad` fp32 buffer for every parameter whenever
    --accumulate-allreduce-grads-in-fp32 is set, which its argument check turns on for every bf16 run
    ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32", megatron/training/
    arguments.py); DeepSpeed's BF16_Optimizer accumulates into fp32 gradients (`data_types.grad_accum_dtype`,
    fp32 by default for bf16).

    `step_temp`: during the optimizer step a mixed-precision recipe reads an fp32 copy of its (sharded)
    gradients, 4 B per trainable parameter over the optimizer shards (DeepSpeed's fp32 gradient partition,
    the difference between its 2 + 18/N ZeRO-2 estimate and the ZeRO paper's 2 + 16/N; peers.md §3.4).
    torch.optim's foreach step adds one temporary the size of the parameters it updates (`_foreach_temp_bytes`).
    With `fp32_grad_buffers` there is no such copy: Megatron's distributed optimizer (ZeRO-1) hands the optimizer
    a view of its fp32 main_grad buffer, `shard_main_param.grad = shard_model_grad.float()`, and `.float()` of an
    fp32 tensor is the tensor itself (megatron/core/optimizer/distrib_optimizer.py at NVIDIA/Megatron-LM
    d08b402b6e74e733c0bcac6a5e3b8ec548a8e5ab, `_copy_model_grads_to_main_grads`); the buffer stays whole on
    every rank (reduce-scatter in place) while the master copy and Adam states are sharded over dp·cp.

    Routed experts (`expert_*` factors): a rank holds 1/e of them, e = `expert_split` (ep at etp = tp), and
    ZeRO shards those over the expert data-parallel group (shard / e ranks), so a component that ZeRO splits d
    ways splits a routed expert e · max(d / e, 1) = max(d, e) ways, one it leaves whole e ways. More ep or
    more etp never adds bytes.
    """
    scale = override_scale(p)
    shard = zero_shard_degree(p.dp, p.hybrid_shard, p.gpus_per_node, p.tp, p.pp, p.cp)
    stage = np.asarray(p.zero_stage)
    piped = np.asarray(p.pp) > 1
    has_master = np.asarray(p.master_bytes) > 0
    fp32_buffers = np.asarray(p.fp32_grad_buffers) > 0
    accumulates = piped | (np.asarray(p.grad_accum) > 1) | fp32_buffers
    grad_bytes = select(accumulates & has_master, FP32_BYTES, p.grad_bytes)
    gathers = (stage >= 3) & ((shard > 1) | (np.asarray(p.offload_params) > 0))
    sharded = {"weights": stage >= 3, "grads": (stage >= 2) & ~piped, "optimizer": stage >= 1}
    splits = {name: select(on, shard, 1.0) for name, on in sharded.items()}
    bytes_per_param = {
        "weights": select(gathers & piped, 0.0, 1.0),
        "grads": grad_bytes,
        "optimizer": p.optimizer_bytes,
        "master": p.master_bytes,
        "step_temp": select(has_master & ~fp32_buffers, FP32_BYTES, 0.0) + _foreach_temp_bytes(p, has_master),
    }
    factors = {"scale": scale, "unit_grads": scale * p.grad_bytes, "gathers": gathers, "piped": piped}
    experts = has_experts(p)
    e = expert_split(p) if experts else 1.0
    for name, per_param in bytes_per_param.items():
        split = splits.get(name, splits["optimizer"])  # master and step_temp follow the optimizer's shards
        factors[name] = scale * per_param / split
        expert = select(sharded.get(name, sharded["optimizer"]), np.maximum(split, e), e)
        factors[f"expert_{name}"] = scale * per_param / expert if experts else 0.0
    return factors


def _foreach_temp_bytes(p: MemoryInputs, has_master):
    """Bytes per trainable parameter of the temporary that torch.optim's foreach step allocates.

    torch.optim documents that "the foreach implementation uses ~ sizeof(params) more peak memory than the
    for-loop version due to the intermediates being a tensorlist vs just one tensor", and picks foreach on
    CUDA when neither `foreach` nor `fused` is set (`_foreach_doc` in torch/optim/optimizer.py). Adam(W)'s
    multi-tensor step builds sqrt(v) for every parameter at once (`torch._foreach_sqrt` in
    torch/optim/adam.py `_multi_tensor_adam`). The parameters it updates are the fp32 master copy under
    mixed precision, the weights themselves otherwise; on the optimizer's shard, like the states.
    """
    updated = select(has_master, p.master_bytes, p.weight_bytes)
    return np.asarray(p.optimizer_foreach) * updated


def stage_model_states(p: MemoryInputs, has_embedding, has_head, layer=None, factors=None):
    """Weights, gradients, optimizer, master, gathered (prefetch) and optimizer-step temporary bytes on one
    GPU of a stage (rules in `state_factors`); optimizer-in-backward holds one unit's gradients at a time.

    `layer` and `factors` (from `layer_parameters` and `state_factors`) may be passed in when several
    stages of the same inputs are evaluated.
    """
    layer = layer_parameters(p) if layer is None else layer
    f = state_factors(p) if factors is None else factors
    params = stage_parameters(p, layer, has_embedding, has_head)
    trainable, experts = params["trainable"], params["expert_trainable"]
    unit_grads = f["unit_grads"] * params["unit_trainable"]
    layers_gathered = GATHERED_UNITS * f["scale"] * params["unit_weight_bytes"] + unit_grads
    in_backward_grads = f["unit_grads"] * params["layer_grad_trainable"]
    moe = has_experts(p)
    stage_weights = (
        params["weight_bytes"] + params["expert_weight_bytes"] / expert_split(p)
        if moe
        else params["weight_bytes"]
    )
    gathered = select(f["piped"], f["scale"] * stage_weights, layers_gathered)
    in_backward = np.asarray(p.optimizer_in_backward) > 0

    def both(name: str) -> FloatOrArray:
        dense = f[name] * trainable
        return dense + f[f"expert_{name}"] * experts if moe else dense

    weights = f["weights"] * params["weight_bytes"]
    if moe:
        weights = weights + f["expert_weights"] * params["expert_weight_bytes"]
    return {
        "weights": weights,
        "grads": select(in_backward, in_backward_grads, both("grads")),
        "optimizer": both("optimizer"),
        "master": both("master"),
        "prefetch": select(f["gathers"], gathered, 0.0),
        "step_temp": select(in_backward, 0.0, both("step_temp")),
    }
