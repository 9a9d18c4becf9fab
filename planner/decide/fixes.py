"""Ways to make a plan fit: single changes to the scenario, each judged by the full estimate, best first.

Every candidate is a change set of Scenario fields; all of them are evaluated in one `evaluate` call
(`planner.decide.sheet.evaluate_rows`). A fix never steps back from the user's method: a QLoRA plan is never
offered LoRA or a full fine-tune, a LoRA plan never a full fine-tune.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from planner.catalogue.catalog import Catalogs, precision_problem
from planner.decide.sheet import evaluate_rows
from planner.estimate import estimate_resolved
from planner.formulas.memory.verdict import VERDICT_NAMES
from planner.formulas.step.sequence import PACKED_MIN_TOKENS, derived_seq_len
from planner.inputs.scenario import Scenario
from planner.resolve import Resolved
from planner.results import Estimate

# Methods from most to least memory; a fix may only move right (adapters, then a 4-bit base).
METHOD_ORDER = ("full", "lora", "qlora")
RECOMPUTE_ORDER = ("none", "selective", "selective_op", "full")
# Figures typed for the scenario's own GPU give way to the catalogue's on another (planner/decide/sweep.py).
GPU_SPECIFIC_OVERRIDES = ("peak_tflops", "vram_gib", "usd_per_gpu_hour", "power_limit_w")
# Fixes whose time and money are within 5 % of each other count as equal cost; quality then decides.
EQUAL_COST_FRAC = 0.05
# A fix must lower the peak by more than this to be worth listing (below it the change does nothing for memory).
MIN_SAVING_GIB = 0.01
BIGGER_GPUS = 2  # the two smallest priced catalogue GPUs whose memory holds the current peak
MORE_GPU_FACTORS = (2, 4)  # doubling, then quadrupling the data-parallel replicas (ZeRO-3 shards over them)


@dataclass(frozen=True)
class Fix:
    """One change set, its sentence and what the plan becomes with it."""

    change: dict[str, Any]  # Scenario fields -> new values
    label: str  # the change in words, e.g. "Micro-batch 1 with 4 accumulation steps"
    note: str  # what it costs, in words
    # may change the trained model: 8-bit states, truncated or split examples, adapters
    affects_quality: bool
    peak_gib: float  # per GPU, with the change
    fits: (
        bool  # the verdict is "fits": the high end of the error band is within memory, not the estimate alone
    )
    wall_clock_h: float
    gpu_hours: float
    cost_usd: float | None
    peak_gib_high: float = float("nan")  # the device total at the high end of the measured error band

    def to_flat(self) -> dict[str, Any]:
        """JSON-ready, for the CLI's `fixes` list."""
        return {
            "change": self.change,
            "label": self.label,
            "note": self.note,
            "peak_gib_per_device": self.peak_gib,
            "fits_vram": self.fits,
            "peak_gib_high": self.peak_gib_high,
            "wall_clock_h": self.wall_clock_h,
            "cost_usd": self.cost_usd,
            "affects_quality": self.affects_quality,
        }


Candidate = tuple[dict[str, Any], str, str, bool]  # change, label, note, affects quality


def _sequence_fixes(resolved: Resolved) -> Iterator[Candidate]:
    s, length = resolved.scenario, resolved.seq_len
    context = resolved.shape.context_len if resolved.shape else None
    data = derived_seq_len(s.tokens_per_example, True, context)
    if data.tokens < length:
        yield (
            {"seq_len": None, "packing": True},
            f"Packed {data.tokens:,}-token sequences (follow the data)",
            f"{data.rule}; examples stay whole",
            data.tokens < s.tokens_per_example,
        )
    half = length // 2
    if half >= PACKED_MIN_TOKENS and half != data.tokens:
        truncates = half < s.tokens_per_example
        yield (
            {"seq_len": half},
            f"Sequence length {half:,}",
            "splits or truncates longer examples" if truncates else "less attention and activation memory",
            truncates,
        )


