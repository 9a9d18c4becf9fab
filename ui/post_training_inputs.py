"""The post-training inputs in the sidebar's training setup: the objective, and what it needs.

`Scenario.method` says how the policy's weights are trained (full, LoRA, QLoRA) and `post_training` what
they are trained for; the objective picker sits beside the method. Only the inputs an objective reads are
drawn: a reference for the objectives that have one, rollout and engine settings for PPO and GRPO, reward
and value models for the RL objectives. Every box is a `number_entry` or a `bound` picker, so a rejected
entry stays in its box with the widget's label and the allowed range beside it, like every other input.
"""

from __future__ import annotations

from typing import get_args

import streamlit as st

from planner import (
    COLOCATED_ENGINE_MEMORY_FRAC,
    DEDICATED_ENGINE_MEMORY_FRAC,
    GRPO_SAMPLES_PER_PROMPT,
    NO_REWARD_MODEL,
    ONLINE_OBJECTIVES,
    PAIRED_OBJECTIVES,
    REFERENCE_FREE_OBJECTIVES,
    Scenario,
)
from ui.data import model_names
from ui.number_entry import number_entry
from ui.state import bound, scenario

# The pickers' options are the Scenario's own choices, in its order.
OBJECTIVES = get_args(Scenario.model_fields["post_training"].annotation)
FROZEN_DTYPES = get_args(Scenario.model_fields["frozen_dtype"].annotation)
OBJECTIVE_LABELS = {
    "sft": "SFT (supervised fine-tuning)",
    "dpo": "DPO (preference pairs, reference)",
    "simpo": "SimPO (preference pairs, no reference)",
    "orpo": "ORPO (preference pairs, no reference)",
    "kto": "KTO (unpaired good/bad examples)",
    "reward_model": "Reward model (pairwise)",
    "ppo": "PPO (rollouts, reward and value models)",
    "grpo": "GRPO (rollouts, groups per prompt)",
}
OBJECTIVE_SHORT = {
    "sft": "SFT",
    "dpo": "DPO",
    "simpo": "SimPO",
    "orpo": "ORPO",
    "kto": "KTO",
    "reward_model": "reward model",
    "ppo": "PPO",
    "grpo": "GRPO",
}
REFERENCE_LABELS = {
    "auto": "auto (the objective's default)",
    "copy": "copy on the GPUs",
    "offload": "copy in CPU memory (streamed in)",
    "base": "the LoRA base, adapters off",
    "precomputed": "log-probs precomputed",
    "none": "none",
}
OBJECTIVE_LABEL = "Objective"
METHOD_LABEL = "Policy training (full / LoRA / QLoRA)"
REFERENCE_LABEL = "Reference model"
SAMPLES_LABEL = "Samples per prompt (GRPO group)"
ENGINE_SHARE_LABEL = "Engine memory share"
SAME_AS_POLICY = ""  # the Scenario's empty name: the policy's own model (PPO's reward) or its default


def render_objective_input() -> None:
    bound(
        st.selectbox,
        OBJECTIVE_LABEL,
        "post_training",
        options=list(OBJECTIVES),
        format_func=OBJECTIVE_LABELS.get,
        help="What the policy is trained for. SFT learns from examples; DPO, SimPO and ORPO from chosen and "
        "rejected responses to one prompt; KTO from single responses rated good or bad; a reward model learns "
        "to score pairs; PPO and GRPO generate their own completions every step and learn from their scores.",
    )


def render_post_training_inputs() -> None:
    """The inputs of the chosen objective, under the method's; nothing for SFT."""
    s = scenario()
    if s.post_training == "sft":
        return
    st.markdown(f"**{OBJECTIVE_SHORT[s.post_training]} settings**")
    if s.post_training not in REFERENCE_FREE_OBJECTIVES:
        bound(
            st.selectbox,
            REFERENCE_LABEL,
            "reference",
            options=list(REFERENCE_LABELS),
            format_func=REFERENCE_LABELS.get,
            help="Auto: a full copy for a fully trained policy; the base without adapters for LoRA/QLoRA (no "
            "second copy, TRL and PEFT's default). Precomputed: one forward over the data before training, no "
            "memory during it. CPU memory: the copy streams in over PCIe for each forward.",
        )
    if _has_frozen_model(s):
        bound(
            st.selectbox,
            "Frozen model dtype (reference, reward)",
            "frozen_dtype",
            options=list(FROZEN_DTYPES),
            help="Storage of the models that only run forward: 2 bytes a parameter in bf16/fp16, 1 in int8, "
            "half a byte in nf4.",
        )
    if s.post_training in ONLINE_OBJECTIVES:
        _rollout_inputs(s)
        _engine_inputs(s)
        _scorer_inputs(s)


def _has_frozen_model(s: Scenario) -> bool:
    """A reference or a reward model is held: the objectives with a reference, and the RL ones (reward)."""
    return s.post_training not in REFERENCE_FREE_OBJECTIVES or s.post_training in ONLINE_OBJECTIVES


