"""Multi-head latent attention (MLA, DeepSeek-V2/V3): its weights, head widths and cached elements.

Layout of one layer, as Hugging Face's `modeling_deepseek_v3.py` builds it from the config keys (a query
heads, h hidden, r_q = q_lora_rank, r_kv = kv_lora_rank, d_n = qk_nope_head_dim, d_r = qk_rope_head_dim,
d_v = v_head_dim):

- queries: with r_q > 0 a down-projection q_a_proj h → r_q, an RMSNorm of width r_q and an up-projection
  q_b_proj r_q → a·(d_n + d_r); with r_q = 0 (DeepSeek-V2-Lite) one q_proj h → a·(d_n + d_r);
- keys and values: kv_a_proj_with_mqa h → r_kv + d_r (the latent plus one shared rotary key), an RMSNorm of
  width r_kv, then kv_b_proj r_kv → a·(d_n + d_v);
- output: o_proj a·d_v → h.

Attention itself runs over a heads with query/key width d_n + d_r and value width d_v, so QKᵀ costs as
d_n + d_r wide heads and A·V as d_v wide ones: `attention_head_dim` is their mean, which makes the planner's
4·L·s·a·d attention FLOPs exact. Generation caches the latent and the rotary key, r_kv + d_r elements per token
and layer, instead of 2·g·d for grouped-query attention (`kv_elements_per_token_layer`).
Biases follow `attention_bias` on q_a_proj, kv_a_proj_with_mqa and o_proj (the HF classes); q_proj and the
up-projections have none.
"""

from __future__ import annotations

from planner.model.shape import ModelShape


def mla_projection_dims(shape: ModelShape) -> list[tuple[int, int]]:
    """(d_in, d_out) of every attention matrix of one MLA layer, in the module docstring's order."""
    h, a = shape.hidden_size, shape.n_heads
    qk = shape.qk_nope_head_dim + shape.qk_rope_head_dim
    queries = [(h, shape.q_lora_rank), (shape.q_lora_rank, a * qk)] if shape.q_lora_rank else [(h, a * qk)]
    keys_values = [
        (h, shape.kv_lora_rank + shape.qk_rope_head_dim),
        (shape.kv_lora_rank, a * (shape.qk_nope_head_dim + shape.v_head_dim)),
    ]
    return [*queries, *keys_values, (a * shape.v_head_dim, h)]


def mla_attention_params_per_layer(shape: ModelShape, with_bias: bool) -> int:
    """Weights (and, `with_bias`, the biases on the down and output projections) of one MLA layer."""
    dims = mla_projection_dims(shape)
    weights = sum(d_in * d_out for d_in, d_out in dims)
    if not with_bias:
        return weights
    # q_a_proj (absent without query compression: q_proj has no bias), kv_a_proj_with_mqa and o_proj
    return weights + shape.q_lora_rank + shape.kv_lora_rank + shape.qk_rope_head_dim + shape.hidden_size


def mla_norm_params_per_layer(shape: ModelShape) -> int:
    """The RMSNorms on the query and key/value latents: r_q (when queries are compressed) + r_kv."""
    return shape.q_lora_rank + shape.kv_lora_rank


def mla_lora_dims(shape: ModelShape) -> int:
    """Σ(d_in + d_out) over one MLA layer's matrices: what LoRA rank r multiplies (PEFT adapts q_a_proj,
    q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj as separate linear layers)."""
    return sum(d_in + d_out for d_in, d_out in mla_projection_dims(shape))


def attention_head_dim(shape: ModelShape) -> float:
    """Head width the attention products run at: (d_qk + d_v) / 2 for MLA, head_dim otherwise."""
    if not shape.is_mla:
        return float(shape.head_dim)
    return (shape.qk_nope_head_dim + shape.qk_rope_head_dim + shape.v_head_dim) / 2.0


def kv_elements_per_token_layer(shape: ModelShape) -> float:
    """Elements generation caches per token and layer: r_kv + d_r for MLA, 2·g·d (a key and a value per
    KV head) otherwise."""
    if shape.is_mla:
        return float(shape.kv_lora_rank + shape.qk_rope_head_dim)
    return 2.0 * shape.n_kv_heads * shape.head_dim
