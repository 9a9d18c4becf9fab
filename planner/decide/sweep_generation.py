"""The plan search's split of the GPUs between training and dedicated generation (PPO/GRPO).

An online objective generates its rollouts either on the training GPUs (colocated, `generation_gpus` 0) or on
GPUs of the same type that only generate. The search tries both: for each total GPU count (a "budget", the
same powers of two and whole nodes as the training counts), colocated on all of them, or a share of them set
apart for generation and the rest training. Offline objectives (SFT, DPO, ...) generate nothing, so their grid
is left as it is and the search runs as fast as before.

The layout grid varies the training count; here each training count is paired with the generation counts
that make one of the budgets, and every layout row is repeated once per pair (`with_generation`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.decide.sweep_grid import LayoutGrid, SearchSpace, default_gpu_counts
from planner.inputs import post_training as pt
from planner.inputs.scenario import Scenario
from planner.post.columns import engine_memory_frac

# Shares of a budget set apart for generation: from one GPU in eight (an engine beside seven trainers) to half
# of them, a few points so an online search grows at most fourfold; any other count can be fixed
# (`--generation-gpus N`). Past one node the share is in whole nodes: an engine's tensor-parallel group stays
# inside a node, and a dedicated engine is usually given machines of its own.
GENERATION_SHARES = (1 / 8, 1 / 4, 1 / 2)


def searches_generation(base: Scenario) -> bool:
    """Whether the search splits GPUs between training and generation: only for an objective that generates."""
    return base.post_training in pt.ONLINE


def generation_counts(budget: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """[budget, share] generation GPUs for each budget (total GPUs) and share of GENERATION_SHARES: the
    share rounded to whole GPUs within one node, to whole nodes (at least one) beyond it; 0 where nothing
    would be left to train on (the pair is then dropped)."""
    wanted = budget[:, None] * np.asarray(GENERATION_SHARES)[None, :]
    within = np.maximum(np.round(wanted), 1.0)
    nodes = np.maximum(np.round(wanted / gpus_per_node), 1.0) * gpus_per_node
    split = np.where(budget[:, None] > gpus_per_node, nodes, within)
    return np.where(split < budget[:, None], split, 0.0)


def split_pairs(base: Scenario, space: SearchSpace, max_gpus: int) -> np.ndarray:
    """(training GPUs, generation GPUs) pairs, shape [n, 2], sorted, every total at most `max_gpus`.

    A fixed generation count (`space.generation_gpus`) pairs with every training count; a fixed training
    count (`space.gpu_counts` of one value, the user's) takes the splits of every budget that leaves exactly
    that many GPUs training (budgets up to twice it, the largest share being a half)."""
    fixed_training = space.gpu_counts is not None and "n_gpus" in dict(space.fixed)
    counts = np.asarray(space.gpu_counts or default_gpu_counts(base.gpus_per_node, max_gpus), dtype=float)
    if space.generation_gpus is not None:
        given = np.asarray(space.generation_gpus, dtype=float)
        training, generating = (axis.ravel() for axis in np.meshgrid(counts, given, indexing="ij"))
        pairs = np.stack([training, generating], axis=1)
    else:
        budgets = counts
        if fixed_training:
            budgets = np.arange(counts.min() + 1, 2 * counts.max() + 1, dtype=float)
        split = generation_counts(budgets, base.gpus_per_node)
        dedicated = np.stack([np.repeat(budgets, split.shape[1]) - split.ravel(), split.ravel()], axis=1)
        # every engine replica holds generation_tp GPUs (planner.post.step._engine)
        dedicated = dedicated[(dedicated[:, 1] > 0) & (dedicated[:, 1] % base.generation_tp == 0)]
        if fixed_training:
            dedicated = dedicated[np.isin(dedicated[:, 0], counts)]
        colocated = np.stack([counts, np.zeros_like(counts)], axis=1)
        pairs = np.concatenate([colocated, dedicated])
    pairs = pairs[(pairs[:, 0] >= 1) & (pairs.sum(axis=1) <= max_gpus)]
    return np.unique(pairs, axis=0)  # sorted by training count, then generation count


def training_space(space: SearchSpace, pairs: np.ndarray) -> SearchSpace:
    """The space whose layout grid holds every training count of the pairs."""
    counts = tuple(int(n) for n in np.unique(pairs[:, 0])) or (1,)  # no pair: no row survives with_generation
    return dataclasses.replace(space, gpu_counts=counts)


def with_generation(grid: LayoutGrid, pairs: np.ndarray, base: Scenario) -> LayoutGrid:
    """Every layout row repeated once per generation count its training count pairs with, with the post-
    training columns that follow: `n_generation_gpus` and the engine's memory share (`engine_memory_frac`,
    the one rule resolve uses: the user's share, else colocated or dedicated's default)."""
    training = grid.columns["n_gpus"]
    first = np.searchsorted(pairs[:, 0], training, side="left")
    n_each = np.searchsorted(pairs[:, 0], training, side="right") - first
    rows = np.repeat(np.arange(len(training)), n_each)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(n_each) - n_each, n_each)
    generating = pairs[first[rows] + offsets, 1]
    columns = {name: values[rows] for name, values in grid.columns.items()}
    columns["n_generation_gpus"] = generating
    eager = base.generation_engine == "eager"
    columns["generation_memory_frac"] = engine_memory_frac(base.generation_memory_frac, generating, eager)
    return LayoutGrid(
        columns,
        target_sequences=grid.target_sequences,
        n_candidates=grid.n_candidates + len(rows) - len(training),
    )
