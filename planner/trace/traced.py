"""`trace_plan`: the traced allocated peak of a plan by phase and by module, beside the formulas' figure.

The trace counts what `torch.cuda.max_memory_allocated` would show. What the allocator and the device add
on top (its slack, the CUDA context, library workspaces and communicator buffers) are not tensors and cannot
be traced: they come from the planner's statistic model, the same rule `planner.formulas.memory.peak`
applies to the formulas' allocated peak (reserved = allocated x (1 + fragmentation); device total =
reserved + overhead, with the plan's `fragmentation_frac` and the formulas' overhead: stated or modelled).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from planner.catalogue.catalog import Catalogs
from planner.estimate import row
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import PEAK_PHASE_NAMES
from planner.formulas.units import GIB_BYTES
from planner.inputs.scenario import Scenario
from planner.resolve import resolve
from planner.trace.scope import check_traceable, require_packages

PHASES = ("forward", "backward", "optimizer")
# the formulas' phase codes (planner.formulas.memory.recipes.PEAK_PHASE_NAMES) in the trace's words
_FORMULA_PHASES = {0: "forward/backward", 1: "optimizer"}
TOP_MODULES = 12  # labels listed by size at the peak; the rest summed as "other"


@dataclass(frozen=True)
class TraceReport:
    """A traced step's allocated bytes (GiB) beside the formulas', with the statistic model's additions."""

    model: str
    method: str
    recompute: str
    micro_batch: int
    seq_len: int
    traced_allocated_peak_gib: float
    traced_peak_phase: str
    traced_phase_peak_gib: dict[str, float]
    traced_reserved_peak_gib: float
    traced_device_total_gib: float
    formula_allocated_peak_gib: float
    formula_peak_phase: str
    formula_vs_trace_frac: float  # formula / traced - 1: negative when the formulas predict low
    by_module_gib: dict[str, float]  # labels' bytes at the traced peak
    trace_s: float
    notes: list[str] = field(default_factory=list)

    def to_flat(self) -> dict[str, Any]:
        flat = {k: v for k, v in self.__dict__.items() if k not in ("traced_phase_peak_gib", "by_module_gib")}
        for phase, gib in self.traced_phase_peak_gib.items():
            flat[f"traced_{phase}_peak_gib"] = gib
        flat["by_module_gib"] = self.by_module_gib
        return flat


def formula_allocated(scenario: Scenario, cats: Catalogs) -> tuple[Any, dict[str, float]]:
    """The resolved plan and its evaluated row (the formulas' allocated peak and its phase among them)."""
    resolved = resolve(scenario, cats)
    return resolved, row(evaluate(resolved.columns), 0)


def trace_plan(scenario: Scenario, cats: Catalogs) -> TraceReport:
    """Trace one training step of `scenario` (see the package docstring); PlannerError when it cannot."""
    resolved, out = formula_allocated(scenario, cats)
    shape = check_traceable(scenario, resolved.shape)
    require_packages()
    from planner.trace.run import traced_step

    started = time.perf_counter()
    phases, labels = traced_step(scenario, shape, resolved.seq_len)
    seconds = time.perf_counter() - started
    phases, labels = with_formula_step(scenario, out, phases, labels)
    peak_phase = max(phases, key=lambda name: phases[name])
    traced = phases[peak_phase]
    formula = out["allocated_peak_bytes"]
    reserved = traced * (1.0 + scenario.fragmentation_frac)
    return TraceReport(
        model=resolved.model_label,
        method=scenario.method,
        recompute=scenario.recompute,
        micro_batch=scenario.micro_batch,
        seq_len=resolved.seq_len,
        traced_allocated_peak_gib=traced / GIB_BYTES,
        traced_peak_phase=peak_phase,
        traced_phase_peak_gib={name: phases[name] / GIB_BYTES for name in PHASES},
        traced_reserved_peak_gib=reserved / GIB_BYTES,
        traced_device_total_gib=(reserved + out["overhead_bytes"]) / GIB_BYTES,
        formula_allocated_peak_gib=formula / GIB_BYTES,
        formula_peak_phase=_FORMULA_PHASES.get(int(out["training_peak_phase"]), PEAK_PHASE_NAMES[0]),
        formula_vs_trace_frac=formula / traced - 1.0,
        by_module_gib=_top_labels(labels[peak_phase]),
        trace_s=seconds,
        notes=_notes(scenario),
    )


# the formulas' components held during the optimizer step (planner.formulas.memory.peak `_phases`)
OPTIMIZER_PHASE_TERMS = (
    "weights_bytes",
    "gradients_bytes",
    "optimizer_bytes",
    "master_bytes",
    "optimizer_step_temp_bytes",
)


def with_formula_step(
    s: Scenario, out: dict[str, float], phases: dict[str, int], labels: dict
) -> tuple[dict, dict]:
    """A sharded plan's optimizer phase from the formulas (FSDP2's step on fake tensors is not faithful)."""
    if s.n_gpus == 1:
        return phases, labels
    terms = {key.removesuffix("_bytes"): int(out[key]) for key in OPTIMIZER_PHASE_TERMS}
    return {**phases, "optimizer": sum(terms.values())}, {
        **labels,
        "optimizer": {f"{k} (formulas)": v for k, v in terms.items()},
    }


def _top_labels(labels: dict[str, int]) -> dict[str, float]:
    ranked = sorted(labels.items(), key=lambda item: -item[1])
    top = {name: size / GIB_BYTES for name, size in ranked[:TOP_MODULES]}
    rest = sum(size for _, size in ranked[TOP_MODULES:])
    return top | ({"other": rest / GIB_BYTES} if rest else {})


def _notes(s: Scenario) -> list[str]:
    notes = [
        "allocated bytes traced on fake CPU tensors; reserved and device total add the planner's allocator "
        "slack and CUDA context/workspace overhead (not traceable)",
        f"optimizer step: torch.optim {'foreach' if s.optimizer_foreach else 'fused'} implementation",
    ]
    if s.method == "lora":
        notes.append(
            "LoRA adapters in fp32 (PEFT's default), stepped without a master copy"
            + ("; forward under bf16 autocast (mixed precision)" if s.precision.endswith("_mixed") else "")
        )
    if s.recompute == "selective" and s.flash_attention:
        notes.append(
            "selective (attention-score) recompute keeps nothing extra under flash attention: traced as none"
        )
    if s.n_gpus > 1:
        notes.append(f"rank 0 of {s.n_gpus} under FSDP2 (fully_shard per block) over a fake process group; the "
                     "optimizer phase is the formulas' (FSDP2's step on fake tensors is not traced faithfully)")  # fmt: skip
    if s.grad_accum > 1:
        notes.append("two micro-batches traced: the second runs beside the first one's gradients")
    return notes