def _recipe_fixes(s: Scenario) -> Iterator[Candidate]:
    if s.micro_batch > 1:
        accum = s.grad_accum * s.micro_batch
        yield (
            {"micro_batch": 1, "grad_accum": accum},
            f"Micro-batch 1 with {accum} accumulation steps",
            "same global batch; smaller matmuls run a little slower",
            False,
        )
    kept = {"selective": "attention scores", "selective_op": "cheap ops (torchtitan)", "full": "every layer"}
    for mode in RECOMPUTE_ORDER[RECOMPUTE_ORDER.index(s.recompute) + 1 :]:
        yield ({"recompute": mode}, f"Recompute {kept[mode]}", "repeats part of the forward pass", False)
    if not s.fused_cross_entropy:
        yield (
            {"fused_cross_entropy": True},
            "Chunked cross-entropy",
            "never holds the fp32 logits of the whole micro-batch at once",
            False,
        )
    if s.optimizer == "adamw":
        yield (
            {"optimizer": "adamw_8bit"},
            "8-bit AdamW",
            "optimizer states from 8 to 2 bytes per trained parameter; usually the same loss",
            True,
        )
    if s.model_loading == "full_on_gpu":  # the whole model no longer lands on each GPU first
        yield (
            {"model_loading": "sharded"},
            "Load the model sharded",
            "meta-device init then sharded loading, DeepSpeed zero.Init or accelerate's CPU-RAM-efficient loading",
            False,
        )
    for stage in range(s.zero_stage + 1, 4):
        yield ({"zero_stage": stage}, f"ZeRO stage {stage}", "shards more state; more communication", False)
    for name, words in (
        ("offload_optimizer", "Offload optimizer states to CPU"),
        ("offload_activations", "Offload activations to CPU"),
        ("offload_params", "Offload parameters to CPU"),
    ):
        if not getattr(s, name):
            yield ({name: True}, words, "needs host memory; PCIe transfers slow each step", False)
    for method in METHOD_ORDER[METHOD_ORDER.index(s.method) + 1 :]:
        adapters = "LoRA adapters" if method == "lora" else "QLoRA (4-bit base)"
        yield ({"method": method}, adapters, "trains adapters only; quality may differ", True)


