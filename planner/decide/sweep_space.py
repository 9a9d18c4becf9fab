"""A search that obeys: the layout choices a user fixed become the search space, in this one place.

The plan search varies the GPU count, tensor, context and pipeline parallelism, hybrid sharding (with its virtual stages), the ZeRO stage, recompute, the
micro-batch and (when nothing else fits) CPU offload. Whatever the user fixed of these is searched at that value
only; everything else is free. The CLI fixes the flags typed explicitly (`--tp 1`; `--tp any` frees it), the Plan
search page its "any"/value choices; both build the space through `obeying_space`, and the fallback passes and
the "why nothing fits" words read it back from `SearchSpace.fixed`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.decide.sweep_generation import searches_generation
from planner.decide.sweep_grid import LayoutGrid, SearchSpace, layout_grid
from planner.errors import PlannerError
from planner.inputs.scenario import FSDP_TO_ZERO, Scenario

ANY = "any"  # the value that frees a dimension (CLI flag value, page choice)
FSDP_ONLY = "fsdp_only"  # pseudo-field in SearchSpace.fixed: the FSDP-only search
# Scenario fields the search varies, in the order the words list them.
SEARCHED_FIELDS = (
    "n_gpus",
    "tp",
    "cp",
    "pp",
    "pp_virtual_stages",
    "ep",
    "zero_stage",
    "hybrid_shard",
    "recompute",
    "micro_batch",
    "offload_optimizer",
    "offload_params",
    "generation_gpus",  # PPO/GRPO only (planner.decide.sweep_generation)
)
FIELD_WORDS = {
    "n_gpus": "GPU count",
    "tp": "TP",
    "cp": "CP",
    "pp": "PP",
    "pp_virtual_stages": "virtual stages",
    "ep": "EP",
    "zero_stage": "ZeRO stage",
    "hybrid_shard": "hybrid shard (HSDP)",
    "recompute": "recompute",
    "micro_batch": "micro-batch",
    "offload_optimizer": "optimizer offload",
    "offload_params": "parameter offload",
    "generation_gpus": "generation GPUs",
    FSDP_ONLY: "FSDP only",
}
# FSDP's sharding strategies as ZeRO stages (NO_SHARD 0, SHARD_GRAD_OP 2, FULL_SHARD 3; scenario.FSDP_TO_ZERO),
# with no tensor or pipeline parallelism: what a plain FSDP/FSDP2 training script can run.
FSDP_ZERO_STAGES = tuple(sorted({stage for stage, _ in FSDP_TO_ZERO.values()}))
# (offload_optimizer, offload_params): none, ZeRO-Offload (optimizer states and step on the host) and
# ZeRO-Infinity / FSDP CPUOffload (parameters too). Parameters without the optimizer is not offered: DeepSpeed's
# offload_param is used with offload_optimizer, and FSDP's CPUOffload moves both together.
OFFLOAD_MODES: tuple[tuple[bool, bool], ...] = ((False, False), (True, False), (True, True))
FSDP_OFFLOAD_MODES: tuple[tuple[bool, bool], ...] = ((False, False), (True, True))


def obeying_space(
    base: Scenario,
    fixed: Mapping[str, Any],
    *,
    fsdp_only: bool = False,
    target_batch_sequences: int | None = None,
) -> SearchSpace:
    """The search space with each field of `fixed` (a Scenario field of `SEARCHED_FIELDS` -> its value)
    searched at that value only; the rest free. `fsdp_only` keeps TP and PP at 1 and ZeRO to FSDP's stages."""
    unknown = sorted(set(fixed) - set(SEARCHED_FIELDS))
    if unknown:
        raise PlannerError("fixed", "not a searched field", value=unknown, allowed=", ".join(SEARCHED_FIELDS))
    # the callers pass validated values (the CLI's Scenario, the page's choice lists); SearchSpace checks ranges
    one = dict(fixed)
    if not searches_generation(base):  # nothing generates: a generation count is not a choice of the search
        one.pop("generation_gpus", None)
    if fsdp_only:
        _check_fsdp(one)
    space: dict[str, Any] = {"target_batch_sequences": target_batch_sequences}
    if fsdp_only:
        space.update(tp_degrees=(1,), pp_degrees=(1,), zero_stages=FSDP_ZERO_STAGES)
    dimensions = {
        "n_gpus": "gpu_counts",
        "tp": "tp_degrees",
        "cp": "cp_degrees",
        "pp": "pp_degrees",
        "pp_virtual_stages": "virtual_stages",
        "ep": "expert_degrees",
        "zero_stage": "zero_stages",
        "hybrid_shard": "hybrid_shards",
        "recompute": "recompute",
        "micro_batch": "micro_batches",
        "generation_gpus": "generation_gpus",
    }
    space.update({dimensions[name]: (value,) for name, value in one.items() if name in dimensions})
    modes = FSDP_OFFLOAD_MODES if fsdp_only else OFFLOAD_MODES
    for index, name in enumerate(("offload_optimizer", "offload_params")):
        if name in one:
            modes = tuple(m for m in modes if m[index] == one[name]) or (
                (bool(one.get("offload_optimizer", False)), bool(one.get("offload_params", False))),
            )
    space["offload_modes"] = modes
    record = [(name, one[name]) for name in SEARCHED_FIELDS if name in one]
    space["fixed"] = tuple(record + ([(FSDP_ONLY, True)] if fsdp_only else []))
    return SearchSpace(**space)


