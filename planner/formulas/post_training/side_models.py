"""Post-training: the models beside the policy, their forwards, and the memory phases.

Preference methods (DPO and its relatives, a pairwise reward model) train on chosen and rejected sequences
of each pair in one step: twice SFT's sequences per micro-batch, so twice its activations and logits
(TRL's DPOTrainer concatenates both into one forward). KTO trains on unpaired examples and adds a
mismatched "KL" batch that the policy and the reference only run forward. PPO and GRPO train on the
completions they generated (`planner.formulas.post_training.generation`).

- **Frozen models** (reference, PPO's reward model): weights only, at their own storage dtype, split like the
  policy: over tensor and pipeline parallelism, and over data parallelism under ZeRO-3 (DeepSpeed and FSDP
  wrap them like the policy). An offloaded reference sits in host memory and streams in for its forward; a
  LoRA policy's reference is its own base with the adapters off (no second copy); a precomputed reference
  costs one forward over the data before training and no memory during it.
- **Forwards**: 2 FLOPs per active parameter per token for each frozen model's forward over the sequences it
  scores (Kaplan et al. 2020 §2.1); the value (critic) model trains like the policy, 6 per parameter and token.
- **Phases** (allocated bytes, one GPU): training holds everything resident plus whichever of the policy and
  the value model is in its backward (they train one after the other); a colocated generation phase holds the
  resident states, the frozen models and the engine's share, while the engine either keeps its share through
  training or frees it (vLLM sleep mode). The device peak is the larger phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.step.compute import Number

FORWARD_FLOPS_PER_PARAM_TOKEN = 2.0  # a forward pass: one multiply and one add per parameter and token
TRAIN_FLOPS_PER_PARAM_TOKEN = 6.0  # forward + backward (twice the forward), Kaplan et al. 2020 §2.1


def frozen_model_bytes(
    n_params: Number, bytes_per_param: Number, tp: Number, pp: Number, dp: Number, zero_stage: Number
) -> Number:
    """Per GPU: a frozen model's weights over tp·pp, and over dp too under ZeRO-3."""
    shards = tp * pp * np.where(np.asarray(zero_stage) >= 3, dp, 1.0)
    return n_params * bytes_per_param / shards


def forward_flops(n_active_params: Number, tokens: Number) -> Number:
    """One forward pass over `tokens` tokens: 2 · active parameters per token (attention left out, as for
    the other frozen forwards: at the lengths post-training runs it is a few per cent)."""
    return FORWARD_FLOPS_PER_PARAM_TOKEN * n_active_params * tokens


def train_flops(n_params: Number, tokens: Number) -> Number:
    """Forward and backward of a fully trained model over `tokens` tokens: 6 · parameters per token."""
    return TRAIN_FLOPS_PER_PARAM_TOKEN * n_params * tokens


@dataclass(frozen=True)
class Phases:
    """Allocated bytes on one GPU: what stays resident and what each phase adds to it."""

    policy_peak: Number  # the policy's training-step peak (allocated), its own states included
    policy_resident: Number  # the policy's weights, optimizer states and master copy (kept between steps)
    value_peak: Number  # the value model's training peak (0 without one)
    value_resident: Number  # its kept states (0 without one)
    frozen: Number  # reference and reward weights on the GPU
    engine: Number  # the colocated generation engine's share (0 when generation has GPUs of its own)
    engine_sleeps: Number  # flag: the engine frees its share while training runs
    fragmentation_frac: Number  # caching-allocator slack over allocated bytes (not over the engine's pool)
    overhead: Number  # CUDA context and workspaces


def _awake_engine(p: Phases) -> Number:
    """The colocated engine's bytes while the policy trains: its share, unless it sleeps."""
    return p.engine * (1.0 - np.asarray(p.engine_sleeps, dtype=float))


def training_allocated_bytes(p: Phases) -> Number:
    """Allocated while training: the frozen models and whichever trainee is in its backward next to the
    other's kept states."""
    return np.maximum(p.policy_peak + p.value_resident, p.value_peak + p.policy_resident) + p.frozen


def generation_kept_bytes(p: Phases) -> Number:
    """The trainer's allocated bytes while a colocated engine generates: kept states and the frozen models."""
    return p.policy_resident + p.value_resident + p.frozen


def allocated_peak_bytes(p: Phases) -> Number:
    """What PyTorch's allocated statistic peaks at over a step (torch.cuda.max_memory_allocated), the engine
    included: a colocated engine runs in the trainer's process and allocates through PyTorch (verl's and
    DeepSpeed-Chat's hybrid engines, TRL's colocate mode), its share while it generates and, unless it
    sleeps, while the policy trains too."""
    return np.maximum(training_allocated_bytes(p) + _awake_engine(p), generation_kept_bytes(p) + p.engine)


def training_phase_bytes(p: Phases) -> Number:
    """Device bytes while training: allocated, the allocator's slack, the overhead, and the engine's share
    unless it sleeps (the engine's pool is its own, outside the trainer's caching allocator)."""
    return training_allocated_bytes(p) * (1.0 + p.fragmentation_frac) + p.overhead + _awake_engine(p)


def generation_phase_bytes(p: Phases) -> Number:
    """Device bytes while a colocated engine generates: the trainer's kept bytes with slack, the overhead and
    the engine's share."""
    return generation_kept_bytes(p) * (1.0 + p.fragmentation_frac) + p.overhead + p.engine
