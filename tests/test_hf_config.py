"""Hugging Face config.json import: published configs give the published counts; bad input names the key."""

from __future__ import annotations

import json

import pytest

from planner.catalogue.models import find_model, load_model_presets
from planner.model.architecture import KNOWN_FAMILIES, count_params
from planner.model.hf_config import READERS, ConfigImportError, shape_from_hf_config
from planner.model.hf_json import ConfigReader

PRESETS = load_model_presets()

# meta-llama/Llama-3.1-8B config.json as published on the Hub.
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}
# mistralai/Mixtral-8x7B-v0.1 config.json.
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}
# openai-community/gpt2 config.json (n_inner absent: 4 x n_embd).
GPT2 = {
    "activation_function": "gelu_new",
    "architectures": ["GPT2LMHeadModel"],
    "attn_pdrop": 0.1,
    "bos_token_id": 50256,
    "embd_pdrop": 0.1,
    "eos_token_id": 50256,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-05,
    "model_type": "gpt2",
    "n_ctx": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 12,
    "n_positions": 1024,
    "resid_pdrop": 0.1,
    "summary_activation": None,
    "summary_first_dropout": 0.1,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    "vocab_size": 50257,
}
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"],
    "attention_bias": False,
    "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256,
    "sliding_window": 4096,
    "vocab_size": 256000,
}
PHI3_MINI = {  # auto_map names remote code; it is only text here and nothing is executed
    "architectures": ["Phi3ForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config"},
    "hidden_act": "silu",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "max_position_embeddings": 4096,
    "model_type": "phi3",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "vocab_size": 32064,
}
QWEN15_MOE = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "decoder_sparse_step": 1,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "model_type": "qwen2_moe",
    "moe_intermediate_size": 1408,
    "num_attention_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "shared_expert_intermediate_size": 5632,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
}
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "attention_bias": False,
    "decoder_sparse_step": 1,
    "head_dim": 128,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "max_position_embeddings": 40960,
    "mlp_only_layers": [],
    "model_type": "qwen3_moe",
    "moe_intermediate_size": 768,
    "num_attention_heads": 32,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
    "vocab_size": 151936,
}
FALCON_7B = {
    "alibi": False,
    "architectures": ["FalconForCausalLM"],
    "bias": False,
    "hidden_size": 4544,
    "model_type": "falcon",
    "multi_query": True,
    "new_decoder_architecture": False,
    "num_attention_heads": 71,
    "num_hidden_layers": 32,
    "parallel_attn": True,
    "vocab_size": 65024,
}
GPT_NEOX_20B = {
    "architectures": ["GPTNeoXForCausalLM"],
    "hidden_act": "gelu_fast",
    "hidden_size": 6144,
    "intermediate_size": 24576,
    "max_position_embeddings": 2048,
    "model_type": "gpt_neox",
    "num_attention_heads": 64,
    "num_hidden_layers": 44,
    "rotary_pct": 0.25,
    "tie_word_embeddings": False,
    "use_parallel_residual": True,
    "vocab_size": 50432,
}
# mosaicml/mpt-7b config.json: ALiBi (no position table) and no_bias (LayerNorms lose their bias too).
MPT_7B = {
    "architectures": ["MPTForCausalLM"],
    "attn_config": {
        "alibi": True,
        "alibi_bias_max": 8,
        "attn_impl": "torch",
        "attn_pdrop": 0,
        "attn_type": "multihead_attention",
        "attn_uses_sequence_id": False,
        "clip_qkv": None,
        "prefix_lm": False,
        "qk_ln": False,
        "softmax_scale": None,
    },
    "d_model": 4096,
    "expansion_ratio": 4,
    "learned_pos_emb": True,
    "max_seq_len": 2048,
    "model_type": "mpt",
    "n_heads": 32,
    "n_layers": 32,
    "no_bias": True,
    "norm_type": "low_precision_layernorm",
    "vocab_size": 50432,
}


def text(config: dict, **changes) -> str:
    return json.dumps(config | changes)


def test_llama_31_8b_config_gives_exactly_the_preset():
    shape = shape_from_hf_config(text(LLAMA_31_8B), name="Llama 3.1 8B")
    assert shape == find_model(PRESETS, "Llama 3.1 8B")
    assert count_params(shape).total == 8_030_261_248  # Hub safetensors total


def test_bytes_input_with_bom_is_accepted():
    raw = b"\xef\xbb\xbf" + text(LLAMA_31_8B).encode()
    assert shape_from_hf_config(raw).hidden_size == 4096


def test_mixtral_total_and_active():
    counts = count_params(shape_from_hf_config(text(MIXTRAL_8X7B)))
    assert counts.total == pytest.approx(46.7e9, rel=0.002)  # Mistral: 46.7B total
    assert counts.active == pytest.approx(12.9e9, rel=0.002)  # Mistral: 12.9B used per token


@pytest.mark.parametrize(
    ("config", "preset", "exact"),
    [
        (GPT2, "GPT-2 small", 124_439_808),
        (QWEN25_7B, "Qwen2.5 7B", 7_615_616_512),
        (GEMMA2_9B, "Gemma 2 9B", 9_241_705_984),
        (PHI3_MINI, "Phi-3 mini 4k", 3_821_079_552),
        (QWEN15_MOE, "Qwen1.5 MoE A2.7B", 14_315_784_192),
        (QWEN3_30B_A3B, "Qwen3 30B A3B", 30_532_122_624),
        (FALCON_7B, "Falcon 7B", 6_921_720_704),
        (GPT_NEOX_20B, "GPT-NeoX 20B", 20_554_567_680),
    ],
)
def test_published_configs_give_published_counts(config, preset, exact):
    shape = shape_from_hf_config(text(config), name=preset)
    assert count_params(shape).total == exact  # Hub safetensors totals
    assert shape == find_model(PRESETS, preset).model_copy(update={"context_len": shape.context_len})


