"""Post-training composed from `Columns`: what the policy trains on, the other models' memory and
forwards, the rollouts, and the phase that peaks. `planner.evaluate` calls `policy_view` first and
`post_training_outputs` after the memory model, so the estimate, the comparison, the sheet, the search and
validation all get the same figures. The formulas live in `planner.formulas.post_training.side_models` and
`planner.formulas.post_training.generation`; this module only says which columns feed them.

A "post step" is a rollout step for PPO/GRPO (generate, score, train on what was generated) and an
optimizer step for the offline objectives; the per-step timeline (`step_*_s`) is of one such step.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.columns import Columns
from planner.formulas.memory.peak import MemoryBreakdown, MemoryInputs
from planner.formulas.memory.recipes import PostTraining
from planner.formulas.post_training import generation as gen
from planner.formulas.post_training import side_models as post
from planner.formulas.scalars import all_rows, any_row
from planner.formulas.step.comm import BYTES_PER_GB, effective_pcie_gb_per_s, intra_node_link_gb_per_s
from planner.post.phases import engine_room_bytes, frozen_bytes, memory_outputs, trainer_phases, without_pool

Outputs = dict[str, Any]


def is_sft(c: Columns) -> bool:
    """Every row is plain supervised fine-tuning: nothing of this module applies (the usual, fast case)."""
    objective = np.asarray(c.post.objective)
    return all_rows(objective == PostTraining.SFT)


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


def _engine(c: Columns, rollout_seqs: Any, room_bytes: Any) -> gen.Engine:
    """The engine of one replica; one without a pool of its own has the room the trainer leaves."""
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
        engine_bytes=np.where(without_pool(c), room_bytes, p.generation_memory_frac * g.vram_bytes),
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


def _rollouts(c: Columns, out: Outputs, room_bytes: Any) -> Outputs:
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
    engine = _engine(c, per_rollout * p.n_samples_per_prompt, room_bytes)
    kv_bytes = gen.kv_cache_bytes(engine)
    # a pool holds its whole share; an engine without one holds its weights and the KV cache in flight
    held = np.where(without_pool(c), gen.engine_weight_bytes(engine) + kv_bytes, engine.engine_bytes)
    n_rollouts = np.where(online, prompts_total / per_rollout, 0.0)
    generation_step_s = np.where(online, gen.generation_s(engine), 0.0)
    sync_step_s = np.where(
        online, gen.weight_sync_s(c.model.n_params, p.generation_tp, _sync_link_gb_per_s(c)), 0.0
    )
    return {
        "n_rollouts": n_rollouts,
        "rollout_prompts": np.where(online, per_rollout, 0.0),
        "concurrent_sequences": np.where(online, gen.concurrent_sequences(engine), 0.0),
        "kv_cache_bytes": np.where(online, kv_bytes, 0.0),
        "generation_engine_bytes": np.where(online, held, 0.0),
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


def _reference_stream_s(c: Columns, out: Outputs, host_shard_bytes: Any) -> Any:
    """An offloaded reference streams its weight shard in over PCIe for every micro-batch it scores."""
    passes = out["n_steps"] * c.layout.n_micro_batches * c.post.reference_tokens_per_token
    return passes * host_shard_bytes / (effective_pcie_gb_per_s(c.gpu.pcie_gb_per_s) * BYTES_PER_GB)


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
    if all_rows(sft_rows):
        return neutral
    figures = _post_outputs(c, out, breakdown, inputs)
    # A frame mixing objectives (a plan sheet): its SFT rows keep exactly the single SFT estimate's figures.
    mixed = any_row(sft_rows)
    return {k: np.where(sft_rows, neutral.get(k, out.get(k)), v) if mixed else v for k, v in figures.items()}


def _post_outputs(c: Columns, out: Outputs, breakdown: MemoryBreakdown, inputs: MemoryInputs) -> Outputs:
    g = c.gpu
    trainer = trainer_phases(c, breakdown, inputs)
    rollouts = _rollouts(c, out, engine_room_bytes(c, trainer))
    host_reference = frozen_bytes(c, c.post.n_reference_host_params)  # an offloaded reference's shard
    memory = memory_outputs(c, out, trainer, rollouts, host_reference)
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
