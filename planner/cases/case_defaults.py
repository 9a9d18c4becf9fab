"""The one table of defaults for the cells a case row leaves blank, and the settings no case column carries.

A published table rarely states everything; each blank cell gets the value below, for every category (memory,
throughput, time, energy alike), and the prediction lists the defaults it used. Each entry says where the
value comes from. Settings that no case column carries (overlap, network, node size) are Scenario fields
filled by `SETTINGS` and `inter_node_gb_per_s`.
"""

from __future__ import annotations

from typing import NamedTuple


class Default(NamedTuple):
    # what the blank cell becomes: the value itself, or a rule in words that `planner.cases.case_row` applies
    value: object
    reason: str


BLANK_DEFAULTS: dict[str, Default] = {
    "method": Default("full", "full training unless the row names LoRA or QLoRA"),
    "optimizer": Default("adamw", "AdamW: the optimizer of every training recipe in the reference file"),
    "precision": Default(
        "fp32 when the row states one GPU, else bf16_mixed (fp16_mixed on a GPU without BF16)",
        "a single-GPU script that states nothing trains in PyTorch's default fp32 (PEFT's example scripts "
        "load fp32 weights); multi-GPU training runs that omit it use bf16 mixed precision (Megatron-LM, "
        "BLOOM, LLaMA papers), or fp16 on GPUs without BF16 tensor cores (V100, T4), as Megatron-LM's 2019 "
        "V100 runs did",
    ),
    "zero_stage_or_fsdp": Default(
        "ZeRO-0 on one GPU, ZeRO-1 on more",
        "Megatron-LM's and NeMo's distributed optimizer (ZeRO-1) is their default for multi-GPU runs",
    ),
    "activation_ckpt": Default("none", "recomputation is opt-in in every framework of the reference file"),
    "flash_attn": Default(
        True,
        "a fused attention kernel is the default of PyTorch scaled_dot_product_attention (2.0+), Hugging "
        "Face transformers (sdpa, 4.36+), Megatron-Core/Transformer Engine and xformers",
    ),
    "micro_batch": Default(
        1,  # the batch per replica / pp where the notes say it is split into PP micro-batches
        "one sequence per micro-batch, as Megatron-LM and NeMo benchmark configurations run at scale; the "
        "smallest micro-batch gives the smallest pipeline bubble, the choice of a tuned run. torchtitan "
        "instead splits each replica's batch into one micro-batch per pipeline stage, which its tables say",
    ),
    "global_batch": Default("micro_batch x grad_accum x dp", "no accumulation beyond what is stated"),
    "grad_accum": Default("global_batch / (micro_batch x dp)", "the arithmetic of the stated batch sizes"),
    "tp": Default("1", "no tensor parallelism unless stated"),
    "pp": Default("1", "no pipeline parallelism unless stated"),
    "cp": Default("1", "no context parallelism unless stated"),
    "dp": Default("n_gpus / (tp x pp x cp)", "every GPU left after model parallelism holds a replica"),
    "n_gpus": Default(
        "tp x pp x cp x dp", "GPU count not stated: one GPU-equivalent per replica, communication unknown"
    ),
    "n_kv_heads": Default("n_heads", "multi-head attention unless grouped-query heads are stated"),
    "ffn_hidden": Default("4 x hidden", "the GPT MLP width (Megatron-LM's --ffn-hidden-size default)"),
    "vocab": Default(51_200, "GPT-3's BPE vocabulary padded as Megatron pads it (NeMo's GPT3-175B row)"),
    "seq_len": Default(
        64,
        "max_length of PEFT's example scripts, the only rows that omit it (calibration-sources.md); at that "
        "length activations are a few GB beside tens of GB of weights. A throughput or time row without it "
        "is skipped instead: its step time scales with the length",
    ),
    "lora_rank": Default(16, "the Scenario default, torchtune's and PEFT's usual rank"),
}

# Scenario settings that no case column states, with their reasons.
GPUS_PER_NODE = 8  # every multi-GPU source here ran on 8-GPU nodes (DGX/HGX A100 and H100, Grand Teton)
# Overlap assumed for every published run: Scenario's default 0.9. FSDP prefetching and Megatron's
# --overlap-grad-reduce / --overlap-param-gather hide nearly all data-parallel traffic; at 0.5 the llm-foundry
# rows LF-02 and LF-22 would need more than 100 % of the dense peak, from 0.8 up no multi-GPU row does.
OVERLAP_FRAC = 0.9
LORA_TARGETS = "all_linear"  # Scenario default (torchtune and QLoRA recipes adapt every linear layer)
# Per-GPU network of the reference systems: DGX A100 (Selene, MosaicML A100) 8x HDR 200 Gb/s = 25 GB/s;
# DGX H100 8x NDR 400 Gb/s = 50 GB/s (NVIDIA DGX A100 / H100 user guides, network section), which is also the
# Scenario default used for every other generation.
INTER_NODE_GB_PER_S = {"ampere": 25.0}
DEFAULT_INTER_NODE_GB_PER_S = 50.0


def inter_node_gb_per_s(generation: str) -> float:
    return INTER_NODE_GB_PER_S.get(generation, DEFAULT_INTER_NODE_GB_PER_S)


def default(column: str) -> float:
    """The value a blank numeric cell becomes."""
    value = BLANK_DEFAULTS[column].value
    assert isinstance(value, (int, float)), column
    return float(value)


def note(column: str, applied: object = None) -> str:
    """The assumption line a prediction carries when `column` was blank (`applied`: the value the rule gave)."""
    value = BLANK_DEFAULTS[column].value if applied is None else applied
    return (
        f"{column} not stated: { ({True: 'on', False: 'off'}[value] if isinstance(value, bool) else value) }"
    )