def _hardware_fixes(resolved: Resolved, cats: Catalogs, peak_gib: float) -> Iterator[Candidate]:
    s = resolved.scenario
    for factor in MORE_GPU_FACTORS:
        yield (
            {"n_gpus": s.n_gpus * factor, "zero_stage": 3, "grad_accum": max(1, s.grad_accum // factor)},
            f"{s.n_gpus * factor} GPUs with ZeRO-3",
            "shards the model states over more replicas; same global batch",
            False,
        )
    vram = float(resolved.columns.gpu.vram_bytes) / 2**30
    own = str(resolved.gpu["name"])
    bigger = []
    for name in cats.gpu_names():
        row = cats.gpu(name)
        runs = precision_problem(row, s.precision) is None  # a bigger GPU that lacks the datatype is no fix
        if name != own and runs and float(row["memory_gib"]) > vram and cats.price(name, s.snapshot or None):
            bigger.append((float(row["memory_gib"]), name))
    holding = [(memory_gib, name) for memory_gib, name in sorted(bigger) if memory_gib >= peak_gib]
    for memory_gib, name in (holding or sorted(bigger)[-1:])[:BIGGER_GPUS]:
        change = {"gpu": name, **{key: None for key in GPU_SPECIFIC_OVERRIDES if getattr(s, key) is not None}}
        yield (change, f"{name} ({memory_gib:,.0f} GiB)", "a bigger GPU at its own price", False)


# The memory savers that leave the trained model as it is, in the order they cost time (least first); the two
# combinations stop at op-level and at full recompute, for a plan that no single change makes fit.
COMBINED_RECOMPUTE = ("selective_op", "full")


def _combined_fixes(resolved: Resolved, single: list[Candidate]) -> Iterator[Candidate]:
    """The savers together, with op-level or full recompute; with and without the shorter sequences (a user
    may need the long window), so each combination stands beside the sequence change alone."""
    s = resolved.scenario
    free = [c for c in single if not c[3] and _is_saver(c)]
    seen: list[dict[str, Any]] = []  # without a sequence change (e.g. GRPO) both lengths give the same parts
    for keep_length, mode in itertools.product((True, False), COMBINED_RECOMPUTE):
        if RECOMPUTE_ORDER.index(s.recompute) > RECOMPUTE_ORDER.index(mode):
            continue
        parts = [c for c in free if not (keep_length and "seq_len" in c[0])]
        if s.recompute != mode:
            parts += [c for c in single if c[0] == {"recompute": mode}]
        if len(parts) >= 2:
            change = {key: value for part in parts for key, value in part[0].items()}
            if change in seen:
                continue
            seen.append(change)
            words = ", ".join(part[1][0].lower() + part[1][1:] for part in parts)
            yield (change, f"Together: {words}", "each part's cost adds up", False)


def _is_saver(candidate: Candidate) -> bool:
    """Sequences that follow the data, micro-batch 1, the chunked loss: memory back at little time."""
    change = candidate[0]
    follows_data = "seq_len" in change and change["seq_len"] is None
    return follows_data or set(change) <= {"micro_batch", "grad_accum", "fused_cross_entropy"}


def candidates(resolved: Resolved, cats: Catalogs, peak_gib: float) -> list[Candidate]:
    """Every change worth trying for this plan (`peak_gib`: its peak per GPU now)."""
    s = resolved.scenario
    single = [*_sequence_fixes(resolved), *_recipe_fixes(s)]
    found = [*single, *_combined_fixes(resolved, single), *_hardware_fixes(resolved, cats, peak_gib)]
    return [c for c in found if any(getattr(s, key) != value for key, value in c[0].items())]


def suggest_fixes(resolved: Resolved, cats: Catalogs) -> list[Fix]:
    """Each single change that lowers the peak, judged by the full estimate against `cats` (the catalogues
    `resolved` came from, so a fix is judged against the same VRAM). Fitting fixes first; then the least extra
    time and money; among equal costs, changes that may affect quality last."""
    s = resolved.scenario
    base = estimate_resolved(resolved)
    base_peak = base.peak_gib_per_device if base.peak_gib_per_device is not None else float("inf")
    tried: list[tuple[Candidate, Scenario]] = []
    # a bigger GPU must hold the band's high end, so that it leaves a margin (planner.formulas.memory.verdict)
    base_high = base.peak_gib_high if base.peak_gib_high is not None else base_peak
    for candidate in candidates(resolved, cats, base_high):
        try:
            tried.append((candidate, s.updated(**candidate[0])))
        except (ValidationError, ValueError):
            continue
    results = evaluate_rows([scenario for _, scenario in tried], cats)
    fixes = [
        _fix(candidate, result)
        for (candidate, _), result in zip(tried, results, strict=True)
        if isinstance(result, Estimate) and result.peak_gib_per_device is not None
    ]
    # a bigger GPU leaves the peak as it is and raises the limit instead
    useful = [fix for fix in fixes if "gpu" in fix.change or fix.peak_gib < base_peak - MIN_SAVING_GIB]
    return sorted([fix for fix in useful if not _needless(fix, useful)], key=lambda fix: _rank(fix, base))


def _needless(fix: Fix, fixes: list[Fix]) -> bool:
    """A combination is needless when one of its parts already fits alone."""
    items = fix.change.items()
    return any(other is not fix and other.fits and other.change.items() < items for other in fixes)


def _fix(candidate: Candidate, result: Estimate) -> Fix:
    change, label, note, quality = candidate
    assert result.peak_gib_per_device is not None
    return Fix(
        change=change,
        label=label,
        note=note,
        affects_quality=quality,
        peak_gib=result.peak_gib_per_device,
        fits=result.fit_verdict == VERDICT_NAMES[0],
        wall_clock_h=result.wall_clock_h,
        gpu_hours=result.device_hours,
        cost_usd=result.cost_usd,
        peak_gib_high=result.peak_gib_high
        if result.peak_gib_high is not None
        else result.peak_gib_per_device,
    )


def _rank(fix: Fix, base: Estimate) -> tuple[Any, ...]:
    if not fix.fits:  # of the changes that are not enough alone, the one that gets closest first
        return (True, 0, False, 0.0, fix.peak_gib)
    time = fix.wall_clock_h / base.wall_clock_h if base.wall_clock_h > 0 else 1.0
    money = fix.gpu_hours / base.device_hours if base.device_hours > 0 else 1.0  # without prices: GPU-hours
    if fix.cost_usd is not None and base.cost_usd:
        money = fix.cost_usd / base.cost_usd
    worst = max(time, money)
    return (not fix.fits, round(worst / EQUAL_COST_FRAC), fix.affects_quality, worst, fix.peak_gib)
