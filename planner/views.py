"""Estimate figures reshaped into small tables for charts and breakdowns (no new arithmetic here)."""

from __future__ import annotations

import numpy as np
import polars as pl

from planner.formulas.energy.footprint import co2e_kg
from planner.results import Estimate


def memory_components(est: Estimate) -> pl.DataFrame:
    """Per-GPU memory components at the peak, in GiB, in stacking order."""
    rows = [
        ("Weights", "parameters held on this GPU at their storage precision", est.weights_gib),
        ("Gradients", "one per trainable parameter (sharded by ZeRO-2/3)", est.gradients_gib),
        ("Optimizer states", "e.g. AdamW's two fp32 moments (sharded by ZeRO-1+)", est.optimizer_gib),
        ("fp32 master copy", "mixed precision keeps fp32 weights for the update", est.master_gib),
        ("Activations", "saved for the backward pass (Korthikanti et al. 2022)", est.activations_gib),
        ("Logits and loss", "sequence × micro-batch × vocabulary in fp32, and its gradient", est.logits_gib),
        ("ZeRO-3 gathered layers", "prefetched full layers during forward/backward", est.prefetch_gib),
        (
            "fp32 gradient copy",
            "read by the master-weight update at the optimizer step",
            est.optimizer_step_temp_gib,
        ),
        ("Framework overhead", "CUDA context, cuBLAS/NCCL workspaces", est.overhead_gib),
        ("Allocator fragmentation", "caching-allocator slack over allocated bytes", est.fragmentation_gib),
        *_post_training_components(est),
        *_multimodal_components(est),
    ]
    kept = [(name, how, value) for name, how, value in rows if value is not None]
    return pl.DataFrame(
        {
            "component": [r[0] for r in kept],
            "how": [r[1] for r in kept],
            "gib": [float(r[2]) for r in kept],
            "order": list(range(len(kept))),
            "label": ["per GPU"] * len(kept),
        }
    )


def _multimodal_components(est: Estimate) -> list[tuple[str, str, float | None]]:
    """The parts beside a vision-language or diffusion model's main transformer, where they hold memory."""
    rows = [
        (
            "Vision encoder + projector",
            "frozen weights; trained ones with gradients, states, activations",
            est.vision_encoder_gib,
        ),
        ("Text encoders", "resident caption encoders (T5, CLIP) in bf16", est.text_encoders_gib),
        ("VAE", "the image autoencoder in bf16", est.vae_gib),
    ]
    return [row for row in rows if row[2]]


def _post_training_components(est: Estimate) -> list[tuple[str, str, float | None]]:
    """The models beside the policy and a colocated engine, where the plan has them: 0 GiB rows
    are left out, so a supervised plan's bar is the one it always was."""
    colocated = est.generation_phase_gib > 0  # 0 when generation has GPUs of its own, or nothing generates
    rows = [
        (
            "Reference model",
            "frozen copy at the frozen dtype, split like the policy",
            est.reference_model_gib,
        ),
        ("Reward model", "frozen, at the frozen dtype, split like the policy", est.reward_model_gib),
        ("Value model (critic)", "its weights, optimizer states and master copy", est.value_model_gib),
        (
            "Generation engine (colocated)",
            "engine memory share × VRAM: its 16-bit weights and KV cache",
            est.generation_engine_gib if colocated else 0.0,
        ),
    ]
    return [row for row in rows if row[2] > 0]


def step_timeline(est: Estimate) -> pl.DataFrame:
    """One post-training step by part, in the order they run (generate, score, train, hand the weights over),
    with each part's start, for a one-bar timeline; every part is kept, 0 s ones too, so the chart's legend
    names all four."""
    parts = ("Generation", "Scoring (frozen forwards)", "Training", "Weight hand-over")
    seconds = [est.step_generation_s, est.step_scoring_s, est.step_training_s, est.step_weight_sync_s]
    starts = np.cumsum([0.0, *seconds[:-1]])
    return pl.DataFrame(
        {
            "part": list(parts),
            "seconds": [float(s) for s in seconds],
            "start_s": [float(s) for s in starts],
            "end_s": [float(a + s) for a, s in zip(starts, seconds, strict=True)],
            "order": list(range(len(parts))),
            "share_frac": [float(s) / max(sum(seconds), 1e-300) for s in seconds],
            "label": ["one step"] * len(parts),
        }
    )


def energy_components(est: Estimate) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "component": ["GPUs", "Host (CPU, memory, network)", "Facility overhead (PUE)"],
            "how": [
                "GPU-hours × TDP × (idle + (1 − idle) × busy share)",
                "GPU energy × host overhead share",
                "(GPU + host) × (PUE − 1)",
            ],
            "kwh": [est.gpu_energy_kwh, est.host_energy_kwh, est.facility_overhead_kwh],
        }
    )


def co2e_by_region(energy_kwh: float, grid: pl.DataFrame) -> pl.DataFrame:
    """The same energy on every grid of the catalogue (same co2e formula as the estimate)."""
    intensity = grid["g_co2e_per_kwh"].to_numpy()
    return grid.select("region", "label", "g_co2e_per_kwh").with_columns(
        pl.Series("co2e_kg", np.asarray(co2e_kg(energy_kwh, intensity), dtype=float))
    )
