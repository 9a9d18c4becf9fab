"""A vision encoder's shape (declared apart from its formulas in `planner.model.vision`, so that `ModelShape`
can carry one: a vision-language model is its language model's shape plus this)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TokenRule = Literal["dynamic", "fixed", "tiles"]
IMAGE_CHANNELS = 3  # RGB input of every encoder here


class VisionEncoder(BaseModel):
    """A ViT's shape and its image-to-token rule, in the vocabulary of Hugging Face `vision_config`s."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_layers: int = Field(ge=1, le=1000)
    hidden_size: int = Field(ge=1, le=100_000)
    n_heads: int = Field(ge=1, le=1000)
    ffn_hidden: int = Field(ge=1, le=1_000_000)
    mlp_kind: Literal["gelu", "swiglu"] = "gelu"
    norm_kind: Literal["layernorm", "rmsnorm"] = "layernorm"
    qkv_bias: bool = True
    out_bias: bool = True
    mlp_bias: bool = True
    patch_size: int = Field(14, ge=1, le=1024)
    temporal_patch: int = Field(
        1, ge=1, le=16, description="frames one patch spans (Qwen: 2, images doubled)"
    )
    spatial_merge: int = Field(1, ge=1, le=16, description="merge × merge patches become one token")
    patch_bias: bool = False
    class_token: bool = False
    position_rows: int = Field(0, ge=0, le=10_000_000, description="learned position table rows; 0 = rotary")
    outer_norms: int = Field(0, ge=0, le=4, description="norms outside the layers (CLIP: pre and post)")
    layer_scale: bool = False  # InternViT: two learned per-channel scales per layer
    projector_params: int = Field(ge=0, le=100_000_000_000, description="exact, from its layer shapes")
    token_rule: TokenRule = "fixed"
    image_size_px: int = Field(336, ge=1, le=100_000, description="fixed: input side; tiles: tile side")
    max_tiles: int = Field(1, ge=1, le=1000)
    min_pixels: int = Field(0, ge=0, le=10**9, description="dynamic: the processor's pixel budget")
    max_pixels: int = Field(0, ge=0, le=10**9)
    # Qwen2.5-VL: windowed attention over 112 px windows (8 × 8 = 64 patches) except a few full layers.
    window_patches: int = Field(
        0, ge=0, le=10**6, description="patches per attention window; 0 = full attention"
    )
    n_full_attention_layers: int = Field(0, ge=0, le=1000)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.n_heads

    @property
    def n_mlp_matrices(self) -> int:
        return 3 if self.mlp_kind == "swiglu" else 2
