"""Training compute: dataset-shaped token counts and the FLOP model.

Every function takes plain floats or numpy arrays (broadcasting) and returns the same, so one estimate, the
GPU comparison and a sweep over a million configurations all call these exact formulas. Categorical choices
(method, recompute mode, packing) arrive as numeric 0/1 flags.

Vocabulary: *training tokens* are the useful tokens of the dataset (examples × tokens × epochs); *processed
tokens* add the padding the GPUs also compute on; *model FLOPs* are what MFU is measured against (forward and
backward of the model itself); *hardware FLOPs* add the forward pass that activation recomputation repeats.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Number = Any  # a float or a numpy array; numpy broadcasting decides the result's shape

# Forward pass: one multiply-add (2 FLOPs) per matmul weight per token. Backward: 2 for the gradient with
# respect to the input and 2 for the gradient with respect to the weight (Kaplan et al. 2020, §2.1;
# Chinchilla, Hoffmann et al. 2022, appendix F).
FWD_FLOPS_PER_PARAM = 2.0
FULL_TRAINING_FLOPS_PER_PARAM = 6.0
FROZEN_BASE_FLOPS_PER_PARAM = 4.0  # LoRA/QLoRA: the frozen base needs no weight gradient
# The backward of attention's two batched matmuls (QKᵀ and AV) costs twice their forward: it has no weights
# but produces gradients for both operands of each product (Narayanan et al. 2021, §5.1).
ATTENTION_TRAINING_OVER_FORWARD = 3.0


def as_number(value: Number) -> Number:
    """Turn numpy's 0-d arrays (from np.where on scalars) back into scalars; arrays pass through."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


# --- dataset-shaped inputs ----------------------------------------------------------------------------


def training_tokens(examples: Number, tokens_per_example: Number, epochs: Number) -> Number:
    """Useful tokens seen in training: examples × tokens per example × epochs (the seed's first line)."""
    return examples * tokens_per_example * epochs


def padding_factor(tokens_per_example: Number, seq_len: Number, packing: Number) -> Number:
    """Processed tokens per useful token.

    Packing concatenates examples into full sequences, so nothing is wasted: 1. Without packing every example
    starts a new sequence and is padded up to the sequence length; an example longer than the sequence is
    split over ceil(tokens / seq_len) sequences (no truncation), so the factor is
    ceil(t / s) · s / t, e.g. 1,000-token examples in 4,096-token sequences cost 4.096× their tokens.
    Uses the mean example length: exact when every example has that length, and a floor when lengths vary
    and some examples straddle a sequence boundary. Dynamic padding (pad to the longest in the batch) wastes
    less; enter the typical batch-longest length as `seq_len` to model it.
    """
    unpacked = np.ceil(tokens_per_example / seq_len) * seq_len / tokens_per_example
    return as_number(np.where(packing, 1.0, unpacked))


def processed_tokens(useful_tokens: Number, padding: Number) -> Number:
    """Tokens the GPUs compute on, padding included."""
    return useful_tokens * padding


def global_batch_tokens(micro_batch: Number, grad_accum: Number, dp: Number, seq_len: Number) -> Number:
    """Tokens per optimizer step: micro-batch × gradient-accumulation steps × data-parallel replicas × seq.

    Tensor, pipeline and context parallel ranks work on the same sequences, so only `dp` multiplies.
    """
    return micro_batch * grad_accum * dp * seq_len


def optimizer_steps(processed: Number, batch_tokens: Number) -> Number:
    """Optimizer steps to get through the processed tokens; a last partial batch is still one step."""
    return np.ceil(processed / batch_tokens)


# --- FLOPs per token ----------------------------------------------------------------------------------


def attention_fwd_flops_per_token(
    n_layers: Number, n_heads: Number, head_dim: Number, context_len: Number, causal: Number = 1
) -> Number:
    """Forward FLOPs per token of the two attention products QKᵀ and A·V, all layers.

    Each product costs 2 · context · n_heads · head_dim per token per layer, so 4·L·s·a·d together
    (PaLM, Chowdhery et al. 2022, appendix B: 12·L·H·Q·T for the training pass, which is 3 × this forward).
    A causal mask leaves half the score matrix to compute, which the FlashAttention kernels skip, so
    `causal` = 1 halves it (Megatron-LM `num_floating_point_operations`, 2025 onwards; the Megatron 2021
    paper's 72·B·s·L·h²·(1 + s/6h + V/12Lh) does not halve, pass `causal` = 0 to reproduce it).
    The projections around attention are matmul weights and belong to the 6·N term, not here.
    """
    full = 4.0 * n_layers * context_len * n_heads * head_dim
    return as_number(np.where(causal, 0.5 * full, full))


