"""Vision-language and diffusion-transformer presets, built from the shapes in their Hugging Face configs.

Each preset's numbers are the config's fields. Its `source` is pinned at a Hugging Face revision where one was
found; otherwise it is the Hub's `main` as read on 2026-12-04 (said so in the string), with a cross-check at a
GitHub commit where the model's own repository states the same shape. Parameter counts are computed from the
shapes by `planner.model.vision` and `planner.model.diffusion` and checked against the published totals in
tests/test_multimodal.py (each with its source there).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model import diffusion as dit
from planner.model import vision as vit
from planner.model.shape import ModelShape


@dataclass(frozen=True)
class VisionLanguagePreset:
    name: str
    llm: ModelShape
    vision: vit.VisionEncoder
    published_params: float  # the model card's or the Hub's total
    source: str

    @property
    def shape(self) -> ModelShape:
        """The language model's shape carrying the vision encoder (what the pipeline plans with)."""
        return self.llm.model_copy(update={"vision": self.vision})


@dataclass(frozen=True)
class DiffusionPreset:
    name: str
    model: dit.DiffusionModel
    published_params: (
        float  # the transformer alone, as published: the checkpoint's count where one is published
    )
    published_digits: float  # the rounding of the published figure (8.1B: 0.1e9; an exact count: 1)
    source: str


def _qwen_llm(
    name: str, vocab: int, h: int, layers: int, heads: int, kv: int, ffn: int, tied: bool
) -> ModelShape:
    return ModelShape(
        name=name, family="qwen2", vocab_size=vocab, hidden_size=h, n_layers=layers, n_heads=heads,
        n_kv_heads=kv, head_dim=128, ffn_hidden=ffn, tied_embeddings=tied, attn_bias=True, context_len=128_000,
    )  # fmt: skip


def _qwen_vit(llm_hidden: int) -> vit.VisionEncoder:
    """Qwen2.5-VL `vision_config` (the same ViT in every size): depth 32, hidden 1280, 16 heads, SwiGLU 3420
    with biases, RMSNorm, 14-px patches over 2 frames, 2 × 2 merge, 112-px windows except blocks 7, 15, 23, 31;
    the processor's pixel budget 56² .. 12,845,056 (preprocessor_config.json)."""
    return vit.VisionEncoder(
        n_layers=32, hidden_size=1280, n_heads=16, ffn_hidden=3420, mlp_kind="swiglu", norm_kind="rmsnorm",
        patch_size=14, temporal_patch=2, spatial_merge=2, token_rule="dynamic", min_pixels=56 * 56,
        max_pixels=12_845_056, window_patches=64, n_full_attention_layers=4,
        projector_params=vit.qwen_merger_params(1280, 2, llm_hidden),
    )  # fmt: skip


def _clip_336(llm_hidden: int) -> vit.VisionEncoder:
    """CLIP ViT-L/14 at 336 px (openai/clip-vit-large-patch14-336): 24 layers, 1024 wide, 16 heads, GELU 4096,
    class token, 577 learned positions, pre- and post-LayerNorm; LLaVA-1.5's `mlp2x_gelu` projector."""
    return vit.VisionEncoder(
        n_layers=24, hidden_size=1024, n_heads=16, ffn_hidden=4096, patch_size=14, class_token=True,
        position_rows=577, outer_norms=2, token_rule="fixed", image_size_px=336,
        projector_params=vit.mlp2x_projector_params(1024, llm_hidden),
    )  # fmt: skip


def _llama2(name: str, vocab: int, h: int, layers: int, ffn: int) -> ModelShape:
    return ModelShape(
        name=name, vocab_size=vocab, hidden_size=h, n_layers=layers, n_heads=h // 128, n_kv_heads=h // 128,
        head_dim=128, ffn_hidden=ffn, context_len=4096,
    )  # fmt: skip


