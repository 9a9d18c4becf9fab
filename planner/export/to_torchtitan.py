"""The plan as a torchtitan job config TOML (torchtitan v0.2.2, torchtitan/config/job_config.py): target
`torchtitan-0.2`. torchtitan 0.3 reads no TOML (a Python config registry plus command-line overrides); its
form is `to_torchtitan_args` (target `torchtitan`), built from the same sections here.

A model torchtitan does not ship is refused: without model.name and flavor torchtitan would train its debug
model.

torchtitan is a pre-training framework on FSDP2: data parallelism is a shard degree and a replicate degree
(HSDP when both exceed 1), and gradient accumulation follows from global / (local batch × dp).
"""

from __future__ import annotations

from typing import Any

from planner.errors import PlannerError
from planner.export.export_models import TORCHTITAN_MODELS, preset_of
from planner.export.export_types import (
    Export,
    Gaps,
    adapters,
    header,
    in_node_shard,
    optimizer_steps,
)
from planner.export.serialize import toml_text
from planner.inputs.scenario import Scenario

TARGET = "torchtitan-0.2"
FILE_NAME = "torchtitan.toml"
AC_MODES = {"none": "none", "full": "full", "selective_op": "selective"}


def export(s: Scenario) -> Export:
    gaps = Gaps()
    config: dict[str, Any] = {}
    model = _model(s, gaps)
    if model:
        config["model"] = model
    config["optimizer"] = _optimizer(s, gaps)
    config["training"] = _training(s, gaps)
    config["parallelism"] = _parallelism(s, gaps)
    config["activation_checkpoint"] = _recompute(s, gaps)
    if s.precision == "fp8_mixed":
        # The float8 converter swaps nn.Linear for Float8Linear; the output layer stays in bf16 as in
        # torchtitan's own llama3_8b.toml.
        config.setdefault("model", {})["converters"] = ["quantize.linear.float8"]
        config["quantize"] = {"linear": {"float8": {"filter_fqns": ["output"]}}}
    _not_in_torchtitan(s, gaps)
    gaps.note("Set model.hf_assets_path (tokenizer), training.dataset and the optimizer's lr for your run.")
    return gaps.export(TARGET, toml_text(config, header(s, TARGET)), FILE_NAME, config)


def sections(s: Scenario, gaps: Gaps) -> dict[str, dict[str, Any]]:
    """The training, parallelism and recompute sections both torchtitan forms share."""
    return {
        "training": _training(s, gaps),
        "parallelism": _parallelism(s, gaps),
        "activation_checkpoint": _recompute(s, gaps),
    }


