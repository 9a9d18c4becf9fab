"""The plan as a torchtune recipe config YAML (torchtune v0.6.1, recipes/configs/llama3_1/*.yaml).

The file carries the keys a plan decides; tokenizer path, checkpointer and dataset come from torchtune's own
config for the model, which this file is merged over (its first comment lines say how: a section that names a
`_component_` replaces the base's section whole, so no key of the base's optimizer, such as `fused`, reaches
an optimizer that does not take it). DPO plans run torchtune's DPO recipes with its DPOLoss; the other
post-training objectives have no torchtune recipe outside dev/ and are refused. `make test-exports` runs
`tune validate` on each file and on it merged over torchtune's own config.
"""

from __future__ import annotations

from typing import Any

from planner.errors import PlannerError
from planner.export.export_models import TORCHTUNE_MODELS, TorchtuneModel, preset_of
from planner.export.export_types import Export, Gaps, header, learning_rate, steps_note
from planner.export.serialize import yaml_text
from planner.inputs.scenario import Scenario

TARGET = "torchtune"
FILE_NAME = "torchtune_recipe.yaml"
OPTIMIZERS = {
    "adamw": "torch.optim.AdamW",
    # bitsandbytes' paged 8-bit AdamW, as torchtune's single-device full configs name it
    "adamw_8bit": "bitsandbytes.optim.PagedAdamW8bit",
    "paged_adamw_8bit": "bitsandbytes.optim.PagedAdamW8bit",
    "paged_adamw": "bitsandbytes.optim.PagedAdamW",  # 32-bit states, paged
    "sgd": "torch.optim.SGD",
    "sgd_momentum": "torch.optim.SGD",
    "adafactor": "torch.optim.Adafactor",  # PyTorch 2.5 and later
}
ATTENTION = ["q_proj", "k_proj", "v_proj", "output_proj"]  # torchtune's LORA_ATTN_MODULES


def export(s: Scenario) -> Export:
    _refuse(s)
    gaps = Gaps()
    config: dict[str, Any] = {"model": _model(s, gaps)}
    config["tokenizer"] = {"max_seq_len": s.seq_len}
    if s.post_training == "dpo":
        # torchtune's DPO recipes and loss (recipes/lora_dpo_*.py, torchtune/rlhf/loss/dpo.py); beta stays
        # DPOLoss's own default, 0.1, as in llama3_1/8B_lora_dpo.yaml.
        config["loss"] = {"_component_": "torchtune.rlhf.loss.DPOLoss"}
    else:
        config["dataset"] = {"packed": s.packing}
    config["batch_size"] = s.micro_batch
    config["gradient_accumulation_steps"] = s.grad_accum
    config.update(_epochs(s, gaps))
    config["optimizer"] = _optimizer(s)
    config.update(_in_backward(s, gaps))
    config.update(_precision(s, gaps))
    config.update(_memory(s, gaps))
    if s.n_gpus > 1:
        config.update(_distributed(s, gaps))
    _not_in_torchtune(s, gaps)
    gaps.note(steps_note(s))
    text = yaml_text(config, [*header(s, TARGET), *_how_to_run(s)])
    return gaps.export(TARGET, text, FILE_NAME, config)


def _refuse(s: Scenario) -> None:
    if s.post_training in ("sft", "dpo"):
        return
    if s.post_training == "ppo":  # recipes/ppo_full_finetune_single_device.py and its *_ppo_* configs
        why = (
            "torchtune v0.6.1's one PPO recipe, ppo_full_finetune_single_device, needs reward and value model "
            "sections this export does not write"
        )
    elif s.post_training == "grpo":  # recipes/dev/grpo_full_finetune_distributed.py
        why = (
            "torchtune v0.6.1 has GRPO only in its unsupported dev/ folder; export this plan for trl instead"
        )
    else:
        why = f"torchtune v0.6.1 has no recipe for {s.post_training} (its preference recipes are DPO's)"
    raise PlannerError("post_training", why, value=s.post_training, allowed="sft or dpo for torchtune")


def _recipe(s: Scenario) -> str:
    """torchtune's recipe (recipes/*.py): its DPO ones for DPO (full DPO is distributed-only, one process works)."""
    one = s.n_gpus == 1
    if s.post_training == "dpo":
        return (
            "full_dpo_distributed"
            if s.method == "full"
            else f"lora_dpo_{'single_device' if one else 'distributed'}"
        )
    kind = "full_finetune" if s.method == "full" else "lora_finetune"
    return f"{kind}_{'single_device' if one else 'distributed'}"


def _how_to_run(s: Scenario) -> list[str]:
    nproc = "" if s.n_gpus == 1 else f"--nproc_per_node {min(s.n_gpus, s.gpus_per_node)} "
    return [
        f"Start from torchtune's config for this model and recipe ({_recipe(s)}; tune ls lists them), copied",
        "with tune cp; set this file's keys over it, a section naming a _component_ replacing that section whole.",
        f"Then: tune run {nproc}{_recipe(s)} --config {FILE_NAME}",
    ]


