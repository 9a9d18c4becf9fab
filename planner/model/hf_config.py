"""A `ModelShape` from a Hugging Face `config.json` (JSON only: nothing is imported, fetched or executed).

One reader per `model_type`. Shape keys (sizes, layer and head counts) are required; flags fall back to the
default of the matching `transformers` configuration class when absent or null, as `from_pretrained` would.
Parsing limits and the error type live in `planner.model.hf_json`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from planner.errors import from_validation_error
from planner.model.hf_json import ConfigImportError, ConfigReader, parse_config
from planner.model.labels import MAX_LABEL_CHARS, single_line
from planner.model.shape import ModelShape

__all__ = ["ARCHITECTURE_TYPES", "READERS", "ConfigImportError", "shape_from_hf_config"]

MAX_LAYERS = 10_000
MAX_POSITIONS = 100_000_000


def _decoder(cfg: ConfigReader, tie_default: bool, attn_bias: bool | None = None) -> dict[str, Any]:
    """Llama-style decoder keys shared by Llama, Mistral, Mixtral, Qwen2/3, Gemma/Gemma 2 and Phi-3.

    `attn_bias=None` reads `attention_bias` (LlamaConfig default False); a bool fixes it (Qwen2 always has
    q, k, v biases). Gated MLP and RMSNorm in all of them.
    """
    hidden = cfg.get_int("hidden_size")
    n_heads = cfg.get_int("num_attention_heads")
    return {
        "vocab_size": cfg.get_int("vocab_size"),
        "hidden_size": hidden,
        "n_layers": cfg.get_int("num_hidden_layers", high=MAX_LAYERS),
        "n_heads": n_heads,
        "n_kv_heads": cfg.get_int("num_key_value_heads", n_heads),  # absent = multi-head attention
        "head_dim": cfg.head_dim(hidden, n_heads),
        "ffn_hidden": cfg.get_int("intermediate_size"),
        "mlp_kind": "swiglu",
        "norm_kind": "rmsnorm",
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", tie_default),
        "attn_bias": cfg.get_bool("attention_bias", False) if attn_bias is None else attn_bias,
        "mlp_bias": cfg.get_bool("mlp_bias", False),
        "context_len": cfg.get_int("max_position_embeddings", 2048, high=MAX_POSITIONS),
    }


def _moe_layers(cfg: ConfigReader, n_layers: int) -> int:
    """Leading dense layers from Qwen-MoE's `mlp_only_layers`; other interleavings cannot be represented."""
    step = cfg.get_int("decoder_sparse_step", 1, high=MAX_LAYERS)
    if step != 1:
        raise ConfigImportError(f"config key 'decoder_sparse_step': only 1 is supported (got {step})")
    dense = sorted(set(cfg.get_int_list("mlp_only_layers")))
    if dense != list(range(len(dense))) or len(dense) > n_layers:
        raise ConfigImportError("config key 'mlp_only_layers': only leading layers 0..k-1 are supported")
    return len(dense)


def _llama(cfg: ConfigReader) -> dict[str, Any]:
    return _decoder(cfg, tie_default=False)


def _mixtral(cfg: ConfigReader) -> dict[str, Any]:
    shape = _decoder(cfg, tie_default=False)
    shape |= {
        "n_experts": cfg.get_int("num_local_experts", 8),  # MixtralConfig defaults: 8 experts, top-2
        "n_experts_active": cfg.get_int("num_experts_per_tok", 2),
        "moe_ffn_hidden": shape["ffn_hidden"],
    }
    return shape


