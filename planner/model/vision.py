"""A vision-language model's vision encoder (a ViT) and projector: parameter counts, image-to-token rules, FLOPs.

The language model of a vision-language model is an ordinary `ModelShape`; this module holds what it adds.
The encoder is a bidirectional transformer over one image's patches; the projector maps its output into the
language model's width, after merging neighbouring patches where the model does. Three rules turn an image
into tokens, one per model family (each function below cites the processor code it follows):

- `dynamic` (Qwen2-VL / Qwen2.5-VL): the image is resized to multiples of patch × merge pixels within a pixel
  budget, cut into patch × patch squares, and merge × merge neighbours become one token;
- `fixed` (LLaVA-1.5): the image is resized to the encoder's square input; every patch is one token;
- `tiles` (InternVL): the image is cut into square tiles on the grid closest to its aspect ratio (plus a
  thumbnail when there is more than one tile); each tile gives a fixed number of tokens.
"""

from __future__ import annotations

import math

from planner.model.architecture import attention_params_per_layer, mlp_params, norm_params
from planner.model.vision_shape import IMAGE_CHANNELS, VisionEncoder

__all__ = ["IMAGE_CHANNELS", "VisionEncoder"]


def layer_params(v: VisionEncoder) -> int:
    """One encoder layer: attention, MLP, two norms (and InternViT's two layer scales)."""
    h = v.hidden_size
    attention = attention_params_per_layer(
        h, v.n_heads, v.n_heads, v.head_dim, int(v.qkv_bias), int(v.out_bias)
    )
    mlp = mlp_params(h, v.ffn_hidden, v.n_mlp_matrices, int(v.mlp_bias))
    norms = norm_params(h, 2, int(v.norm_kind == "layernorm"))
    return int(attention + mlp + norms + 2 * h * v.layer_scale)


def layer_matmul_params(v: VisionEncoder) -> int:
    """The weights one patch multiplies through in one layer (no biases, norms or scales)."""
    h = v.hidden_size
    return 4 * h * h + v.n_mlp_matrices * h * v.ffn_hidden


def encoder_params(v: VisionEncoder) -> int:
    """Every encoder parameter, the projector left out: patch embedding, class token, positions, layers."""
    h = v.hidden_size
    patch = IMAGE_CHANNELS * v.temporal_patch * v.patch_size**2 * h + h * v.patch_bias
    outer = norm_params(h, v.outer_norms, int(v.norm_kind == "layernorm"))
    return int(patch + h * v.class_token + v.position_rows * h + outer + v.n_layers * layer_params(v))


def lora_params(v: VisionEncoder, rank: int, all_linear: bool) -> int:
    """LoRA adapters on the encoder: rank·(d_in + d_out) per adapted matrix (q, k, v, o; MLP if all-linear)."""
    h, f = v.hidden_size, v.ffn_hidden
    attention = 4 * 2 * h
    mlp = (v.n_mlp_matrices - 1) * (h + f) + (f + h)
    return rank * v.n_layers * (attention + mlp * int(all_linear))


# --- image -> patches -> tokens ---------------------------------------------------------------------


def qwen_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's `smart_resize` (transformers image_processing_qwen2_vl.py): both sides rounded to the
    nearest multiple of `factor` (patch × merge = 28 px), then scaled down (floor) or up (ceil) to stay
    within [min_pixels, max_pixels] while keeping the aspect ratio."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def internvl_grid(width: int, height: int, max_tiles: int, tile_px: int) -> tuple[int, int]:
    """InternVL's `dynamic_preprocess` (its model card's loading code): among grids of i × j tiles with
    1 <= i·j <= max_tiles, the one whose aspect ratio is closest to the image's; on a tie the larger grid,
    if the image has more than half the pixels of its tiles."""
    aspect = width / height
    grids = sorted(
        {
            (i, j)
            for n in range(1, max_tiles + 1)
            for i in range(1, n + 1)
            for j in range(1, n + 1)
            if i * j <= max_tiles
        },
        key=lambda g: g[0] * g[1],
    )
    best, best_diff = (1, 1), float("inf")
    for i, j in grids:
        diff = abs(aspect - i / j)
        if diff < best_diff:
            best, best_diff = (i, j), diff
        elif diff == best_diff and width * height > 0.5 * tile_px * tile_px * i * j:
            best = (i, j)
    return best