def _model(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    preset = preset_of(s.model, s.model_shape is not None)
    if preset in TORCHTITAN_MODELS:
        name, flavor = TORCHTITAN_MODELS[preset]
        return {"name": name, "flavor": flavor}
    raise PlannerError(
        "model",
        "torchtitan v0.2.2 ships no flavor of this model (it would train its debug model instead)",
        value=preset or "custom shape",
        allowed=", ".join(TORCHTITAN_MODELS),
    )


def _optimizer(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    # torchtitan builds only torch.optim.Adam and AdamW by name (torchtitan/components/optimizer.py).
    optimizer: dict[str, Any] = {"name": "AdamW"}
    if s.optimizer != "adamw":
        gaps.drop(
            f"Optimizer {s.optimizer}: torchtitan builds only Adam and AdamW; the file keeps AdamW, whose "
            "states take more memory than the plan's."
        )
    if s.optimizer_in_backward:
        optimizer["early_step_in_backward"] = True
    return optimizer


def _training(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    # Under pipeline parallelism the local batch is split into pipeline micro-batches, so accumulation
    # becomes the micro-batch count; otherwise torchtitan accumulates global / (local x dp) steps.
    local = s.micro_batch * s.grad_accum if s.pp > 1 else s.micro_batch
    training: dict[str, Any] = {
        "local_batch_size": local,
        "global_batch_size": s.sequences_per_step,
        "seq_len": s.seq_len,
        "steps": optimizer_steps(s),
    }
    training.update(_precision(s, gaps))
    if s.offload_params:
        training["enable_cpu_offload"] = True  # FSDP2 CPU offload: parameters, gradients and optimizer states
    elif s.offload_optimizer:
        gaps.drop(
            "Optimizer offload alone: torchtitan's enable_cpu_offload moves parameters, gradients and "
            "optimizer states together; the file leaves it off."
        )
    return training


def _precision(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.precision == "bf16_pure":
        return {"dtype": "bfloat16"}  # all states in bf16, no fp32 master copy (job_config.py)
    if s.precision == "fp32":
        return {"mixed_precision_param": "float32"}
    if s.precision == "fp16_mixed":
        gaps.drop("Precision fp16: torchtitan's mixed precision is bf16 or fp32 only; the file keeps bf16.")
    return {"mixed_precision_param": "bfloat16"}


def _parallelism(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    shard, replicate = _data_parallel(s, gaps)
    parallelism: dict[str, Any] = {
        "data_parallel_replicate_degree": replicate,
        "data_parallel_shard_degree": shard,
        "tensor_parallel_degree": s.tp,
        "pipeline_parallel_degree": s.pp,
        "context_parallel_degree": s.cp,
    }
    if s.ep > 1:  # torchtitan's MoE models (DeepSeek-V3, Llama 4) split the routed experts over this degree
        parallelism["expert_parallel_degree"] = s.ep
        _expert_tensor(s, parallelism, gaps)
    if s.zero_stage == 2 and shard > 1:
        parallelism["fsdp_reshard_after_forward"] = "never"  # keep gathered weights to backward: ZeRO-2
    if s.pp > 1:
        parallelism["pipeline_parallel_microbatch_size"] = s.micro_batch
    if s.pp_virtual_stages > 1:
        parallelism["pipeline_parallel_schedule"] = "Interleaved1F1B"
        gaps.note(
            f"Interleaved 1F1B with {s.pp_virtual_stages} stages per rank: torchtitan infers the stages per "
            f"rank from pipeline_parallel_layers_per_stage; set it so that {s.pp * s.pp_virtual_stages} "
            "stages result."
        )
    if s.tp > 1 and not s.sequence_parallel:
        gaps.drop("Tensor parallelism without sequence parallelism: torchtitan always shards the sequence.")
    return parallelism


def _expert_tensor(s: Scenario, parallelism: dict[str, Any], gaps: Gaps) -> None:
    """torchtitan's expert_tensor_parallel_degree defaults to 1 (not to tp, as Megatron's does) and takes 1 or
    tp only (its job_config docstring), so the plan's degree is written out whenever it is one of those."""
    etp = s.tp if s.etp is None else s.etp
    if etp in (1, s.tp):
        parallelism["expert_tensor_parallel_degree"] = etp
    else:
        gaps.drop(
            f"Expert tensor parallelism {etp}: torchtitan takes 1 or tp ({s.tp}) only; the file keeps 1."
        )


def _data_parallel(s: Scenario, gaps: Gaps) -> tuple[int, int]:
    """(shard, replicate) degrees: FSDP over dp for ZeRO 2-3, plain replicas (DDP) for ZeRO 0."""
    if s.zero_stage == 0:
        return 1, s.dp
    if s.zero_stage == 1:
        gaps.drop("ZeRO stage 1: FSDP2 has no optimizer-only sharding; the file shards fully (ZeRO-3).")
    if s.hybrid_shard:
        shard = in_node_shard(s)
        return shard, s.dp // shard
    return s.dp, 1


def _recompute(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.recompute == "selective":
        gaps.drop(
            "Recompute selective (attention scores only): torchtitan has no such mode; the file says "
            "mode = 'none', the same as long as flash attention keeps no scores."
        )
        return {"mode": "none"}
    mode: dict[str, Any] = {"mode": AC_MODES[s.recompute]}
    if s.recompute == "selective_op":
        mode["selective_ac_option"] = "op"
    return mode


def _not_in_torchtitan(s: Scenario, gaps: Gaps) -> None:
    if s.method != "full":
        gaps.drop(
            f"LoRA: torchtitan v0.2.2 trains full models only; the plan's {adapters(s)} are not exported."
        )
    if s.offload_activations:
        gaps.drop("Activation offload: torchtitan v0.2.2 has no activation offload option.")
    if not s.flash_attention:
        gaps.drop("Attention without flash kernels: torchtitan always runs SDPA or flex attention.")
