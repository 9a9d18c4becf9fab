"""A multimodal preset and the scenario's image inputs -> the main transformer's tokens and the parts beside it.

Vision-language: the language model is the main transformer; each example holds `tokens_per_example` text
tokens plus `images_per_example` images' tokens; the vision encoder and projector are parts beside it.
Diffusion: the transformer is the main one, one sample is one training example, its sequence is the latent's
patches (+ the caption's tokens under joint attention); text encoders and VAE are the parts beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.errors import PlannerError
from planner.formulas.memory.activations import layer_activation_bytes
from planner.inputs.multimodal_inputs import ALLOWED, parse_sizes
from planner.inputs.scenario import Scenario
from planner.model import diffusion as dit
from planner.model import multimodal_presets as presets
from planner.model import vision as vit
from planner.model.shape import ModelShape
from planner.multimodal.group import DIFFUSION, TEXT_ONLY, VISION_LANGUAGE, MultimodalColumns

BF16_BYTES = 2.0  # frozen encoders, text encoders and VAEs are loaded in bf16 by the trainers here
FP8_BYTES = 1.0
# A trained vision encoder keeps its activations in bf16 with fused attention (no s × s scores): Qwen2.5-VL and
# InternVL train with flash attention, LLaVA-1.5's CLIP runs PyTorch's scaled_dot_product_attention.
ENCODER_ELEMENT_BYTES = 2.0


@dataclass(frozen=True)
class MultimodalPlan:
    scenario: Scenario  # the main transformer's tokens per example (diffusion: its fixed sequence too)
    columns: MultimodalColumns = TEXT_ONLY
    overrides: dict[str, Any] = field(default_factory=dict)  # exact counts replacing the uniform stack's
    token_rule: str = ""  # in words, for the captions and the CLI
    seq_len_rule: str = ""  # diffusion: the sequence is the largest bucket's tokens


def main_shape(name: str) -> ModelShape | None:
    """The main transformer of a multimodal preset (None for any other name)."""
    preset = presets.find(name)
    if isinstance(preset, presets.VisionLanguagePreset):
        return preset.shape
    if isinstance(preset, presets.DiffusionPreset):
        return presets.dit_shape(preset.name, preset.model)
    return None


def plan(s: Scenario, shape: ModelShape | None) -> MultimodalPlan:
    """A vision-language shape (a preset's or an imported config's) or a diffusion preset; else the scenario."""
    preset = presets.find(s.model) if s.model_shape is None else None
    base = MultimodalPlan(s, overrides=_fp8_base(s))
    if shape is not None and shape.vision is not None:
        return _vision_language(s, shape.vision, base.overrides)
    if isinstance(preset, presets.DiffusionPreset):
        return _diffusion(s, preset.model, base.overrides)
    return base


def _fp8_base(s: Scenario) -> dict[str, Any]:
    """LoRA's frozen base stored in fp8 (kohya's --fp8_base, ai-toolkit's quantize): 1 byte per weight."""
    return {"frozen_weight_bytes_per_param": FP8_BYTES} if s.lora_base_fp8 and s.method == "lora" else {}


def _sizes(s: Scenario, default: tuple[int, int, int], video: bool) -> list[tuple[int, int, int]]:
    sizes = parse_sizes(s.image_size) or [default]
    if not video and any(frames > 1 for _, _, frames in sizes):
        raise PlannerError(
            "image_size", f"{s.model} takes images, not video frames", value=s.image_size, allowed=ALLOWED
        )
    return sizes


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _vision_language(s: Scenario, v: vit.VisionEncoder, overrides: dict[str, Any]) -> MultimodalPlan:
    # no size given: the encoder's input (fixed, tiles); for dynamic resolution 448 × 448, the size of the
    # Methods page's worked example (Qwen's processor takes any size within its pixel budget)
    native = v.image_size_px if v.token_rule != "dynamic" else 448
    per_image = [vit.image_patches_and_tokens(v, w, h) for w, h, _ in _sizes(s, (native, native, 1), False)]
    tokens = _mean([b for _, b in per_image])
    image_tokens = s.images_per_example * tokens
    n_enc, n_proj = vit.encoder_params(v), v.projector_params
    mode = s.vision_encoder
    adapters = vit.lora_params(v, s.lora_rank, s.lora_targets == "all_linear") if mode == "lora" else 0
    full = (n_enc if mode == "full" else 0) + (n_proj if s.train_projector else 0)
    frozen = n_enc + n_proj - full
    encoder_fwd = sum(vit.encoder_forward_flops(v, a, b) for a, b in per_image) / len(per_image)
    projector_fwd = 2.0 * n_proj * tokens
    encoder_factor = {"frozen": 1.0, "lora": 2.0, "full": 3.0}[mode]  # forward; + input grads; + weight grads
    projector_factor = 3.0 if s.train_projector else (2.0 if mode != "frozen" else 1.0)
    per_image_flops = encoder_factor * (encoder_fwd - projector_fwd) + projector_factor * projector_fwd
    columns = MultimodalColumns(
        multimodal_kind=VISION_LANGUAGE,
        n_images_per_example=s.images_per_example,
        n_image_tokens_per_example=image_tokens,
        n_image_patches_max=float(max(a for a, _ in per_image)),
        n_side_flops_per_example=s.images_per_example * per_image_flops,
        vision_frozen_weight_bytes=frozen * BF16_BYTES,
        n_vision_trainable_params=float(full + adapters),
        n_vision_full_params=float(full),
        vision_patch_activation_bytes=_encoder_activation_per_patch(v, mode != "frozen", s.train_projector),
        n_side_params=float(n_enc + n_proj),
        n_epochs=s.epochs,
    )
    rule = _vision_rule(v, per_image)
    return MultimodalPlan(
        s.updated(tokens_per_example=s.tokens_per_example + image_tokens), columns, overrides, rule
    )