def _rollout_inputs(s: Scenario) -> None:
    number_entry(
        "Completion tokens (generated)",
        "completion_tokens",
        placeholder=f"half of tokens per sequence ({int(s.tokens_per_example) // 2:,})",
        help="Tokens each completion generates; the prompt is tokens per sequence minus this, so it must be "
        "shorter than tokens per sequence.",
    )
    default_samples = GRPO_SAMPLES_PER_PROMPT if s.post_training == "grpo" else 1
    number_entry(
        SAMPLES_LABEL,
        "samples_per_prompt",
        placeholder=f"{default_samples} ({OBJECTIVE_SHORT[s.post_training]}'s default)",
        help="Completions generated for each prompt. GRPO compares them with each other, so it needs at least "
        "2 (TRL's num_generations defaults to 8); PPO usually samples one.",
    )
    number_entry(
        "Prompts per rollout step",
        "rollout_prompts",
        placeholder="the trainers' default batch",
        help="Prompts generated for in one rollout step, before the policy trains on the completions. "
        f"{Scenario.model_fields['rollout_prompts'].description}.",
    )
    number_entry(
        "Rollout epochs",
        "rollout_epochs",
        help="Training passes over each rollout's completions (PPO epochs); 1 in TRL, OpenRLHF and "
        "DeepSpeed-Chat by default.",
    )


def _engine_inputs(s: Scenario) -> None:
    number_entry(
        "Generation GPUs (0 = colocated)",
        "generation_gpus",
        help="0: the generation engine shares the training GPUs and takes a share of their memory. More: "
        "that many extra GPUs only generate (counted in cost, energy and failures).",
    )
    number_entry("Generation tensor parallel", "generation_tp", help="GPUs per generation engine replica.")
    default_share = DEDICATED_ENGINE_MEMORY_FRAC if s.generation_gpus else COLOCATED_ENGINE_MEMORY_FRAC
    placeholder = f"{default_share} ({'dedicated' if s.generation_gpus else 'colocated'})"
    if s.generation_engine == "eager" and not s.generation_gpus:
        placeholder = "what training leaves (eager, colocated)"
    number_entry(
        ENGINE_SHARE_LABEL,
        "generation_memory_frac",
        placeholder=placeholder,
        help="The engine's share of each generating GPU's memory, for its weights and KV cache (vLLM's "
        "gpu_memory_utilization): 0.3 when colocated (TRL's colocate default), 0.9 on GPUs of its own. An "
        "eager engine beside the trainer keeps no pool: left empty, it takes what training leaves free.",
    )
    if s.generation_gpus == 0:
        bound(
            st.checkbox,
            "Engine sleeps during training",
            "generation_sleeps",
            help="The colocated engine frees its memory while the policy trains (vLLM sleep mode), so the "
            "training phase does not hold the engine's share.",
        )
    engine_words = {"vllm": "vLLM-style (CUDA graphs)", "eager": "eager (Hugging Face generate)"}
    bound(
        st.selectbox,
        "Generation engine",
        "generation_engine",
        options=list(engine_words),
        format_func=engine_words.__getitem__,
        help="vLLM, SGLang and TensorRT-LLM replay each decode step as a CUDA graph; Hugging Face generate and "
        "DeepSpeed-Chat's hybrid engine launch every layer's kernels from the CPU each step (about 0.1 ms a "
        "layer), which small models and batches wait for.",
    )
    number_entry(
        "Decode bandwidth share",
        "generation_bandwidth_frac",
        help="Share of the GPU's memory bandwidth decoding reaches. 0.6 is a stated judgement: serving "
        "stacks reach 60-85 %, an engine embedded in a trainer sits at the low end.",
    )


def _model_options(current: str, *, with_none: bool) -> list[str]:
    """Empty, none and the presets; a stored name the presets lack (a link's) stays listed, so the picker shows
    what the plan holds and the page says why it cannot be looked up."""
    options = [SAME_AS_POLICY, *([NO_REWARD_MODEL] if with_none else []), *model_names()]
    return options if current in options else [*options, current]


def _scorer_inputs(s: Scenario) -> None:
    """The reward model (PPO, and GRPO when it is not rule-based) and PPO's value model."""
    empty_reward = "same as the policy" if s.post_training == "ppo" else "none (rule-based, GRPO's default)"
    reward_words = {SAME_AS_POLICY: empty_reward, NO_REWARD_MODEL: "none (rule-based)"}
    bound(
        st.selectbox,
        "Reward model",
        "reward_model",
        options=_model_options(s.reward_model, with_none=True),
        format_func=lambda name: reward_words.get(name, name),
        help="The frozen model that scores each completion, held on the training GPUs at the frozen dtype; "
        "none for a rule or a verifier (maths, code).",
    )
    if s.post_training != "ppo":
        return
    value_words = {SAME_AS_POLICY: "same as the reward model"}  # PPO always trains one: no "none"
    bound(
        st.selectbox,
        "Value model (critic)",
        "value_model",
        options=_model_options(s.value_model, with_none=False),
        format_func=lambda name: value_words.get(name, name),
        help="PPO trains a value model beside the policy, like the policy (its states and its backward). "
        "Empty: the reward model's size, or the policy's when the reward is rule-based.",
    )


def dataset_words(objective: str) -> tuple[str, str]:
    """(examples label, tokens-per-example label) for the objective: pairs or prompts where they are counted."""
    if objective in PAIRED_OBJECTIVES:
        return "Preference pairs", "Tokens per sequence (prompt + one response)"
    if objective in ONLINE_OBJECTIVES:
        return "Prompts", "Tokens per sequence (prompt + completion)"
    if objective == "kto":
        return "Rated examples (good or bad)", "Tokens per example"
    return "Training examples", "Tokens per example"
