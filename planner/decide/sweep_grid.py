"""The layouts a plan search tries: GPU count × TP × PP (× virtual stages) × ZeRO stage × recompute × micro-batch.

The grid does not depend on the GPU type, so it is built once and evaluated for every GPU in the search.
Gradient accumulation is not searched: it follows from the target global batch (in sequences), rounded up,
so every layout trains with (at least) the batch the scenario asks for.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import get_args

import numpy as np

from planner.decide.sweep_degrees import (
    DEFAULT_CP_DEGREES,
    context_parallel_degrees,
    expert_degrees,
    pipeline_schedules,
    tensor_parallel_degrees,
    with_hybrid_shard,
)
from planner.formulas.memory.recipes import Recompute
from planner.inputs import scenario
from planner.inputs.scenario import Scenario

# 128 nodes of 8: beyond this, fine-tuning-sized batches leave most data-parallel replicas idle, and the user
# can raise it (Constraints.max_gpus) for pre-training plans.
DEFAULT_MAX_GPUS = 1024
# Micro-batches of 1-16 sequences cover what fits at 2k-8k tokens on 16-192 GiB devices; larger ones rarely fit
# a 7B+ model and the accumulation rule keeps the global batch anyway.
DEFAULT_MICRO_BATCHES = (1, 2, 4, 8, 16)
DEFAULT_ZERO_STAGES = (0, 1, 2, 3)
DEFAULT_RECOMPUTE: tuple[str, ...] = get_args(scenario.Recompute)  # every mode a scenario can hold
# Pipeline depths used by Megatron-LM/torchtitan recipes for 7B-405B models (Llama 3 405B used 16 stages).
DEFAULT_PP_DEGREES = (1, 2, 4, 8, 16)
# Virtual pipeline stages per GPU (interleaved 1F1B) tried for pp > 1: v = 2 halves the 1F1B bubble and v = 4
# quarters it, while the point-to-point traffic grows v-fold and the first stage's in-flight activations by
# (1 + (p−1)/(p·v)) (planner.formulas.step.pipeline); published Megatron/NeMo runs sit at 2-6 chunks per GPU
# (reference/calibration.csv: 3, 5, 6). Only splits the model's layers allow are tried.
DEFAULT_VIRTUAL_STAGES = (1, 2, 4)
# Expert-parallel degrees tried for a model with routed experts (dense models get ep 1 only, so their grid does
# not grow): powers of two up to 64, DeepSeek-V3's own training layout (64-way EP over 8 nodes; DeepSeek-AI
# 2024, §3.2.1), with Mixtral-style runs at EP 8 (Megatron-Core MoE docs). Only divisors of the routed expert
# count (Megatron-Core's rule) and of dp (EP is carved out of the data-parallel group) are kept.
DEFAULT_EXPERT_DEGREES = (1, 2, 4, 8, 16, 32, 64)
# 5 M layouts keep the grid's own columns near 320 MB; the default search holds a few hundred thousand.
MAX_LAYOUTS = 5_000_000
# the layout's order in the grid: GPU count, model split, ZeRO stage, recompute, micro-batch
SORT_COLUMNS = ("n_gpus", "tp", "pp", "cp", "zero_stage", "hybrid_shard", "recompute", "micro_batch_seqs")
# the `planner.columns` layout columns a layout sets (micro-batch in sequences, accumulation in micro-batches);
# the last, ep, only in a grid that varies it (a model with routed experts)
LAYOUT_COLUMNS = (
    "n_gpus",
    "tp",
    "pp",
    "cp",
    "dp",
    "zero_stage",
    "recompute",
    "micro_batch_seqs",
    "n_micro_batches",
    "n_virtual_stages",
    "ep",
)


@dataclass(frozen=True)
class SearchSpace:
    """What the search varies; `None` means "derive from the scenario" (see each field)."""

    gpu_counts: tuple[int, ...] | None = None  # None: powers of two and multiples of the node, up to max_gpus
    tp_degrees: tuple[int, ...] | None = None  # None: every divisor of gpus_per_node (TP stays inside a node)
    # context parallelism, kept to the degrees the sequence allows (sweep_degrees.context_parallel_degrees)
    cp_degrees: tuple[int, ...] = DEFAULT_CP_DEGREES
    # hybrid sharding (HSDP) tried beside the flat ZeRO group where it changes something (with_hybrid_shard)
    hybrid_shards: tuple[bool, ...] = (False, True)
    pp_degrees: tuple[int, ...] = DEFAULT_PP_DEGREES
    zero_stages: tuple[int, ...] = DEFAULT_ZERO_STAGES
    recompute: tuple[str, ...] = DEFAULT_RECOMPUTE
    micro_batches: tuple[int, ...] = DEFAULT_MICRO_BATCHES
    virtual_stages: tuple[int, ...] = DEFAULT_VIRTUAL_STAGES  # tried where pp > 1 and the layers split
    target_batch_sequences: int | None = None  # None: the scenario's micro_batch × grad_accum × dp
    # --- a search that obeys (built by planner.decide.sweep_space) ---
    # (offload_optimizer, offload_params) pairs allowed; None: any. The first pass uses the scenario's own pair
    # (or the first allowed), the others only when nothing meets the constraints (sweep_space.offload_passes).
    offload_modes: tuple[tuple[bool, bool], ...] | None = None
    fixed: tuple[tuple[str, object], ...] = ()  # (scenario field, value) the user fixed, for the words
    # expert parallelism: degrees tried where the model has routed experts
    expert_degrees: tuple[int, ...] = DEFAULT_EXPERT_DEGREES
    # post-training (planner.decide.sweep_generation): dedicated generation GPU counts tried for
    # PPO/GRPO; None: colocated and a few splits of each total (0 means colocated)
    generation_gpus: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        allowed = sorted(mode.key for mode in Recompute)
        unknown = sorted(set(self.recompute) - set(allowed))
        if unknown:
            raise ValueError(f"recompute: unknown mode(s) {unknown}; allowed: {allowed}")
        if any(stage not in DEFAULT_ZERO_STAGES for stage in self.zero_stages):
            raise ValueError(f"zero_stages: each must be 0-3 (got {self.zero_stages})")
        for name in (
            "gpu_counts",
            "tp_degrees",
            "cp_degrees",
            "pp_degrees",
            "micro_batches",
            "virtual_stages",
            "expert_degrees",
        ):
            values = getattr(self, name)
            if values is not None and (not values or min(values) < 1):
                raise ValueError(f"{name}: give at least one whole number >= 1 (got {values})")
        if not self.hybrid_shards:
            raise ValueError("hybrid_shards: allow at least one of False, True")
        if self.generation_gpus is not None and (not self.generation_gpus or min(self.generation_gpus) < 0):
            raise ValueError(
                f"generation_gpus: give at least one whole number >= 0 (got {self.generation_gpus})"
            )
        if self.target_batch_sequences is not None and self.target_batch_sequences < 1:
            raise ValueError("target_batch_sequences: must be >= 1")
        if self.offload_modes is not None and not self.offload_modes:
            raise ValueError("offload_modes: allow at least one (offload_optimizer, offload_params) pair")


def target_batch_sequences(base: Scenario, space: SearchSpace) -> int:
    """Sequences per optimizer step every layout must reach: the scenario's micro_batch × grad_accum × dp."""
    if space.target_batch_sequences is not None:
        return space.target_batch_sequences
    return base.sequences_per_step


