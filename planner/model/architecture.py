"""Parameter counts from a model's shape: total, active (mixture of experts) and per component.

The per-component formulas take plain numbers and also work element-wise on numpy arrays, so a sweep over many
shapes can call them directly; `count_params` applies them to one `ModelShape` and returns exact integers.

Conventions shared by every formula (the Megatron-LM `report_theoretical_memory` bookkeeping, see
reference/peers.md §3.3, generalised to separate head widths and per-family norm layouts):
- a linear map from d_in to d_out holds d_in·d_out weights, plus d_out when it has a bias;
- `attn_bias` means biases on the q, k, v projections and, except for families listed in `FAMILY_RULES` with
  `attn_out_bias=False` (Qwen2: q, k, v only), on the output projection too;
- `mlp_bias` means a bias on every MLP matrix;
- a LayerNorm has a weight and a bias (2·h), an RMSNorm a weight only (h).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from planner.model import latent_attention as mla
from planner.model.shape import ModelShape

LoraTargets = Literal["attention", "all_linear"]


@dataclass(frozen=True)
class FamilyRules:
    """Layout details that `ModelShape` has no field for, keyed by `ModelShape.family` (HF `model_type`)."""

    norms_per_layer: int = 2  # pre-attention + pre-MLP norm (Llama, GPT-2, Mistral, Qwen, Phi-3, ...)
    attn_out_bias: bool = True  # with attn_bias: the output projection has a bias as well
    qk_norm: bool = False  # one RMSNorm of width head_dim on queries and one on keys, per layer
    shared_expert_gate: bool = False  # a sigmoid gate (h -> 1) scales the shared experts' output
    norm_bias_follows_attn_bias: bool = False  # LayerNorm bias removed together with the linear biases


FAMILY_RULES: dict[str, FamilyRules] = {
    # Qwen2/Qwen2.5 modeling_qwen2.py: q_proj, k_proj, v_proj have bias=True, o_proj bias=False.
    "qwen2": FamilyRules(attn_out_bias=False),
    # Qwen1.5-MoE / Qwen2-MoE: same attention, plus `shared_expert_gate = nn.Linear(h, 1, bias=False)`.
    "qwen2_moe": FamilyRules(attn_out_bias=False, shared_expert_gate=True),
    # Qwen3 / Qwen3-MoE modeling: `q_norm` and `k_norm` = RMSNorm(head_dim).
    "qwen3": FamilyRules(qk_norm=True),
    "qwen3_moe": FamilyRules(qk_norm=True),
    # Gemma 2 sandwich norms: input, post_attention, pre_feedforward and post_feedforward RMSNorm.
    "gemma2": FamilyRules(norms_per_layer=4),
    # Gemma 3: the Gemma 2 layout plus q_norm/k_norm of width head_dim.
    "gemma3_text": FamilyRules(norms_per_layer=4, qk_norm=True),
    # Falcon-7B style (parallel_attn, old decoder): one LayerNorm feeds attention and MLP.
    "falcon": FamilyRules(norms_per_layer=1),
    # llm-foundry MPTModel: `no_bias=True` strips every bias, LayerNorm biases included.
    "mpt": FamilyRules(norm_bias_follows_attn_bias=True),
}
DEFAULT_RULES = FamilyRules()
# Families whose layout is the default (two norms, biases as the flags say, no q/k norms). "falcon_two_norms"
# is Falcon-40B/180B (new decoder, two LayerNorms) and non-parallel Falcon; "deepseek_v3" (its latent attention
# from the MLA shape fields, planner/model/latent_attention.py) leaves out the router's score-correction bias.
DEFAULT_RULE_FAMILIES = frozenset(
    {
        "llama",
        "mistral",
        "mixtral",
        "gemma",
        "phi3",
        "gpt2",
        "gpt3",
        "gpt_neox",
        "falcon_two_norms",
        "deepseek_v3",
    }
)
KNOWN_FAMILIES = frozenset(FAMILY_RULES) | DEFAULT_RULE_FAMILIES


def family_rules(family: str) -> FamilyRules:
    return FAMILY_RULES.get(family.lower(), DEFAULT_RULES)


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts by component; `active` counts only the routed top-k and shared experts."""

    embedding: int  # token embedding table
    position: int  # learned positional table (0 for rotary/ALiBi)
    attention: int  # q, k, v, o projections and their biases, all layers
    mlp: int  # dense MLPs and every expert, all layers
    norms: int  # every norm including the final one (and q/k norms where the family has them)
    router: int  # MoE router (and shared-expert gate) weights
    head: int  # output projection; 0 when tied to the embedding
    total: int
    active: int  # parameters touched by one token: total minus the experts it is not routed to
    mlp_active: int  # dense MLPs + top-k routed experts + shared experts, all layers


