"""A transformer's shape: the numbers parameter counts, memory and FLOPs are computed from.

This module only declares the shape; the counting formulas live in `planner.model.architecture`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from planner.errors import PlannerError
from planner.model.labels import check_label
from planner.model.vision_shape import VisionEncoder

MlpKind = Literal["gelu", "swiglu"]  # 2-matrix (up, down) or 3-matrix gated (gate, up, down)
NormKind = Literal["layernorm", "rmsnorm"]


class ModelShape(BaseModel):
    """Decoder-only transformer shape, in the vocabulary of Hugging Face configs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field("custom", max_length=120)
    family: str = Field("llama", max_length=40)
    vocab_size: int = Field(ge=1, le=10_000_000)
    hidden_size: int = Field(ge=1, le=1_000_000)
    n_layers: int = Field(ge=1, le=10_000)
    n_heads: int = Field(ge=1, le=10_000)
    n_kv_heads: int = Field(ge=1, le=10_000)
    head_dim: int = Field(ge=1, le=100_000)
    ffn_hidden: int = Field(ge=1, le=10_000_000, description="dense MLP width (per expert for MoE)")
    mlp_kind: MlpKind = "swiglu"
    norm_kind: NormKind = "rmsnorm"
    tied_embeddings: bool = False
    learned_pos_embeddings: int = Field(
        0, ge=0, le=10_000_000, description="rows of a learned table; 0 = rotary"
    )
    attn_bias: bool = False
    mlp_bias: bool = False
    context_len: int = Field(4096, ge=1, le=100_000_000)
    # Mixture of experts: n_experts == 0 means a dense MLP in every layer.
    n_experts: int = Field(0, ge=0, le=100_000)
    n_experts_active: int = Field(0, ge=0, le=100_000, description="routed experts per token (top-k)")
    n_shared_experts: int = Field(0, ge=0, le=1_000)
    moe_ffn_hidden: int = Field(0, ge=0, le=10_000_000, description="expert width; 0 = ffn_hidden")
    n_dense_layers: int = Field(
        0, ge=0, le=10_000, description="leading layers with a dense MLP in MoE models"
    )

    # Multi-head latent attention (DeepSeek-V2/V3; planner/model/latent_attention.py): kv_lora_rank 0 = none.
    # Bounds as for the widths above.
    q_lora_rank: int = Field(0, ge=0, le=1_000_000, description="MLA query latent width; 0 = no compression")
    kv_lora_rank: int = Field(0, ge=0, le=1_000_000, description="MLA key/value latent width; 0 = not MLA")
    qk_nope_head_dim: int = Field(0, ge=0, le=100_000, description="MLA query/key width without rotary part")
    qk_rope_head_dim: int = Field(0, ge=0, le=100_000, description="MLA rotary query/key width")
    v_head_dim: int = Field(0, ge=0, le=100_000, description="MLA value head width")
    # A vision-language model: its vision encoder and projector beside this language model (planner.model.vision).
    vision: VisionEncoder | None = Field(None, description="vision encoder; empty for a text-only model")

    @field_validator("name", "family", mode="before")
    @classmethod
    def _label(cls, value: Any) -> Any:
        """Free text that reaches generated files: one NFC line, printable, no bidi controls (labels.py)."""
        return check_label(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _consistent(self) -> ModelShape:
        if self.kv_lora_rank and not (self.qk_nope_head_dim + self.qk_rope_head_dim and self.v_head_dim):
            raise PlannerError(
                "v_head_dim",
                "multi-head latent attention (kv_lora_rank > 0) needs query/key and value head widths",
                value=self.v_head_dim,
                allowed="qk_nope_head_dim + qk_rope_head_dim >= 1 and v_head_dim >= 1",
                related=("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"),
            )
        if self.n_kv_heads > self.n_heads:
            raise PlannerError(
                "n_kv_heads", "must not exceed n_heads", value=self.n_kv_heads, related=("n_heads",)
            )
        if self.n_heads % self.n_kv_heads:
            raise PlannerError(
                "n_heads", "must be a multiple of n_kv_heads", value=self.n_heads, related=("n_kv_heads",)
            )
        if self.n_experts and not 1 <= self.n_experts_active <= self.n_experts:
            raise PlannerError(
                "n_experts_active",
                "must be between 1 and n_experts",
                value=self.n_experts_active,
                related=("n_experts",),
            )
        if self.n_dense_layers > self.n_layers:
            raise PlannerError(
                "n_dense_layers", "must not exceed n_layers", value=self.n_dense_layers, related=("n_layers",)
            )
        return self

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0