def default_gpu_counts(gpus_per_node: int, max_gpus: int) -> tuple[int, ...]:
    """Powers of two up to `max_gpus`, and every whole number of nodes up to it."""
    powers = {2**k for k in range(int(math.log2(max_gpus)) + 1)}
    nodes = set(range(gpus_per_node, max_gpus + 1, gpus_per_node))
    return tuple(sorted(n for n in powers | nodes if n <= max_gpus))


@dataclass(frozen=True)
class LayoutGrid:
    """Equal-length float arrays, one row per layout, named and coded as `planner.columns.LayoutColumns`."""

    columns: dict[str, np.ndarray]
    target_sequences: int
    n_candidates: int  # combinations before dropping impossible ones

    def __len__(self) -> int:
        return len(self.columns["n_gpus"])

    def take(self, index: np.ndarray | slice) -> dict[str, np.ndarray]:
        return {name: values[index] for name, values in self.columns.items()}


def layout_grid(
    base: Scenario,
    space: SearchSpace,
    max_gpus: int,
    n_layers: float | None,
    n_heads: float | None,
    n_experts: float | None = None,
    seq_len_tokens: float | None = None,
) -> LayoutGrid:
    """Every layout of the search space that can run: model parallelism divides the GPU count, TP within a
    node, at most one pipeline stage per layer, and the target batch reachable with whole micro-batches.

    Built one (TP, PP) pair at a time, so GPU counts that cannot work with the pair are dropped before they
    are crossed with the other choices (a million-GPU limit must not materialise every combination).
    `n_experts` (routed experts; 0 or None for a dense model) lets expert-parallel degrees in (`expert_degrees`),
    `seq_len_tokens` (the resolved sequence length; None: unknown) context-parallel ones
    (`context_parallel_degrees`).
    """
    counts = np.asarray(space.gpu_counts or default_gpu_counts(base.gpus_per_node, max_gpus), dtype=float)
    counts = counts[counts <= max_gpus]
    tps = space.tp_degrees or tensor_parallel_degrees(base.gpus_per_node, n_heads)
    tps = tuple(t for t in tps if t <= base.gpus_per_node)
    pps = tuple(p for p in space.pp_degrees if n_layers is None or p <= n_layers)
    codes = [float(Recompute.of(name)) for name in space.recompute]
    target = target_batch_sequences(base, space)
    other_axes = [np.asarray(axis, dtype=float) for axis in (space.zero_stages, codes, space.micro_batches)]
    n_other = math.prod(len(axis) for axis in other_axes)
    schedules = pipeline_schedules(pps, space.virtual_stages, n_layers)
    eps = expert_degrees(space.expert_degrees, n_experts)
    n_other *= len(eps)
    parts, n_rows = [], 0
    cps = context_parallel_degrees(space.cp_degrees, seq_len_tokens)
    for tp, cp, (pp, v) in itertools.product(tps, cps, schedules):
        model_parallel = tp * pp * cp
        usable = counts[(counts % model_parallel == 0) & (counts <= target * model_parallel)]
        n_rows += len(usable) * n_other
        if n_rows > MAX_LAYOUTS:
            raise ValueError(
                f"max_gpus: the search would hold over {MAX_LAYOUTS:,} layouts per GPU type; lower the maximum "
                "GPU count or narrow the choices"
            )
        if len(usable) and eps:  # no degree the model takes: no layouts at all
            parts.append(
                _pair_layouts(
                    base, usable, (float(tp), float(cp)), (float(pp), float(v)), other_axes, target, eps
                )
            )
    names = LAYOUT_COLUMNS if eps != (1,) else LAYOUT_COLUMNS[:-1]  # a dense grid keeps the scenario's ep 1
    columns = {name: np.concatenate([p[name] for p in parts]) if parts else np.empty(0) for name in names}
    columns = with_hybrid_shard(columns, space.hybrid_shards, base.gpus_per_node)
    order = np.lexsort([columns[name] for name in reversed(SORT_COLUMNS)])
    n_candidates = len(counts) * len(tps) * len(cps) * len(schedules) * n_other * len(space.hybrid_shards)
    return LayoutGrid(
        {k: v[order] for k, v in columns.items()}, target_sequences=target, n_candidates=n_candidates
    )


