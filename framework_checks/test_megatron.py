"""megatron-core 0.16.1 validates every Megatron export: the file's flags become the TransformerConfig that
Megatron-LM's `core_transformer_config_from_args` builds from them, and the dataclass's own checks run
(parallel layout, heads and groups, MoE, recompute, precision).

Megatron-LM's argument parser (megatron/training/arguments.py) is not on PyPI: the megatron-core wheel and sdist
ship megatron/core only, and 0.17+ need Python 3.12. So the flags the file writes are mapped here to the config
fields they set, and the flags megatron-core has no field for (batch, optimizer, data-parallel sharding) are
checked for their value types only.
"""

from __future__ import annotations

import shlex
import warnings
from typing import Any

import pytest

from framework_checks.conftest import refused, written

CASES = written("megatron")
FIELDS = {  # flag -> TransformerConfig / ModelParallelConfig field, as core_transformer_config_from_args maps it
    "--tensor-model-parallel-size": "tensor_model_parallel_size",
    "--pipeline-model-parallel-size": "pipeline_model_parallel_size",
    "--context-parallel-size": "context_parallel_size",
    "--expert-model-parallel-size": "expert_model_parallel_size",
    "--expert-tensor-parallel-size": "expert_tensor_parallel_size",
    "--num-layers": "num_layers",
    "--hidden-size": "hidden_size",
    "--num-attention-heads": "num_attention_heads",
    "--ffn-hidden-size": "ffn_hidden_size",
    "--kv-channels": "kv_channels",
    "--num-query-groups": "num_query_groups",
    "--num-experts": "num_moe_experts",
    "--moe-router-topk": "moe_router_topk",
    "--moe-ffn-hidden-size": "moe_ffn_hidden_size",
    "--moe-shared-expert-intermediate-size": "moe_shared_expert_intermediate_size",
    "--recompute-granularity": "recompute_granularity",
    "--recompute-method": "recompute_method",
    "--recompute-num-layers": "recompute_num_layers",
    "--normalization": "normalization",
    "--norm-epsilon": "layernorm_epsilon",
    "--fp8-format": "fp8",
    "--fp8-recipe": "fp8_recipe",
}
SWITCHES = {
    "--sequence-parallel": ("sequence_parallel", True),
    "--disable-bias-linear": ("add_bias_linear", False),
    "--add-qkv-bias": ("add_qkv_bias", True),
    "--bf16": ("bf16", True),
    "--fp16": ("fp16", True),
    "--account-for-embedding-in-pipeline-split": ("account_for_embedding_in_pipeline_split", True),
    "--account-for-loss-in-pipeline-split": ("account_for_loss_in_pipeline_split", True),
}
TYPED = {  # flags of GPTModel or the training loop: the type arguments.py parses them with
    "--rotary-base": int,
    "--rope-scaling-factor": float,
    "--micro-batch-size": int,
    "--global-batch-size": int,
    "--train-samples": int,
    "--seq-length": int,
    "--max-position-embeddings": int,
    "--sgd-momentum": float,
    "--num-layers-per-virtual-pipeline-stage": int,
}


def _flags(text: str) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    for line in text.splitlines():
        words = shlex.split(line)
        assert words[0].startswith("--") and words[0] not in flags, line
        flags[words[0]] = words[1:]
    return flags


def _config_fields(flags: dict[str, list[str]]) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F

    fields: dict[str, Any] = {}
    for flag, values in flags.items():
        if flag in FIELDS:
            value = values[0]
            fields[FIELDS[flag]] = (
                int(value) if value.isdigit() else float(value) if flag == "--norm-epsilon" else value
            )
        elif flag in SWITCHES:
            name, on = SWITCHES[flag]
            fields[name] = on
        elif flag in TYPED:
            TYPED[flag](values[0])
    if "--swiglu" in flags:
        fields.update(gated_linear_unit=True, activation_func=F.silu)
    dtype = torch.bfloat16 if "--bf16" in flags else torch.float16 if "--fp16" in flags else torch.float32
    fields.update(params_dtype=dtype, pipeline_dtype=dtype)
    per_chunk = flags.get("--num-layers-per-virtual-pipeline-stage")
    if per_chunk:
        stages = fields["num_layers"] // fields["pipeline_model_parallel_size"] // int(per_chunk[0])
        fields["virtual_pipeline_model_parallel_size"] = stages
    return fields


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_megatron_core_accepts_the_layout_and_model(plan, path, entry) -> None:
    from megatron.core.transformer import TransformerConfig

    flags = _flags(path.read_text())
    fields = _config_fields(flags)
    if "num_layers" not in fields:
        pytest.skip("a bare parameter count: the file says to add the architecture flags")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*sequence parallelism must be used.*")
        config = TransformerConfig(**fields)
    assert config.tensor_model_parallel_size == entry["plan"]["tp"]
    assert config.pipeline_model_parallel_size == entry["plan"]["pp"]


def test_moe_with_tensor_parallelism_without_sequence_parallelism_is_refused() -> None:
    assert "sequence parallelism" in refused("megatron")["ep8_tp2_moe_no_sp"]


def test_llama_31_carries_its_rope_base_scaling_and_norm_epsilon() -> None:
    # Llama 3.1's config.json: rope_theta 500000, rms_norm_eps 1e-05, rope_scaling factor 8.0 (rope_type llama3)
    path = next(p for name, p, _ in CASES if name == "full_8b_zero3_8gpu")
    flags = _flags(path.read_text())
    assert (flags["--rotary-base"], flags["--norm-epsilon"]) == (["500000"], ["1e-05"])
    assert "--use-rope-scaling" in flags and flags["--rope-scaling-factor"] == ["8"]
