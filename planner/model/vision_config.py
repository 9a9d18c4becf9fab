"""A vision-language model's Hugging Face `config.json`: its language model's keys and its `vision_config`.

`planner.model.hf_config.shape_from_hf_config` calls `split_vision_language` first: for a vision-language
`model_type` it returns the language model's config object (read by the ordinary readers) and the vision
encoder read from `vision_config`. Absent keys take the default of the `transformers` configuration class, as
`from_pretrained` would (llava-hf's configs list only the keys that differ from those defaults).
"""

from __future__ import annotations

from typing import Any

from planner.model import vision as vit
from planner.model.hf_json import ConfigReader

MAX_LAYERS = 1000

# LlamaConfig's defaults (transformers configuration_llama.py): what a llava `text_config` leaves out.
LLAMA_DEFAULTS = {
    "model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32,
}  # fmt: skip
# CLIPVisionConfig's defaults (configuration_clip.py): ViT-B/32 at 224 px.
CLIP_DEFAULTS = {
    "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
    "image_size": 224, "patch_size": 32,
}  # fmt: skip
VISION_LANGUAGE_TYPES = ("qwen2_5_vl", "qwen2_vl", "llava", "internvl_chat")


def _qwen(cfg: ConfigReader) -> tuple[dict[str, Any], vit.VisionEncoder]:
    """Qwen2-VL / Qwen2.5-VL: the language model's keys at the top level (or in `text_config` in newer files);
    `vision_config`: depth, hidden_size, num_heads, intermediate_size, patch and merge sizes, windows."""
    nested = cfg.data.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else cfg.data
    v = cfg.get_object("vision_config")
    hidden = v.get_int("hidden_size", 1280)
    llm_hidden = ConfigReader(text, "qwen2").get_int("hidden_size")
    merge = v.get_int("spatial_merge_size", 2, high=16)
    patch = v.get_int("patch_size", 14, high=1024)
    is_25 = cfg.model_type == "qwen2_5_vl"
    # Qwen2-VL's ViT: LayerNorm and a GELU MLP of embed_dim·mlp_ratio; Qwen2.5-VL's: RMSNorm and SwiGLU.
    ffn = v.get_int("intermediate_size", 3420) if is_25 else int(hidden * v.get_number("mlp_ratio", 4))
    window_px = v.get_int("window_size", 112, high=100_000) if is_25 else 0
    encoder = vit.VisionEncoder(
        n_layers=v.get_int("depth", 32, high=MAX_LAYERS), hidden_size=hidden, n_heads=v.get_int("num_heads", 16),
        ffn_hidden=ffn, mlp_kind="swiglu" if is_25 else "gelu", norm_kind="rmsnorm" if is_25 else "layernorm",
        patch_size=patch, temporal_patch=v.get_int("temporal_patch_size", 2, high=16), spatial_merge=merge,
        token_rule="dynamic", min_pixels=56 * 56, max_pixels=12_845_056,
        window_patches=(window_px // patch) ** 2, n_full_attention_layers=len(v.get_int_list("fullatt_block_indexes")),
        projector_params=vit.qwen_merger_params(hidden, merge, llm_hidden),
    )  # fmt: skip
    return {**text, "model_type": "qwen2"}, encoder


def _llava(cfg: ConfigReader) -> tuple[dict[str, Any], vit.VisionEncoder]:
    """LLaVA (llava-hf): `text_config` (a Llama by default) and a CLIP `vision_config`; `mlp2x_gelu` projector."""
    text = {**LLAMA_DEFAULTS, **cfg.get_object("text_config").data}
    v = ConfigReader({**CLIP_DEFAULTS, **cfg.get_object("vision_config").data}, "llava", "vision_config.")
    hidden, image, patch = (
        v.get_int("hidden_size"),
        v.get_int("image_size", high=16384),
        v.get_int("patch_size"),
    )
    encoder = vit.VisionEncoder(
        n_layers=v.get_int("num_hidden_layers", high=MAX_LAYERS), hidden_size=hidden,
        n_heads=v.get_int("num_attention_heads"), ffn_hidden=v.get_int("intermediate_size"), patch_size=patch,
        class_token=True, position_rows=(image // patch) ** 2 + 1, outer_norms=2, token_rule="fixed",
        image_size_px=image, projector_params=vit.mlp2x_projector_params(hidden, text["hidden_size"]),
    )  # fmt: skip
    return text, encoder


def _internvl(cfg: ConfigReader) -> tuple[dict[str, Any], vit.VisionEncoder]:
    """InternVL (internvl_chat): `llm_config` (InternLM2 or Qwen2) and an InternViT `vision_config`; pixel
    shuffle by `downsample_ratio` (0.5: 2 × 2 -> 1), `max_dynamic_patch` tiles; `mlp1` projector."""
    llm = cfg.get_object("llm_config").data
    llm = {**llm, "model_type": "llama" if llm.get("model_type") == "internlm2" else llm.get("model_type")}
    v = cfg.get_object("vision_config")
    hidden, image, patch = (
        v.get_int("hidden_size"),
        v.get_int("image_size", high=16384),
        v.get_int("patch_size"),
    )
    merge = round(1 / cfg.get_number("downsample_ratio", 0.5, high=1.0))
    encoder = vit.VisionEncoder(
        n_layers=v.get_int("num_hidden_layers", high=MAX_LAYERS), hidden_size=hidden,
        n_heads=v.get_int("num_attention_heads"), ffn_hidden=v.get_int("intermediate_size"),
        qkv_bias=v.get_bool("qkv_bias", True), patch_size=patch, patch_bias=True, class_token=True,
        position_rows=(image // patch) ** 2 + 1, layer_scale=True, spatial_merge=merge, token_rule="tiles",
        image_size_px=image, max_tiles=cfg.get_int("max_dynamic_patch", 12, high=1000),
        projector_params=vit.mlp2x_projector_params(hidden, ConfigReader(llm, "internvl").get_int("hidden_size"),
                                                    hidden * merge * merge),
    )  # fmt: skip
    return llm, encoder


READERS = {"qwen2_5_vl": _qwen, "qwen2_vl": _qwen, "llava": _llava, "internvl_chat": _internvl}


def split_vision_language(data: dict[str, Any]) -> tuple[dict[str, Any], vit.VisionEncoder] | None:
    """(the language model's config object, the vision encoder) for a vision-language config; else None."""
    model_type = str(data.get("model_type", "")).lower()
    if model_type not in READERS:
        return None
    return READERS[model_type](ConfigReader(data, model_type))
