"""The post-training inputs of a Scenario: the objective and what it needs besides the policy.

`Scenario.method` stays how the policy's weights are trained (full, LoRA, QLoRA); `post_training` is what
it is trained for. The defaults describe supervised fine-tuning, so every plan saved before this existed
reads the same. The figures these inputs drive live in `planner.formulas.post_training.side_models` (memory and
scoring) and `planner.formulas.post_training.generation` (rollouts).

Where the objective's own default applies (`None` or "auto"), `planner.post.columns` decides it in one place
for every surface.
"""

from __future__ import annotations

from typing import Any, Literal

from planner.errors import PlannerError

PostTraining = Literal["sft", "dpo", "simpo", "orpo", "kto", "reward_model", "ppo", "grpo"]
POST_TRAININGS: tuple[str, ...] = ("sft", "dpo", "simpo", "orpo", "kto", "reward_model", "ppo", "grpo")
POLICY_METHODS: tuple[str, ...] = ("full", "lora", "qlora")
# copy: a frozen full copy on the GPUs; offload: the same copy in host memory, streamed in for its forward;
# base: a LoRA/QLoRA policy with its adapters switched off (TRL and PEFT's default, no second copy);
# precomputed: reference log-probabilities computed once before training (TRL precompute_ref_log_probs);
# none: no reference (SimPO, ORPO, a reward model, GRPO with no KL term).
Reference = Literal["auto", "copy", "offload", "base", "precomputed", "none"]
FrozenDtype = Literal["bf16", "fp16", "fp32", "int8", "nf4"]
# vllm: an engine that replays each decode step as a CUDA graph (vLLM, SGLang, TensorRT-LLM), so the CPU
# launches nothing per layer; eager: PyTorch eager generation (Hugging Face generate, DeepSpeed-Chat's hybrid
# engine, OpenRLHF without vLLM), which launches every layer's kernels from the CPU each step.
GenerationEngine = Literal["vllm", "eager"]
# Eager launch cost per layer and decode step: one decode step of Llama 3.1 8B on an H100 SXM took 8.4 ms eager
# and 5.1 ms as a CUDA graph (cloudai.pt, "CUDA Graphs + torch.compile: 1.65x LLM Decode Speedup"): 3.3 ms over
# its 32 layers = 103 µs per layer, in line with the 5-25 µs of CPU dispatch per PyTorch op (about ten ops a
# layer) that PyTorch's dispatch path costs.
EAGER_DECODE_S_PER_LAYER = 3.3e-3 / 32
FROZEN_DTYPE_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "int8": 1.0, "nf4": 0.5}
NO_REWARD_MODEL = "none"  # a rule-based or verifiable reward (GRPO on maths): no reward model on the GPUs

PAIRED = ("dpo", "simpo", "orpo", "reward_model")  # chosen and rejected sequences of each pair in one step
REFERENCE_FREE = ("sft", "simpo", "orpo", "reward_model")
ONLINE = ("ppo", "grpo")  # generate their own completions every step

# TRL GRPOConfig num_generations defaults to 8 completions per prompt (trl/trainer/grpo_config.py at commit
# 006d32c9bf5d); Oat's Dr. GRPO recipe samples 8 too (sail-sg/understand-r1-zero examples/qwen2.5-math-7b.sh at
# f6df97e38ef1, --num_samples 8). PPO samples one.
GRPO_SAMPLES_PER_PROMPT = 8
# Prompts per rollout step when none is given: verl's ppo_trainer.yaml sets data.train_batch_size to 1024 prompts
# (volcengine/verl at commit 008db456bf61), the batch every rollout step generates for, for PPO and GRPO alike;
# a run with fewer prompts than that generates for all of them at once. Tying the rollout to one optimizer
# step instead (TRL's generation_batch_size rule) gave one prompt per rollout step at the planner's default
# micro-batch: a decode that streams every weight once per token for eight sequences, days for a 30k-prompt run.
DEFAULT_ROLLOUT_PROMPTS = 1024
# vLLM's EngineArgs gpu_memory_utilization defaults to 0.9 for an engine that has its GPUs to itself; TRL's
# colocate mode defaults vllm_gpu_memory_utilization to 0.3 so that training keeps the rest (TRL docs,
# "vLLM integration", colocate mode).
DEDICATED_ENGINE_MEMORY_FRAC = 0.9
COLOCATED_ENGINE_MEMORY_FRAC = 0.3
# An eager engine beside the trainer (DeepSpeed-Chat's hybrid engine, Hugging Face generate in TRL or OpenRLHF
# without vLLM) reserves no pool: its KV cache is allocated as the sequences grow, in whatever memory the
# trainer's kept states leave. Hugging Face generate drops the cache when it returns; DeepSpeed-Chat's hybrid
# engine frees its inference workspace for training with `--release_inference_cache`, which this rule assumes
# (without it the workspace stays through training). NaN marks "no fixed share" (planner.post.phases.without_pool).
EAGER_COLOCATED_ENGINE_MEMORY_FRAC = float("nan")
# Decode streams the weights and KV cache from GPU memory. Serving stacks reach 60-85 % of the datasheet
# bandwidth on large batches; a training framework's embedded engine (CUDA graphs off, weights resharded
# every step) sits at the low end, so 0.6 is the stated judgement, an input for anyone who measured theirs.
GENERATION_BANDWIDTH_FRAC = 0.6


