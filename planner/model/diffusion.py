"""A diffusion transformer (image or video) and the models around it: token rule, exact parameter counts.

Training a diffusion transformer runs, per sample: the VAE's encoder over the pixels (unless the latents were
cached beforehand), the text encoders over the caption (unless their outputs were cached), and one forward and
backward of the transformer at a sampled noise level over the latent's patches (+ the caption's tokens where
the model attends jointly to both, as FLUX and SD3 do; Wan attends to them by cross-attention instead).

The transformer enters the planner's pipeline as an equivalent stack of uniform blocks (`ModelShape` widths:
every block attention + MLP at the model's width), with its exact parameter count and the exact weights a
token multiplies through replacing the stack's own counts. Modulation (adaLN) and timestep weights act once per
sample, not per token, so they hold memory but almost no FLOPs.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from planner.model.vision import linear


class TextEncoder(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    n_params: int = Field(ge=0)
    tokens: int = Field(ge=1, le=100_000, description="caption tokens it encodes")


class DiffusionModel(BaseModel):
    """The transformer (exact counts + equivalent widths) and its VAE and text encoders."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["image", "video"] = "image"
    n_blocks: int = Field(ge=1, le=1000, description="blocks each image token passes through")
    hidden_size: int = Field(ge=1)
    n_heads: int = Field(ge=1)
    ffn_hidden: int = Field(ge=1)
    n_params: int = Field(ge=1, description="the transformer's exact parameter count")
    n_token_matmul_params: int = Field(ge=1, description="weights one token multiplies through, all blocks")
    n_buffer_params: int = Field(
        0, ge=0, description="of n_params, stored in the checkpoint but never trained"
    )
    vae_spatial: int = Field(8, ge=1, le=64, description="pixels per latent cell along each side")
    vae_temporal: int = Field(1, ge=1, le=16, description="frames per latent frame (video VAEs)")
    latent_channels: int = Field(16, ge=1, le=1024)
    patch_size: int = Field(2, ge=1, le=64, description="latent cells per token along each side")
    joint_text: bool = Field(True, description="caption tokens join the transformer's sequence (MMDiT)")
    text_tokens: int = Field(ge=0, le=100_000, description="caption tokens the transformer attends to")
    text_encoders: tuple[TextEncoder, ...] = ()
    vae_params: int = Field(ge=0)
    native_width_px: int = 1024
    native_height_px: int = 1024
    native_frames: int = 1

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.n_heads

    @property
    def sequence_text_tokens(self) -> int:
        """Caption tokens in the transformer's own sequence (joint attention); 0 for cross-attention."""
        return self.text_tokens if self.joint_text else 0


def latent_frames(frames: int, vae_temporal: int) -> int:
    """A causal video VAE keeps the first frame and compresses the rest by its factor: 1 + (F − 1) / t
    (Wan 2.1: 81 frames -> 21 latent frames); an image is one frame."""
    return 1 + math.ceil((frames - 1) / vae_temporal) if frames > 1 else 1


def latent_tokens(d: DiffusionModel, width: int, height: int, frames: int = 1) -> int:
    """Tokens of one sample: latent height × width ÷ patch² (× latent frames for video).

    FLUX.1 at 1024 × 1024: latent 128 × 128 × 16 (8× VAE), 2 × 2 patches -> 64 × 64 = 4096 tokens.
    """
    lat_h = math.ceil(height / d.vae_spatial)
    lat_w = math.ceil(width / d.vae_spatial)
    per_frame = math.ceil(lat_h / d.patch_size) * math.ceil(lat_w / d.patch_size)
    return per_frame * latent_frames(frames, d.vae_temporal)


# --- exact counts from diffusers' module layouts (each preset cites its config) ------------------------


def _adaln(h: int, chunks: int) -> int:
    return linear(h, chunks * h)


def _ff(h: int, f: int) -> int:
    return linear(h, f) + linear(f, h)


def timestep_mlp(freq_dim: int, h: int) -> int:
    """`TimestepEmbedding`: Linear(freq, h), SiLU, Linear(h, h)."""
    return linear(freq_dim, h) + linear(h, h)


def flux_params(
    h: int, head_dim: int, double: int, single: int, in_ch: int, text_dim: int, pooled: int
) -> int:
    """FluxTransformer2DModel (diffusers transformer_flux.py): per double block two adaLN-Zero (6h each), two
    attention streams (q, k, v, out with biases; RMS q/k norms of head_dim), two GELU MLPs (4h); per single
    block a 3h adaLN, q/k/v, a 4h MLP input and one output Linear(5h, h); timestep, guidance and pooled-text
    embedders; the final adaLN (2h) and Linear(h, in_ch)."""
    f = 4 * h
    attn = 4 * linear(h, h)
    double_block = 2 * _adaln(h, 6) + 2 * attn + 4 * head_dim + 2 * _ff(h, f)
    single_block = _adaln(h, 3) + 3 * linear(h, h) + 2 * head_dim + linear(h, f) + linear(h + f, h)
    embedders = (
        linear(in_ch, h) + linear(text_dim, h) + 2 * timestep_mlp(256, h) + linear(pooled, h) + linear(h, h)
    )
    return double * double_block + single * single_block + embedders + _adaln(h, 2) + linear(h, in_ch)