def _encoder_activation_per_patch(
    v: vit.VisionEncoder, encoder_trains: bool, projector_trains: bool
) -> float:
    """Bytes a patch leaves for backward: every encoder layer's (Korthikanti's per-layer formula at the ViT's
    widths) when the encoder trains; the projector's input and GELU output when only the projector trains."""
    if encoder_trains:
        per_layer = layer_activation_bytes(
            1.0, 1.0, v.hidden_size, v.n_heads, v.n_heads, v.head_dim, v.ffn_hidden, v.n_mlp_matrices,
            ENCODER_ELEMENT_BYTES,
        )  # fmt: skip
        return float(v.n_layers * per_layer)
    return 2.0 * v.hidden_size * ENCODER_ELEMENT_BYTES if projector_trains else 0.0


def _vision_rule(v: vit.VisionEncoder, per_image: list[tuple[int, int]]) -> str:
    patches, tokens = per_image[0]
    words = {
        "dynamic": f"resized to multiples of {v.patch_size * v.spatial_merge} px, {v.patch_size}-px patches, "
        f"{v.spatial_merge}×{v.spatial_merge} merged into one token",
        "fixed": f"resized to {v.image_size_px}×{v.image_size_px}, one token per {v.patch_size}-px patch",
        "tiles": f"{v.image_size_px}-px tiles on the closest aspect grid (up to {v.max_tiles}, + thumbnail), "
        f"{(v.image_size_px // v.patch_size) ** 2 // v.spatial_merge**2} tokens per tile",
    }[v.token_rule]
    return f"{words}: {patches:,} patches -> {tokens:,} tokens for the first size"


def _diffusion(s: Scenario, d: dit.DiffusionModel, overrides: dict[str, Any]) -> MultimodalPlan:
    sizes = _sizes(s, (d.native_width_px, d.native_height_px, d.native_frames), d.kind == "video")
    latent = [dit.latent_tokens(d, w, h, f) for w, h, f in sizes]
    sequence = [t + d.sequence_text_tokens for t in latent]
    pixels = _mean([float(w * h * f) for w, h, f in sizes])
    epochs = s.epochs
    text_params = sum(e.n_params for e in d.text_encoders)
    text_fwd = sum(2.0 * e.n_params * e.tokens for e in d.text_encoders)
    vae_fwd = dit.VAE_ENCODER_FLOPS_PER_PIXEL * pixels
    flops = text_fwd / (epochs if s.text_encoders == "cached" else 1.0) + vae_fwd / (
        epochs if s.vae == "cached" else 1.0
    )
    columns = MultimodalColumns(
        multimodal_kind=DIFFUSION,
        n_images_per_example=1.0,
        n_image_tokens_per_example=_mean([float(t) for t in latent]),
        n_side_flops_per_example=flops,
        bidirectional=1.0,
        text_encoder_bytes=text_params * BF16_BYTES if s.text_encoders == "resident" else 0.0,
        text_encoder_stream_bytes=text_params * BF16_BYTES if s.text_encoders == "offloaded" else 0.0,
        vae_bytes=d.vae_params * BF16_BYTES if s.vae == "resident" else 0.0,
        buffer_bytes=d.n_buffer_params * BF16_BYTES,
        n_side_params=float(text_params + d.vae_params + d.n_buffer_params),
        n_epochs=epochs,
    )
    # a stored buffer (SD3's position table) is loaded with the weights but gets no gradient or optimizer
    # state, so it sits beside the transformer's trained parameters as a part of its own
    trained = float(d.n_params - d.n_buffer_params)
    exact = {
        "n_params": trained,
        "n_active_params": trained,
        "n_matmul_params": float(d.n_token_matmul_params),
        "n_layer_matmul_params": float(d.n_token_matmul_params),
        "n_embedding_params": 0.0,
        "n_head_params": 0.0,
    }
    w, h, f = sizes[0]
    rule = (
        f"{w}×{h}{f'×{f}' if f > 1 else ''} px -> latent {-(-h // d.vae_spatial)}×{-(-w // d.vae_spatial)}"
        f"×{d.latent_channels} -> {d.patch_size}×{d.patch_size} patches -> {latent[0]:,} tokens"
        + (f" + {d.sequence_text_tokens} caption tokens" if d.sequence_text_tokens else "")
    )
    seq_len = s.seq_len or max(sequence)
    effective = s.updated(
        tokens_per_example=_mean([float(t) for t in sequence]), seq_len=seq_len, packing=True
    )
    seq_rule = (
        "set by you" if s.seq_len else "one sample's tokens (the largest size's); samples are not packed"
    )
    return MultimodalPlan(effective, columns, {**exact, **overrides}, rule, seq_rule)