def _deepseek(cfg: ConfigReader) -> dict[str, Any]:
    """DeepSeek-V2/V3 (`DeepseekV3Config`): latent attention (planner/model/latent_attention.py), routed and
    shared experts of `moe_intermediate_size`, the first `first_k_dense_replace` layers dense. head_dim is
    the query/key head width (qk_nope + qk_rope); the config's own `head_dim` is the rotary part only."""
    hidden, n_heads = cfg.get_int("hidden_size"), cfg.get_int("num_attention_heads")
    if cfg.get_int("moe_layer_freq", 1, high=MAX_LAYERS) != 1:
        raise ConfigImportError(
            "config key 'moe_layer_freq': only 1 (every layer after the dense ones) is supported"
        )
    nope, rope = cfg.get_int("qk_nope_head_dim", 128), cfg.get_int("qk_rope_head_dim", 64)
    return {
        **_decoder(cfg, tie_default=False),
        "head_dim": nope + rope,
        "n_kv_heads": cfg.get_int("num_key_value_heads", n_heads),
        "q_lora_rank": cfg.get_int("q_lora_rank", 0, low=0),  # null in DeepSeek-V2-Lite: no compression
        "kv_lora_rank": cfg.get_int("kv_lora_rank", 512),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": cfg.get_int("v_head_dim", 128),
        "n_experts": cfg.get_int("n_routed_experts"),
        "n_experts_active": cfg.get_int("num_experts_per_tok"),
        "n_shared_experts": cfg.get_int("n_shared_experts", 0, low=0),
        "moe_ffn_hidden": cfg.get_int("moe_intermediate_size"),
        "n_dense_layers": cfg.get_int("first_k_dense_replace", 0, low=0, high=MAX_LAYERS),
        "hidden_size": hidden,
    }


def _qwen2(cfg: ConfigReader) -> dict[str, Any]:
    return _decoder(cfg, tie_default=False, attn_bias=True)  # modeling_qwen2: q, k, v bias=True


def _qwen_moe(cfg: ConfigReader, attn_bias: bool | None) -> dict[str, Any]:
    shape = _decoder(cfg, tie_default=False, attn_bias=attn_bias)
    expert_ffn = cfg.get_int("moe_intermediate_size")
    shared_ffn = cfg.get_int("shared_expert_intermediate_size", 0, low=0)
    if shared_ffn % expert_ffn:
        raise ConfigImportError(
            "config key 'shared_expert_intermediate_size': must be a multiple of moe_intermediate_size "
            f"({shared_ffn} vs {expert_ffn}) to be entered as shared experts"
        )
    return shape | {
        "n_experts": cfg.get_int("num_experts"),
        "n_experts_active": cfg.get_int("num_experts_per_tok"),
        "n_shared_experts": shared_ffn // expert_ffn,
        "moe_ffn_hidden": expert_ffn,
        "n_dense_layers": _moe_layers(cfg, shape["n_layers"]),
    }


def _gemma(cfg: ConfigReader) -> dict[str, Any]:
    return _decoder(cfg, tie_default=True)  # GemmaConfig/Gemma2Config tie the embeddings


def _gpt2(cfg: ConfigReader) -> dict[str, Any]:
    hidden = cfg.get_int("n_embd")
    n_heads = cfg.get_int("n_head")
    n_positions = cfg.get_int("n_positions", 1024, high=MAX_POSITIONS)
    return {
        "vocab_size": cfg.get_int("vocab_size"),
        "hidden_size": hidden,
        "n_layers": cfg.get_int("n_layer", high=MAX_LAYERS),
        "n_heads": n_heads,
        "n_kv_heads": n_heads,
        "head_dim": cfg.head_dim(hidden, n_heads, key="head_dim"),
        "ffn_hidden": cfg.get_int("n_inner", 4 * hidden),  # GPT2Config: n_inner null = 4 x n_embd
        "mlp_kind": "gelu",
        "norm_kind": "layernorm",
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", True),
        "learned_pos_embeddings": n_positions,
        "attn_bias": True,
        "mlp_bias": True,
        "context_len": n_positions,
    }


def _gpt_neox(cfg: ConfigReader) -> dict[str, Any]:
    shape = _decoder(cfg, tie_default=False, attn_bias=cfg.get_bool("attention_bias", True))
    return shape | {"mlp_kind": "gelu", "norm_kind": "layernorm", "mlp_bias": True}


