"""The post-training figures an estimate reports: their Estimate fields and their rows of the
output table (`planner.results.OUTPUTS` takes both from here). For supervised fine-tuning every model,
cache and generation figure is 0 and the training time is the whole compute time."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel


class PostTrainingFigures(BaseModel):
    """Memory per GPU of the models beside the policy, the rollout engine, and the run's time by part."""

    reference_model_gib: (
        float  # the frozen reference's weights on one GPU (0: none, base, precomputed, offload)
    )
    reward_model_gib: float  # PPO's reward model on one GPU
    value_model_gib: float  # PPO's value model's kept states on one GPU
    kv_cache_gib: float  # per generating GPU: the KV cache of the sequences in flight
    generation_engine_gib: float  # per generating GPU: the engine's share (its weights and KV cache)
    training_phase_gib: float  # device memory while training
    generation_phase_gib: float  # device memory while a colocated engine generates (0 when not colocated)
    concurrent_sequences: float  # sequences each engine replica generates at once
    rollout_prompts: float  # prompts per rollout step
    n_rollouts: float  # rollout steps over the run
    generation_time_h: float
    scoring_time_h: float  # frozen forwards (reference, reward, values, old log-probs)
    weight_sync_time_h: float  # trainer-to-engine weight hand-overs
    training_time_h: float  # the policy's (and value model's) forward and backward
    generation_frac: float  # of the compute wall clock
    post_step_time_s: float  # one rollout step (PPO/GRPO) or optimizer step, every part included
    step_generation_s: float
    step_scoring_s: float
    step_training_s: float
    step_weight_sync_s: float


# (key, unit, label, evaluate's output); units convert as in planner.results.SCALE
POST_TRAINING_ROWS: Final = (
    ("reference_model_gib", "GiB", "Reference model (GiB)", "reference_model_bytes"),
    ("reward_model_gib", "GiB", "Reward model (GiB)", "reward_model_bytes"),
    ("value_model_gib", "GiB", "Value model (GiB)", "value_model_bytes"),
    ("kv_cache_gib", "GiB", "KV cache per generating GPU (GiB)", "kv_cache_bytes"),
    ("generation_engine_gib", "GiB", "Generation engine share (GiB)", "generation_engine_bytes"),
    ("training_phase_gib", "GiB", "Memory while training (GiB)", "training_phase_bytes"),
    ("generation_phase_gib", "GiB", "Memory while generating (GiB)", "generation_phase_bytes"),
    ("concurrent_sequences", "sequences", "Sequences in flight per engine", "concurrent_sequences"),
    ("rollout_prompts", "prompts", "Prompts per rollout step", "rollout_prompts"),
    ("n_rollouts", "steps", "Rollout steps", "n_rollouts"),
    ("generation_time_h", "h", "Generation (h)", "generation_time_s"),
    ("scoring_time_h", "h", "Scoring forwards (h)", "scoring_time_s"),
    ("weight_sync_time_h", "h", "Weight hand-over (h)", "weight_sync_time_s"),
    ("training_time_h", "h", "Training (h)", "training_time_s"),
    ("generation_frac", "fraction", "Share of time generating", "generation_frac"),
    ("post_step_time_s", "s", "Time per rollout or optimizer step (s)", "post_step_time_s"),
    ("step_generation_s", "s", "Generation per step (s)", "step_generation_s"),
    ("step_scoring_s", "s", "Scoring per step (s)", "step_scoring_s"),
    ("step_training_s", "s", "Training per step (s)", "step_training_s"),
    ("step_weight_sync_s", "s", "Weight hand-over per step (s)", "step_weight_sync_s"),
)