def sd3_params(h: int, head_dim: int, blocks: int, dual: int, patch: int, in_ch: int, pos_max: int) -> int:
    """SD3Transformer2DModel (diffusers transformer_sd3.py, SD 3.5): joint blocks as FLUX's double ones
    (the last keeps no text output: a 2h continuous adaLN, no text MLP or output projection), `dual` MMDiT-X
    blocks with a second image-only attention and a 9h adaLN; the patch embedding with its stored position
    table (`sd3_position_table`, stored in the checkpoint), pooled-text (2048) and timestep embedders."""
    f = 4 * h
    attn6 = 6 * linear(h, h)
    joint = 2 * _adaln(h, 6) + attn6 + 2 * linear(h, h) + 4 * head_dim + 2 * _ff(h, f)
    last = _adaln(h, 6) + _adaln(h, 2) + attn6 + linear(h, h) + 4 * head_dim + _ff(h, f)
    dual_extra = (_adaln(h, 9) - _adaln(h, 6)) + 4 * linear(h, h) + 2 * head_dim
    embed = linear(in_ch * patch * patch, h) + sd3_position_table(pos_max, h)
    embedders = timestep_mlp(256, h) + linear(2048, h) + linear(h, h) + linear(4096, h)
    out = _adaln(h, 2) + linear(h, patch * patch * in_ch)
    return (blocks - 1) * joint + last + dual * dual_extra + embed + embedders + out


def sd3_position_table(pos_max: int, h: int) -> int:
    """SD3's fixed 2-D sin-cos position table, pos_max² × h: a persistent buffer (`register_buffer(...,
    persistent=True)` in diffusers' `PatchEmbed`), so the checkpoint stores it but training never updates it."""
    return pos_max * pos_max * h


def wan_params(h: int, ffn: int, blocks: int, in_ch: int, text_dim: int, freq_dim: int) -> int:
    """WanTransformer3DModel (Wan 2.1 text-to-video): per block self- and cross-attention (q, k, v, o with
    biases, RMS q/k norms over the full width), a LayerNorm before cross-attention, a GELU MLP and a 6h
    modulation table; the (1, 2, 2) patch embedding, the text and time embedders, the 6h time projection and
    the output head with its 2h modulation."""
    attn = 4 * linear(h, h) + 2 * h
    block = 2 * attn + 2 * h + _ff(h, ffn) + 6 * h
    embed = linear(in_ch * 4, h) + linear(text_dim, h) + linear(h, h) + timestep_mlp(freq_dim, h)
    return blocks * block + embed + linear(h, 6 * h) + linear(h, in_ch * 4) + 2 * h


def t5_encoder_params(vocab: int, d: int, d_ff: int, layers: int, heads: int, bias_every_layer: bool) -> int:
    """T5 v1.1 / umT5 encoder: shared embedding, per layer q, k, v, o (no biases), a gated-GELU MLP (3 matrices)
    and two RMS norms; relative-position buckets (32 × heads) in the first layer (every layer for umT5)."""
    per_layer = 4 * d * d + 3 * d * d_ff + 2 * d
    buckets = 32 * heads * (layers if bias_every_layer else 1)
    return vocab * d + layers * per_layer + buckets + d


def clip_text_params(vocab: int, d: int, ffn: int, layers: int, projection: int = 0) -> int:
    """CLIP text transformer: token and 77 position embeddings, LayerNorm layers (biases everywhere), final
    LayerNorm, and the text projection of `CLIPTextModelWithProjection` (no bias) where there is one."""
    per_layer = 4 * linear(d, d) + _ff(d, ffn) + 4 * d
    return vocab * d + 77 * d + layers * per_layer + 2 * d + d * projection


# Forward FLOPs of the KL autoencoder's encoder per input pixel, from its layout (diffusers AutoencoderKL as
# FLUX.1 and SD3 ship it: block_out_channels 128, 256, 512, 512; two ResNet blocks of two 3×3 convolutions per
# level; a stride-2 convolution between levels; two ResNet blocks in the middle). Multiply-accumulates per
# input pixel: full resolution 0.593 M (conv_in + 4 convolutions at 128 channels), half 0.524 M, quarter
# 0.524 M, eighth 0.314 M (down block, middle, conv_out), the three downsamplers 0.111 M: 2.07 M MACs, so
# 4.1 MFLOP per pixel; the middle block's attention (over H/8 × W/8 positions) is left out. Wan's causal 3D
# VAE is charged the same per pixel and frame: narrower (96 base channels) but with 3 × 3 × 3 kernels.
VAE_ENCODER_FLOPS_PER_PIXEL = 4.1e6