def _falcon(cfg: ConfigReader) -> dict[str, Any]:
    """FalconConfig (and the older RefinedWeb keys n_layer, n_head, n_head_kv)."""
    hidden = cfg.get_int("hidden_size")
    n_heads = cfg.get_int(cfg.present("num_attention_heads", "n_head"))
    new_layout = cfg.get_bool("new_decoder_architecture", False)
    if new_layout:
        n_kv_heads = cfg.get_int(cfg.present("num_kv_heads", "n_head_kv"), n_heads)
    else:
        n_kv_heads = 1 if cfg.get_bool("multi_query", True) else n_heads
    bias = cfg.get_bool("bias", False)
    return {
        "vocab_size": cfg.get_int("vocab_size"),
        "hidden_size": hidden,
        "n_layers": cfg.get_int(cfg.present("num_hidden_layers", "n_layer"), high=MAX_LAYERS),
        "n_heads": n_heads,
        "n_kv_heads": n_kv_heads,
        "head_dim": cfg.head_dim(hidden, n_heads),
        "ffn_hidden": cfg.get_int("ffn_hidden_size", 4 * hidden),
        "mlp_kind": "gelu",
        "norm_kind": "layernorm",
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", True),
        "attn_bias": bias,
        "mlp_bias": bias,
        "context_len": cfg.get_int("max_position_embeddings", 2048, high=MAX_POSITIONS),
    }


def _falcon_family(cfg: ConfigReader) -> str:
    """'falcon' (one LayerNorm per layer) or 'falcon_two_norms' (two), as modeling_falcon builds them."""
    if cfg.get_bool("new_decoder_architecture", False):
        return "falcon" if cfg.get_int("num_ln_in_parallel_attn", 2, high=2) == 1 else "falcon_two_norms"
    return "falcon" if cfg.get_bool("parallel_attn", True) else "falcon_two_norms"


MPT_NORMS = {"layernorm": "layernorm", "low_precision_layernorm": "layernorm", "rmsnorm": "rmsnorm"}
MPT_NORMS |= {"low_precision_rmsnorm": "rmsnorm", "triton_rmsnorm": "rmsnorm"}
MPT_FFN = {"mptmlp": "gelu", "mptglu": "swiglu"}


def _mpt(cfg: ConfigReader) -> dict[str, Any]:
    """llm-foundry MPTConfig: learned positions unless ALiBi or RoPE; no_bias strips every bias."""
    attn, ffn = cfg.get_object("attn_config"), cfg.get_object("ffn_config")
    hidden, n_heads = cfg.get_int("d_model"), cfg.get_int("n_heads")
    kv_choices = {"multihead_attention": n_heads, "multiquery_attention": 1, "grouped_query_attention": 0}
    kv_heads = attn.get_choice("attn_type", kv_choices, "multihead_attention")
    if attn.get_bool("qk_ln", False) or attn.get_bool("qk_gn", False):
        raise ConfigImportError("config key 'attn_config.qk_ln': q/k normalisation is not supported")
    max_seq_len = cfg.get_int("max_seq_len", 2048, high=MAX_POSITIONS)
    learned = cfg.get_bool("learned_pos_emb", True)
    learned = learned and not attn.get_bool("alibi", False) and not attn.get_bool("rope", False)
    default_ffn = int(cfg.get_number("expansion_ratio", 4) * hidden)
    bias = not cfg.get_bool("no_bias", False)
    return {
        "vocab_size": cfg.get_int("vocab_size"),
        "hidden_size": hidden,
        "n_layers": cfg.get_int("n_layers", high=MAX_LAYERS),
        "n_heads": n_heads,
        "n_kv_heads": kv_heads or attn.get_int("kv_n_heads", 1),
        "head_dim": cfg.head_dim(hidden, n_heads),
        "ffn_hidden": ffn.get_int("ffn_hidden_size", default_ffn),
        "mlp_kind": ffn.get_choice("ffn_type", MPT_FFN, "mptmlp"),
        "norm_kind": cfg.get_choice("norm_type", MPT_NORMS, "low_precision_layernorm"),
        "tied_embeddings": cfg.get_bool("tie_word_embeddings", True),
        "learned_pos_embeddings": max_seq_len if learned else 0,
        "attn_bias": bias,
        "mlp_bias": bias,
        "context_len": max_seq_len,
    }


