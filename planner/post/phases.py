"""Post-training's memory on one training GPU: the other models' shares and the phase that peaks.

The trainer's phases (`trainer_phases`) come first, so a colocated engine that keeps no pool of its own (an
eager engine: DeepSpeed-Chat's hybrid engine, Hugging Face generate) can be given the room they leave
(`engine_room_bytes`); an engine with a pool (vLLM's gpu_memory_utilization) holds its share instead. Then
`memory_outputs` adds the engine and reports each phase. The formulas are `planner.formulas.post_training.side_models`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from planner.columns import Columns
from planner.formulas.memory.peak import MemoryBreakdown, MemoryInputs, memory_per_gpu
from planner.formulas.memory.recipes import PHASE_GENERATION, PHASE_LOADING
from planner.formulas.post_training import side_models as post
from planner.formulas.scalars import any_row

Outputs = dict[str, Any]


def _value_inputs(c: Columns, inputs: MemoryInputs) -> MemoryInputs:
    """The memory model's inputs for the value model: its own width and depth, a one-number head, trained
    like the policy (its LoRA adapters in proportion to its size)."""
    p, m = c.post, c.model
    share = p.n_value_params / np.maximum(m.n_params, 1.0)
    return replace(
        inputs,
        n_params=p.n_value_params,
        n_embedding_params=p.n_value_embedding_params,
        n_head_params=p.value_hidden_size,
        n_layers=p.n_value_layers,
        hidden=p.value_hidden_size,
        n_heads=p.n_value_heads,
        n_kv_heads=p.n_value_kv_heads,
        head_dim=p.value_head_dim,
        ffn_hidden=p.value_ffn_hidden_size,
        vocab=1.0,
        n_adapter_params=inputs.n_adapter_params * share,
        n_expert_params=0.0,
        n_expert_adapter_params=0.0,
    )


def _resident(b: MemoryBreakdown) -> Any:
    """States kept between steps on the GPU: weights, optimizer states and the master copy."""
    return b.weights_bytes + b.optimizer_bytes + b.master_bytes


def _value_memory(c: Columns, inputs: MemoryInputs) -> tuple[Any, Any]:
    """(peak allocated, resident) bytes of the value model's training on one GPU; zeros without one."""
    if not any_row(np.asarray(c.post.n_value_params) > 0):
        return 0.0, 0.0
    value = memory_per_gpu(_value_inputs(c, inputs))
    has = np.asarray(c.post.n_value_params) > 0
    return np.where(has, value.allocated_peak_bytes, 0.0), np.where(has, _resident(value), 0.0)


def frozen_bytes(c: Columns, n_params: Any) -> Any:
    """Per GPU: a frozen model's weights at the frozen dtype, split like the policy."""
    lay = c.layout
    return post.frozen_model_bytes(
        n_params, c.post.frozen_bytes_per_param, lay.tp, lay.pp, lay.dp, lay.zero_stage
    )


Trainer = tuple[post.Phases, Any, Any]  # the phases, the reference's and the reward model's bytes per GPU


def trainer_phases(c: Columns, breakdown: MemoryBreakdown, inputs: MemoryInputs) -> Trainer:
    """What the trainer holds on one training GPU in each phase, before a colocated engine's share: the
    policy's step and kept states, the value model's, and the frozen reference and reward weights."""
    p, lay = c.post, c.layout
    value_peak, value_resident = _value_memory(c, inputs)
    reference, reward = frozen_bytes(c, p.n_reference_gpu_params), frozen_bytes(c, p.n_reward_params)
    phases = post.Phases(
        policy_peak=breakdown.allocated_peak_bytes,
        policy_resident=_resident(breakdown),
        value_peak=value_peak,
        value_resident=value_resident,
        frozen=reference + reward,
        engine=0.0,
        engine_sleeps=p.generation_sleeps,
        fragmentation_frac=lay.fragmentation_frac,
        overhead=breakdown.overhead_bytes,  # stated, or modelled from the layout (device_overhead)
    )
    return phases, reference, reward


def engine_room_bytes(c: Columns, trainer: Trainer) -> Any:
    """Per GPU: what a colocated engine without a memory pool of its own can grow into while it generates,
    the device memory the trainer's kept states leave (`post.generation_phase_bytes` with no engine)."""
    return np.maximum(c.gpu.vram_bytes - post.generation_phase_bytes(trainer[0]), 0.0)


def without_pool(c: Columns) -> Any:
    """Engines that keep no pool (an eager colocated engine with no share given, `engine_memory_frac`):
    their KV cache is allocated as generation needs it and freed before training."""
    return np.isnan(np.asarray(c.post.generation_memory_frac, dtype=float))


def memory_outputs(
    c: Columns, out: Outputs, trainer: Trainer, rollouts: Outputs, host_reference: Any
) -> Outputs:
    """The post-training memory figures: each phase's device bytes and the peak among them."""
    p = c.post
    kept, reference, reward = trainer
    colocated = (np.asarray(p.online) > 0) & (np.asarray(p.n_generation_gpus) == 0)
    phases = replace(
        kept,
        engine=np.where(colocated, rollouts["generation_engine_bytes"], 0.0),
        engine_sleeps=np.where(without_pool(c), 1.0, p.generation_sleeps),
    )
    training = post.training_phase_bytes(phases)
    generating = np.where(colocated, post.generation_phase_bytes(phases), 0.0)
    shaped = c.model.has_shape > 0
    # the policy loaded whole onto each GPU before sharding (planner.formulas.memory.loading; 0 when loaded sharded)
    loading = np.nan_to_num(out["loading_peak_bytes"])
    running = np.maximum(training, generating)
    peak = np.where(shaped, np.maximum(running, loading), np.nan)
    allocated = post.allocated_peak_bytes(phases)
    engine_fits = (np.asarray(p.online) == 0) | (rollouts["concurrent_sequences"] >= 1.0)
    return {
        "reference_model_bytes": reference,
        "reward_model_bytes": reward,
        "value_model_bytes": kept.value_resident,
        "training_phase_bytes": training,
        "generation_phase_bytes": generating,
        "peak_bytes": peak,
        "allocated_peak_bytes": np.where(shaped, allocated, np.nan),
        # the engine's pool is one block, so the caching allocator's slack is over the trainer's bytes only
        "reserved_peak_bytes": np.where(shaped, running - kept.overhead, np.nan),
        "peak_phase": np.where(
            loading > running,
            PHASE_LOADING,
            np.where(generating > training, PHASE_GENERATION, out["training_peak_phase"]),
        ),
        "headroom_bytes": c.gpu.vram_bytes - peak,
        "host_offload_bytes": out["host_offload_bytes"] + host_reference,
        "generation_fits": engine_fits.astype(float),
    }
