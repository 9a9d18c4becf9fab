"""Configuration exports: every target's file parses back, carries the plan's figures and names what it could not
express. That each file is one its framework accepts is proven by the frameworks' own code in
`make test-exports` (framework_checks/), not by option lists copied here."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from planner import (
    EXPORT_TARGETS,
    Export,
    PlannerError,
    Scenario,
    default_catalogs,
    export_plan,
    with_sequence_length,
)
from planner.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _seq_len(s: Scenario) -> int | None:
    """The plan's sequence length as the estimate uses it (derived from the data when left empty)."""
    return with_sequence_length(s, default_catalogs()).seq_len


PLANS = {
    "8B LoRA, 8 x H100, ZeRO-3": Scenario(
        model="Llama 3.1 8B", method="lora", lora_rank=16, n_gpus=8, zero_stage=3, micro_batch=2, grad_accum=4
    ),
    "70B full, TP4 PP2, 64 GPUs, full recompute": Scenario(
        model="Llama 3.1 70B",
        n_gpus=64,
        tp=4,
        pp=2,
        sequence_parallel=True,
        zero_stage=1,  # DeepSpeed's pipeline engine runs ZeRO 0-1 only
        recompute="full",
        precision="bf16_mixed",
        micro_batch=1,
        grad_accum=16,
        seq_len=8192,
    ),
    "8B QLoRA, one RTX 4090, 8-bit AdamW": Scenario(
        model="Llama 3.1 8B",
        method="qlora",
        lora_rank=8,
        gpu="RTX 4090",
        n_gpus=1,
        optimizer="adamw_8bit",
        recompute="full",
        micro_batch=1,
        grad_accum=8,
        seq_len=2048,
    ),
    "8B fp8 on 16 H100": Scenario(
        model="Llama 3.1 8B", precision="fp8_mixed", n_gpus=16, micro_batch=2, grad_accum=2
    ),
    "Qwen2.5 7B ZeRO-2, optimizer offload": Scenario(
        model="Qwen2.5 7B", zero_stage=2, offload_optimizer=True, n_gpus=8, micro_batch=4, grad_accum=2
    ),
}
CASES = [(name, target) for name in PLANS for target in EXPORT_TARGETS]


@cache
def _cats() -> Any:
    return default_catalogs()


@cache
def _export(plan: str, target: str) -> Export:
    return export_plan(PLANS[plan], _cats(), target)


def _megatron_args(text: str) -> dict[str, list[str]]:
    """Flag -> its values, from the shell words of the argument file."""
    args: dict[str, list[str]] = {}
    flag = ""
    for word in shlex.split(text):
        if word.startswith("--"):
            flag = word
            args[flag] = []
        else:
            args[flag].append(word)
    return args


def _parsed(export: Export) -> Any:
    if export.target == "deepspeed":
        return json.loads(export.text)
    if export.target in ("accelerate", "torchtune"):
        return yaml.safe_load(export.text)
    if export.target == "torchtitan":
        return tomllib.loads(export.text)
    return _megatron_args(export.text)


@pytest.mark.parametrize(("plan", "target"), CASES)
def test_each_file_is_named_and_says_what_it_left_out_in_sentences(plan, target):
    export = _export(plan, target)
    assert export.target == target and export.file_name.split(".")[-1] in ("json", "yaml", "toml", "txt")
    assert all(sentence.endswith(".") and len(sentence.split()) >= 5 for sentence in export.not_expressed)


@pytest.mark.parametrize("plan", PLANS)
def test_deepspeed_carries_the_batch_zero_stage_precision_and_offload(plan):
    s, config = PLANS[plan], _parsed(_export(plan, "deepspeed"))
    assert config["train_batch_size"] == s.micro_batch * s.grad_accum * s.dp  # DeepSpeed checks this product
    assert config["train_micro_batch_size_per_gpu"] == s.micro_batch
    assert config["gradient_accumulation_steps"] == s.grad_accum
    # one data-parallel rank has nothing to shard: stage 0 unless an offload needs ZeRO
    sharded = s.dp > 1 or s.offload_optimizer or s.offload_params
    assert config["zero_optimization"]["stage"] == (s.zero_stage if sharded else 0)
    assert ("offload_optimizer" in config["zero_optimization"]) == s.offload_optimizer
    assert config.get("bf16", {}).get("enabled") is (s.precision in ("bf16_mixed", "bf16_pure", "fp8_mixed"))


@pytest.mark.parametrize("plan", PLANS)
def test_megatron_carries_degrees_batch_shape_and_recompute(plan):
    s, args = PLANS[plan], _parsed(_export(plan, "megatron"))
    assert args["--tensor-model-parallel-size"] == [str(s.tp)]
    assert args["--pipeline-model-parallel-size"] == [str(s.pp)]
    assert args["--micro-batch-size"] == [str(s.micro_batch)]
    assert args["--global-batch-size"] == [str(s.micro_batch * s.grad_accum * s.dp)]
    assert args["--seq-length"] == [str(_seq_len(s))]
    assert ("--recompute-granularity" in args) == (s.recompute == "full")
    assert ("--optimizer-cpu-offload" in args) == s.offload_optimizer
    assert ("--fp8-format" in args) == (s.precision == "fp8_mixed")