Reader = Callable[[ConfigReader], dict[str, Any]]
READERS: dict[str, tuple[Reader, Callable[[ConfigReader], str]]] = {
    "llama": (_llama, lambda _: "llama"),
    "mistral": (_llama, lambda _: "mistral"),
    "mixtral": (_mixtral, lambda _: "mixtral"),
    "qwen2": (_qwen2, lambda _: "qwen2"),
    "qwen2_moe": (lambda cfg: _qwen_moe(cfg, attn_bias=True), lambda _: "qwen2_moe"),
    "qwen3": (_llama, lambda _: "qwen3"),
    "qwen3_moe": (lambda cfg: _qwen_moe(cfg, attn_bias=None), lambda _: "qwen3_moe"),
    "gemma": (_gemma, lambda _: "gemma"),
    "gemma2": (_gemma, lambda _: "gemma2"),
    "phi3": (_llama, lambda _: "phi3"),
    "gpt2": (_gpt2, lambda _: "gpt2"),
    "gpt_neox": (_gpt_neox, lambda _: "gpt_neox"),
    "falcon": (_falcon, _falcon_family),
    "refinedwebmodel": (_falcon, _falcon_family),  # early Falcon-7B configs
    "refinedweb": (_falcon, _falcon_family),  # early Falcon-40B configs
    "mpt": (_mpt, lambda _: "mpt"),
    "deepseek_v3": (_deepseek, lambda _: "deepseek_v3"),
    "deepseek_v2": (_deepseek, lambda _: "deepseek_v3"),  # the same layout (V3 adds only router details)
}
ARCHITECTURE_TYPES = {
    "LlamaForCausalLM": "llama",
    "MistralForCausalLM": "mistral",
    "MixtralForCausalLM": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GemmaForCausalLM": "gemma",
    "Gemma2ForCausalLM": "gemma2",
    "Phi3ForCausalLM": "phi3",
    "GPT2LMHeadModel": "gpt2",
    "GPTNeoXForCausalLM": "gpt_neox",
    "FalconForCausalLM": "falcon",
    "MPTForCausalLM": "mpt",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
}


def _model_type(cfg: ConfigReader) -> str:
    """`model_type` when supported, else the first supported class in `architectures`."""
    declared = cfg.get_str("model_type", "").lower()
    if declared in READERS:
        return declared
    architectures = cfg.data.get("architectures") or []
    if type(architectures) is not list:
        raise ConfigImportError("config key 'architectures': expected a list of strings")
    for name in architectures:
        if isinstance(name, str) and name in ARCHITECTURE_TYPES:
            return ARCHITECTURE_TYPES[name]
    shown = repr(declared) if declared else "missing"
    raise ConfigImportError(
        f"config key 'model_type': {shown} is not supported; supported: {', '.join(READERS)}"
    )


def shape_from_hf_config(text: str | bytes, name: str = "imported") -> ModelShape:
    """The shape described by a `config.json` text; raises `ConfigImportError` naming the key at fault."""
    data = parse_config(text)
    from planner.model.vision_config import split_vision_language  # here: it loads numpy, a refusal must not

    language, vision = split_vision_language(data) or (data, None)  # a vision-language model's two halves
    cfg = ConfigReader(language, model_type="")
    cfg.model_type = _model_type(cfg)
    reader, family = READERS[cfg.model_type]
    fields = reader(cfg)
    try:
        label = single_line(name, MAX_LABEL_CHARS) or "imported"  # a file name's odd characters dropped
        return ModelShape(name=label, family=family(cfg), vision=vision, **fields)
    except ValidationError as err:
        problem = from_validation_error(err, ModelShape)
        raise ConfigImportError(f"config gives an invalid shape: {problem.describe()}") from None