def embedding_params(vocab_size, hidden_size):
    """Token embedding table V·h (Megatron-LM theoretical memory, reference/peers.md §3.3)."""
    return vocab_size * hidden_size


def position_params(n_positions, hidden_size):
    """Learned positional table n_pos·h (GPT-2 `wpe`; llm-foundry sizes it to max_seq_len)."""
    return n_positions * hidden_size


def head_params(vocab_size, hidden_size, tied):
    """Output projection h·V, absent when tied to the embedding (HF `tie_word_embeddings`)."""
    return vocab_size * hidden_size * (1 - np.asarray(tied, dtype=np.int64))


def attention_params_per_layer(hidden_size, n_heads, n_kv_heads, head_dim, qkv_bias, out_bias):
    """q, k, v, o projections of one layer with MHA/GQA/MQA head layouts.

    q: h → a·d, k and v: h → g·d, o: a·d → h (a query heads, g key/value heads, d head width). This is
    Megatron's 2h²·(1 + g/a)·(a·d/h) written without assuming a·d = h (Gemma: d = 256 with h = 3584). Biases:
    (a + 2g)·d on q, k, v and h on o.
    """
    qkv_width = (n_heads + 2 * n_kv_heads) * head_dim
    weights = hidden_size * qkv_width + n_heads * head_dim * hidden_size
    return weights + qkv_bias * qkv_width + out_bias * hidden_size


def mlp_params(hidden_size, ffn_hidden, n_matrices, bias):
    """One MLP or expert: `n_matrices` = 2 (up, down; GeLU/ReLU) or 3 (gate, up, down; SwiGLU/GeGLU).

    Weights n·h·F (Megatron: 2·h·F, ×3/2 when gated). Biases: F on each input-side matrix, h on the down one.
    """
    return n_matrices * hidden_size * ffn_hidden + bias * ((n_matrices - 1) * ffn_hidden + hidden_size)


def norm_params(hidden_size, n_norms, has_bias):
    """`n_norms` norms of width h: RMSNorm h each, LayerNorm 2·h (Megatron: 2·h·(1 or 2))."""
    return n_norms * hidden_size * (1 + has_bias)


def router_params(hidden_size, n_experts):
    """Top-k router of one MoE layer: linear h → E, no bias (Megatron `TopKRouter`, HF Mixtral `gate`)."""
    return hidden_size * n_experts


def _mlp_matrices(shape: ModelShape) -> int:
    return 3 if shape.mlp_kind == "swiglu" else 2


def _layer_split(shape: ModelShape) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers): MoE models may start with `n_dense_layers` dense layers."""
    n_moe_layers = shape.n_layers - shape.n_dense_layers if shape.is_moe else 0
    return shape.n_layers - n_moe_layers, n_moe_layers


def _expert_ffn(shape: ModelShape) -> int:
    return shape.moe_ffn_hidden or shape.ffn_hidden


def _attention_layer_params(shape: ModelShape, rules: FamilyRules, with_bias: bool) -> int:
    """One layer's attention weights (and biases): latent attention (MLA) or MHA/GQA/MQA heads."""
    if shape.is_mla:
        return mla.mla_attention_params_per_layer(shape, with_bias and shape.attn_bias)
    bias = int(with_bias and shape.attn_bias)
    return attention_params_per_layer(
        shape.hidden_size, shape.n_heads, shape.n_kv_heads, shape.head_dim, bias,
        int(bias and rules.attn_out_bias),
    )  # fmt: skip


def count_params(shape: ModelShape) -> ParamCounts:
    """Every parameter of `shape`, by component; total and active (top-k + shared experts) counts."""
    rules = family_rules(shape.family)
    h = shape.hidden_size
    n_dense, n_moe = _layer_split(shape)
    n_mat = _mlp_matrices(shape)

    attention = shape.n_layers * _attention_layer_params(shape, rules, with_bias=True)
    dense_mlp = n_dense * mlp_params(h, shape.ffn_hidden, n_mat, int(shape.mlp_bias))
    expert = mlp_params(h, _expert_ffn(shape), n_mat, int(shape.mlp_bias))
    mlp = dense_mlp + n_moe * (shape.n_experts + shape.n_shared_experts) * expert
    mlp_active = dense_mlp + n_moe * (shape.n_experts_active + shape.n_shared_experts) * expert
    gate_width = int(rules.shared_expert_gate and shape.n_shared_experts > 0)
    router = n_moe * router_params(h, shape.n_experts + gate_width)

    norm_bias = shape.norm_kind == "layernorm" and (shape.attn_bias or not rules.norm_bias_follows_attn_bias)
    layer_norms = norm_params(h, rules.norms_per_layer, int(norm_bias))
    qk_norms = norm_params(shape.head_dim, 2 * int(rules.qk_norm), 0)  # RMSNorm, shared by all heads
    latent_norms = mla.mla_norm_params_per_layer(shape) if shape.is_mla else 0
    norms = shape.n_layers * (layer_norms + qk_norms + latent_norms) + norm_params(h, 1, int(norm_bias))

    embedding = embedding_params(shape.vocab_size, h)
    position = position_params(shape.learned_pos_embeddings, h)
    head = int(head_params(shape.vocab_size, h, int(shape.tied_embeddings)))
    total = embedding + position + attention + mlp + norms + router + head
    return ParamCounts(
        embedding=embedding,
        position=position,
        attention=attention,
        mlp=mlp,
        norms=norms,
        router=router,
        head=head,
        total=total,
        active=total - mlp + mlp_active,
        mlp_active=mlp_active,
    )


