"""The plan search's fast path ("still evaluates >= 1.5 M configurations per second"): memory first,
the rest of `evaluate` only for the rows that fit, no efficiency band in the hot path. It must keep exactly
the rows and figures a whole evaluation of every row gives, and the shown plans keep their band."""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.decide.sweep import _resolve_gpus, search
from planner.decide.sweep_grid import SearchSpace
from planner.decide.sweep_pass import evaluate_all, memory_groups
from planner.decide.sweep_rank import _FIGURES
from planner.decide.sweep_space import mode_grid, offload_passes
from planner.evaluate import evaluate
from planner.inputs.scenario import Scenario

GPUS = ("H100 SXM", "A100 40GB SXM", "L40S")
# a grid with pipelines (two stages), interleaving, every ZeRO stage and recompute mode, small enough to run
# whole row by row in a second; the 70B model makes most layouts on these GPUs too large (the pruned case)
SPACE = SearchSpace(gpu_counts=(8, 16, 32), micro_batches=(1, 4), target_batch_sequences=64)
SCENARIOS = {
    "70B full": Scenario(model="Llama 3.1 70B", method="full"),
    "8B QLoRA": Scenario(model="Llama 3.1 8B", method="qlora"),
    "70B optimizer offload": Scenario(model="Llama 3.1 70B", method="full", offload_optimizer=True),
    # paged states page out by each GPU's own VRAM shortfall: the GPUs cannot share one memory evaluation
    "70B paged 8-bit AdamW": Scenario(model="Llama 3.1 70B", method="full", optimizer="paged_adamw_8bit"),
    "8B DPO (evaluated whole)": Scenario(model="Llama 3.1 8B", method="full", post_training="dpo"),
}


def _whole_rows(resolved, grid):
    """The reference: every row evaluated in full at once, then filtered by the device peak."""
    gpu_index, layout_index, figures = [], [], {name: [] for name in _FIGURES}
    for i, one in enumerate(resolved):
        out = evaluate(one.columns.replace(**grid.take(slice(0, len(grid)))))
        fits = np.asarray(out["peak_bytes"]) - one.columns.gpu.vram_bytes <= 0
        gpu_index.append(np.full(int(fits.sum()), i))
        layout_index.append(np.flatnonzero(fits))
        for name in _FIGURES:
            figures[name].append(np.broadcast_to(np.asarray(out[name], dtype=float), fits.shape)[fits])
    return np.concatenate(gpu_index), np.concatenate(layout_index), figures


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_kept_rows_and_figures_equal_a_whole_evaluation(name):
    base, cats = SCENARIOS[name], default_catalogs()
    resolved, _ = _resolve_gpus(base, GPUS, cats)
    model = resolved[0].columns.model
    grid = mode_grid(base, SPACE, (offload_passes(base, SPACE)[0],), 32, float(model.n_layers), 64.0, None)
    fast = evaluate_all(resolved, grid, chunk_rows=97, progress=None)  # odd chunks: cuts fall anywhere
    gpu_index, layout_index, figures = _whole_rows(resolved, grid)
    assert fast.n_evaluated == len(grid) * len(resolved)
    assert 0 < len(fast.kept) < fast.n_evaluated or name.startswith("8B")  # the 70B grid is pruned
    np.testing.assert_array_equal(fast.kept.gpu_index, gpu_index)
    np.testing.assert_array_equal(fast.kept.layout_index, layout_index)
    for figure in _FIGURES:  # exactly: the same formulas element by element, no tolerance
        np.testing.assert_array_equal(fast.kept.figures[figure], np.concatenate(figures[figure]), figure)


def test_hot_path_leaves_the_band_out_and_the_shown_plans_keep_it():
    base, cats = SCENARIOS["70B full"], default_catalogs()
    columns = _resolve_gpus(base, ("H100 SXM",), cats)[0][0].columns
    lean, full = evaluate(columns, everything=False), evaluate(columns)
    for band in ("mfu_low", "wall_clock_s_low", "cost_usd_high", "energy_kwh_low", "co2e_kg_high"):
        assert band not in lean and band in full
    for figure in ("wall_clock_s", "cost_usd", "energy_kwh", "co2e_kg", "peak_bytes", "mfu"):
        assert lean[figure] == full[figure]
    top = search(base, space=SPACE, catalogs=cats).top
    assert top.height and (top["mfu_low"] <= top["mfu"]).all() and (top["mfu"] <= top["mfu_high"]).all()
    assert (top["cost_usd_low"] < top["cost_usd_high"]).all()


def test_gpus_share_one_memory_evaluation_unless_the_vram_enters_it():
    """The memory model never reads the GPU, so every GPU of a search shares one memory evaluation per chunk
    (the speed-up behind bench/sweep_bench.py's figure); a paged optimizer pages by VRAM, so GPUs of
    different VRAM (80, 40 and 48 GB here) are evaluated apart, and post-training rows GPU by GPU."""
    cats = default_catalogs()
    assert memory_groups(_resolve_gpus(SCENARIOS["70B full"], GPUS, cats)[0]) == [[0, 1, 2]]
    paged = _resolve_gpus(SCENARIOS["70B paged 8-bit AdamW"], (*GPUS, "H100 PCIe"), cats)[0]
    assert memory_groups(paged) == [[0, 3], [1], [2]]  # H100 SXM and PCIe: both 80 GB
    assert memory_groups(_resolve_gpus(SCENARIOS["8B DPO (evaluated whole)"], GPUS, cats)[0]) == [
        [0],
        [1],
        [2],
    ]