AT_MAIN = " (as of 2026-12-04 at main)"
QWEN = "https://huggingface.co/Qwen/Qwen2.5-VL-{}-Instruct/blob/{}/config.json"
QWEN_7B_REVISION = "cc594898137f460bfe9f0759e9844b3ce807cfb5"
LLAVA = "https://huggingface.co/llava-hf/llava-1.5-{}-hf/blob/{}/config.json"
LLAVA_7B_REVISION = "b234b804b114d9e37bb655e11cbbb5f5e971b7a9"
# the Hub's config at main; the same shape in the 8B fine-tuning scripts of OpenGVLab/InternVL at commit dc2bdc6
# (internvl_chat/shell/internvl2.5/2nd_finetune/internvl2_5_8b_dynamic_res_2nd_finetune_full.sh)
INTERNVL = "https://huggingface.co/OpenGVLab/InternVL2_5-8B/blob/main/config.json" + AT_MAIN

VISION_LANGUAGE: dict[str, VisionLanguagePreset] = {
    p.name: p
    for p in (
        VisionLanguagePreset(
            "Qwen2.5-VL 3B", _qwen_llm("Qwen2.5-VL 3B", 151936, 2048, 36, 16, 2, 11008, True), _qwen_vit(2048),
            3.75e9, QWEN.format("3B", "main") + AT_MAIN,
        ),
        VisionLanguagePreset(
            "Qwen2.5-VL 7B", _qwen_llm("Qwen2.5-VL 7B", 152064, 3584, 28, 28, 4, 18944, False), _qwen_vit(3584),
            8.29e9, QWEN.format("7B", QWEN_7B_REVISION),
        ),
        VisionLanguagePreset(
            "Qwen2.5-VL 72B", _qwen_llm("Qwen2.5-VL 72B", 152064, 8192, 80, 64, 8, 29568, False),
            _qwen_vit(8192), 73.4e9, QWEN.format("72B", "main") + AT_MAIN,
        ),
        # Vicuna-7B/13B v1.5 are Llama 2 shapes; llava-hf adds 64 rows to the vocabulary (32064).
        VisionLanguagePreset(
            "LLaVA-1.5 7B", _llama2("LLaVA-1.5 7B", 32064, 4096, 32, 11008), _clip_336(4096), 7.06e9,
            LLAVA.format("7b", LLAVA_7B_REVISION),
        ),
        VisionLanguagePreset(
            "LLaVA-1.5 13B", _llama2("LLaVA-1.5 13B", 32064, 5120, 40, 13824), _clip_336(5120), 13.4e9,
            LLAVA.format("13b", "main") + AT_MAIN,
        ),
        # InternVL2.5-8B: InternViT-300M-448px-V2_5 (24 layers, 1024 wide, q/k/v and output biases, class token,
        # 1025 positions, layer scales) + InternLM2.5-7B-chat; pixel shuffle 0.5 (2 × 2 -> 1), 448-px tiles,
        # up to 12 tiles + a thumbnail; `mlp1` projector: LayerNorm(4096), Linear(4096, 4096), GELU, Linear.
        VisionLanguagePreset(
            "InternVL2.5 8B",
            ModelShape(
                name="InternVL2.5 8B", family="internlm2", vocab_size=92553, hidden_size=4096, n_layers=32,
                n_heads=32, n_kv_heads=8, head_dim=128, ffn_hidden=14336, context_len=32768,
            ),
            vit.VisionEncoder(
                n_layers=24, hidden_size=1024, n_heads=16, ffn_hidden=4096, patch_size=14, patch_bias=True,
                class_token=True, position_rows=1025, layer_scale=True, spatial_merge=2, token_rule="tiles",
                image_size_px=448, max_tiles=12, projector_params=vit.mlp2x_projector_params(1024, 4096, 4096),
            ),
            8.08e9,
            INTERNVL,
        ),
    )
}  # fmt: skip

