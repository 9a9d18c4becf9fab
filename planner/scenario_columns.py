"""The column groups that follow from the Scenario (and the model's shape) alone: model, recipe, layout,
workload and energy (`planner.columns` says what each field means). The GPU group needs the catalogues and is
built in `planner.resolve`.
"""

from __future__ import annotations

import numpy as np

from planner.columns import EnergyColumns, LayoutColumns, ModelColumns, RecipeColumns, WorkloadColumns
from planner.formulas.memory.allocator import growth_frac
from planner.formulas.memory.fp8_state import fp8_cache_bytes_per_param
from planner.formulas.memory.recipes import PAGED_OPTIMIZERS, Method, Recompute, recipe_bytes_per_param
from planner.formulas.units import GIB_BYTES, SECONDS_PER_MINUTE
from planner.inputs.comm_inputs import REDUCE_DTYPE_BYTES
from planner.inputs.scenario import Scenario
from planner.model.architecture import (
    ParamCounts,
    count_params,
    linear_params_all_layers,
    lora_adapter_params,
)
from planner.model.expert_split import (
    routed_active_matmul_params,
    routed_expert_adapter_params,
    routed_expert_params,
)
from planner.model.latent_attention import attention_head_dim, kv_elements_per_token_layer
from planner.model.shape import ModelShape


def model_columns(s: Scenario, shape: ModelShape | None) -> tuple[ModelColumns, ParamCounts | None]:
    if shape is None:
        assert s.params_b is not None  # the Scenario validator guarantees a count or a model
        n = s.params_b * 1e9
        # No shape: states from the bare count; every shape-dependent figure is masked by has_shape = 0.
        # Adapter size needs the shape; LoRA adapters are well under 1 % of the base (Hu et al. 2021,
        # Table 4: rank 8 on GPT-3 = 0.01 %), so they count as 0 here and `unavailable` says so.
        bare = ModelColumns(
            has_shape=0.0,
            n_params=n,
            n_active_params=n,
            n_embedding_params=0.0,
            n_head_params=0.0,
            n_matmul_params=n,
            n_layer_matmul_params=n,
            n_adapter_params=0.0,
            **dict.fromkeys(("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim"), 1.0),
            ffn_hidden_size=1.0,
            n_mlp_matrices=2.0,
            vocab_size=1.0,
            **dict.fromkeys(("n_expert_params", "n_expert_adapter_params", "n_moe_layers"), 0.0),
            n_experts_active=0.0,
            n_kv_elements_per_token_layer=2.0,  # 2 × 1 KV head × width 1, as the dummy shape fields say
        )
        return bare, None
    counts = count_params(shape)
    layer_matmul = float(linear_params_all_layers(shape))
    expert_ffn = shape.moe_ffn_hidden or shape.ffn_hidden
    ffn_active = (
        (shape.n_experts_active + shape.n_shared_experts) * expert_ffn if shape.is_moe else shape.ffn_hidden
    )
    n_adapter_params = float(lora_adapter_params(shape, s.lora_rank, s.lora_targets))
    return ModelColumns(
        has_shape=1.0,
        n_params=float(counts.total),
        n_active_params=float(counts.active),
        n_embedding_params=float(counts.embedding + counts.position),
        n_head_params=float(counts.head),
        n_matmul_params=layer_matmul + shape.vocab_size * shape.hidden_size,
        n_layer_matmul_params=layer_matmul,
        n_adapter_params=n_adapter_params,
        n_layers=float(shape.n_layers),
        hidden_size=float(shape.hidden_size),
        n_heads=float(shape.n_heads),
        n_kv_heads=float(shape.n_kv_heads),
        head_dim=attention_head_dim(shape),  # MLA: the mean of its query/key and value widths
        ffn_hidden_size=float(ffn_active),
        n_mlp_matrices=3.0 if shape.mlp_kind == "swiglu" else 2.0,
        vocab_size=float(shape.vocab_size),
        n_expert_params=float(routed_expert_params(shape)),
        n_expert_adapter_params=float(routed_expert_adapter_params(shape, s.lora_rank, s.lora_targets)),
        n_moe_layers=float(shape.n_layers - shape.n_dense_layers if shape.is_moe else 0),
        n_experts_active=float(shape.n_experts_active if shape.is_moe else 0),
        n_experts=float(shape.n_experts),
        expert_ffn_hidden_size=float(expert_ffn if shape.is_moe else 0),
        n_routed_active_params=float(routed_active_matmul_params(shape)),
        n_kv_elements_per_token_layer=kv_elements_per_token_layer(shape),
        gemma_block=float(shape.family == "gemma2"),
        qk_norm=float(shape.family in ("qwen3", "qwen3_moe")),  # transformers' Qwen3Attention q_norm, k_norm
    ), counts


