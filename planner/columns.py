"""The typed numeric inputs of `planner.evaluate`: `Columns`, six frozen groups of numpy columns.

Every field is a float (one value for every row) or a numpy float array; arrays of equal length broadcast
against the floats, so one `Columns` describes one plan, one row per GPU (the comparison) or a million layouts
(the plan search). `planner.resolve` builds them from a Scenario and the catalogues; the comparison and the
search then change a few of them with `Columns.replace`.

Names carry their unit (DESIGN.md §3): `n_` counts, `_bytes`, `_bytes_per_param` (per parameter),
`_flops_per_s`, `_gb_per_s` (10^9 bytes/s), `_w`, `_frac` (a fraction in [0, 1]), `usd_per_`, `g_co2e_per_kwh`.
Widths are counts of elements and keep the model-shape names (`hidden_size`, `head_dim`, `ffn_hidden_size`,
`vocab_size`); sequence lengths are in tokens (`seq_len_tokens`), micro-batches in sequences
(`micro_batch_seqs`). `tp`, `pp`, `cp`, `dp` are parallel degrees, `zero_stage` 0-3. Flags are 1.0 or 0.0. Choices are
enum codes (`Method`, `Recompute` in `planner.formulas.memory.recipes`) stored as floats and compared with the
members (`method != Method.FULL`). NaN means "not given" where a field says so. `planner.scenario_columns`
builds the groups from the Scenario and model shape, `planner.resolve` the GPU group and the whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import numpy as np

from planner.formulas.memory.memory_inputs import SAME_NAMED_MODEL, MemoryInputs
from planner.multimodal.group import TEXT_ONLY, MultimodalColumns
from planner.post.group import Column, PostTrainingColumns


@dataclass(frozen=True)
class ModelColumns:
    """The model's parameter counts and shape (`has_shape` 0: a bare count, every shape field a dummy 1)."""

    has_shape: Column  # flag: the shape is known (a preset or an imported config)
    n_params: Column  # every stored parameter (all experts of an MoE)
    n_active_params: Column  # parameters one token passes through
    n_embedding_params: Column  # token (+ learned position) table, on the first pipeline stage
    n_head_params: Column  # output head, on the last stage; 0 when tied to the embedding
    n_matmul_params: Column  # weights of every matmul a token runs through, the output head included
    n_layer_matmul_params: Column  # the same inside the transformer layers only (what recompute repeats)
    n_adapter_params: Column  # trainable LoRA parameters (0 for full training, and without a shape)
    n_layers: Column
    hidden_size: Column
    n_heads: Column
    n_kv_heads: Column
    head_dim: Column
    ffn_hidden_size: Column  # MLP width a token passes through (top-k + shared experts for MoE)
    n_mlp_matrices: Column  # 2 (GeLU) or 3 (SwiGLU)
    vocab_size: Column
    # expert parallelism (planner/formulas/step/moe.py): 0 for dense models and bare counts
    n_expert_params: Column  # routed experts' weights, all MoE layers (what ep spreads)
    n_expert_adapter_params: Column  # LoRA adapters on the routed experts (part of n_adapter_params)
    n_moe_layers: Column  # layers with routed experts (all but the leading dense ones)
    n_experts_active: Column  # routed experts per token (top-k)
    # routed experts' compute (planner/formulas/step/expert_compute.py): 0 for dense models and bare counts
    n_experts: Column = 0.0  # routed experts per MoE layer
    expert_ffn_hidden_size: Column = 0.0  # one routed expert's MLP width
    n_routed_active_params: Column = 0.0  # top-k routed experts' matmul weights a token runs, all layers
    # generation's KV cache per token and layer: 2·g·d, MLA's r_kv + d_r (post_training.generation.kv_cache)
    n_kv_elements_per_token_layer: Column = 0.0
    gemma_block: Column = 0.0  # flag: Gemma 2's layer keeps more under eager code (memory/eager.py)
    qk_norm: Column = 0.0  # flag: norms on the query and key heads (Qwen3; memory/eager.py)