CLIP_L = dit.TextEncoder(name="CLIP-L", n_params=dit.clip_text_params(49408, 768, 3072, 12), tokens=77)
# SD3 loads CLIP-L as CLIPTextModelWithProjection (its pooled output feeds the pooled-text embedder): + 768²
CLIP_L_PROJECTED = dit.TextEncoder(
    name="CLIP-L", n_params=dit.clip_text_params(49408, 768, 3072, 12, 768), tokens=77
)
CLIP_G = dit.TextEncoder(name="CLIP-G", n_params=dit.clip_text_params(49408, 1280, 5120, 32, 1280), tokens=77)


def _t5(tokens: int) -> dit.TextEncoder:
    """google/t5-v1_1-xxl encoder: vocab 32128, d_model 4096, d_ff 10240, 24 layers, 64 heads."""
    return dit.TextEncoder(
        name="T5-XXL", n_params=dit.t5_encoder_params(32128, 4096, 10240, 24, 64, False), tokens=tokens
    )


def _joint(h: int, ffn: int, blocks: int, extra_image_attention_blocks: int = 0) -> int:
    """Weights a token multiplies through in joint blocks: q, k, v, out (4h²) and the MLP (2·h·F) of its own
    stream; MMDiT-X blocks add a second image attention (4h², charged to every token: image tokens dominate)."""
    return blocks * (4 * h * h + 2 * h * ffn) + extra_image_attention_blocks * 4 * h * h


FLUX_VAE_PARAMS = 83_819_683  # black-forest-labs/FLUX.1-dev vae/diffusion_pytorch_model.safetensors
# SD3's AutoencoderKL has FLUX's config (16 latent channels, 128/256/512/512, no quant convs), so the same count;
# an SD3.5 Medium derivative's audited vae/ safetensors holds 83,819,683 elements too.
SD3_VAE_PARAMS = FLUX_VAE_PARAMS
# Wan-VAE: "127M parameters" (Wan team, "Wan: Open and Advanced Large-Scale Video Generative Models", 2025, §3.1)
WAN_VAE_PARAMS = 127_000_000

