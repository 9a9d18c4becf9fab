"""The keyword vocabulary that reads a case row's free-text cells (precision, optimizer, sharding, recompute...).

Published tables describe a configuration in words ("bf16 AMP (Composer amp_bf16)", "FSDP2 (fully_shard,
8-way)", "selective (per-op SAC)"). Each reader below looks for a few keywords and returns a Scenario value;
an empty cell returns None, so the one table of blank-cell defaults (`planner.cases.case_defaults`) decides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any


def text(row: Mapping[str, Any], key: str) -> str:
    """A cell as stripped text; a missing column reads as empty ("not published", DESIGN.md §4)."""
    value = row.get(key)
    return "" if value is None else str(value).strip()


def number(row: Mapping[str, Any], key: str) -> float | None:
    """A numeric cell as a float; empty is None (the file check has already refused non-numbers)."""
    cell = text(row, key)
    return float(cell) if cell else None


def read_precision(cell: str) -> str | None:
    """Scenario.precision from e.g. "bf16 AMP", "fp8 (TE) + bf16", "mixed precision (16-bit)"."""
    low = cell.lower()
    if not low:
        return None
    if "fp8" in low or "float8" in low:
        return "fp8_mixed"
    if "pure" in low and "autocast" not in low:  # autocast over a 16-bit base is mixed precision
        return "bf16_pure"
    if (
        "fp16" in low or "16-bit" in low
    ):  # Megatron papers: "mixed precision (16-bit)" = fp16 with fp32 master
        return "fp16_mixed"
    if "bf16" in low:
        return "bf16_mixed"
    return "fp32"


def read_optimizer(cell: str) -> str:
    low = cell.lower().replace("-", "")
    if "8bit" in low:  # bitsandbytes' PagedAdamW8bit pages its states to the host as VRAM runs short
        return "paged_adamw_8bit" if "paged" in low else "adamw_8bit"
    if "paged" in low:  # bitsandbytes' 32-bit paged AdamW (the QLoRA paper's paged optimizer)
        return "paged_adamw"
    if "adafactor" in low:
        return "adafactor"
    if "sgd" in low:
        return "sgd_momentum" if "momentum" in low else "sgd"
    return "adamw"  # blank or any Adam variant (AdamW, decoupled_adamw, fused Adam)


def read_sharding(cell: str) -> tuple[int | None, bool, bool]:
    """(ZeRO stage or None when blank, hybrid shard, CPU offload) from e.g. "FSDP2 (8-way)", "ZeRO-3 + offload".

    FSDP's full shard is ZeRO-3 and SHARD_GRAD_OP ZeRO-2 (scenario.FSDP_TO_ZERO); an offload moves parameters
    and optimizer states to the host (FSDP CPUOffload, DeepSpeed offload_param + offload_optimizer).
    """
    low = cell.lower()
    if not low:
        return None, False, False
    match = re.search(r"zero[- ]?([0-3])", low)
    if match:
        stage = int(match.group(1))
    elif "shard_grad_op" in low:
        stage = 2
    elif "fsdp" in low or "fully_shard" in low or "full_shard" in low:
        stage = 3
    else:
        stage = 0  # "none", "DDP"
    return stage, "hybrid" in low, "offload" in low


# Words that name the optimizer as what is offloaded ("ZeRO-2 + offload_optimizer", "Adam offload", DeepSpeed's
# ZeRO-Offload, its CPU Adam), and words that name the parameters ("offload_param", FSDP's CPUOffload, which
# moves parameters and optimizer states together).
_OPTIMIZER_OFFLOAD_WORDS = ("optimizer", "adam", "zero-offload", "zero offload")
_PARAM_OFFLOAD_WORDS = ("param", "fsdp")


def read_offload(cell: str) -> tuple[bool, bool]:
    """(offload_optimizer, offload_params) from the sharding cell, e.g. "ZeRO-2 + offload_optimizer (cpu)".

    A cell that names only the optimizer as offloaded (DeepSpeed ZeRO-Offload at stage 1-2: optimizer states
    and step on the host, parameters on the GPU) offloads the optimizer alone; any other offload wording
    ("FSDP + fsdp_cpu_offload", "ZeRO-3 + CPU offload", "param/grad/optimizer offload") moves both.
    """
    low = cell.lower()
    if "offload" not in low:
        return False, False
    optimizer_only = any(word in low for word in _OPTIMIZER_OFFLOAD_WORDS) and not any(
        word in low for word in _PARAM_OFFLOAD_WORDS
    )
    return True, not optimizer_only


def read_recompute(cell: str) -> tuple[str, bool]:
    """(Scenario.recompute, activation offload) from e.g. "selective (per-op SAC)" or "full + offloading"."""
    low = cell.lower()
    if low.startswith("full"):
        mode = "full"
    elif "selective" in low:
        mode = "selective_op" if "op" in low.split("selective", 1)[1] else "selective"
    else:
        mode = "none"  # blank, "none", "no"
    return mode, "offload" in low


def read_flash(cell: str) -> bool | None:
    low = cell.lower()
    return None if not low else not low.startswith("no")


def attention_kernel(cell: str) -> str:
    """Scenario.attention_kernel from the `flash_attn` cell: "flash1" where it names a FlashAttention-1-era
    kernel (the Triton port, flash-attn 1.x), else FlashAttention-2's "flash2"."""
    low = cell.lower()
    return "flash1" if "triton" in low or "flashattention-1" in low or "flash-attn 1" in low else "flash2"