def test_megatron_writes_the_llama_70b_shape():
    args = _parsed(_export("70B full, TP4 PP2, 64 GPUs, full recompute", "megatron"))
    # Llama 3.1 70B config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads, MLP 28672.
    assert args["--num-layers"] == ["80"] and args["--hidden-size"] == ["8192"]
    assert args["--num-attention-heads"] == ["64"] and args["--num-query-groups"] == ["8"]
    assert args["--ffn-hidden-size"] == ["28672"] and "--sequence-parallel" in args
    assert args["--recompute-granularity"] == ["full"] and "--bf16" in args


@pytest.mark.parametrize("plan", PLANS)
def test_torchtitan_carries_degrees_batch_and_recompute(plan):
    s, config = PLANS[plan], _parsed(_export(plan, "torchtitan"))
    parallel, training = config["parallelism"], config["training"]
    assert parallel["tensor_parallel_degree"] == s.tp and parallel["pipeline_parallel_degree"] == s.pp
    assert parallel["data_parallel_shard_degree"] * parallel["data_parallel_replicate_degree"] == s.dp
    assert training["global_batch_size"] == s.micro_batch * s.grad_accum * s.dp
    assert training["seq_len"] == _seq_len(s)
    assert config["activation_checkpoint"]["mode"] == ("full" if s.recompute == "full" else "none")
    assert ("quantize.linear.float8" in config.get("model", {}).get("converters", [])) == (
        s.precision == "fp8_mixed"
    )


def test_torchtitan_splits_the_local_batch_into_pipeline_micro_batches():
    config = _parsed(_export("70B full, TP4 PP2, 64 GPUs, full recompute", "torchtitan"))
    assert config["training"]["local_batch_size"] == 16  # micro-batch 1 x 16 pipeline micro-batches
    assert config["parallelism"]["pipeline_parallel_microbatch_size"] == 1
    assert config["model"] == {"name": "llama3", "flavor": "70B"}


@pytest.mark.parametrize("plan", PLANS)
def test_torchtune_carries_batch_sequence_and_recompute(plan):
    s, config = PLANS[plan], _parsed(_export(plan, "torchtune"))
    assert config["batch_size"] == s.micro_batch and config["gradient_accumulation_steps"] == s.grad_accum
    assert config["tokenizer"]["max_seq_len"] == _seq_len(s)
    assert config["enable_activation_checkpointing"] is (s.recompute == "full")
    if s.method != "full":
        assert config["model"]["lora_rank"] == s.lora_rank


def test_torchtune_qlora_single_device_uses_the_qlora_builder_and_8bit_adamw():
    export = _export("8B QLoRA, one RTX 4090, 8-bit AdamW", "torchtune")
    config = _parsed(export)
    assert config["model"]["_component_"] == "torchtune.models.llama3_1.qlora_llama3_1_8b"
    assert config["optimizer"]["_component_"] == "bitsandbytes.optim.PagedAdamW8bit"
    assert "lora_finetune_single_device" in export.text and "fsdp_cpu_offload" not in config


def test_torchtune_qwen_qlora_quantizes_the_lora_builder():
    s = PLANS["Qwen2.5 7B ZeRO-2, optimizer offload"].updated(method="qlora")
    model = _parsed(export_plan(s, _cats(), "torchtune"))["model"]
    assert model["_component_"] == "torchtune.models.qwen2_5.lora_qwen2_5_7b_base" and model["quantize_base"]


@pytest.mark.parametrize("plan", PLANS)
def test_accelerate_carries_processes_sharding_and_precision(plan):
    s, config = PLANS[plan], _parsed(_export(plan, "accelerate"))
    assert config["num_processes"] == s.n_gpus
    expected = {"bf16_mixed": "bf16", "fp8_mixed": "fp8", "fp32": "no"}.get(s.precision, "bf16")
    assert config["mixed_precision"] == expected
    if config["distributed_type"] == "FSDP":
        assert config["fsdp_config"]["fsdp_reshard_after_forward"] is (s.zero_stage == 3)
        assert config["fsdp_config"]["fsdp_activation_checkpointing"] is (s.recompute == "full")


def test_accelerate_offloads_the_optimizer_alone_through_the_deepspeed_plugin():
    config = _parsed(_export("Qwen2.5 7B ZeRO-2, optimizer offload", "accelerate"))
    assert config["distributed_type"] == "DEEPSPEED"
    plugin = config["deepspeed_config"]
    assert plugin["zero_stage"] == 2 and plugin["offload_optimizer_device"] == "cpu"
    assert plugin["gradient_accumulation_steps"] == 2


