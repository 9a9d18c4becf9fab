"""The post-training column group: what `planner.post.step` reads, built once per scenario.

Every default an objective implies is decided here, in one place (the inputs' ranges and reasons are in
`planner.inputs.post_training`): which models are on the GPUs, how many tokens each of them runs a forward
over per token the policy trains on, and the rollout's shape. Supervised fine-tuning gets the neutral
values (no other model, nothing generated, one sequence per example), so its figures are unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.catalogue.catalog import Catalogs
from planner.errors import PlannerError
from planner.formulas.memory.recipes import PostTraining
from planner.inputs import post_training as pt
from planner.inputs.scenario import Scenario
from planner.model.architecture import count_params
from planner.model.shape import ModelShape
from planner.post.group import PostTrainingColumns


def aux_model(field: str, name: str, policy: ModelShape | None, cats: Catalogs) -> ModelShape | str | None:
    """A reward or value model's shape: the policy's for an empty name, "none" for none, else the preset's."""
    if name == "":
        return policy
    if name.lower() == pt.NO_REWARD_MODEL:
        return pt.NO_REWARD_MODEL
    try:
        return cats.model(name)
    except ValueError as err:
        raise PlannerError(field, str(err), value=name, allowed="a model preset name or none") from None


def _params(model: ModelShape | str | None, policy_params: float) -> float:
    if isinstance(model, str):
        return 0.0
    return policy_params if model is None else float(count_params(model).total)


def _value_shape(value: ModelShape | str | None, policy: ModelShape | None) -> dict[str, float]:
    """The value model's width and depth (the policy's where it has none of its own)."""
    shape = value if isinstance(value, ModelShape) else policy
    if shape is None:  # a bare parameter count: activations are not modelled (has_shape = 0)
        return dict.fromkeys(_VALUE_SHAPE_FIELDS, 1.0)
    counts = count_params(shape)
    return {
        "n_value_embedding_params": float(counts.embedding + counts.position),
        "n_value_layers": float(shape.n_layers),
        "value_hidden_size": float(shape.hidden_size),
        "n_value_heads": float(shape.n_heads),
        "n_value_kv_heads": float(shape.n_kv_heads),
        "value_head_dim": float(shape.head_dim),
        "value_ffn_hidden_size": float(shape.ffn_hidden),
    }


_VALUE_SHAPE_FIELDS = (
    "n_value_embedding_params", "n_value_layers", "value_hidden_size", "n_value_heads", "n_value_kv_heads",
    "value_head_dim", "value_ffn_hidden_size",
)  # fmt: skip


def _reference(s: Scenario) -> str:
    """The reference handling: the objective's default for "auto"."""
    if s.reference != "auto":
        return s.reference
    if s.post_training in pt.REFERENCE_FREE:
        return "none"
    return "copy" if s.method == "full" else "base"


def _rollout_shape(s: Scenario) -> tuple[float, float, float]:
    """(prompt tokens, completion tokens, samples per prompt) of an online objective; SFT's neutral values."""
    if s.post_training not in pt.ONLINE:
        return s.tokens_per_example, 0.0, 1.0
    completion = s.completion_tokens if s.completion_tokens is not None else s.tokens_per_example / 2
    default_samples = pt.GRPO_SAMPLES_PER_PROMPT if s.post_training == "grpo" else 1
    samples = s.samples_per_prompt if s.samples_per_prompt is not None else default_samples
    return s.tokens_per_example - completion, float(completion), float(samples)