def fused_cross_entropy(row: Mapping[str, Any]) -> bool:
    """A chunked or fused loss named in an optional `loss` column or in the notes; otherwise standard."""
    low = f"{text(row, 'loss')} {text(row, 'notes')}".lower()
    return "chunked" in low or "fused cross" in low or "fused ce" in low


def lora_targets(notes: str) -> str | None:
    """Scenario.lora_targets from the adapted modules the notes name, or None when they name none.

    "+ MLP", "all linear" or "all-linear" adapt every linear layer; attention projections alone
    ("q_proj+v_proj only", "q/k/v") are the attention setting (its q, k, v, o is the nearest the Scenario
    offers to a subset of them).
    """
    low = notes.lower()
    if "mlp" in low or "all linear" in low or "all-linear" in low:
        return "all_linear"
    if "q_proj" in low or "q/k/v" in low or "q/v" in low or "query_key_value" in low:
        return "attention"
    return None


def optimizer_in_backward(cell: str) -> bool:
    low = cell.lower()
    return "in_bwd" in low or "in backward" in low


def optimizer_foreach(cell: str) -> bool:
    """A plain torch.optim optimizer ("AdamW (torch)") with no implementation named: torch then picks its
    foreach step on CUDA (torch/optim/optimizer.py `_foreach_doc`); fused, 8-bit, paged, CPU and
    DeepSpeed/Megatron optimizers are not it."""
    low = cell.lower()
    others = ("fused", "8bit", "8-bit", "paged", "cpu", "deepspeed", "megatron", "for-loop")
    return "(torch" in low and not any(word in low for word in others)


def hf_eager_code(row: Mapping[str, Any]) -> bool:
    """Scenario.hf_eager_code: the row ran Hugging Face transformers or PEFT modelling code (its source, url or
    notes name them) and says nothing of torch.compile, which would fuse the norms and the gated activation."""
    low = f"{text(row, 'source')} {text(row, 'url')} {text(row, 'notes')}".lower()
    named = any(word in low for word in ("peft", "hugging face", "huggingface", "transformers", "trl"))
    return named and "compile" not in low


def power_capped(gpu_cell: str) -> bool:
    """A GPU run below its datasheet clocks ("500W power limit"): its rates follow the limit."""
    low = gpu_cell.lower()
    return "power limit" in low or "power-capped" in low or "power cap" in low


# "500W power limit", "500 W power-capped", "power limit 500 W", "capped at 450W": the watts a GPU cell states.
_POWER_LIMIT = re.compile(
    r"(\d+(?:\.\d+)?)\s*w\b[^,;)]*?\bpower[- ]?(?:limit|cap)"
    r"|power[- ]?(?:limit|cap)(?:ped)?\D{0,12}?(\d+(?:\.\d+)?)\s*w\b"
    r"|capped\s+(?:at|to)\s+(\d+(?:\.\d+)?)\s*w\b"
)


def power_limit_w(gpu_cell: str) -> float | None:
    """The per-GPU power limit a GPU cell states in watts, or None."""
    match = _POWER_LIMIT.search(gpu_cell.lower())
    if match is None:
        return None
    return float(next(group for group in match.groups() if group is not None))


def batch_split_per_stage(notes: str) -> bool:
    """The notes say the per-replica batch is split into one micro-batch per pipeline stage (torchtitan's
    default microbatch count, e.g. "split into PP microbatches")."""
    return "pp microbatches" in notes.lower()


# How the calibration notes state an interleaved schedule: NeMo's tables ("Virtual pipeline size 6") and the
# Megatron papers ("Interleaved pipeline schedule (3 stages per device)"). The case file has no column for it.
_VIRTUAL_STAGES = (
    re.compile(r"virtual pipeline size (\d+)"),
    re.compile(r"interleaved pipeline schedule \((\d+) stages per device\)"),
)