def _pair_layouts(
    base: Scenario,
    counts: np.ndarray,
    model_split: tuple[float, float],
    schedule: tuple[float, float],
    other_axes: list[np.ndarray],
    target: int,
    eps: tuple[int, ...] = (1,),
) -> dict[str, np.ndarray]:
    """Layouts for one (TP, CP) split and (PP, virtual stages): GPU count × ZeRO × recompute × micro-batch (× expert
    parallelism where ep divides dp), impossible ones dropped (interleaving also needs the micro-batches per
    step to be a multiple of pp, as Megatron does)."""
    (tp, cp), (pp, v) = model_split, schedule
    mesh = np.meshgrid(counts, *other_axes, indexing="ij")
    n_gpus, zero, recompute, micro = (axis.ravel() for axis in mesh)
    dp = n_gpus / (tp * pp * cp)
    keep = dp * micro <= target
    # ZeRO stages differ only when there is a group to shard over (or states to offload).
    if dp.size and not (base.offload_optimizer or base.offload_params):
        keep &= ~((dp * cp == 1) & (zero > 0))
    n_gpus, zero, recompute, micro, dp = (a[keep] for a in (n_gpus, zero, recompute, micro, dp))
    accum = np.ceil(target / (dp * micro))
    if v > 1:
        interleavable = accum % pp == 0
        n_gpus, zero, recompute, micro, dp, accum = (
            a[interleavable] for a in (n_gpus, zero, recompute, micro, dp, accum)
        )
    full = np.full(len(dp), 1.0)
    values = (n_gpus, tp * full, pp * full, cp * full, dp, zero, recompute, micro, accum, v * full)
    layout = dict(zip(LAYOUT_COLUMNS[:-1], values, strict=True))
    if eps == (1,) and base.etp is None:
        return layout
    # a fixed expert tensor degree (the scenario's etp; empty follows each row's tp) keeps the layouts where
    # etp x ep divides tp x dp (planner.model.expert_split)
    etp = float(base.etp or tp)
    masks = [(dp % ep == 0) & ((tp * dp) % (etp * ep) == 0) for ep in eps]  # once per degree, not per column
    parts = [{k: c[mask] for k, c in layout.items()} for mask in masks]
    if eps == (1,):
        return parts[0]
    for part, ep in zip(parts, eps, strict=True):
        part["ep"] = np.full(len(part["dp"]), float(ep))
    return {k: np.concatenate([part[k] for part in parts]) for k in LAYOUT_COLUMNS}
