"""The Methods & data page's post-training section: what each objective adds, and how it is counted.

Kept apart from app_pages/methods.py, which would pass 300 lines with it. The figures quoted are the
planner's own constants, read from `planner.inputs.post_training`, so the text cannot drift from the code.
"""

from __future__ import annotations

import streamlit as st

from planner import (
    COLOCATED_ENGINE_MEMORY_FRAC,
    DEDICATED_ENGINE_MEMORY_FRAC,
    EAGER_DECODE_S_PER_LAYER,
    GRPO_SAMPLES_PER_PROMPT,
    Scenario,
)

# The decode bandwidth share the estimate uses unless one is typed.
GENERATION_BANDWIDTH_FRAC = Scenario.model_fields["generation_bandwidth_frac"].default


def post_training() -> None:
    st.markdown(f"""
The **objective** says what the policy is trained for; the **method** (full, LoRA, QLoRA) says how its weights
are trained. Any objective combines with any method: LoRA DPO, QLoRA GRPO.

- **What each objective adds.** *SFT*: nothing. *DPO*: the chosen and the rejected response of each pair go
  through the policy together (twice SFT's sequences per micro-batch, so twice its activations and logits, as
  TRL concatenates them into one forward), and a frozen reference scores both. *SimPO* and *ORPO*: pairs, no
  reference. *KTO*: unpaired examples, plus a mismatched batch that policy and reference only run forward.
  *Reward model*: pairs through a model with a one-number head instead of the vocabulary. *PPO*: the policy
  generates its completions, a frozen reward model scores them, a value (critic) model is trained beside the
  policy and a reference keeps the policy close. *GRPO*: {GRPO_SAMPLES_PER_PROMPT:d} completions per prompt by
  default (TRL's default group), compared with each other; no value model, and a rule or verifier as reward
  unless a reward model is named.
- **Dataset counts.** For pairs the examples are pairs, for PPO and GRPO they are prompts; tokens per example are
  one sequence (prompt + response). The policy trains on 2 sequences per pair, and on samples per prompt ×
  rollout epochs sequences per prompt.
- **Reference model memory** = parameters × bytes of the frozen dtype (2 in bf16, 0.5 in nf4), split like the
  policy: over tensor and pipeline parallelism, and over the data-parallel GPUs too under ZeRO-3 (DeepSpeed and
  FSDP wrap it like the policy). It is 0 when the policy is LoRA or QLoRA and the reference is its base with the
  adapters switched off (TRL and PEFT's default), when its log-probabilities are precomputed (one extra forward
  over the data before training) and when it is held in CPU memory (then it streams in over PCIe for each
  forward, which the time counts). The reward model is held the same way.
- **The value model** trains like the policy: its weights, gradients, optimizer states and activations, with a
  one-number head. It trains after the policy in each step, so only one of the two is in its backward at a time.
- **KV cache** of one sequence = layers × 2 (key and value) × KV heads × head dim × 2 bytes (bf16) × (prompt +
  completion) tokens. The engine holds as many sequences at once as its memory share holds after its 16-bit
  weights (vLLM's `gpu_memory_utilization`: {COLOCATED_ENGINE_MEMORY_FRAC:g} by default when it shares the
  training GPUs, TRL's colocate default; {DEDICATED_ENGINE_MEMORY_FRAC:g} on GPUs of its own, vLLM's default).
  An **eager** engine beside the trainer (DeepSpeed-Chat's hybrid engine, Hugging Face generate) keeps no pool:
  unless a share is given, its KV cache takes whatever the trainer's kept states leave while it generates, and
  it holds nothing while the policy trains.
- **Generation time**: the prompts are processed (prefill) at the compute rate, 2 × active parameters FLOPs per
  prompt token. Each generated token is **bound by memory bandwidth**: a decode step reads the weights once for
  all sequences in flight plus each sequence's KV cache, at {GENERATION_BANDWIDTH_FRAC:.0%} of the datasheet
  bandwidth by default — our judgement: serving stacks reach 60-85 %, an engine embedded in a trainer sits at the
  low end, and the share is an input. A step is never faster than its FLOPs at the compute rate. More sequences
  in flight share the weight reads, so the time per sequence falls as the batch grows. An **eager** engine
  (Hugging Face generate, DeepSpeed-Chat's hybrid engine) also waits for the CPU to launch each layer's
  kernels every step: about {EAGER_DECODE_S_PER_LAYER * 1e6:.0f} µs a layer (a published Llama 3.1 8B decode
  step on an H100: 8.4 ms eager, 5.1 ms replayed as a CUDA graph, over its 32 layers); vLLM-style engines
  replay the step as a CUDA graph and skip it.
- **Scoring**: each frozen forward (reference, reward, value, the policy's own old log-probabilities) costs 2 ×
  parameters FLOPs per token it scores (Kaplan et al. 2020), at the training GPUs' rate.
- **Weight hand-over**: after each update the trainer sends the policy's 16-bit weights to every engine replica
  over the link between them (the GPUs' own link inside a node, the network across nodes).
- **The phases.** While training, a GPU holds the policy's step, the frozen models and, unless the engine sleeps
  (vLLM sleep mode), the engine's share. While a colocated engine generates, it holds the kept states (weights,
  optimizer, master copy), the frozen models and the engine's share. The peak is the larger phase, and the Memory
  page says which. Dedicated generation GPUs leave the training GPUs out of the generation phase; they are
  counted in the cost, energy and failures.
- **Time per step** is generation, scoring, training and the hand-over one after the other, as synchronous
  frameworks run them (the trainer waits for the rollout, the engine for the new weights); the Compute page
  draws one step as a timeline. Asynchronous or overlapped schedules would be faster than this.
""")