def recipe_columns(s: Scenario) -> RecipeColumns:
    recipe = recipe_bytes_per_param(s.method, s.optimizer, s.precision, s.qlora_double_quant, s.hf_eager_code)
    return RecipeColumns(
        method=float(Method.of(s.method)),
        weight_bytes_per_param=recipe["weights"],
        grad_bytes_per_param=recipe["grads"],
        master_bytes_per_param=recipe["master"],
        optimizer_bytes_per_param=recipe["optimizer"],
        frozen_weight_bytes_per_param=recipe["frozen_weights"],
        frozen_other_bytes_per_param=recipe["frozen_other_weights"],
        activation_bytes_per_element=recipe["activation_element"],
        state_bytes_per_param=np.nan if s.bytes_per_param is None else s.bytes_per_param,
        paged_optimizer=float(s.optimizer in PAGED_OPTIMIZERS),
    )


def layout_columns(s: Scenario) -> LayoutColumns:
    return LayoutColumns(
        n_gpus=float(s.n_gpus),
        n_gpus_per_node=float(s.gpus_per_node),
        tp=float(s.tp),
        pp=float(s.pp),
        cp=float(s.cp),
        dp=float(s.dp),
        micro_batch_seqs=float(s.micro_batch),
        n_micro_batches=float(s.grad_accum),
        zero_stage=float(s.zero_stage),
        hybrid_shard=float(s.hybrid_shard),
        sequence_parallel=float(s.sequence_parallel),
        flash_attention=float(s.flash_attention),
        recompute=float(Recompute.of(s.recompute)),
        fused_cross_entropy=float(s.fused_cross_entropy),
        offload_optimizer=float(s.offload_optimizer),
        offload_params=float(s.offload_params),
        offload_activations=float(s.offload_activations),
        optimizer_in_backward=float(s.optimizer_in_backward),
        dropout=float(s.dropout),
        overhead_bytes=np.nan if s.overhead_gib is None else s.overhead_gib * GIB_BYTES,
        fragmentation_frac=s.fragmentation_frac,
        inter_node_gb_per_s=s.inter_node_gb_per_s,
        overlap_frac=s.overlap_frac,
        n_virtual_stages=float(s.pp_virtual_stages),
        host_memory_gb_per_s=s.host_memory_gb_per_s,
        lora_rank=float(s.lora_rank),
        lora_all_linear=float(s.lora_targets == "all_linear"),
        lora_dropout=float(s.lora_dropout),
        fp32_grad_buffers=float(s.fp32_grad_buffers),
        optimizer_foreach=float(s.optimizer_foreach),
        hf_eager_code=float(s.hf_eager_code),
        flash1_attention=float(s.attention_kernel == "flash1"),
        ep=float(s.ep),
        moe_capacity_factor=s.moe_capacity_factor,
        reduce_bytes_per_param=REDUCE_DTYPE_BYTES[s.reduce_dtype],
        overlap_windows=float(s.overlap_model == "windows"),
        tp_comm_overlap=float(s.tp_comm_overlap),
        etp=float(s.etp or 0),  # 0: follows tp, also where the plan search varies tp
        full_model_load=float(s.model_loading == "full_on_gpu"),
        allocator_growth_frac=growth_frac(s.seq_len_spread_frac, s.expandable_segments),
        fp8_cache_bytes_per_param=fp8_cache_bytes_per_param(s.precision, s.fp8_weight_cache),
    )


def workload_columns(s: Scenario, seq_len_tokens: int) -> WorkloadColumns:
    """`seq_len_tokens` is the resolved length (the user's, or the one derived from the data)."""
    return WorkloadColumns(
        training_tokens=s.training_tokens,
        tokens_per_example=s.tokens_per_example,
        seq_len_tokens=float(seq_len_tokens),
        packing=float(s.packing),
        flops_per_param_token=s.flops_per_param_token or 0.0,
        storage_gb_per_s=np.nan if s.storage_gb_per_s is None else s.storage_gb_per_s,
        n_checkpoints=float(s.n_checkpoints),
        experiments_multiplier=s.experiments_multiplier,
        failures_per_gpu_hour=s.failures_per_gpu_hour,
        checkpoint_interval_s=(
            np.nan if s.checkpoint_interval_min is None else s.checkpoint_interval_min * SECONDS_PER_MINUTE
        ),
        checkpoint_write_s=np.nan if s.checkpoint_write_s is None else s.checkpoint_write_s,
        restart_s=s.restart_min * SECONDS_PER_MINUTE,
    )


def energy_columns(s: Scenario, g_co2e_per_kwh: float) -> EnergyColumns:
    return EnergyColumns(
        gpu_util_frac=s.gpu_util_frac,
        idle_power_frac=s.idle_power_frac,
        host_overhead_frac=s.host_overhead_frac,
        pue=s.pue,
        usd_per_kwh=s.usd_per_kwh,
        g_co2e_per_kwh=g_co2e_per_kwh,
    )
