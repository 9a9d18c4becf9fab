"""Post-training (issue 16) composed from `Columns`: what the policy trains on, the other models' memory and
forwards, the rollouts, and the phase that peaks. `planner.evaluate` calls `policy_view` first and
`post_training_outputs` after the memory model, so the estimate, the comparison, the sheet, the search and
validation all get the same figures. The formulas live in `planner.formulas.post_training` and
`planner.formulas.generation`; this module only says which columns feed them.

A "post step" is a rollout step for PPO/GRPO (generate, score, train on what was generated) and an
optimizer step for the offline objectives; the per-step timeline (`step_*_s`) is of one such step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from planner.columns import Columns
from planner.formulas import generation as gen
from planner.formulas import post_training as post
from planner.formulas.comm import BYTES_PER_GB, effective_pcie_gb_per_s, intra_node_link_gb_per_s
from planner.formulas.memory import MemoryBreakdown, MemoryInputs, memory_per_gpu
from planner.formulas.recipes import PostTraining

Outputs = dict[str, Any]
PHASE_GENERATION = 2.0  # planner.formulas.recipes.PEAK_PHASE_NAMES


def is_sft(c: Columns) -> bool:
    """Every row is plain supervised fine-tuning: nothing of this module applies (the usual, fast case)."""
    objective = np.asarray(c.post.objective)
    return bool(np.all(objective == PostTraining.SFT))


def policy_view(c: Columns) -> Columns:
    """The columns of the policy's own training: a pair's two sequences share a micro-batch, and the policy
    trains on `policy_sequences_per_example` sequences per example (2 for pairs, samples × epochs for RL).
    A reward model has a one-number head instead of the vocabulary: no language-model logits or head matmul."""
    if is_sft(c):
        return c
    p, m = c.post, c.model
    scorer = np.asarray(p.objective) == PostTraining.REWARD_MODEL
    head = m.vocab_size * m.hidden_size * m.has_shape
    return c.replace(
        micro_batch_seqs=c.layout.micro_batch_seqs * (1.0 + p.paired),
        training_tokens=c.workload.training_tokens * p.n_policy_seqs_per_example,
        n_matmul_params=np.where(scorer, m.n_matmul_params - head, m.n_matmul_params),
        vocab_size=np.where(scorer, 1.0, m.vocab_size),
    )


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
    if not np.any(np.asarray(c.post.n_value_params) > 0):
        return 0.0, 0.0
    value = memory_per_gpu(_value_inputs(c, inputs))
    has = np.asarray(c.post.n_value_params) > 0
    return np.where(has, value.allocated_peak_bytes, 0.0), np.where(has, _resident(value), 0.0)


def _engine(c: Columns, rollout_seqs: Any) -> gen.Engine:
    p, m, g = c.post, c.model, c.gpu
    generating = np.where(p.n_generation_gpus > 0, p.n_generation_gpus, c.layout.n_gpus)
    replicas = np.maximum(np.floor(generating / p.generation_tp), 1.0)
    per_token = gen.kv_cache_bytes_per_token(m.n_layers, m.n_kv_elements_per_token_layer) * m.has_shape
    return gen.Engine(
        n_params=m.n_params,
        n_active_params=m.n_active_params,
        kv_bytes_per_token=np.maximum(per_token, 1e-30),
        tp=p.generation_tp,
        sequences=rollout_seqs / replicas,
        prompt_tokens=p.prompt_tokens,
        completion_tokens=np.maximum(p.completion_tokens, 1.0),
        engine_bytes=p.generation_memory_frac * g.vram_bytes,
        peak_flops_per_s=g.peak_flops_per_s,
        utilisation_frac=g.utilisation_frac,
        memory_gb_per_s=g.memory_gb_per_s,
        bandwidth_frac=p.generation_bandwidth_frac,
        launch_s=p.layer_launch_s * m.n_layers,
    )


def _sync_link_gb_per_s(c: Columns) -> Any:
    """The trainer-to-engine link: inside the node when colocated or when both fit in one node, else the network."""
    lay, g = c.layout, c.gpu
    intra = intra_node_link_gb_per_s(g.intra_node_gb_per_s, g.pcie_gb_per_s)
    one_node = lay.n_gpus + c.post.n_generation_gpus <= lay.n_gpus_per_node
    return np.where(one_node, intra, np.minimum(intra, lay.inter_node_gb_per_s))


def _rollouts(c: Columns, out: Outputs) -> Outputs:
    """Per rollout step and over the run: generation, weight hand-over, KV cache, sequences in flight."""
    p, lay, w = c.post, c.layout, c.workload
    online = np.asarray(p.online) > 0
    prompts_total = w.training_tokens / p.n_policy_seqs_per_example / w.tokens_per_example
    batch_seqs = lay.micro_batch_seqs * lay.n_micro_batches * lay.dp
    per_rollout = np.where(
        np.isnan(p.n_rollout_prompts),
        np.maximum(batch_seqs / p.n_samples_per_prompt, 1.0),
        p.n_rollout_prompts,
    )
    engine = _engine(c, per_rollout * p.n_samples_per_prompt)
    n_rollouts = np.where(online, prompts_total / per_rollout, 0.0)
    generation_step_s = np.where(online, gen.generation_s(engine), 0.0)
    sync_step_s = np.where(
        online, gen.weight_sync_s(c.model.n_params, p.generation_tp, _sync_link_gb_per_s(c)), 0.0
    )
    return {
        "n_rollouts": n_rollouts,
        "rollout_prompts": np.where(online, per_rollout, 0.0),
        "concurrent_sequences": np.where(online, gen.concurrent_sequences(engine), 0.0),
        "kv_cache_bytes": np.where(online, gen.kv_cache_bytes(engine), 0.0),
        "generation_engine_bytes": np.where(online, engine.engine_bytes, 0.0),
        "generation_time_s": n_rollouts * generation_step_s,
        "weight_sync_time_s": n_rollouts * sync_step_s,
    }


def _forwards_s(c: Columns, utilisation_frac: Any) -> tuple[Any, Any]:
    """(scoring, value training) seconds over the run at a utilisation: the frozen forwards, the policy's
    forward-only passes, the value model's forward and its training, on the training GPUs."""
    p, m, tokens = c.post, c.model, c.workload.training_tokens
    rate = c.layout.n_gpus * c.gpu.peak_flops_per_s * utilisation_frac
    scoring = (
        post.forward_flops(p.n_reference_active_params, tokens * p.reference_tokens_per_token)
        + post.forward_flops(p.n_reward_params, tokens * p.reward_tokens_per_token)
        + post.forward_flops(p.n_value_params, tokens * p.value_tokens_per_token)
        + post.forward_flops(m.n_active_params, tokens * p.policy_forward_tokens_per_token)
    )
    return scoring / rate, post.train_flops(p.n_value_params, tokens) / rate