def model_flops_per_token(
    n_matmul_params: Number,
    attn_fwd_flops: Number,
    frozen_base: Number = 0,
    n_adapter_params: Number = 0,
) -> Number:
    """Model FLOPs per token of one training pass (forward + backward), what MFU is measured against.

    Full training: 6 · N + 3 · attention-forward (Narayanan et al. 2021, eq. 3 with causal attention).
    LoRA/QLoRA (`frozen_base` = 1): the frozen weights still run forward (2N) and pass gradients back to
    their inputs (2N) but need no weight gradient, so 4 · N, plus the adapters' own 6 · N_adapter; attention
    is unchanged because it has no weights (Hu et al. 2021, §4.2; the seed: "about 4 with LoRA").
    `n_matmul_params` counts the weights a token multiplies through: the transformer layers' linear weights
    (active experts only) plus the output head V·h, but not the input embedding lookup.
    """
    base_per_param = np.where(frozen_base, FROZEN_BASE_FLOPS_PER_PARAM, FULL_TRAINING_FLOPS_PER_PARAM)
    adapters = FULL_TRAINING_FLOPS_PER_PARAM * n_adapter_params * frozen_base
    return as_number(
        base_per_param * n_matmul_params + adapters + ATTENTION_TRAINING_OVER_FORWARD * attn_fwd_flops
    )


def recompute_flops_per_token(
    n_layer_matmul_params: Number, attn_fwd_flops: Number, full: Number, selective: Number
) -> Number:
    """Extra hardware FLOPs per token spent recomputing activations in the backward pass.

    Full recomputation repeats each transformer layer's forward pass: 2 · N_layers + attention forward;
    the output head is not recomputed (Korthikanti et al. 2022, §6: hardware FLOPs
    96·B·s·L·h²·(1 + s/6h + V/16Lh) against 72·… model FLOPs). Selective recomputation repeats only the
    attention core (QKᵀ, softmax, A·V): the attention forward FLOPs (same paper, §5).
    `n_layer_matmul_params` is the layers' linear weights without the head (adapters included for LoRA).
    """
    full_extra = FWD_FLOPS_PER_PARAM * n_layer_matmul_params + attn_fwd_flops
    return as_number(np.where(full, full_extra, np.where(selective, attn_fwd_flops, 0.0)))


def hardware_flops_per_token(
    model_flops: Number,
    n_layer_matmul_params: Number,
    attn_fwd_causal_flops: Number,
    flash_attention: Number,
    full_recompute: Number,
    selective_recompute: Number,
) -> Number:
    """FLOPs the GPUs execute per token: model FLOPs + recomputation + masked attention work.

    Without a fused attention kernel (`flash_attention` = 0) the whole s×s score matrix is computed and the
    causal mask applied afterwards, so the executed attention is twice the causal count: 3 × the causal
    forward extra over a training pass (Dao et al. 2022 skip the masked blocks; Korthikanti et al. 2022
    count the full matrix). Recomputation then repeats the executed attention (`recompute_flops_per_token`).
    """
    executed_attn_fwd = attn_fwd_causal_flops * np.where(flash_attention, 1.0, 2.0)
    unfused_extra = ATTENTION_TRAINING_OVER_FORWARD * (executed_attn_fwd - attn_fwd_causal_flops)
    recompute = recompute_flops_per_token(
        n_layer_matmul_params, executed_attn_fwd, full_recompute, selective_recompute
    )
    return as_number(model_flops + unfused_extra + recompute)


def override_flops_per_token(
    formula_flops: Number, flops_per_param_token: Number, n_params: Number
) -> Number:
    """The seed's quick form: FLOPs per token = factor × parameters, no attention term, when a factor > 0.

    A factor of 0 means "no override" and keeps `formula_flops`. With the seed's 6 × 8e9 × 9e7 tokens the
    total is exactly 4.32e18 FLOP.
    """
    return as_number(np.where(flops_per_param_token > 0, flops_per_param_token * n_params, formula_flops))


def total_flops(flops_per_token: Number, tokens: Number) -> Number:
    """FLOPs for a number of processed tokens."""
    return flops_per_token * tokens


# --- utilisation --------------------------------------------------------------------------------------


def flops_utilisation(
    flops: Number, wall_clock_s: Number, n_gpus: Number, peak_flops_per_s: Number
) -> Number:
    """Achieved share of the cluster's dense peak: MFU when given model FLOPs, HFU with hardware FLOPs.

    MFU and HFU as defined by Chowdhery et al. 2022 (PaLM, appendix B) and Korthikanti et al. 2022, §6.
    """
    return flops / (wall_clock_s * n_gpus * peak_flops_per_s)
