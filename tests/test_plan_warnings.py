"""A first plan's defaults and the warnings about plans that waste their GPUs.

Shapes: Llama 3.1 8B (data/models.csv, 8.03 B parameters) on H100 SXM (data/gpus.csv).
"""

from __future__ import annotations

import pytest

from planner import (
    Scenario,
    checkpoint_words,
    default_catalogs,
    estimate,
    estimate_resolved,
    human_duration,
    plan_warnings,
    plural,
    resolve,
)
from planner.decide.plan_words import COMM_BOUND_FRAC, FEW_ROLLOUT_PROMPTS
from planner.inputs.post_training import DEFAULT_ROLLOUT_PROMPTS

CATS = default_catalogs()

# Published GRPO wall clock of a 7-8 B model, per prompt, brought to 30,000 prompts (one pass) on 8 H100:
# verl's Qwen2.5-Math-7B DAPO run, colocated and synchronous on 32 H20 (verl docs/advance/fully_async.md at
# b178a3cd56f5, row VERL-03 of data/calibration.csv): 400 steps of 512 prompts × 16 samples in 3 d 17 h (89.1 h),
# a step being 357 s generating, 108 s old log-probs, 270 s updating and 55 s else. On H100 the two compute-bound
# phases take 148 / 989.5 of the time (dense bf16 peaks, data/gpus.csv) and decoding 4.0 / 3.35 of it (HBM
# bandwidth): 539 s instead of 790 s a step, so 60.7 h on 32 GPUs for 204,800 prompts, 0.0095 GPU-hours a
# prompt, 35.6 h for 30,000 prompts on 8 GPUs. That run decodes 16 completions of up to 28 K tokens a prompt;
# the default plan decodes 8 of 500, so its time belongs below that (the high end) and above the same figure
# scaled to its generated tokens from a mean completion of at most 6,000 tokens (8 × 500 / (16 × 6,000) of it:
# 1.5 h, the low end). Oat-Zero-7B's whole Dr. GRPO run, 27 h on 8 A100 (sail-sg/understand-r1-zero README at
# d0d051a7e8d5), sits inside the span too, though its prompt count is not published.
PUBLISHED_GRPO_8_H100_30K_PROMPTS_H = (1.5, 35.6)


def grpo(**changes: object) -> Scenario:
    base: dict[str, object] = dict(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8, post_training="grpo")
    return Scenario(**{**base, **changes})  # type: ignore[arg-type]


def test_default_grpo_plan_on_8_h100_takes_as_long_as_published_runs_of_its_size() -> None:
    est = estimate(grpo(examples=30_000, epochs=1), CATS)
    low, high = PUBLISHED_GRPO_8_H100_30K_PROMPTS_H
    assert low <= est.wall_clock_h <= high
    # the realistic batch: 1,024 prompts × 8 samples per rollout step, generation no longer the whole run
    assert est.rollout_prompts == DEFAULT_ROLLOUT_PROMPTS == 1024
    assert est.generation_frac < 0.6


def test_one_prompt_per_rollout_step_is_what_made_grpo_read_days() -> None:
    # the former default at micro-batch 1 on 8 GPUs: 8 sequences a step / 8 samples = 1 prompt a step
    one = estimate(grpo(examples=30_000, rollout_prompts=1), CATS)
    assert one.wall_clock_h > 4 * estimate(grpo(examples=30_000), CATS).wall_clock_h
    assert one.generation_frac > 0.9


def test_default_rollout_batch_is_never_more_prompts_than_there_are() -> None:
    assert estimate(grpo(examples=300), CATS).rollout_prompts == 300
    assert estimate(grpo(examples=300, rollout_prompts=64), CATS).rollout_prompts == 64


def warnings_of(scenario: Scenario) -> dict[str, str]:
    resolved = resolve(scenario, CATS)
    return {w.kind: w.message for w in plan_warnings(resolved, estimate_resolved(resolved))}


def test_communication_bound_plan_is_named_with_its_share_and_the_remedy() -> None:
    # micro-batch 1 under ZeRO-3 on 64 GPUs in 8 nodes: each step gathers the 16 GB of bf16 weights twice and
    # reduces the gradients over the network for only 1,024 tokens of compute per GPU; most of it stays exposed
    scenario = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=64, micro_batch=1)
    est = estimate(scenario, CATS)
    share = (est.exposed_pipelined_comm_s + est.exposed_data_parallel_comm_s) / est.step_time_s
    assert share >= COMM_BOUND_FRAC
    message = warnings_of(scenario)["communication"]
    assert message == f"Communication is {share:.0%} of the step: raise the micro-batch or use fewer GPUs."
    # eight GPUs in one node at micro-batch 1: the gathers hide behind the compute beside them
    assert "communication" not in warnings_of(Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=1))


def test_few_prompts_per_rollout_step_are_named() -> None:
    message = warnings_of(grpo(rollout_prompts=4))["few_prompts"]
    assert message.startswith("Each rollout step generates for only 4 prompts")
    assert "few_prompts" not in warnings_of(grpo(rollout_prompts=FEW_ROLLOUT_PROMPTS))
    assert "few_prompts" not in warnings_of(Scenario(model="Llama 3.1 8B", rollout_prompts=4))  # SFT
    assert "few_prompts" not in warnings_of(grpo(examples=20))  # every prompt of the run in one step


def test_more_gpus_that_make_a_plan_slower_are_named_with_both_times() -> None:
    # 1,000 examples of 1,000 tokens on 16 GPUs in two nodes at micro-batch 1: each step is mostly weight traffic
    # over the network (1.1 min on the 8 GPUs of one node, 4.0 min on 16)
    slow = Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=16, micro_batch=1, examples=1000)
    message = warnings_of(slow)["more_gpus_slower"]
    assert message.startswith("More GPUs make this plan slower: 8 GPUs take ")
    assert message.endswith(f"16 GPUs take {human_duration(estimate(slow, CATS).wall_clock_h)}.")
    assert "more_gpus_slower" not in warnings_of(Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=8))


@pytest.mark.parametrize(
    ("hours", "text"),
    [
        (0.0001, "0.36 s"),
        (20 / 60, "20 min"),
        (5.44, "5.4 h"),
        (47.0, "47 h"),
        (47.99, "2.0 days"),
        (24 * 3.21, "3.2 days"),
    ],
)
def test_one_duration_format(hours: float, text: str) -> None:
    assert human_duration(hours) == text


def test_plurals_agree_with_their_count() -> None:
    assert plural(1, "GPU") == "1 GPU"
    assert plural(8, "GPU") == "8 GPUs"
    assert plural(1.5, "day") == "1.5 days"
    assert plural(1, "checkpoint") == "1 checkpoint"


def test_a_run_shorter_than_the_checkpoint_interval_needs_no_checkpoint():
    short = estimate(Scenario(model="Llama 3.1 8B", n_gpus=8), CATS)  # 32 min; Daly's interval is hours
    assert short.checkpoint_interval_min / 60 > short.wall_clock_h
    assert checkpoint_words(short).startswith("no checkpoint needed: the run ends (32 min) before the first")
    long = estimate(Scenario(model="Llama 3.1 70B", n_gpus=64, examples=3_000_000), CATS)
    assert checkpoint_words(long) == (
        f"a {human_duration(long.checkpoint_write_s / 3600)} checkpoint write every "
        f"{human_duration(long.checkpoint_interval_min / 60)}"
    )