@dataclass(frozen=True)
class RecipeColumns:
    """The training method and the bytes of each model-state component (`planner.formulas.memory.recipes`)."""

    method: Column  # Method code
    weight_bytes_per_param: Column  # per trained (full) or adapter parameter
    grad_bytes_per_param: Column  # per trainable parameter
    master_bytes_per_param: Column  # fp32 master copy of mixed precision; 0 for pure recipes
    optimizer_bytes_per_param: Column  # per trainable parameter
    frozen_weight_bytes_per_param: Column  # frozen linear-layer weights (LoRA base, QLoRA NF4)
    frozen_other_bytes_per_param: Column  # frozen embedding, norms and head
    activation_bytes_per_element: Column  # one saved activation element
    state_bytes_per_param: Column  # the seed's shortcut: model states = this × n_params (NaN: the recipe)
    paged_optimizer: Column  # flag: optimizer states in unified memory, paged to the host as VRAM runs short


@dataclass(frozen=True)
class LayoutColumns:
    """How the run is laid out on the GPUs, what saves memory, and the cluster's network."""

    n_gpus: Column
    n_gpus_per_node: Column
    tp: Column
    pp: Column
    cp: Column
    dp: Column  # n_gpus / (tp·pp·cp)
    micro_batch_seqs: Column  # sequences per micro-batch on one replica
    n_micro_batches: Column  # micro-batches per optimizer step on one replica (Scenario.grad_accum)
    zero_stage: Column
    hybrid_shard: Column  # flag: ZeRO shards inside a node, replicas across nodes (HSDP)
    sequence_parallel: Column  # flag
    flash_attention: Column  # flag
    recompute: Column  # Recompute code
    fused_cross_entropy: Column  # flag: chunked loss, no full fp32 logits at once
    offload_optimizer: Column  # flag
    offload_params: Column  # flag
    offload_activations: Column  # flag
    optimizer_in_backward: Column  # flag: each parameter is stepped as its gradient arrives
    dropout: Column  # flag: dropout masks are stored
    overhead_bytes: Column  # per GPU, outside the caching allocator (CUDA context, workspaces)
    fragmentation_frac: Column  # caching-allocator slack over allocated bytes
    inter_node_gb_per_s: Column  # per GPU, across nodes
    overlap_frac: Column  # share of data-parallel communication hidden behind compute
    n_virtual_stages: Column  # pipeline schedule: model chunks per GPU, 1 = plain 1F1B, > 1 interleaved 1F1B
    host_memory_gb_per_s: Column  # per node, what a CPU optimizer step streams through (offload)
    lora_rank: Column  # adapter rank (read only for LoRA and QLoRA)
    lora_all_linear: Column  # flag: the MLP matrices are adapted too
    lora_dropout: Column  # flag: adapters keep a dropped input copy and a mask
    fp32_grad_buffers: Column  # flag: gradients in fp32 buffers for the whole step
    optimizer_foreach: Column  # flag: torch.optim foreach step, a parameter-sized temporary
    ep: Column  # expert parallelism: GPUs the routed experts are spread over, out of dp
    moe_capacity_factor: Column = 1.0  # the busiest expert-parallel rank's load over the average
    # communication as frameworks do it: bytes per gradient element reduced, 0 = auto
    reduce_bytes_per_param: Column = 0.0
    overlap_windows: Column = 0.0  # flag: overlap_model "windows" (data-parallel sync behind its window only)
    hf_eager_code: Column = 0.0  # flag: Hugging Face eager code (formulas/memory/eager.py)
    flash1_attention: Column = 0.0  # flag: a FlashAttention-1-era fused kernel (operators/attention.py)
    etp: Column = 0.0  # expert tensor parallelism: experts split over etp; 0 = follows tp
    full_model_load: Column = 0.0  # flag: the whole model on each GPU before sharding
    tp_comm_overlap: Column = 0.0  # flag: tensor-parallel collectives hide under the GEMMs (else exposed)
    allocator_growth_frac: Column = 0.0  # reserved growth over activations (formulas/memory/allocator.py)
    fp8_cache_bytes_per_param: Column = 0.0  # cached fp8 weights per layer matmul parameter (fp8_state.py)