FIELDS: dict[str, dict[str, Any]] = {
    "post_training": {"default": "sft", "description": "objective: SFT, preference (DPO ...) or RL"},
    # 1-2^21: a completion is at most a whole sequence (Scenario.seq_len's bound)
    "completion_tokens": {
        "default": None,
        "ge": 1,
        "le": 2**21,
        "description": "generated tokens per completion (PPO/GRPO); empty = half of tokens per example",
    },
    # 1-1024: GRPO groups of 4-64 are usual (DeepSeekMath: 64); 1024 is a generous bound
    "samples_per_prompt": {
        "default": None,
        "ge": 1,
        "le": 1024,
        "description": "completions per prompt (GRPO group size); empty = 8 for GRPO, 1 for PPO",
    },
    "rollout_prompts": {
        "default": None,
        "ge": 1,
        "le": 10**7,
        "description": "prompts per rollout step; empty = 1024 (verl's train_batch_size), at most the prompts",
    },
    # 1-100: PPO epochs over one rollout are 1-4 in practice (DeepSpeed-Chat ppo_epochs 1, OpenRLHF max_epochs 1)
    "rollout_epochs": {"default": 1, "ge": 1, "le": 100, "description": "training passes over each rollout"},
    "generation_gpus": {
        "default": 0,
        "ge": 0,
        "le": 1_000_000,
        "description": "GPUs that only generate, besides the training GPUs; 0 = colocated",
    },
    "generation_tp": {"default": 1, "ge": 1, "le": 1024, "description": "generation engine tensor parallel"},
    "generation_memory_frac": {
        "default": None,
        "ge": 0.01,
        "le": 1,
        "description": (
            "engine's share of GPU memory (vLLM gpu_memory_utilization); empty = 0.3 colocated (an eager "
            "engine: what training leaves) / 0.9 on GPUs of its own"
        ),
    },
    "generation_sleeps": {
        "default": False,
        "description": "colocated engine frees its memory while training runs (vLLM sleep mode)",
    },
    "generation_bandwidth_frac": {
        "default": GENERATION_BANDWIDTH_FRAC,
        "ge": 0.01,
        "le": 1,
        "description": "share of GPU memory bandwidth decoding reaches",
    },
    "generation_engine": {
        "default": "vllm",
        "description": "vllm (CUDA-graph decode) or eager (HF generate)",
    },
    "reference": {"default": "auto", "description": "how the frozen reference model is held"},
    "frozen_dtype": {"default": "bf16", "description": "storage dtype of the reference and reward models"},
    "reward_model": {
        "default": "",
        "max_length": 120,
        "description": "PPO reward model preset; empty = the policy's model, none = rule-based",
    },
    "value_model": {
        "default": "",
        "max_length": 120,
        "description": "PPO value (critic) model preset; empty = the reward model's",
    },
}


def objective_in_method(data: Any) -> Any:
    """`method: dpo` (the CLI's `--method dpo`, a case file's method column) names the objective: it becomes
    `post_training`, and the policy is trained fully unless `post_training` was given too (then `method` is
    refused by its own validation, naming both)."""
    if not isinstance(data, dict) or not isinstance(data.get("method"), str):
        return data
    named = data["method"].strip().lower()
    if named not in POST_TRAININGS or data.get("post_training") not in (None, named):
        return data
    return {**data, "post_training": named, "method": "full"}


def check_post_training(s: Any) -> None:
    """Cross-field rules of the post-training inputs (raise `PlannerError` naming the field)."""
    online = s.post_training in ONLINE
    if s.post_training == "grpo" and s.samples_per_prompt == 1:
        raise PlannerError(
            "samples_per_prompt",
            "GRPO compares completions of the same prompt, so it needs at least 2 per prompt",
            value=1,
            allowed="2-1024",
        )
    if online and s.completion_tokens is not None and s.completion_tokens >= s.tokens_per_example:
        raise PlannerError(
            "completion_tokens",
            "must be shorter than tokens per example (prompt + completion)",
            value=s.completion_tokens,
            allowed=f"1-{max(1, int(s.tokens_per_example) - 1)}",
            related=("tokens_per_example",),
        )
    if s.reference == "base" and s.method == "full":
        raise PlannerError(
            "reference",
            "'base' means the LoRA policy with its adapters off; a fully trained policy has no frozen base",
            value="base",
            allowed="auto, copy, offload, precomputed or none",
            related=("method",),
        )
    if s.post_training in REFERENCE_FREE and s.reference not in ("auto", "none"):
        raise PlannerError(
            "reference",
            f"{s.post_training} trains without a reference model",
            value=s.reference,
            allowed="auto or none",
            related=("post_training",),
        )