def test_accelerate_writes_tensor_parallelism_in_the_parallelism_config():
    plan = PLANS["70B full, TP4 PP2, 64 GPUs, full recompute"].updated(zero_stage=3)  # FSDP, not ZeRO-1
    config = _parsed(export_plan(plan, _cats(), "accelerate"))
    layout = config["parallelism_config"]
    sizes = [layout[f"parallelism_config_{k}_size"] for k in ("dp_replicate", "dp_shard", "tp", "cp")]
    assert sizes[2] == 4 and sizes[0] * sizes[1] * sizes[2] * sizes[3] == 64  # pipeline ranks join dp


@pytest.mark.parametrize("target", ["torchtitan", "megatron", "deepspeed", "accelerate"])
def test_lora_is_named_where_the_target_has_none(target):
    dropped = _export("8B LoRA, 8 x H100, ZeRO-3", target).not_expressed
    assert any(s.startswith("LoRA") and "rank-16" in s for s in dropped)
    assert not any(
        s.startswith("LoRA") for s in _export("8B LoRA, 8 x H100, ZeRO-3", "torchtune").not_expressed
    )


@pytest.mark.parametrize("target", ["deepspeed", "megatron", "torchtitan"])
def test_8bit_adamw_is_named_where_the_target_lacks_it(target):
    dropped = _export("8B QLoRA, one RTX 4090, 8-bit AdamW", target).not_expressed
    assert any("8-bit AdamW" in s or "adamw_8bit" in s for s in dropped)


def test_hybrid_shard_becomes_hpz_and_hsdp():
    s = Scenario(model="Llama 3.1 8B", n_gpus=32, gpus_per_node=8, zero_stage=3, hybrid_shard=True)
    deepspeed = export_plan(s, _cats(), "deepspeed")
    # DeepSpeed 0.19 rejects MiCS's mics_shard_size; ZeRO++ hpZ partitions within the node's 8 ranks instead
    assert _parsed(deepspeed)["zero_optimization"]["zero_hpz_partition_size"] == 8
    assert any("hpZ" in sentence for sentence in deepspeed.not_expressed)
    parallel = _parsed(export_plan(s, _cats(), "torchtitan"))["parallelism"]
    assert (parallel["data_parallel_shard_degree"], parallel["data_parallel_replicate_degree"]) == (8, 4)


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_refuses_zero_2_and_3_under_pipeline_parallelism(stage):
    s = Scenario(model="Llama 3.1 8B", n_gpus=16, pp=2, zero_stage=stage)
    with pytest.raises(PlannerError, match="pipeline") as err:
        export_plan(s, _cats(), "deepspeed")
    assert err.value.field == "zero_stage" and "0 or 1" in err.value.allowed


@pytest.mark.parametrize(("optimizer", "allowed"), [("sgd", True), ("adafactor", True), ("adamw", False)])
def test_deepspeed_allows_the_optimizers_zero_has_not_tested(optimizer, allowed):
    # deepspeed.initialize stops an SGD or Adafactor run under ZeRO without this key (runtime/engine.py)
    config = _parsed(export_plan(Scenario(n_gpus=8, zero_stage=2, optimizer=optimizer), _cats(), "deepspeed"))
    assert config.get("zero_allow_untested_optimizer", False) is allowed
    assert config["optimizer"]["params"]["lr"] == 2e-5  # torchtune's llama3_1/8B_full.yaml rate


def test_unknown_target_names_the_field_and_the_allowed_values():
    with pytest.raises(PlannerError) as err:
        export_plan(Scenario(), _cats(), "colossalai")
    assert err.value.field == "target" and "megatron" in err.value.allowed


def test_cli_deepspeed_zero_3(capsys):
    assert main(["export", "--to", "deepspeed", "--zero", "3", "--devices", "8", "--micro-batch", "2"]) == 0
    out, err = capsys.readouterr()
    config = json.loads(out)
    assert config["zero_optimization"]["stage"] == 3 and config["train_batch_size"] == 16
    assert all(line.startswith("note: ") for line in err.splitlines())


def test_cli_megatron_tp_pp(capsys):
    assert main(["export", "--to", "megatron", "--tp", "4", "--pp", "2", "--devices", "16"]) == 0
    out = capsys.readouterr().out
    assert "--tensor-model-parallel-size 4" in out.splitlines()
    assert "--pipeline-model-parallel-size 2" in out.splitlines()


def test_cli_writes_the_output_file(tmp_path, capsys):
    target = tmp_path / "torchtitan.toml"
    assert main(["export", "--to", "torchtitan", "--tp", "2", "--output", str(target)]) == 0
    assert tomllib.loads(target.read_text())["parallelism"]["tensor_parallel_degree"] == 2
    assert capsys.readouterr().out == ""


def test_cli_bad_target_exits_2_with_one_line(capsys):
    assert main(["export", "--to", "colossalai"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--to" in err and "colossalai" in err and "torchtitan" in err


def test_python_m_planner_export_as_a_subprocess():
    command = [sys.executable, "-m", "planner", "export", "--to", "megatron", "--tp", "4", "--pp", "2"]
    done = subprocess.run(
        [*command, "--devices", "64"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (
        "--tensor-model-parallel-size 4" in done.stdout and "--pipeline-model-parallel-size 2" in done.stdout
    )
    assert "note: " in done.stderr and "note: " not in done.stdout