def post_training_columns(
    s: Scenario, shape: ModelShape | None, policy_params: float, policy_active_params: float, cats: Catalogs
) -> PostTrainingColumns:
    objective = s.post_training
    online = objective in pt.ONLINE
    prompt, completion, samples = _rollout_shape(s)
    # frozen forwards run once per rollout, training rollout_epochs times
    per_rollout = 1.0 / s.rollout_epochs
    paired = objective in pt.PAIRED
    reference = _reference(s)
    ref_tokens = {"dpo": 1.0, "kto": 2.0, "ppo": per_rollout, "grpo": per_rollout}.get(objective, 0.0)
    if reference == "precomputed":  # one forward over the data before training (every epoch reuses it)
        ref_tokens = ref_tokens / s.epochs
    if reference == "none":
        ref_tokens = 0.0
    policy_extra = {"kto": 1.0, "ppo": per_rollout}.get(objective, 0.0)
    if objective == "grpo" and s.rollout_epochs > 1:  # old log-probs are needed once a rollout is reused
        policy_extra = per_rollout
    reward = (
        _params(aux_model("reward_model", _reward_name(s), shape, cats), policy_params) if online else 0.0
    )
    # the value model starts from the reward model (InstructGPT, DeepSpeed-Chat); beside a rule-based reward,
    # from the policy
    value_name = s.value_model or ("" if s.reward_model.lower() == pt.NO_REWARD_MODEL else s.reward_model)
    ppo = objective == "ppo"
    value_shape = aux_model("value_model", value_name, shape, cats) if ppo else None
    value = _params(value_shape, policy_params) if ppo else 0.0
    if ppo and value == 0.0:
        raise PlannerError(
            "value_model", "PPO trains a value model", value=value_name, allowed="a model preset"
        )
    return PostTrainingColumns(
        objective=float(PostTraining.of(objective)),
        paired=float(paired),
        n_policy_seqs_per_example=2.0 if paired else (samples * s.rollout_epochs if online else 1.0),
        policy_forward_tokens_per_token=policy_extra,
        n_reference_active_params=policy_active_params if ref_tokens > 0 else 0.0,
        n_reference_gpu_params=policy_params if reference == "copy" else 0.0,
        n_reference_host_params=policy_params if reference == "offload" else 0.0,
        reference_tokens_per_token=ref_tokens,
        frozen_bytes_per_param=pt.FROZEN_DTYPE_BYTES[s.frozen_dtype],
        n_reward_params=reward,
        reward_tokens_per_token=per_rollout if reward > 0 else 0.0,
        n_value_params=value,
        value_tokens_per_token=per_rollout if ppo else 0.0,
        **_value_shape(value_shape, shape),
        online=float(online),
        prompt_tokens=float(prompt),
        completion_tokens=completion,
        n_samples_per_prompt=samples,
        n_rollout_prompts=rollout_prompts(s),
        n_generation_gpus=float(s.generation_gpus if online else 0),
        generation_tp=float(s.generation_tp),
        generation_memory_frac=engine_memory_frac(
            s.generation_memory_frac, s.generation_gpus, s.generation_engine == "eager"
        ),
        generation_sleeps=float(s.generation_sleeps),
        generation_bandwidth_frac=s.generation_bandwidth_frac,
        layer_launch_s=pt.EAGER_DECODE_S_PER_LAYER if s.generation_engine == "eager" else 0.0,
    )


def rollout_prompts(s: Scenario) -> float:
    """Prompts per rollout step: the one given, else the trainers' default batch (`DEFAULT_ROLLOUT_PROMPTS`), no
    more than the prompts there are. NaN (one optimizer step's sequences) is left to callers that build the
    column themselves."""
    if s.rollout_prompts is not None:
        return float(s.rollout_prompts)
    return float(min(pt.DEFAULT_ROLLOUT_PROMPTS, max(1, math.ceil(s.examples))))


def _reward_name(s: Scenario) -> str:
    """PPO scores with a reward model (the policy's size unless named); GRPO with a rule unless one is named."""
    if s.post_training == "grpo" and s.reward_model == "":
        return pt.NO_REWARD_MODEL
    return s.reward_model


def engine_memory_frac(given: float | None, generation_gpus: Any, eager: bool = False) -> Any:
    """The engine's share of each generating GPU's memory: the one given, else the default of a colocated
    or a dedicated engine (a float, or an array for the plan search's generation counts). A colocated eager
    engine keeps no pool (NaN, `planner.post.phases.without_pool`): it grows into what training leaves."""
    dedicated = np.asarray(generation_gpus, dtype=float) > 0
    colocated = pt.EAGER_COLOCATED_ENGINE_MEMORY_FRAC if eager else pt.COLOCATED_ENGINE_MEMORY_FRAC
    default = np.where(dedicated, pt.DEDICATED_ENGINE_MEMORY_FRAC, colocated)
    share = default if given is None else np.full(dedicated.shape, given)
    return float(share) if share.ndim == 0 else share