DIFFUSION: dict[str, DiffusionPreset] = {
    p.name: p
    for p in (
        # transformer/config.json: 19 double + 38 single blocks, 24 heads × 128, in_channels 64 (2 × 2 packed
        # 16-channel latents), joint_attention_dim 4096, pooled 768, guidance_embeds; T5 512 tokens (dev).
        DiffusionPreset(
            "FLUX.1-dev",
            dit.DiffusionModel(
                n_blocks=57, hidden_size=3072, n_heads=24, ffn_hidden=12288,
                n_params=dit.flux_params(3072, 128, 19, 38, 64, 4096, 768),
                # single blocks: q, k, v (3h²) + MLP in (4h²) + Linear(5h, h) = 12h², as a double block's stream
                n_token_matmul_params=57 * 12 * 3072**2 + 2 * 64 * 3072,
                text_tokens=512, text_encoders=(CLIP_L, _t5(512)), vae_params=FLUX_VAE_PARAMS,
            ),
            11.9e9, 0.1e9,
            "https://huggingface.co/black-forest-labs/FLUX.1-dev/blob/main/transformer/config.json" + AT_MAIN
            + "; the same shape in black-forest-labs/flux src/flux/util.py at commit "
            "728c01823f4697d1a1ea775876ac5c55c3b0962f ('flux-dev': hidden 3072, depth 19, depth_single_blocks 38)",
        ),
        # transformer/config.json: 38 layers, 38 heads × 64, patch 2, pos_embed_max_size 192, qk rms_norm;
        # captions: CLIP-L 77 + CLIP-G 77 (joined channel-wise: 77 tokens) + T5 256 tokens = 333 in the sequence.
        DiffusionPreset(
            "SD 3.5 Large",
            dit.DiffusionModel(
                n_blocks=38, hidden_size=2432, n_heads=38, ffn_hidden=9728,
                n_params=dit.sd3_params(2432, 64, 38, 0, 2, 16, 192), n_token_matmul_params=_joint(2432, 9728, 38),
                n_buffer_params=dit.sd3_position_table(192, 2432),
                text_tokens=333, text_encoders=(CLIP_L_PROJECTED, CLIP_G, _t5(256)), vae_params=SD3_VAE_PARAMS,
            ),
            8.1e9, 0.1e9,
            "https://huggingface.co/stabilityai/stable-diffusion-3.5-large/blob/main/transformer/config.json" + AT_MAIN,
        ),
        # MMDiT-X: 24 layers, 24 heads × 64, dual_attention_layers 0-12, pos_embed_max_size 384.
        DiffusionPreset(
            "SD 3.5 Medium",
            dit.DiffusionModel(
                n_blocks=24, hidden_size=1536, n_heads=24, ffn_hidden=6144,
                n_params=dit.sd3_params(1536, 64, 24, 13, 2, 16, 384),
                n_token_matmul_params=_joint(1536, 6144, 24, 13), n_buffer_params=dit.sd3_position_table(384, 1536),
                text_tokens=333, text_encoders=(CLIP_L_PROJECTED, CLIP_G, _t5(256)), vae_params=SD3_VAE_PARAMS,
            ),
            2_469_663_936, 1.0,
            "https://huggingface.co/stabilityai/stable-diffusion-3.5-medium/blob/main/transformer/config.json" + AT_MAIN,
        ),
        # Wan-AI/Wan2.1-T2V-14B-Diffusers transformer/config.json: 40 layers, 40 heads × 128, ffn_dim 13824,
        # patch (1, 2, 2), text_dim 4096, freq_dim 256; umT5-XXL captions (512 tokens) by cross-attention;
        # Wan-VAE 8× spatial, 4× temporal, 16 channels; 480p clips of 81 frames.
        DiffusionPreset(
            "Wan 2.1 14B",
            dit.DiffusionModel(
                kind="video", n_blocks=40, hidden_size=5120, n_heads=40, ffn_hidden=13824,
                n_params=dit.wan_params(5120, 13824, 40, 16, 4096, 256),
                # self-attention 4h², cross-attention q and out 2h² (its k, v run over the 512 caption tokens)
                n_token_matmul_params=40 * (6 * 5120**2 + 2 * 5120 * 13824),
                vae_temporal=4, joint_text=False, text_tokens=512,
                text_encoders=(
                    dit.TextEncoder(
                        name="umT5-XXL", n_params=dit.t5_encoder_params(256384, 4096, 10240, 24, 64, True), tokens=512
                    ),
                ),
                vae_params=WAN_VAE_PARAMS, native_width_px=832, native_height_px=480, native_frames=81,
            ),
            14_288_491_584, 1.0,
            "https://huggingface.co/Wan-AI/Wan2.1-T2V-14B-Diffusers/blob/38ec498cb3208fb688890f8cc7e94ede2cbd7f68/"
            "transformer/config.json",
        ),
    )
}  # fmt: skip

MULTIMODAL_NAMES = (*VISION_LANGUAGE, *DIFFUSION)


def find(name: str) -> VisionLanguagePreset | DiffusionPreset | None:
    """The multimodal preset called `name` (case and surrounding spaces ignored), or None."""
    wanted = name.strip().lower()
    everything: dict[str, VisionLanguagePreset | DiffusionPreset] = {**VISION_LANGUAGE, **DIFFUSION}
    return next((preset for key, preset in everything.items() if key.lower() == wanted), None)


def dit_shape(name: str, d: dit.DiffusionModel) -> ModelShape:
    """The transformer as the pipeline's uniform stack (its counts are replaced by the exact ones)."""
    return ModelShape(
        name=name, family="gpt2", vocab_size=1, hidden_size=d.hidden_size, n_layers=d.n_blocks,
        n_heads=d.n_heads, n_kv_heads=d.n_heads, head_dim=d.head_dim, ffn_hidden=d.ffn_hidden,
        mlp_kind="gelu", norm_kind="layernorm", tied_embeddings=True, attn_bias=True, mlp_bias=True,
        context_len=10_000_000,
    )  # fmt: skip
