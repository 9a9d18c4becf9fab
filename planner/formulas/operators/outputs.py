"""Where the step goes: the step time split into its parts, and the part that bounds it, in words.

`step_parts` turns the operator model's parts (`planner.formulas.operators.step.OperatorStep`) and the
scheduled step (`planner.formulas.step.timing.RunTime`) into per-step seconds on one GPU that add up to the
step time: GEMMs, attention, memory-bound operations, launch overhead (where the host's launches outlast the
GPU's work), the generation's residual (what the operators leave unexplained, `residual_frac`), the
adapters', experts' and offload's time, the exposed in-micro-batch (TP/CP/PP) and data-parallel communication
and the pipeline bubble. A row whose time comes from the user's own end-to-end MFU (or from the bare-count
preset) has no split: every part 0 and `bound_by` says why. `StepPartsFigures` and `STEP_PART_ROWS` are the
Estimate fields and output-table rows (`planner.results` takes both from here).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from pydantic import BaseModel

from planner.formulas.scalars import nan_to_zero

# the parts `bound_by` chooses from, in this order (index = the `bound_by_code` output)
PARTS: Final = (
    "gemm_time_s",
    "attention_time_s",
    "memory_bound_time_s",
    "launch_overhead_s",
    "exposed_pipelined_comm_s",
    "exposed_data_parallel_comm_s",
    "bubble_time_s",
    "offload_time_s",
    "adapter_memory_time_s",
)
WORDS: Final = (
    "matmul-bound (GEMMs)",
    "attention-bound",
    "memory-bandwidth-bound (element-wise ops, loss, optimizer step)",
    "host-bound: kernel launches outlast the GPU's work",
    "communication-bound",
    "communication-bound: data-parallel gradient sync",
    "pipeline-bubble-bound",
    "offload-bound (host transfers)",
    "adapter-bound (LoRA/QLoRA memory traffic)",
)


class StepPartsFigures(BaseModel):
    """Seconds per optimizer step on one GPU, by part (they add up to `step_time_s`), and the largest."""

    gemm_time_s: float
    attention_time_s: float
    memory_bound_time_s: float
    launch_overhead_s: float
    residual_time_s: float
    exposed_pipelined_comm_s: float
    exposed_data_parallel_comm_s: float
    bubble_time_s: float
    bound_by: str = ""


# (key, unit, label, evaluate's output); seconds are shown as they are
STEP_PART_ROWS: Final = (
    ("gemm_time_s", "s", "Matrix multiplies per step (s)", "gemm_time_s"),
    ("attention_time_s", "s", "Attention per step (s)", "attention_time_s"),
    ("memory_bound_time_s", "s", "Memory-bound operations per step (s)", "memory_bound_time_s"),
    ("launch_overhead_s", "s", "Kernel launch overhead per step (s)", "launch_overhead_s"),
    ("residual_time_s", "s", "Residual (unexplained by operators) per step (s)", "residual_time_s"),
    ("exposed_pipelined_comm_s", "s", "Exposed TP/CP/PP communication per step (s)", "exposed_pipelined_comm_s"),
    ("exposed_data_parallel_comm_s", "s", "Exposed data-parallel sync per step (s)", "exposed_data_parallel_comm_s"),
    ("bubble_time_s", "s", "Pipeline bubble per step (s)", "bubble_time_s"),
)  # fmt: skip


def step_parts(ops: Any, run: Any, operator_s: Any, split: Any, bubble_frac: Any) -> dict[str, Any]:
    """The parts of the step (module docstring); `operator_s` is the compute with its residual (NaN without
    a shape), `split` 1 where the step is modelled part by part (0: the user's end-to-end MFU)."""
    modelled = np.where(np.isnan(operator_s), 0.0, split)
    scale = np.where(modelled > 0, 1.0, 0.0)
    residual = nan_to_zero(operator_s) - nan_to_zero(ops.compute_s) - nan_to_zero(ops.adapter_s)
    return {
        "gemm_time_s": ops.gemm_s * scale,
        "attention_time_s": ops.attention_s * scale,
        "memory_bound_time_s": ops.memory_bound_s * scale,
        "launch_overhead_s": ops.launch_s * scale,
        "residual_time_s": residual * scale,
        "exposed_pipelined_comm_s": run.exposed_pipelined_s * scale,
        "exposed_data_parallel_comm_s": (run.exposed_comm_time_s - run.exposed_pipelined_s) * scale,
        "bubble_time_s": run.compute_and_pipelined_s * bubble_frac / (1.0 - bubble_frac) * scale,
        "split_modelled": modelled,
    }


def bound_by_code(out: dict[str, Any]) -> Any:
    """Index into PARTS of the largest part; -1 where the step is not split (end-to-end MFU, bare count)."""
    parts = [out[name] for name in PARTS]
    stacked = np.empty((len(parts), *np.broadcast_shapes(*(np.shape(p) for p in parts))))
    for i, part in enumerate(parts):  # assignment broadcasts (cheaper than np.broadcast_arrays)
        stacked[i] = part
    return np.where(out["split_modelled"] > 0, np.argmax(stacked, axis=0), -1)


def bound_by_words(code: int, tp: float, cp: float, pp: float, gpus_per_node: float) -> str:
    """The bounding part in words, with the layout behind communication ("TP 8 across 2 nodes")."""
    if code < 0:
        return (
            "not split: the time comes from an end-to-end utilisation (your MFU, or a bare parameter count)"
        )
    words = WORDS[code]
    if PARTS[code] != "exposed_pipelined_comm_s":
        return words
    if tp > gpus_per_node:
        return f"{words}: TP {tp:g} across {tp / gpus_per_node:g} nodes"
    layout = ", ".join(
        f"{name} {degree:g}" for name, degree in (("TP", tp), ("CP", cp), ("PP", pp)) if degree > 1
    )
    return f"{words}: {layout or 'traffic'} inside each micro-batch"