def image_patches_and_tokens(v: VisionEncoder, width: int, height: int) -> tuple[int, int]:
    """(patches the encoder attends over, counting every tile and class token; tokens in the LLM's sequence)
    for one image of `width` × `height` pixels."""
    if v.token_rule == "dynamic":
        factor = v.patch_size * v.spatial_merge
        h_bar, w_bar = qwen_resize(height, width, factor, v.min_pixels, v.max_pixels)
        patches = (h_bar // v.patch_size) * (w_bar // v.patch_size)
        return patches, patches // v.spatial_merge**2
    per_tile = (v.image_size_px // v.patch_size) ** 2
    tokens_per_tile = per_tile // v.spatial_merge**2
    tiles = 1
    if v.token_rule == "tiles" and v.max_tiles > 1:
        i, j = internvl_grid(width, height, v.max_tiles, v.image_size_px)
        tiles = i * j + (1 if i * j > 1 else 0)  # the thumbnail
    return tiles * (per_tile + int(v.class_token)), tiles * tokens_per_tile


def encoder_attention_context(v: VisionEncoder, patches: int, tiles_seq: int | None = None) -> float:
    """Mean keys each patch attends to, over the layers: the whole image (or tile), or a window."""
    full = float(patches if tiles_seq is None else tiles_seq)
    if v.window_patches == 0:
        return full
    windowed = min(float(v.window_patches), full)
    return (
        v.n_full_attention_layers * full + (v.n_layers - v.n_full_attention_layers) * windowed
    ) / v.n_layers


def encoder_sequence(v: VisionEncoder, patches: int) -> int:
    """Patches one attention pass sees: one tile (tiles, fixed) or the whole image (dynamic)."""
    if v.token_rule == "dynamic":
        return patches
    return (v.image_size_px // v.patch_size) ** 2 + int(v.class_token)


def encoder_forward_flops(v: VisionEncoder, patches: int, tokens: int) -> float:
    """Forward FLOPs of the encoder over one image's patches and of the projector over its tokens:
    2 FLOPs per weight per patch (per merged token for the projector) plus QKᵀ and A·V, 4·s·h per patch and
    layer over s keys (bidirectional: no causal half; PaLM appendix B's accounting)."""
    context = encoder_attention_context(v, patches, encoder_sequence(v, patches))
    matmul = 2.0 * v.n_layers * layer_matmul_params(v) * patches
    attention = 4.0 * v.n_layers * context * v.hidden_size * patches
    return matmul + attention + 2.0 * v.projector_params * tokens


# --- projectors (exact counts from their layer shapes) -------------------------------------------------


def linear(d_in: int, d_out: int, bias: bool = True) -> int:
    return d_in * d_out + d_out * int(bias)


def qwen_merger_params(vit_hidden: int, merge: int, llm_hidden: int) -> int:
    """Qwen2.5-VL `PatchMerger`: RMSNorm over the ViT width, then Linear(h·m², h·m²), GELU, Linear(h·m², H)."""
    wide = vit_hidden * merge**2
    return vit_hidden + linear(wide, wide) + linear(wide, llm_hidden)


def mlp2x_projector_params(vit_hidden: int, llm_hidden: int, pre_norm_width: int = 0) -> int:
    """LLaVA-1.5 `mlp2x_gelu` (Linear(h, H), GELU, Linear(H, H)); InternVL's `mlp1` puts a LayerNorm over the
    pixel-shuffled width in front (`pre_norm_width`: its weight and bias)."""
    return (
        2 * pre_norm_width + linear(pre_norm_width or vit_hidden, llm_hidden) + linear(llm_hidden, llm_hidden)
    )
