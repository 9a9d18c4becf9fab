"""The Plan search page's layout choices: each searched dimension is "any" or one fixed value, FSDP only, and
the global-batch target. The choices become a `SearchSpace` through `planner.obeying_space`, as the CLI's flags do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from planner import (
    ANY,
    DEFAULT_CP_DEGREES,
    DEFAULT_EXPERT_DEGREES,
    DEFAULT_MICRO_BATCHES,
    DEFAULT_PP_DEGREES,
    DEFAULT_RECOMPUTE,
    PlannerError,
    Scenario,
    SearchSpace,
    obeying_space,
    searches_generation,
    tensor_parallel_degrees,
)
from ui.number_entry import typed_number
from ui.safe_text import plain

# The offload choice and the (offload_optimizer, offload_params) pair it fixes.
OFFLOAD_CHOICES: dict[str, tuple[bool, bool]] = {
    "none": (False, False),
    "optimizer": (True, False),
    "optimizer and parameters": (True, True),
}
ZERO_STAGES = (0, 1, 2, 3)
# widget key -> (label, scenario field)
LABELS = {
    "search.fix.n_gpus": ("GPU count", "n_gpus"),
    "search.fix.tp": ("TP", "tp"),
    "search.fix.cp": ("CP", "cp"),
    "search.fix.pp": ("PP", "pp"),
    "search.fix.zero_stage": ("ZeRO stage", "zero_stage"),
    "search.fix.hybrid_shard": ("Hybrid shard (HSDP)", "hybrid_shard"),
    "search.fix.recompute": ("Recompute", "recompute"),
    "search.fix.micro_batch": ("Micro-batch", "micro_batch"),
    "search.fix.offload": ("CPU offload", "offload"),
    "search.fix.ep": ("EP (MoE)", "ep"),
    "search.fix.generation_gpus": ("Generation GPUs", "generation_gpus"),
}
FSDP_KEY = "search.fsdp_only"
TARGET_KEY = "search.global_batch_sequences"
MAX_GLOBAL_BATCH_SEQUENCES = (
    10_000_000  # 4e10 tokens at 4k per step: far past any published batch (Llama 3: 16 M)
)


@dataclass(frozen=True)
class LayoutChoice:
    space: SearchSpace | None  # None: a refused entry (its message is shown beside it)
    target_given: bool


def layout_choices(base: Scenario, scenario_target: int) -> LayoutChoice:
    """Render the choices (inside the page's form) and return the space they describe."""
    st.markdown("**Layout**: *any* lets the search choose; a value keeps every plan at it.")
    columns = st.columns(4)
    n_gpus, n_gpus_ok = typed_number(
        columns[0], "GPU count", "search.fix.n_gpus", integer=True, low=1, high=1_000_000, placeholder=ANY
    )
    options: dict[str, tuple[Any, ...]] = {
        "search.fix.tp": tensor_parallel_degrees(base.gpus_per_node, None),
        "search.fix.cp": DEFAULT_CP_DEGREES,  # kept to the degrees the sequence allows
        "search.fix.pp": DEFAULT_PP_DEGREES,
        "search.fix.zero_stage": ZERO_STAGES,
        "search.fix.hybrid_shard": (False, True),  # ZeRO shards within a node, replicas across nodes
        "search.fix.recompute": DEFAULT_RECOMPUTE,
        "search.fix.micro_batch": DEFAULT_MICRO_BATCHES,
        "search.fix.offload": tuple(OFFLOAD_CHOICES),
        "search.fix.ep": DEFAULT_EXPERT_DEGREES,  # only 1 finds plans for a dense model
    }
    picked = {}
    for index, (key, values) in enumerate(options.items(), start=1):
        label = LABELS[key][0]
        picked[key] = columns[index % 4].selectbox(label, (ANY, *values), key=key, format_func=_choice_words)
    left, right = st.columns(2)
    fsdp_only = left.checkbox(
        "FSDP only",
        key=FSDP_KEY,
        help="Plans plain FSDP can run: TP 1, PP 1, ZeRO stage 0, 2 or 3 (NO_SHARD, SHARD_GRAD_OP, FULL_SHARD).",
    )
    target, target_ok = typed_number(
        right,
        "Global batch (sequences per step)",
        TARGET_KEY,
        integer=True,
        low=1,
        high=MAX_GLOBAL_BATCH_SEQUENCES,
        placeholder=f"{scenario_target:,} (the scenario's)",
    )
    generation, generation_ok = None, True
    if searches_generation(base):  # PPO/GRPO: GPUs set apart for generation, searched unless given
        generation, generation_ok = typed_number(
            left,
            "Generation GPUs",
            "search.fix.generation_gpus",
            integer=True,
            low=0,
            high=1_000_000,
            placeholder=ANY,
        )
        left.caption(
            "GPUs that only generate rollouts, beside the training GPUs; 0 keeps generation on the training "
            "GPUs. Any: the search tries colocated and about 1/8, 1/4 and 1/2 of each GPU total (whole nodes "
            "past one node); Most GPUs counts both."
        )
    if not (n_gpus_ok and target_ok and generation_ok):
        return LayoutChoice(None, target is not None)
    fixed = _fixed(picked, n_gpus)
    if generation is not None:
        fixed["generation_gpus"] = int(generation)
    try:
        space = obeying_space(
            base,
            fixed,
            fsdp_only=fsdp_only,
            target_batch_sequences=None if target is None else int(target),
        )
    except PlannerError as err:
        label = next(lab for lab, field in LABELS.values() if field in err.related)
        st.error(plain(f"FSDP only {err.problem}, but {label} is {err.value}: set {label} to any."))
        return LayoutChoice(None, target is not None)
    return LayoutChoice(space, target is not None)


def _choice_words(value: Any) -> str:
    """A choice as the page shows it: on/off for a flag (checked by identity: TP 1 is not "on"), else the value."""
    return "on" if value is True else "off" if value is False else str(value)


def _fixed(picked: dict[str, Any], n_gpus: float | None) -> dict[str, Any]:
    fixed: dict[str, Any] = {} if n_gpus is None else {"n_gpus": int(n_gpus)}
    for key, value in picked.items():
        if value == ANY:
            continue
        field = LABELS[key][1]
        if field == "offload":
            fixed["offload_optimizer"], fixed["offload_params"] = OFFLOAD_CHOICES[value]
        else:
            fixed[field] = value
    return fixed