def linear_params_all_layers(shape: ModelShape) -> int:
    """Matmul weights a token passes through in all transformer layers (active experts only, no biases).

    Attention q, k, v, o + dense MLPs + top-k routed and shared experts + router. The output head is left out:
    the logits matmul costs V·h per token whether or not the head is tied, so the FLOP model adds it itself.
    """
    h = shape.hidden_size
    n_dense, n_moe = _layer_split(shape)
    n_mat = _mlp_matrices(shape)
    attention = _attention_layer_params(shape, DEFAULT_RULES, with_bias=False)
    dense_mlp = mlp_params(h, shape.ffn_hidden, n_mat, 0)
    active_experts = (shape.n_experts_active + shape.n_shared_experts) * mlp_params(
        h, _expert_ffn(shape), n_mat, 0
    )
    moe_layer = active_experts + router_params(h, shape.n_experts)
    return shape.n_layers * attention + n_dense * dense_mlp + n_moe * moe_layer


def linear_params_per_layer(shape: ModelShape) -> int:
    """Matmul weights of one layer (see `linear_params_all_layers`), averaged over the layers.

    Exact for dense models and for MoE models whose layers are all MoE; with leading dense layers
    (DeepSeek-V3) it is the mean rounded to an integer, so prefer `linear_params_all_layers` for totals.
    """
    return round(linear_params_all_layers(shape) / shape.n_layers)


def lora_attention_dims(hidden_size, n_heads, n_kv_heads, head_dim):
    """Σ(d_in + d_out) over q, k, v, o of one layer (LoRA: Hu et al. 2021, §4.1; A is r×d_in, B d_out×r).

    q (h + a·d), k and v (h + g·d each), o (a·d + h), as separate matrices like Llama; fused qkv layouts
    (Phi-3, GPT-2, Falcon) adapt one h → (a + 2g)·d matrix instead, 2·h fewer per layer.
    """
    return 4 * hidden_size + 2 * head_dim * (n_heads + n_kv_heads)


def lora_mlp_dims(hidden_size, ffn_hidden, n_mlp_matrices):
    """Σ(d_in + d_out) over the matrices of one MLP or expert: h + F each (gate, up, down or up, down)."""
    return n_mlp_matrices * (hidden_size + ffn_hidden)


def lora_adapter_params(shape: ModelShape, rank, targets: LoraTargets):
    """Trainable LoRA parameters: rank·(d_in + d_out) per adapted matrix per layer (Hu et al. 2021).

    `targets`: "attention" adapts q, k, v, o; "all_linear" adds every MLP matrix. For MoE we adapt every
    routed and shared expert's gate/up/down, which is what PEFT's `target_modules="all-linear"` (or the usual
    Mixtral list w1, w2, w3) does with per-expert linear layers; the router stays frozen as in those recipes.
    The output head is never adapted (PEFT's all-linear skips it). `rank` may be a number or a numpy array.
    """
    if targets not in ("attention", "all_linear"):
        raise ValueError(f"targets must be 'attention' or 'all_linear', got {targets!r}")
    include_mlp = int(targets == "all_linear")
    h, n_mat = shape.hidden_size, _mlp_matrices(shape)
    n_dense, n_moe = _layer_split(shape)
    attention_dims = (
        mla.mla_lora_dims(shape)
        if shape.is_mla
        else lora_attention_dims(h, shape.n_heads, shape.n_kv_heads, shape.head_dim)
    )
    dense_mlp_dims = lora_mlp_dims(h, shape.ffn_hidden, n_mat)
    experts_dims = (shape.n_experts + shape.n_shared_experts) * lora_mlp_dims(h, _expert_ffn(shape), n_mat)
    dims = shape.n_layers * attention_dims + include_mlp * (n_dense * dense_mlp_dims + n_moe * experts_dims)
    return rank * dims