@dataclass(frozen=True)
class WorkloadColumns:
    """The data the run trains on, its FLOPs override, checkpoints and repeats."""

    training_tokens: Column  # useful tokens: examples × tokens per example × epochs
    tokens_per_example: Column
    seq_len_tokens: Column
    packing: Column  # flag: examples packed into full sequences (no padding)
    flops_per_param_token: Column  # the seed's override of the FLOP model (0: the formula)
    storage_gb_per_s: Column  # checkpoint storage bandwidth (NaN: checkpoint I/O left out)
    n_checkpoints: Column
    experiments_multiplier: Column  # runs of this size the budget must cover
    # goodput (planner/formulas/step/goodput.py)
    failures_per_gpu_hour: Column  # 0: goodput off
    checkpoint_interval_s: Column  # work between checkpoints (NaN: Daly's optimum)
    checkpoint_write_s: Column  # one checkpoint's write (NaN: its bytes / the write bandwidth)
    restart_s: Column  # from a failure until training runs again, the checkpoint reload aside


@dataclass(frozen=True)
class GpuColumns:
    """What depends on the GPU: rates, memory, power, links, the utilisation band and the price band."""

    peak_flops_per_s: Column  # dense, at the training precision (NaN: no catalogue rate)
    vram_bytes: Column
    tdp_w: Column
    intra_node_gb_per_s: Column
    pcie_gb_per_s: Column
    memory_gb_per_s: Column  # the datasheet's GPU memory (HBM/GDDR) bandwidth
    utilisation_is_end_to_end: Column  # flag: the user's own MFU, which already holds comm and bubbles
    utilisation_frac: Column  # the chosen band's MFU (or the user's)
    utilisation_frac_low: Column
    utilisation_frac_high: Column
    usd_per_gpu_hour: Column  # NaN: no price
    usd_per_gpu_hour_low: Column
    usd_per_gpu_hour_high: Column
    # clocks and power caps: the limit the GPU runs at (its TDP unless capped); the run's
    # GPU power draw follows it, and `peak_flops_per_s` is already the rate at it (planner/formulas/energy/power_cap.py)
    power_limit_w: Column
    # the operator step model's per-GPU constants (planner.catalogue.microbench, data/microbench/)
    gemm_peak_frac: Column = 0.78  # best matmul rate over the dense peak (MAMF table median)
    attention_frac: Column = 0.45  # FlashAttention-2 forward + backward over the BF16 peak
    memory_frac: Column = 0.90  # achievable share of the datasheet memory bandwidth (a copy)
    n_sms: Column = 0.0  # SMs the GEMM tiles fill in waves (0: no wave quantisation)
    bf16_flops_per_s: Column = float("nan")  # attention's rate (NaN: the training precision's peak)
    fp8_compute: Column = 0.0  # flag: matmuls in FP8 (casts to FP8 before each GEMM)
    residual_frac: Column = 1.0  # measured / operator-model speed (data/microbench/residual.csv)


@dataclass(frozen=True)
class EnergyColumns:
    """The site: power model shares, PUE, electricity price and the grid's carbon intensity."""

    gpu_util_frac: Column  # share of the run the GPUs draw busy power
    idle_power_frac: Column  # idle draw as a share of TDP
    host_overhead_frac: Column  # CPU, memory and network energy as a share of the GPU energy
    pue: Column
    usd_per_kwh: Column
    g_co2e_per_kwh: Column


Group = TypeVar(
    "Group",
    ModelColumns,
    RecipeColumns,
    LayoutColumns,
    WorkloadColumns,
    GpuColumns,
    EnergyColumns,
    PostTrainingColumns,
    MultimodalColumns,
)
GROUPS: Final = {
    "model": ModelColumns,
    "recipe": RecipeColumns,
    "layout": LayoutColumns,
    "workload": WorkloadColumns,
    "gpu": GpuColumns,
    "energy": EnergyColumns,
    "post": PostTrainingColumns,  # post-training (planner.post.group)
    "mm": MultimodalColumns,  # vision-language and diffusion parts (planner.multimodal.group)
}
# column name -> its group; names are unique across groups (tests/test_columns.py)
GROUP_OF: Final = {
    column.name: group for group, kind in GROUPS.items() for column in dataclasses.fields(kind)
}


