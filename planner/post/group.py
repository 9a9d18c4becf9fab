"""The post-training group of `planner.columns.Columns`; `planner.post.columns` builds it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Column = float | npt.NDArray[np.float64]  # as in planner.columns (which imports this module)


@dataclass(frozen=True)
class PostTrainingColumns:
    """Flags are 1.0/0.0; `*_tokens_per_token` count a model's forward tokens per token the policy trains on."""

    objective: Column  # PostTraining code
    paired: Column  # flag: chosen and rejected sequences of each pair in one micro-batch
    n_policy_seqs_per_example: Column  # sequences the policy trains on per dataset example and epoch
    policy_forward_tokens_per_token: (
        Column  # policy forwards without backward (KTO's KL batch, old log-probs)
    )
    n_reference_active_params: Column  # what the reference's forward runs through (0: no reference forward)
    n_reference_gpu_params: (
        Column  # reference parameters held on the GPUs (0: base, precomputed, offloaded, none)
    )
    n_reference_host_params: Column  # an offloaded reference, streamed in for its forward
    reference_tokens_per_token: Column
    frozen_bytes_per_param: Column  # the reference and reward models' storage dtype
    n_reward_params: Column  # PPO's reward model (0: none, a rule-based reward)
    reward_tokens_per_token: Column
    n_value_params: Column  # PPO's value (critic) model (0: none), trained like the policy
    value_tokens_per_token: Column  # its forward before the update (values for the advantages)
    # the value model's shape, for its activations (the policy's when it is the same model or has no shape)
    n_value_embedding_params: Column
    n_value_layers: Column
    value_hidden_size: Column
    n_value_heads: Column
    n_value_kv_heads: Column
    value_head_dim: Column
    value_ffn_hidden_size: Column
    online: Column  # flag: PPO/GRPO, completions generated every rollout step
    prompt_tokens: Column  # per sequence
    completion_tokens: Column  # per sequence
    n_samples_per_prompt: Column
    n_rollout_prompts: Column  # prompts per rollout step (NaN: one optimizer step's sequences / samples)
    n_generation_gpus: Column  # GPUs that only generate (0: the training GPUs generate)
    generation_tp: Column
    generation_memory_frac: Column  # engine's share of each generating GPU's memory
    generation_sleeps: Column  # flag
    generation_bandwidth_frac: Column
    layer_launch_s: Column  # CPU launch time per layer and decode step (0: CUDA-graph engines)