def virtual_pipeline_stages(notes: str) -> int | None:
    """Virtual pipeline stages per GPU the notes state (interleaved 1F1B), or None when they state none."""
    low = notes.lower()
    for pattern in _VIRTUAL_STAGES:
        found = pattern.search(low)
        if found:
            return int(found.group(1))
    return None


# How the calibration notes state an expert-parallel degree: "Expert parallel degree 8" (the EP column of NeMo
# Automodel's and Megatron-Core's tables, Megatron's --expert-model-parallel-size). The case file has no column.
_EXPERT_PARALLEL = re.compile(r"expert[- ]parallel(?:ism)?(?: degree| size)? (\d+)")


def expert_parallel_degree(notes: str) -> int | None:
    """The expert-parallel degree the notes state, or None when they state none."""
    found = _EXPERT_PARALLEL.search(notes.lower())
    return int(found.group(1)) if found else None


# "expert tensor parallel size 1" (Megatron's --expert-tensor-parallel-size written out); None: follows tp
_EXPERT_TENSOR = re.compile(r"expert[- ]tensor[- ]parallel(?:ism)?(?: degree| size)? (\d+)")


def expert_tensor_parallel_degree(notes: str) -> int | None:
    """The expert tensor-parallel degree the notes state, or None (it follows tp)."""
    found = _EXPERT_TENSOR.search(notes.lower())
    return int(found.group(1)) if found else None


# How the calibration notes state a run's length when n_tokens_b is blank (docs/pt_columns contract):
# "264,292 prompts, 1 epoch", "14k examples x 3 epochs", "50k pairs, 2 epochs".
_RUN_LENGTH = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s*(k|m)?\s+(?:prompts|pairs|examples)\s*(?:,|x|×)\s*(\d+(?:\.\d+)?)\s+epochs?\b"
)
_MULTIPLIER = {"": 1.0, "k": 1e3, "m": 1e6}


def examples_and_epochs(notes: str) -> tuple[int, float] | None:
    """(examples, epochs) the notes state as "N prompts, E epochs" (prompts, pairs or examples), or None."""
    found = _RUN_LENGTH.search(notes.lower())
    if found is None:
        return None
    count = float(found.group(1).replace(",", "")) * _MULTIPLIER[found.group(2) or ""]
    return max(round(count), 1), float(found.group(3))


# "model dropout 0.1", "dropout 0" (DeepSpeed-Chat's --dropout): the dropout the run trains with. LoRA's own
# dropout ("lora_dropout 0.05") is another input and does not match.
_DROPOUT = re.compile(r"(?<![a-z_])dropout\s+(?:=\s*)?(\d+(?:\.\d+)?)")


def dropout_on(notes: str) -> bool | None:
    """Whether the notes state a dropout above 0 (its masks are kept for backward); None when they state none."""
    found = _DROPOUT.search(notes.lower())
    return None if found is None else float(found.group(1)) > 0


# 4-bit bases whose dequantisation kernels are not bitsandbytes/torchao NF4 (the QLoRA the planner models:
# planner/formulas/step/adapter_time.py): GPTQ (auto-gptq) and AWQ int4 checkpoints.
OTHER_4BIT_BASES = ("gptq", "awq")


def other_4bit_base(row: Mapping[str, Any]) -> bool:
    """The row's quantised base is GPTQ or AWQ int4, said in its precision cell (Qwen's Q-LoRA rows)."""
    return any(word in text(row, "precision").lower() for word in OTHER_4BIT_BASES)


# The words a row's notes use when its prompt and completion cells hold a framework's length caps (verl's
# max_prompt_length / max_response_length) rather than what the run generated: such a row cannot be timed.
LENGTH_CAPS = "lengths are caps"


def lengths_are_caps(notes: str) -> bool:
    """The notes say the prompt and completion cells are caps, not generated lengths (`LENGTH_CAPS`)."""
    return LENGTH_CAPS in notes.lower()


# How the notes say a colocated engine frees its memory for training: verl's rollout option
# free_cache_engine (True in its ppo_trainer.yaml defaults) or vLLM's sleep mode.
_ENGINE_SLEEPS = re.compile(r"free_cache_engine(?:[:=]| is)? ?true|sleep mode on")


def engine_sleeps(notes: str) -> bool:
    """The notes say the engine frees its memory while the policy trains (`_ENGINE_SLEEPS`)."""
    return bool(_ENGINE_SLEEPS.search(notes.lower()))
