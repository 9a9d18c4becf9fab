"""Memory inputs from a case row (reference/calibration.csv format) and predictions of its memory figure.

One set of rules maps every row; there is no per-row or per-source branch. The free-text columns are read
with a small keyword vocabulary (e.g. "FSDP" or "ZeRO-3" → stage 3, "offload" → CPU offload), and each
unpublished cell falls back to a stated default (constants below). A Scenario's inputs are built by
`planner.formulas.memory_inputs.memory_inputs_from_scenario`. What a row's `measured_unit` statistic means:
- `gib_peak_allocated_per_gpu`: PyTorch's allocated (or active) peak = our allocated peak;
- `gib_peak_reserved_per_gpu`: the caching allocator's reserved peak = allocated × (1 + fragmentation);
- `gib_device_used_per_gpu`: nvidia-smi = reserved + the overhead outside the allocator (CUDA context...);
- `*_unspecified`: read as allocated: PEFT's memory tracker reads torch.cuda.max_memory_allocated and
  torchtune's logger leads with the peak active bytes (calibration-sources.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.cases.rel_error import relative_error
from planner.formulas.memory import GIB, MemoryBreakdown, MemoryInputs, memory_per_gpu
from planner.formulas.memory_inputs import build_memory_inputs
from planner.formulas.recipes import METHOD_CODES, RECOMPUTE_CODES
from planner.model.architecture import count_params
from planner.model.shape import ModelShape

# measured_unit -> (statistic, bytes per unit)
MEMORY_UNITS: dict[str, tuple[str, float]] = {
    "gib_peak_allocated_per_gpu": ("allocated", GIB),
    "gib_peak_reserved_per_gpu": ("reserved", GIB),
    "gib_device_used_per_gpu": ("device", GIB),
    "gib_peak_per_gpu_unspecified": ("allocated", GIB),
    "gb_peak_per_gpu_unspecified": ("allocated", 1e9),
}
UPPER_BOUND_UNITS = ("gb_upper_bound_per_gpu",)

# Stated defaults for cells a source leaves empty.
UNPUBLISHED_PRECISION = "fp32"  # PyTorch's default dtype: a script that states no precision trains in fp32
# Short-sequence fine-tuning benchmarks omit the length; 64 tokens is the max_length of PEFT's example scripts,
# the only such rows in the reference file (calibration-sources.md, PEFT). At that length activations are a
# few GB beside tens of GB of weights, so the assumption moves those predictions by a few per cent.
UNPUBLISHED_SEQ_LEN = 64.0
UNPUBLISHED_LORA_RANK = 16  # Scenario default
UNPUBLISHED_LORA_TARGETS = "all_linear"  # Scenario default (torchtune and QLoRA recipes adapt every linear)


@dataclass(frozen=True)
class MemoryCase:
    """One memory row predicted in its own unit, or the reason it was not."""

    case_id: str
    measured_unit: str
    measured: float | None
    predicted: float | None
    statistic: str
    skipped_reason: str | None = None

    @property
    def rel_error(self) -> float | None:
        return relative_error(self.predicted, self.measured)


def _text(row: Mapping[str, Any], key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _number(row: Mapping[str, Any], key: str) -> float | None:
    """A CSV cell as a float; empty or unreadable cells are None ("not published")."""
    try:
        value = float(_text(row, key))
    except ValueError:
        return None
    return value if np.isfinite(value) else None


def parse_precision(text: str) -> str:
    low = text.lower()
    if "fp8" in low or "float8" in low:
        return "fp8_mixed"
    if "pure" in low:
        return "bf16_pure"
    if "fp16" in low:
        return "fp16_mixed"
    if "bf16" in low:
        return "bf16_mixed"
    return UNPUBLISHED_PRECISION


def parse_optimizer(text: str) -> str:
    low = text.lower().replace("-", "")
    if "8bit" in low:
        return "adamw_8bit"
    if "adafactor" in low:
        return "adafactor"
    if "sgd" in low:
        return "sgd_momentum" if "momentum" in low else "sgd"
    return "adamw"


def parse_sharding(text: str) -> tuple[int, bool, bool]:
    """(ZeRO stage, hybrid shard, CPU offload) from a strategy such as "FSDP2 (8-way)" or "ZeRO-3 + CPU offload".

    FSDP's full shard is ZeRO-3 and SHARD_GRAD_OP ZeRO-2 (scenario.FSDP_TO_ZERO); an offload moves parameters
    and optimizer states to the host (FSDP CPUOffload, DeepSpeed offload_param + offload_optimizer).
    """
    low = text.lower()
    match = re.search(r"zero[- ]?([0-3])", low)
    if match:
        stage = int(match.group(1))
    elif "shard_grad_op" in low:
        stage = 2
    elif "fsdp" in low or "fully_shard" in low or "full_shard" in low:
        stage = 3
    else:
        stage = 0
    return stage, "hybrid" in low, "offload" in low


def parse_recompute(text: str) -> tuple[int, bool]:
    """(recompute code, activation offload) from e.g. "selective (per-op SAC)" or "full + offloading"."""
    low = text.lower()
    if low.startswith("full"):
        code = RECOMPUTE_CODES["full"]
    elif "selective" in low:
        code = RECOMPUTE_CODES["selective_op" if "op" in low.split("selective", 1)[1] else "selective"]
    else:
        code = RECOMPUTE_CODES["none"]
    return code, "offload" in low


def uses_fused_cross_entropy(row: Mapping[str, Any]) -> bool:
    """A chunked or fused loss named in an optional `loss` column or in the notes; otherwise standard."""
    text = f"{_text(row, 'loss')} {_text(row, 'notes')}".lower()
    return "chunked" in text or "fused cross" in text or "fused ce" in text


def case_shape(row: Mapping[str, Any]) -> ModelShape | str:
    """The row's shape; MLP kind (2 or 3 matrices) and tied embeddings are not columns, so we pick the pair
    whose parameter count (planner.model.architecture) is closest to the published `params_b`."""
    needed = ("params_b", "n_layers", "hidden", "n_heads", "vocab")
    missing = [key for key in needed if _number(row, key) is None]
    if missing:
        return f"no {', '.join(missing)} in the row"
    hidden, n_heads = int(_number(row, "hidden") or 0), int(_number(row, "n_heads") or 0)
    base: dict[str, Any] = {
        "name": _text(row, "model")[:120] or "case",
        "vocab_size": int(_number(row, "vocab") or 0),
        "hidden_size": hidden,
        "n_layers": int(_number(row, "n_layers") or 0),
        "n_heads": n_heads,
        "n_kv_heads": int(_number(row, "n_kv_heads") or n_heads),
        "head_dim": hidden // n_heads,
        "ffn_hidden": int(_number(row, "ffn_hidden") or 4 * hidden),
    }
    target = (_number(row, "params_b") or 0.0) * 1e9
    candidates = [
        ModelShape.model_validate({**base, "mlp_kind": kind, "tied_embeddings": tied})
        for kind in ("swiglu", "gelu")
        for tied in (False, True)
    ]
    return min(candidates, key=lambda shape: abs(count_params(shape).total - target))


def skip_reason(row: Mapping[str, Any]) -> str | None:
    """Why a memory row cannot be compared with a peak prediction, from its columns (None: it can)."""
    unit = _text(row, "measured_unit")
    notes, optimizer = _text(row, "notes").lower(), _text(row, "optimizer").lower()
    if unit in UPPER_BOUND_UNITS:
        return "an upper bound (the run fits within it), not a peak reading"
    if unit not in MEMORY_UNITS:
        return f"not a memory row (measured_unit {unit!r})"
    if "no packing" in notes:
        return "unpacked batches padded to their longest sample: seq_len is only the maximum length"
    if "paged" in optimizer:
        return "paged optimizer state lives in unified memory and moves to the host as VRAM runs short"
    if _number(row, "active_params_b") not in (None, _number(row, "params_b")):
        return "mixture-of-experts row: the expert layout is not in the case columns"
    return None


def memory_inputs_from_case(row: Mapping[str, Any]) -> MemoryInputs | str:
    """MemoryInputs for a calibration/case row, or the reason (str) it is skipped. Rules: module docstring."""
    reason = skip_reason(row)
    if reason:
        return reason
    shape = case_shape(row)
    if isinstance(shape, str):
        return shape
    tp, pp, cp = (_number(row, key) or 1.0 for key in ("tp", "pp", "cp"))
    n_gpus = _number(row, "n_gpus") or tp * pp * cp
    dp = _number(row, "dp") or max(n_gpus / (tp * pp * cp), 1.0)
    global_batch = _number(row, "global_batch") or dp * pp
    # unpublished micro-batch: pp micro-batches per step, the fewest that fill a 1F1B pipeline (torchtitan's
    # default microbatch count) and no further accumulation
    micro_batch = _number(row, "micro_batch") or max(global_batch / (dp * pp), 1.0)
    grad_accum = _number(row, "grad_accum") or max(global_batch / (micro_batch * dp), 1.0)
    stage, hybrid, offload = parse_sharding(_text(row, "zero_stage_or_fsdp"))
    recompute, offload_activations = parse_recompute(_text(row, "activation_ckpt"))
    method = _text(row, "method").lower() or "full"
    optimizer_text = _text(row, "optimizer").lower()
    return build_memory_inputs(
        shape,
        (_number(row, "params_b") or 0.0) * 1e9,
        method=method if method in METHOD_CODES else "full",
        optimizer=parse_optimizer(optimizer_text),
        precision=parse_precision(_text(row, "precision")),
        lora_rank=int(_number(row, "lora_rank") or UNPUBLISHED_LORA_RANK),
        lora_targets=UNPUBLISHED_LORA_TARGETS,
        recompute=recompute,
        seq_len=_number(row, "seq_len") or UNPUBLISHED_SEQ_LEN,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        tp=tp,
        pp=pp,
        cp=cp,
        dp=dp,
        zero_stage=stage,
        hybrid_shard=hybrid,
        # frameworks that offer TP pair it with sequence parallelism (Megatron-LM, torchtitan)
        sequence_parallel=tp > 1,
        # an empty cell: eager attention, which charges the score term (flash attention needs opting in)
        flash_attention=_text(row, "flash_attn").lower().startswith("yes"),
        fused_cross_entropy=uses_fused_cross_entropy(row),
        offload_optimizer=offload,
        offload_params=offload,
        offload_activations=offload_activations,
        optimizer_in_backward="in_bwd" in optimizer_text or "in backward" in optimizer_text,
    )


def predicted_statistic_bytes(breakdown: MemoryBreakdown, statistic: str) -> float:
    """The breakdown's figure for a measured statistic: allocated, reserved or device used."""
    figure = {
        "allocated": breakdown.allocated_peak_bytes,
        "reserved": breakdown.reserved_peak_bytes,
        "device": breakdown.peak_bytes,
    }[statistic]
    return float(np.asarray(figure))


def predict_memory_case(row: Mapping[str, Any]) -> MemoryCase:
    """Predict a memory row in its own unit (GiB or GB of its statistic), or say why not."""
    unit = _text(row, "measured_unit")
    statistic, unit_bytes = MEMORY_UNITS.get(unit, ("", 1.0))
    inputs = memory_inputs_from_case(row)
    case = MemoryCase(_text(row, "case_id"), unit, _number(row, "measured_value"), None, statistic)
    if isinstance(inputs, str):
        return MemoryCase(case.case_id, unit, case.measured, None, statistic, inputs)
    predicted = predicted_statistic_bytes(memory_per_gpu(inputs), statistic) / unit_bytes
    return MemoryCase(case.case_id, unit, case.measured, predicted, statistic)
