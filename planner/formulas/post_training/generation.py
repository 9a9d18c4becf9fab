"""Rollout generation of PPO and GRPO: the KV cache, prefill, decode and the weight hand-over.

A rollout step generates `samples_per_prompt` completions for each of its prompts on an inference engine
(vLLM-style: a share of each GPU's memory holds its weights and a paged KV cache; continuous batching keeps
as many sequences in flight as the cache holds). Engines are `generation_tp`-wide replicas over the generating
GPUs (the training GPUs when colocated, the dedicated ones otherwise); each gets an equal share of the
sequences. All byte counts are per GPU of a replica unless a name says otherwise.

- **KV cache** (per sequence, whole model): layers × 2 (key and value) × KV heads × head dim × bytes ×
  tokens (prompt + completion), or the cached latent's width for multi-head latent attention; a replica
  splits it over its tensor-parallel GPUs.
- **Concurrent sequences**: what the engine's memory holds after its weights, at the full length each
  sequence reaches, up to the sequences it has to generate; 0 means the engine cannot hold one sequence.
- **Prefill** runs at the compute rate: 2 · active parameters FLOPs per prompt token.
- **Decode** is bound by memory bandwidth: every generated token of the batch in flight reads the weights
  once and each sequence's KV cache (on average at prompt + half the completion), at the bandwidth share
  decoding reaches; never faster than its 2 · active parameters FLOPs per token at the compute rate. An
  eager engine (no CUDA graphs) also waits for the CPU to launch every layer's kernels each step.
- **Rounds**: sequences / concurrency waves of `completion_tokens` decode steps (continuous batching refills
  finished slots, so the count is fractional, at least 1).
- **Weight hand-over**: after each optimizer update the trainer sends the policy's 16-bit weights to every
  engine replica: each GPU of a replica receives 1/generation_tp of them over the link between the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.step.comm import BYTES_PER_GB
from planner.formulas.step.compute import Number

# vLLM and SGLang load the policy in 16 bits (bf16) for generation, whatever the trainer keeps.
ENGINE_WEIGHT_BYTES_PER_PARAM = 2.0
KV_BYTES_PER_ELEMENT = 2.0  # bf16 KV cache, the engines' default (vLLM kv_cache_dtype "auto" = model dtype)


def kv_cache_bytes_per_seq(n_layers: Number, n_kv_heads: Number, head_dim: Number, tokens: Number) -> Number:
    """KV cache of one sequence of `tokens` tokens, whole model: layers × 2 × KV heads × head dim × 2 B × tokens."""
    return kv_cache_bytes_per_token(n_layers, 2.0 * n_kv_heads * head_dim) * tokens


def kv_cache_bytes_per_token(n_layers: Number, elements_per_token_layer: Number) -> Number:
    """KV cache per token of one sequence, whole model: layers × cached elements × 2 B. The elements are a key
    and a value per KV head (2 · KV heads · head dim), or multi-head latent attention's one compressed latent
    and its rotary key (kv_lora_rank + qk_rope_head_dim, planner.model.latent_attention)."""
    return n_layers * elements_per_token_layer * KV_BYTES_PER_ELEMENT


@dataclass(frozen=True)
class Engine:
    """One generation engine replica's GPUs and what it has to generate per rollout step."""

    n_params: Number  # policy parameters the engine holds
    n_active_params: Number  # parameters one token passes through (MoE: the active ones)
    kv_bytes_per_token: Number  # KV cache per token of one sequence, whole model (kv_cache_bytes_per_token)
    tp: Number  # GPUs per replica
    sequences: Number  # sequences this replica generates per rollout step
    prompt_tokens: Number
    completion_tokens: Number
    engine_bytes: Number  # per GPU: the engine's memory share (weights + KV cache)
    peak_flops_per_s: Number  # per GPU, at the engine's precision
    utilisation_frac: Number  # of the peak, for the compute-bound parts (prefill)
    memory_gb_per_s: Number  # per GPU, datasheet
    bandwidth_frac: Number  # share of it decoding reaches
    launch_s: Number = 0.0  # CPU time launching one decode step's kernels (eager engines), not hidden


def engine_weight_bytes(e: Engine) -> Number:
    """Per GPU of a replica: the 16-bit weights over its tensor-parallel GPUs."""
    return e.n_params * ENGINE_WEIGHT_BYTES_PER_PARAM / e.tp


def concurrent_sequences(e: Engine) -> Number:
    """Sequences in flight: what the memory left after the weights holds at full length, at most `sequences`."""
    room = np.maximum(e.engine_bytes - engine_weight_bytes(e), 0.0)
    per_seq = e.kv_bytes_per_token * (e.prompt_tokens + e.completion_tokens) / e.tp
    return np.minimum(np.floor(room / per_seq), e.sequences)


def kv_cache_bytes(e: Engine) -> Number:
    """Per GPU: the KV cache of the sequences in flight at full length (what the engine's memory must hold)."""
    held = np.maximum(concurrent_sequences(e), 1.0)
    return held * e.kv_bytes_per_token * (e.prompt_tokens + e.completion_tokens) / e.tp


def prefill_s(e: Engine, n_seqs: Number) -> Number:
    """Prompt processing of `n_seqs` sequences at the compute rate: 2 · active parameters per prompt token."""
    flops = 2.0 * e.n_active_params * e.prompt_tokens * n_seqs
    return flops / (e.tp * e.peak_flops_per_s * e.utilisation_frac)


def decode_token_s(e: Engine, n_seqs: Number) -> Number:
    """One decode step of `n_seqs` sequences: weights + their KV cache (at prompt + completion/2) read once,
    or their FLOPs at the compute rate if that is slower; an eager engine adds the CPU time it takes to launch
    the step's kernels (the GPU waits for the launches at these sizes)."""
    mean_len = e.prompt_tokens + e.completion_tokens / 2.0
    read_bytes = engine_weight_bytes(e) + n_seqs * e.kv_bytes_per_token * mean_len / e.tp
    memory_s = read_bytes / (e.memory_gb_per_s * BYTES_PER_GB * e.bandwidth_frac)
    compute_s = 2.0 * e.n_active_params * n_seqs / (e.tp * e.peak_flops_per_s * e.utilisation_frac)
    return np.maximum(memory_s, compute_s) + e.launch_s


def generation_s(e: Engine) -> Number:
    """One rollout step's generation on one replica: rounds × (prefill + completion × decode step).

    An engine that cannot hold one sequence (`concurrent_sequences` 0: the plan does not fit) is timed at one
    sequence in flight, so the figure still says what the run would take with the memory found."""
    batch = np.maximum(concurrent_sequences(e), 1.0)
    rounds = np.maximum(e.sequences / batch, 1.0)
    return rounds * (prefill_s(e, batch) + e.completion_tokens * decode_token_s(e, batch))


def weight_sync_s(n_params: Number, generation_tp: Number, link_gb_per_s: Number) -> Number:
    """The policy's 16-bit weights handed to an engine replica: each of its GPUs receives 1/tp of them."""
    return n_params * ENGINE_WEIGHT_BYTES_PER_PARAM / generation_tp / (link_gb_per_s * BYTES_PER_GB)