def _frozen_bytes(c: Columns, n_params: Any) -> Any:
    """Per GPU: a frozen model's weights at the frozen dtype, split like the policy."""
    lay = c.layout
    return post.frozen_model_bytes(
        n_params, c.post.frozen_bytes_per_param, lay.tp, lay.pp, lay.dp, lay.zero_stage
    )


def _reference_stream_s(c: Columns, out: Outputs, host_shard_bytes: Any) -> Any:
    """An offloaded reference streams its weight shard in over PCIe for every micro-batch it scores."""
    passes = out["n_steps"] * c.layout.n_micro_batches * c.post.reference_tokens_per_token
    return passes * host_shard_bytes / (effective_pcie_gb_per_s(c.gpu.pcie_gb_per_s) * BYTES_PER_GB)


def _memory(
    c: Columns,
    out: Outputs,
    breakdown: MemoryBreakdown,
    inputs: MemoryInputs,
    rollouts: Outputs,
    host_reference: Any,
) -> Outputs:
    p, lay = c.post, c.layout
    reference, reward = _frozen_bytes(c, p.n_reference_gpu_params), _frozen_bytes(c, p.n_reward_params)
    frozen_on_gpu = reference + reward
    value_peak, value_resident = _value_memory(c, inputs)
    colocated = (np.asarray(p.online) > 0) & (np.asarray(p.n_generation_gpus) == 0)
    phases = post.Phases(
        policy_peak=breakdown.allocated_peak_bytes,
        policy_resident=_resident(breakdown),
        value_peak=value_peak,
        value_resident=value_resident,
        frozen=frozen_on_gpu,
        engine=np.where(colocated, rollouts["generation_engine_bytes"], 0.0),
        engine_sleeps=p.generation_sleeps,
        fragmentation_frac=lay.fragmentation_frac,
        overhead=lay.overhead_bytes,
    )
    training = post.training_phase_bytes(phases)
    generating = np.where(colocated, post.generation_phase_bytes(phases), 0.0)
    shaped = c.model.has_shape > 0
    peak = np.where(shaped, np.maximum(training, generating), np.nan)
    allocated: Any = np.where(
        generating > training, post.generation_allocated_bytes(phases), post.training_allocated_bytes(phases)
    )
    engine_fits = (np.asarray(p.online) == 0) | (rollouts["concurrent_sequences"] >= 1.0)
    return {
        "reference_model_bytes": reference,
        "reward_model_bytes": reward,
        "value_model_bytes": value_resident,
        "training_phase_bytes": training,
        "generation_phase_bytes": generating,
        "peak_bytes": peak,
        "allocated_peak_bytes": np.where(shaped, allocated, np.nan),
        "reserved_peak_bytes": np.where(shaped, allocated * (1.0 + lay.fragmentation_frac), np.nan),
        "peak_phase": np.where(generating > training, PHASE_GENERATION, out["peak_phase"]),
        "headroom_bytes": c.gpu.vram_bytes - peak,
        "host_offload_bytes": out["host_offload_bytes"] + host_reference,
        "generation_fits": engine_fits.astype(float),
    }


