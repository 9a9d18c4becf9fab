"""The Compute page's scaling curve: every point keeps the scenario's global batch, so efficiency never tops 100 %.

Before, the curve ran on to thousands of GPUs with accumulation clipped at one micro-batch; the global batch then
grew, per-step costs were spread over more tokens, and the chart showed efficiencies above 100 %.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from planner import resolve, scaling_curve
from planner.catalogue.catalog import default_catalogs
from planner.decide.explore import gpu_counts
from planner.inputs.scenario import Scenario

CATS = default_catalogs()


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # 8 replicas × accumulation 1 = 8 micro-batches per step: 1, 2, 4 and 8 replicas divide them.
        ({"n_gpus": 8, "grad_accum": 1}, [1, 2, 4, 8]),
        # 8 × 8 = 64 micro-batches: up to 64 GPUs.
        ({"n_gpus": 8, "grad_accum": 8}, [1, 2, 4, 8, 16, 32, 64]),
        # 8 × 3 = 24: the powers of two dividing 24 are 1, 2, 4, 8.
        ({"n_gpus": 8, "grad_accum": 3}, [1, 2, 4, 8]),
        # tensor parallel 2 on 8 GPUs: 4 replicas × 4 = 16 micro-batches; counts are 2 × (1 … 16).
        ({"n_gpus": 8, "tp": 2, "grad_accum": 4}, [2, 4, 8, 16, 32]),
        # one GPU, one micro-batch per step: the global batch cannot be split, one point.
        ({"n_gpus": 1, "grad_accum": 1}, [1]),
    ],
)
def test_counts_are_those_that_keep_the_global_batch(changes: dict[str, int], expected: list[int]) -> None:
    resolved = resolve(Scenario(model="Llama 3.1 8B", gpu="H100 SXM", **changes), CATS)
    assert gpu_counts(resolved).astype(int).tolist() == expected


def test_scaling_efficiency_never_exceeds_one_and_starts_at_one() -> None:
    grid = itertools.product(
        ["Llama 3.2 1B", "Llama 3.1 8B"],
        ["H100 SXM", "RTX 4090"],
        ["full", "qlora"],
        [0, 3],
        [1, 3, 8],  # replicas
        [1, 4],  # micro-batch
        [1, 12],  # accumulation
        [1, 2],  # pipeline stages
    )
    for model, gpu, method, zero, replicas, micro_batch, accum, pp in grid:
        s = Scenario(
            model=model,
            gpu=gpu,
            method=method,
            zero_stage=zero,
            n_gpus=replicas * pp,
            micro_batch=micro_batch,
            grad_accum=accum,
            pp=pp,
        )
        curve = scaling_curve(resolve(s, CATS))
        efficiency = curve["scaling_efficiency_frac"].to_numpy()
        assert efficiency[0] == pytest.approx(1.0)
        assert np.all(efficiency <= 1.0 + 1e-9), (s, curve)
