"""The caches behind fast page reruns give exactly the uncached answers and never hand out shared objects."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from planner.catalogue import cached_lookup as cl
from planner.catalogue.catalog import (
    default_catalogs,
    find_gpu,
    find_region,
    gpu_price,
    pricing_discount,
    snapshot_ids,
)
from planner.catalogue.efficiency import efficiency_preset
from planner.catalogue.models import find_model
from planner.columns import memory_inputs
from planner.evaluate import _model_state_bytes_total, evaluate
from planner.formulas.memory import MemoryInputs, memory_per_gpu
from planner.inputs.scenario import Scenario
from planner.resolve import resolve
from ui import charts

CATS = default_catalogs()
APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.mark.parametrize("name", ["H100", "h100-sxm5", "A100 80GB SXM", "MI300X", "T4"])
def test_gpu_lookup_matches_find_gpu_and_is_a_fresh_copy(name):
    first = cl.lookup_gpu(CATS.gpus, name)
    assert first == find_gpu(CATS.gpus, name)
    first["memory_gib"] = -1.0  # a caller changing its copy never reaches the next caller
    assert cl.lookup_gpu(CATS.gpus, name) == find_gpu(CATS.gpus, name)


def test_failed_lookups_raise_the_original_errors():
    for cached, original, args in [
        (cl.lookup_gpu, find_gpu, (CATS.gpus, "H1OO")),
        (cl.lookup_region, find_region, (CATS.grid, "atlantis")),
        (cl.lookup_pricing_discount, pricing_discount, (CATS.pricing_modes, "barter")),
        (cl.lookup_model, find_model, (default_catalogs().models, "Llama 9 1T")),
    ]:
        with pytest.raises(ValueError) as cached_error:
            cached(*args)
        with pytest.raises(ValueError) as original_error:
            original(*args)
        assert str(cached_error.value) == str(original_error.value)


def test_other_lookups_match_the_originals():
    assert cl.lookup_region(CATS.grid, "france") == find_region(CATS.grid, "france")
    assert cl.lookup_pricing_discount(CATS.pricing_modes, "spot") == pricing_discount(
        CATS.pricing_modes, "spot"
    )
    assert cl.lookup_snapshot_ids(CATS.prices) == snapshot_ids(CATS.prices)
    oldest = snapshot_ids(CATS.prices)[0]
    for gpu, snapshot in itertools.product(["H100 SXM", "T4", "MI300X"], [None, oldest]):
        assert cl.lookup_gpu_price(CATS.prices, gpu, snapshot) == gpu_price(CATS.prices, gpu, snapshot)
    assert cl.lookup_model(default_catalogs().models, "Llama 3.1 8B") == find_model(
        default_catalogs().models, "Llama 3.1 8B"
    )
    for n_params in (1e8, 8e9, 7e10, 4e11):
        cached = cl.lookup_efficiency(default_catalogs().efficiency, "hopper", n_params, "full", "bf16")
        assert cached == tuple(
            efficiency_preset(default_catalogs().efficiency, "hopper", n_params, "full", "bf16")
        )


def test_a_new_frame_with_the_same_content_is_looked_up_afresh():
    changed = CATS.gpus.with_columns(CATS.gpus["memory_gib"] * 2)
    assert cl.lookup_gpu(changed, "H100")["memory_gib"] == 2 * cl.lookup_gpu(CATS.gpus, "H100")["memory_gib"]


def _unsharded_states_through_the_whole_memory_model(p: MemoryInputs):
    """The model-state total as evaluate computed it before: a full unsharded `memory_per_gpu` call."""
    whole = memory_per_gpu(
        replace(p, tp=1.0, pp=1.0, cp=1.0, dp=1.0, zero_stage=0.0, offload_optimizer=0.0, offload_params=0.0)
    )
    return whole.weights_bytes + whole.gradients_bytes + whole.optimizer_bytes + whole.master_bytes


CHOICES = {
    "method": ["full", "lora", "qlora"],
    "zero_stage": [0, 3],
    "pp": [1, 2],
    "grad_accum": [1, 4],
    "optimizer_in_backward": [False, True],
    "bytes_per_param": [None, 12.0],
    "offload_params": [False, True],
}


@pytest.mark.parametrize("combo", list(itertools.product(*CHOICES.values())))
def test_model_state_total_equals_the_unsharded_memory_model(combo):
    """The shortcut skips activations, which never enter model states; the numbers are bit-identical."""
    scenario = Scenario().updated(n_gpus=8, **dict(zip(CHOICES, combo, strict=True)))
    p = memory_inputs(resolve(scenario).columns)
    assert _model_state_bytes_total(p) == _unsharded_states_through_the_whole_memory_model(p)
    # Arrays: gradient accumulation changes the gradient dtype (fp32 when accumulating), micro-batch not.
    rows = replace(p, grad_accum=np.array([1.0, 2.0, 8.0]), micro_batch=np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(
        np.broadcast_to(_model_state_bytes_total(rows), (3,)),
        _unsharded_states_through_the_whole_memory_model(rows),
    )


def test_bare_count_state_total_is_params_times_16_bytes():
    # 7e9 parameters, bf16 mixed AdamW: 2 (weights) + 2 (grads) + 8 (moments) + 4 (master) = 16 B each.
    out = evaluate(resolve(Scenario(model="", params_b=7.0)).columns)
    assert float(out["model_state_bytes_total"]) == pytest.approx(7e9 * 16, rel=1e-12)


def test_one_resolve_per_rerun_after_an_input_change(monkeypatch):
    """The sidebar's four override hints and the page share one resolve of the session's scenario."""
    import ui.estimate_cache as cache

    calls = []
    original = cache.resolve
    monkeypatch.setattr(cache, "resolve", lambda *a, **k: calls.append(1) or original(*a, **k))
    at = AppTest.from_file(APP, default_timeout=60).run()
    for epochs in (4.0, 5.0):
        calls.clear()
        at.sidebar.number_input(key="w.epochs").set_value(epochs).run()
        assert not at.exception
        assert len(calls) == 1
    calls.clear()
    at.run()  # nothing changed: the session's last result is reused
    assert calls == []


def test_chart_specs_handed_out_are_copies():
    import polars as pl

    frame = pl.DataFrame({"component": ["a"], "kwh": [1.0]})
    first = charts.bars(frame, "kwh", "component", "kWh")
    first["encoding"]["x"]["title"] = "changed"
    second = charts.bars(frame, "kwh", "component", "kWh")
    assert second["encoding"]["x"]["title"] == "kWh"
    assert second["datasets"]["bars"] is frame