@dataclass(frozen=True)
class Columns:
    """Everything `planner.evaluate` reads, by group."""

    model: ModelColumns
    recipe: RecipeColumns
    layout: LayoutColumns
    workload: WorkloadColumns
    gpu: GpuColumns
    energy: EnergyColumns
    post: PostTrainingColumns
    mm: MultimodalColumns = TEXT_ONLY

    def replace(self, **changes: Any) -> Columns:
        """A copy with some columns changed: a whole group (`gpu=stacked`) or single columns by name
        (`n_gpus=counts, dp=dp`); single columns apply on top of a replaced group."""
        groups = {name: changes.pop(name) for name in GROUPS if name in changes}
        by_group: dict[str, dict[str, Any]] = {}
        for name, value in changes.items():
            if name not in GROUP_OF:
                raise TypeError(f"Columns.replace: unknown column {name!r}")
            by_group.setdefault(GROUP_OF[name], {})[name] = value
        for group, values in by_group.items():
            groups[group] = dataclasses.replace(groups.get(group, getattr(self, group)), **values)
        return dataclasses.replace(self, **groups)


def stack(rows: Sequence[Group]) -> Group:
    """One group whose every column is an array with one element per given single-row group."""
    kind = type(rows[0])
    return kind(
        **{f.name: np.array([float(getattr(row, f.name)) for row in rows]) for f in dataclasses.fields(kind)}
    )


def map_columns(group: Group, change: Callable[[Column], Column]) -> Group:
    """The same group with `change` applied to every column (e.g. `np.repeat` to grow it into a grid)."""
    return type(group)(**{f.name: change(getattr(group, f.name)) for f in dataclasses.fields(group)})


# Layout columns the memory model reads under their own names (`memory_inputs`).
SAME_NAMED_LAYOUT = (
    "tp", "pp", "cp", "dp", "zero_stage", "hybrid_shard", "sequence_parallel", "flash_attention", "recompute",
    "fused_cross_entropy", "dropout", "offload_optimizer", "offload_params", "offload_activations",
    "optimizer_in_backward", "overhead_bytes", "fragmentation_frac", "n_virtual_stages", "lora_rank",
    "lora_all_linear", "lora_dropout", "fp32_grad_buffers", "optimizer_foreach", "ep", "etp",
    "full_model_load", "hf_eager_code", "allocator_growth_frac", "fp8_cache_bytes_per_param",
)  # fmt: skip


def memory_inputs(c: Columns) -> MemoryInputs:
    """The memory model's inputs, named as `planner.formulas.memory.peak` names them."""
    m, r, lay = c.model, c.recipe, c.layout
    return MemoryInputs(
        n_params=m.n_params,
        n_embedding_params=m.n_embedding_params,
        n_head_params=m.n_head_params,
        n_layers=m.n_layers,
        hidden=m.hidden_size,
        n_heads=m.n_heads,
        n_kv_heads=m.n_kv_heads,
        head_dim=m.head_dim,
        ffn_hidden=m.ffn_hidden_size,
        n_mlp_matrices=m.n_mlp_matrices,
        vocab=m.vocab_size,
        seq_len=c.workload.seq_len_tokens,
        micro_batch=lay.micro_batch_seqs,
        grad_accum=lay.n_micro_batches,
        method=r.method,
        n_adapter_params=m.n_adapter_params,
        weight_bytes=r.weight_bytes_per_param,
        grad_bytes=r.grad_bytes_per_param,
        master_bytes=r.master_bytes_per_param,
        optimizer_bytes=r.optimizer_bytes_per_param,
        frozen_weight_bytes=r.frozen_weight_bytes_per_param,
        frozen_other_weight_bytes=r.frozen_other_bytes_per_param,
        activation_bytes=r.activation_bytes_per_element,
        bytes_per_param=r.state_bytes_per_param,
        gpus_per_node=lay.n_gpus_per_node,
        **{name: getattr(m, name) for name in SAME_NAMED_MODEL},
        **{name: getattr(lay, name) for name in SAME_NAMED_LAYOUT},
    )
