"""The communication inputs of a Scenario: the gradient reduce dtype and the overlap model.

Kept here, as `planner.inputs.post_training` keeps its block, so that the Scenario stays short. The figures
they drive live in `planner.formulas.step.collectives` and `planner.formulas.step.timing`.
"""

from __future__ import annotations

from typing import Any, Literal

# FSDP MixedPrecision(reduce_dtype), Megatron grad_reduce_in_fp32, DeepSpeed communication_data_type.
ReduceDtype = Literal["auto", "fp32", "bf16", "fp16"]
# Bytes per gradient element each reduce dtype moves; "auto" (0) is decided by the recipe.
REDUCE_DTYPE_BYTES = {"auto": 0.0, "fp32": 4.0, "bf16": 2.0, "fp16": 2.0}

# constant: overlap × min(compute, traffic) of all traffic hides (Calculon's overlapped step), at the overlap
# share the published rows agree with (scripts/check_throughput_rows.py, 0.9). windows: the data-parallel sync
# hides only behind the compute that runs beside it (`planner.formulas.step.collectives.data_parallel_window`: DDP
# and ZeRO-1 behind the last micro-batch's backward, ZeRO-2 every backward, ZeRO-3 everything).
# "constant" is the default because the windows need the real micro-batch split, which published rows rarely
# state: with the split guessed (a blank micro-batch read as 1, so 4-64 accumulation steps, e.g. Megatron's
# weak-scaling rows) they scored worse held out: `validate --refit source` throughput median 9.5 % -> 14.5 %,
# 90th percentile 45.6 % -> 67.4 %. Choose "windows" when the split is known.
OverlapModel = Literal["constant", "windows"]
OVERLAP_MODELS: tuple[str, ...] = ("constant", "windows")

FIELDS: dict[str, dict[str, Any]] = {
    "reduce_dtype": {"default": "auto", "description": "dtype of the gradient reduction; auto = by recipe"},
    # Megatron-LM's --tp-comm-overlap (Transformer Engine userbuffers) splits each tensor-parallel all-gather and
    # reduce-scatter into chunks that run beside the GEMMs; without it (Megatron's default, and PyTorch's plain
    # tensor parallelism) the layer waits for every collective (Megatron-LM arguments.py, "--tp-comm-overlap":
    # "Enables the overlap of Tensor parallel communication and GEMM kernels"). Off by default.
    "tp_comm_overlap": {
        "default": False,
        "description": "tensor-parallel collectives overlap the GEMMs (Megatron --tp-comm-overlap); off: exposed",
    },
    "overlap_model": {
        "default": "constant",
        "description": "how data-parallel traffic hides: constant share, or behind its compute window",
    },
}