def _model(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    preset = preset_of(s.model, s.model_shape is not None)
    found = TORCHTUNE_MODELS.get(preset or "")
    if found is None:
        gaps.drop(
            f"Model {preset or 'custom shape'}: torchtune v0.6.1 has no builder of it in this planner's table; "
            "set model._component_ yourself."
        )
        return _adapter_args(s) if s.method != "full" else {}
    return {"_component_": _builder(found, s), **(_adapter_args(s, found) if s.method != "full" else {})}


def _builder(model: TorchtuneModel, s: Scenario) -> str:
    qlora = "qlora_" if model.has_qlora_builder else "lora_"  # else lora_ with quantize_base: True
    prefix = {"full": "", "lora": "lora_", "qlora": qlora}[s.method]
    return f"{model.module}.{prefix}{model.name}"


def _adapter_args(s: Scenario, model: TorchtuneModel | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {
        "lora_attn_modules": ATTENTION,
        "apply_lora_to_mlp": s.lora_targets == "all_linear",
        "apply_lora_to_output": False,
        "lora_rank": s.lora_rank,
        # The plan has no alpha; 2 x rank is torchtune's own advice ("usually alpha=2*rank").
        "lora_alpha": 2 * s.lora_rank,
        "lora_dropout": 0.0,
    }
    if s.method == "qlora" and (model is None or not model.has_qlora_builder):
        args["quantize_base"] = True  # the LoRA builder's NF4 switch, where no qlora_ builder exists
    return args


def _epochs(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.total_tokens_b is None and float(s.epochs).is_integer():
        return {"epochs": int(s.epochs)}
    gaps.drop(
        "Training length: torchtune counts whole epochs (with max_steps_per_epoch); the plan's "
        + (f"{s.epochs:g} epochs" if s.total_tokens_b is None else f"{s.total_tokens_b:g}B-token budget")
        + " is not written."
    )
    return {}


def _optimizer(s: Scenario) -> dict[str, Any]:
    # The whole section (it replaces the base's): no `fused`, which bitsandbytes' 8-bit optimizers reject.
    optimizer: dict[str, Any] = {"_component_": OPTIMIZERS[s.optimizer], "lr": learning_rate(s)}
    if s.optimizer == "sgd_momentum":
        optimizer["momentum"] = 0.9  # the plan only says "with momentum"; 0.9 is the usual value
    return optimizer


def _in_backward(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    """optimizer_in_bwd, which the full fine-tuning recipes read (the single-device one requires the key)."""
    usable = s.method == "full" and s.grad_accum == 1  # the recipes reject it with accumulation
    if s.optimizer_in_backward and not usable:
        gaps.drop(
            "Optimizer step in backward: torchtune offers it for full fine-tuning without accumulation only."
        )
    if s.method != "full":
        return {}
    if s.optimizer_in_backward and usable:
        gaps.note("optimizer_in_bwd needs clip_grad_norm: null (torchtune asserts it).")
    return {"optimizer_in_bwd": s.optimizer_in_backward and usable}


def _precision(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    # torchtune trains in one dtype throughout (no fp32 master copy) and supports bf16 and fp32 only.
    if s.precision == "fp32":
        return {"dtype": "fp32"}
    if s.precision in ("bf16_mixed", "fp8_mixed"):
        gaps.drop(
            f"Precision {s.precision}: torchtune has no mixed precision; dtype bf16 keeps weights, gradients "
            "and optimizer states in bf16 (less memory than planned, no fp32 master copy)."
        )
    if s.precision == "fp16_mixed":
        gaps.drop("Precision fp16: torchtune's recipes support bf16 and fp32 only; no dtype is written.")
        return {}
    return {"dtype": "bf16"}


def _memory(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    if s.recompute in ("selective", "selective_op"):
        gaps.drop(
            f"Recompute {s.recompute}: torchtune checkpoints whole layers or none; the file leaves it off."
        )
    full = s.recompute == "full"
    memory: dict[str, Any] = {"enable_activation_checkpointing": full}
    if s.offload_activations and not full:
        gaps.drop("Activation offload: torchtune offloads activations only with activation checkpointing on.")
    memory["enable_activation_offloading"] = s.offload_activations and full
    return memory


def _distributed(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    """FSDP2 settings of torchtune's distributed recipes (full_finetune_distributed.py, lora_...)."""
    settings: dict[str, Any] = {"fsdp_cpu_offload": s.offload_params}
    if s.offload_optimizer and not s.offload_params:
        gaps.drop(
            "Optimizer offload alone: torchtune's fsdp_cpu_offload moves parameters and optimizer together."
        )
    if s.zero_stage in (2, 3):
        settings["fsdp_reshard_after_forward"] = s.zero_stage == 3  # False is SHARD_GRAD_OP (ZeRO-2)
    else:
        gaps.drop(
            f"ZeRO stage {s.zero_stage}: torchtune's distributed recipes always shard with FSDP (ZeRO-3)."
        )
    if s.hybrid_shard:
        gaps.drop("Hybrid sharding: torchtune v0.6.1 recipes shard over every data-parallel rank.")
    if s.tp > 1:
        settings.update(_tensor_parallel(s, gaps))
    return settings


def _tensor_parallel(s: Scenario, gaps: Gaps) -> dict[str, Any]:
    model = TORCHTUNE_MODELS.get(preset_of(s.model, s.model_shape is not None) or "")
    if s.method != "full" or model is None or model.tp_plan is None:
        gaps.drop(
            f"Tensor parallelism {s.tp}: torchtune offers it for full fine-tuning of Llama 3 models only."
        )
        return {}
    return {"tensor_parallel_dim": s.tp, "tensor_parallel_plan": {"_component_": model.tp_plan}}


def _not_in_torchtune(s: Scenario, gaps: Gaps) -> None:
    for name, degree in (("Pipeline parallelism", s.pp), ("Context parallelism", s.cp)):
        if degree > 1:
            gaps.drop(
                f"{name} {degree}: torchtune v0.6.1 recipes have no such option; those GPUs become "
                f"data-parallel ranks, so the global batch grows {degree}-fold unless you cut accumulation."
            )
    if s.n_gpus > s.gpus_per_node:
        gaps.note(f"{s.n_gpus} GPUs span nodes: launch with tune run --nnodes ... (torchrun options).")
    if not s.flash_attention:
        gaps.drop("Attention without flash kernels: torchtune always uses PyTorch's SDPA.")
