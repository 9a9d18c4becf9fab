"""What the Memory and Compute pages add for a post-training plan, from the Estimate's fields.

No arithmetic beyond sums of what the estimate reports: the figures come from `planner.post`.
"""

from __future__ import annotations

import streamlit as st

from planner import Estimate, Scenario, plural, step_timeline
from ui import format as fmt
from ui import post_charts
from ui.blocks import breakdown_table
from ui.methods_link import methods_link
from ui.post_training_inputs import OBJECTIVE_SHORT
from ui.safe_text import plain

GENERATION_PHASE = "generation (rollouts)"  # planner.formulas.memory.recipes.PEAK_PHASE_NAMES[2]
LOADING_PHASE = "model loading (before sharding)"  # PEAK_PHASE_NAMES[3]: the whole model on each GPU first


def is_post_training(s: Scenario) -> bool:
    return s.post_training != "sft"


def is_online(est: Estimate) -> bool:
    """Rollouts are generated (PPO, GRPO): their figures are then shown."""
    return est.n_rollouts > 0


def peak_sentence(est: Estimate) -> str:
    """Which phase peaks, training or generation, and by how much (PPO/GRPO with a colocated engine)."""
    if not is_online(est):
        return ""
    if est.generation_phase_gib <= 0:
        return (
            f"Generation runs on GPUs of its own, so the training GPUs peak while training "
            f"({fmt.gib(est.training_phase_gib)}); each generation GPU holds the engine's "
            f"{fmt.gib(est.generation_engine_gib)}."
        )
    phases = {GENERATION_PHASE: "generation", LOADING_PHASE: "model-loading"}
    which = phases.get(est.peak_phase or "", "training")
    return (
        f"The peak is in the {which} phase: {fmt.gib(est.training_phase_gib)} while training, "
        f"{fmt.gib(est.generation_phase_gib)} while the colocated engine generates"
        + (
            f", {fmt.gib(est.loading_peak_gib)} while the whole model loads"
            if which == "model-loading"
            else ""
        )
        + "."
    )


def render_memory_notes(est: Estimate, s: Scenario) -> None:
    """Under the Memory page's bar: which phase peaks, and where the post-training memory is explained."""
    if not is_post_training(s):
        return
    sentence = peak_sentence(est)
    if sentence:
        st.markdown(plain(sentence))
    methods_link("post_training", label=f"How {OBJECTIVE_SHORT[s.post_training]} memory is counted")


def memory_rows(est: Estimate) -> list[tuple[str, str, str]]:
    """Breakdown rows of the rollout memory and the two phases (none for offline objectives)."""
    if not is_online(est):
        return []
    colocated = est.generation_phase_gib > 0
    where = "per training GPU (colocated)" if colocated else "per generation GPU"
    return [
        (
            "Generation engine share",
            f"{where}: engine memory share × VRAM, its 16-bit weights and KV cache",
            fmt.gib(est.generation_engine_gib),
        ),
        (
            "Of which KV cache",
            f"layers × 2 × KV heads × head dim (latent attention: its latent) × 2 B × (prompt + completion) × "
            f"{fmt.count(est.concurrent_sequences)} sequences in flight",
            fmt.gib(est.kv_cache_gib),
        ),
        (
            "Memory while training",
            "policy (and value model) step, frozen models, engine share unless it sleeps",
            fmt.gib(est.training_phase_gib),
        ),
        (
            "Memory while generating",
            "kept states, frozen models and the engine share (0 when generation has its own GPUs)",
            fmt.gib(est.generation_phase_gib),
        ),
    ]


def render_step_time(est: Estimate, s: Scenario) -> None:
    """The Compute page's post-training section: the run's time by part and the timeline of one step."""
    if not is_post_training(s):
        return
    name = OBJECTIVE_SHORT[s.post_training]
    st.subheader(f"{name}: time by part")
    methods_link("post_training", label=f"How {name} time is computed")
    first, second, third = st.columns(3)
    first.metric("Generation time", fmt.hours(est.generation_time_h))
    second.metric("Training time", fmt.hours(est.training_time_h))
    third.metric("Share of time generating", f"{est.generation_frac:.1%}")
    step = "rollout step" if is_online(est) else "optimizer step"
    st.vega_lite_chart(spec=post_charts.step_timeline(step_timeline(est)), width="stretch")
    st.caption(
        f"One {step} of {est.post_step_time_s:,.3f} s, its parts one after the other (the trainer waits for "
        "the rollout and the engine for the new weights)."
        + (
            f" {plain(plural(round(est.n_rollouts), 'rollout step'))} of {plain(plural(round(est.rollout_prompts), 'prompt'))} each."
            if is_online(est)
            else ""
        )
    )
    breakdown_table(
        [
            (
                "Generation",
                "prefill at the compute rate + decode bound by memory bandwidth, per rollout",
                fmt.hours(est.generation_time_h),
            ),
            (
                "Scoring forwards",
                "reference, reward and value forwards, 2 × parameters per token each",
                fmt.hours(est.scoring_time_h),
            ),
            (
                "Training",
                "the policy's (and value model's) forward and backward",
                fmt.hours(est.training_time_h),
            ),
            (
                "Weight hand-over",
                "16-bit policy weights to each engine after every update",
                fmt.hours(est.weight_sync_time_h),
            ),
        ]
    )
    if is_online(est) and est.concurrent_sequences < 1:
        st.warning(
            plain(
                "The generation engine's memory share cannot hold one sequence after its weights: raise the "
                "engine memory share or the generation tensor parallel. Generation is timed at one sequence."
            )
        )