def _check_fsdp(fixed: Mapping[str, Any]) -> None:
    """An FSDP-only search cannot also keep a choice plain FSDP cannot run."""
    for name, allowed in (("tp", (1,)), ("pp", (1,)), ("zero_stage", FSDP_ZERO_STAGES)):
        if name in fixed and fixed[name] not in allowed:
            choices = " or ".join(map(str, allowed))
            raise PlannerError(
                FSDP_ONLY,
                f"keeps {FIELD_WORDS[name]} at {choices}",
                value=fixed[name],
                allowed=f"{choices}, or '{ANY}'",
                related=(name,),
            )


def freed(base: Scenario, space: SearchSpace, name: str) -> SearchSpace:
    """The same space with one fixed field (or the FSDP-only rule) free again."""
    fixed = {k: v for k, v in space.fixed if k not in (name, FSDP_ONLY)}
    fsdp_only = name != FSDP_ONLY and any(k == FSDP_ONLY for k, _ in space.fixed)
    return obeying_space(
        base, fixed, fsdp_only=fsdp_only, target_batch_sequences=space.target_batch_sequences
    )


def fixed_words(space: SearchSpace) -> str:
    """ "TP 1, PP 1, ZeRO stage 3": what the user fixed, in words."""
    return ", ".join(_one_fixed(name, value) for name, value in space.fixed)


def _one_fixed(name: str, value: Any) -> str:
    if name == FSDP_ONLY:
        return "FSDP only (TP 1, PP 1, ZeRO stage " + "/".join(map(str, FSDP_ZERO_STAGES)) + ")"
    if isinstance(value, bool):
        return f"{FIELD_WORDS[name]} {'on' if value else 'off'}"
    return f"{FIELD_WORDS[name]} {value}"


def offload_passes(
    base: Scenario, space: SearchSpace
) -> tuple[tuple[bool, bool], tuple[tuple[bool, bool], ...]]:
    """(the first pass's offload pair, the pairs tried only when nothing meets the constraints).

    The first pass keeps the scenario's own offload when the space allows it: offload costs host transfers,
    so it is explored only when nothing else fits. A space built directly (no `offload_modes`) searches the
    scenario's own offload alone, as the search always did."""
    own = (base.offload_optimizer, base.offload_params)
    if space.offload_modes is None:
        return own, ()
    first = own if own in space.offload_modes else space.offload_modes[0]
    return first, tuple(mode for mode in space.offload_modes if mode != first)


def mode_grid(
    base: Scenario,
    space: SearchSpace,
    modes: tuple[tuple[bool, bool], ...],
    max_gpus: int,
    n_layers: float | None,
    n_heads: float | None,
    n_experts: float | None = None,
    seq_len_tokens: float | None = None,
) -> LayoutGrid:
    """The layout grid once per offload pair, the pair as two more layout columns (1.0 on, 0.0 off).

    The scenario's own pair alone is the plain grid (the resolved columns already hold its flags)."""
    if modes == ((base.offload_optimizer, base.offload_params),):
        return layout_grid(base, space, max_gpus, n_layers, n_heads, n_experts, seq_len_tokens)
    grids = []
    for optimizer, params in modes:
        on = base.updated(offload_optimizer=optimizer, offload_params=params)
        grid = layout_grid(on, space, max_gpus, n_layers, n_heads, n_experts, seq_len_tokens)
        grid = dataclasses.replace(grid, columns=grid.take(_offload_runs(grid, optimizer, params)))
        flags = {"offload_optimizer": float(optimizer), "offload_params": float(params)}
        grids.append((grid, {k: np.full(len(grid), v) for k, v in flags.items()}))
    names = [*grids[0][0].columns, "offload_optimizer", "offload_params"]
    columns = {n: np.concatenate([g.columns.get(n, extra.get(n)) for g, extra in grids]) for n in names}
    return LayoutGrid(
        columns,
        target_sequences=grids[0][0].target_sequences,
        n_candidates=sum(g.n_candidates for g, _ in grids),
    )


def _offload_runs(grid: LayoutGrid, optimizer: bool, params: bool) -> np.ndarray:
    """Layouts a framework can offload with: DeepSpeed's offload_optimizer needs ZeRO stage 1-3 and its
    offload_param stage 3 (DeepSpeed configuration docs, "zero_optimization"); the same rule is applied to
    FSDP plans, whose parameter offload is offered with full sharding only."""
    zero = grid.columns["zero_stage"]
    return ((zero >= 1) | (not optimizer)) & ((zero == 3) | (not params))