def test_mpt_7b_release_config():
    shape = shape_from_hf_config(text(MPT_7B))
    assert shape.learned_pos_embeddings == 0 and not shape.attn_bias
    # 50432 x 4096 tied embedding + 32 x (12 x 4096^2 + 2 LayerNorm weights of 4096) + final 4096
    assert count_params(shape).total == 50432 * 4096 + 32 * (12 * 4096**2 + 2 * 4096) + 4096  # 6,649,286,656


def test_every_imported_family_has_known_counting_rules():
    cfg = ConfigReader({"new_decoder_architecture": True, "num_ln_in_parallel_attn": 2}, "falcon")
    families = {family(cfg) for _, family in READERS.values()} | {"falcon"}
    assert families <= KNOWN_FAMILIES


def test_architectures_used_when_model_type_is_absent():
    config = {key: value for key, value in LLAMA_31_8B.items() if key != "model_type"}
    assert shape_from_hf_config(json.dumps(config)).family == "llama"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"model_type": "llama",\n "hidden_size": 4096,,}', "line 2, column 22"),  # the second comma
        ("[1, 2]", "must be a JSON object, got a list"),
        ('{"hidden_size": NaN}', "NaN"),
        (b"\xff\xfe{}", "not UTF-8"),
        ('{"vocab_size": 1' + "0" * 5000 + "}", "could not be parsed"),
    ],
)
def test_malformed_json_says_where(raw, expected):
    with pytest.raises(ConfigImportError, match=expected):
        shape_from_hf_config(raw)


def test_unsupported_model_type_lists_supported_ones():
    with pytest.raises(ConfigImportError) as caught:
        shape_from_hf_config(text(LLAMA_31_8B, model_type="bert", architectures=["BertModel"]))
    message = str(caught.value)
    assert "'bert' is not supported" in message
    assert all(model_type in message for model_type in READERS)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"hidden_size": None}, "'hidden_size' is missing (needed for model_type 'llama')"),
        ({"hidden_size": "4096"}, "'hidden_size': expected an integer, got a string"),
        ({"num_hidden_layers": 32.0}, "'num_hidden_layers': expected an integer, got a number"),
        ({"num_key_value_heads": True}, "'num_key_value_heads': expected an integer, got a boolean"),
        ({"tie_word_embeddings": "false"}, "'tie_word_embeddings': expected true or false"),
        ({"hidden_size": 0}, "'hidden_size': 0 is outside [1, 10,000,000]"),
        ({"vocab_size": 10**12}, "'vocab_size': 1000000000000 is outside"),
        ({"num_hidden_layers": 50_000}, "'num_hidden_layers': 50000 is outside [1, 10,000]"),
        ({"num_key_value_heads": 5}, "n_heads: must be a multiple of n_kv_heads"),
        ({"num_attention_heads": 30}, "hidden size 4096 is not divisible by 30 heads"),
        ({"model_type": 7}, "'model_type': expected a string"),
    ],
)
def test_bad_values_name_the_key(changes, expected):
    with pytest.raises(ConfigImportError) as caught:
        shape_from_hf_config(text(LLAMA_31_8B, **changes))
    assert expected in str(caught.value)


def test_nested_keys_are_named_with_their_path():
    attn = MPT_7B["attn_config"] | {"attn_type": "sliding"}
    with pytest.raises(ConfigImportError, match=r"'attn_config\.attn_type': 'sliding' is not supported"):
        shape_from_hf_config(text(MPT_7B, attn_config=attn))
    with pytest.raises(ConfigImportError, match=r"'attn_config': expected an object"):
        shape_from_hf_config(text(MPT_7B, attn_config=[1]))


def test_moe_layouts_that_cannot_be_represented_are_refused():
    with pytest.raises(ConfigImportError, match="'decoder_sparse_step'"):
        shape_from_hf_config(text(QWEN15_MOE, decoder_sparse_step=2))
    with pytest.raises(ConfigImportError, match="'mlp_only_layers'"):
        shape_from_hf_config(text(QWEN15_MOE, mlp_only_layers=[3, 5]))
    assert shape_from_hf_config(text(QWEN15_MOE, mlp_only_layers=[0, 1])).n_dense_layers == 2


def test_deep_nesting_and_oversized_input_are_refused_before_parsing():
    deep = '{"model_type": "llama", "x": ' + "[" * 25 + "]" * 25 + "}"
    with pytest.raises(ConfigImportError, match="nests 26 levels deep; the limit is 20"):
        shape_from_hf_config(deep)
    very_deep = "[" * 100_000 + "]" * 100_000  # would exhaust json's recursion if it were parsed
    with pytest.raises(ConfigImportError, match="levels deep"):
        shape_from_hf_config(very_deep)
    brackets_in_strings = text(LLAMA_31_8B, note="[" * 50)  # brackets inside strings are not nesting
    assert shape_from_hf_config(brackets_in_strings).n_layers == 32
    padded = text(LLAMA_31_8B, padding="x" * 1_000_001)
    with pytest.raises(ConfigImportError, match="the limit is 1,000,000"):
        shape_from_hf_config(padded)