# The figures this module adds, at their neutral values for supervised fine-tuning.
NEW_KEYS = (
    "n_rollouts", "rollout_prompts", "concurrent_sequences", "kv_cache_bytes", "generation_engine_bytes",
    "generation_time_s", "weight_sync_time_s", "scoring_time_s", "training_time_s", "generation_frac",
    "reference_model_bytes", "reward_model_bytes", "value_model_bytes", "training_phase_bytes",
    "generation_phase_bytes", "step_generation_s", "step_scoring_s", "step_training_s", "step_weight_sync_s",
    "post_step_time_s",
)  # fmt: skip


def post_training_outputs(
    c: Columns, out: Outputs, breakdown: MemoryBreakdown, inputs: MemoryInputs
) -> Outputs:
    """The post-training figures, and the plain figures they change (peak memory, wall clock, throughput).

    Supervised fine-tuning returns the neutral figures and changes nothing. Otherwise the wall clock is the
    policy's training (`out`, already on the policy's tokens) plus the value model's training, the scoring
    forwards, the rollouts' generation and the weight hand-overs, one after the other (synchronous
    frameworks: the trainer waits for the rollout and the engine for the update)."""
    zero = 0.0 * out["step_time_s"]  # SFT's figures: nothing generated or scored, all compute is training
    neutral = {**dict.fromkeys(NEW_KEYS, zero), "generation_fits": 1.0 + zero}
    neutral.update(training_time_s=out["compute_wall_clock_s"], post_step_time_s=out["step_time_s"])
    sft_rows = np.asarray(c.post.objective) == PostTraining.SFT
    if np.all(sft_rows):
        return neutral
    figures = _post_outputs(c, out, breakdown, inputs)
    # A frame mixing objectives (a plan sheet): its SFT rows keep exactly the single SFT estimate's figures.
    mixed = np.any(sft_rows)
    return {k: np.where(sft_rows, neutral.get(k, out.get(k)), v) if mixed else v for k, v in figures.items()}


def _post_outputs(c: Columns, out: Outputs, breakdown: MemoryBreakdown, inputs: MemoryInputs) -> Outputs:
    g = c.gpu
    rollouts = _rollouts(c, out)
    host_reference = _frozen_bytes(c, c.post.n_reference_host_params)  # an offloaded reference's shard
    memory = _memory(c, out, breakdown, inputs, rollouts, host_reference)
    stream_s = _reference_stream_s(c, out, host_reference)
    added = {}
    for key, utilisation in (
        ("", g.utilisation_frac),
        ("_low", g.utilisation_frac_high),
        ("_high", g.utilisation_frac_low),
    ):
        scoring_s, value_s = _forwards_s(c, utilisation)
        added[key] = (scoring_s + stream_s, value_s)
    scoring_s, value_s = added[""]
    generation_s, sync_s = rollouts["generation_time_s"], rollouts["weight_sync_time_s"]
    training_s = out["compute_wall_clock_s"] + value_s
    rest = generation_s + sync_s
    wall = {
        f"wall_clock_s{key}": out[f"wall_clock_s{key}"] + sum(parts) + rest for key, parts in added.items()
    }
    online = np.asarray(c.post.online) > 0
    n_post_steps = np.where(online, rollouts["n_rollouts"], out["n_steps"])
    compute_wall = training_s + scoring_s + rest
    return {
        **rollouts,
        **memory,
        **wall,
        "compute_wall_clock_s": compute_wall,
        "tokens_per_s": c.workload.training_tokens / wall["wall_clock_s"],
        "scoring_time_s": scoring_s,
        "training_time_s": training_s,
        "generation_frac": generation_s / compute_wall,
        "step_generation_s": generation_s / n_post_steps,
        "step_scoring_s": scoring_s / n_post_steps,
        "step_training_s": training_s / n_post_steps,
        "step_weight_sync_s": sync_s / n_post_steps,
        "post_step_time_s": compute_wall / n_post_steps,
    }
