"""The catalogues' name indexes and the per-session memo behind fast page reruns give exactly the answers of
a plain frame filter, and never hand out shared objects."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.models import shape_from_row
from planner.columns import memory_inputs
from planner.evaluate import _model_state_bytes_total, evaluate
from planner.formulas.memory.peak import MemoryInputs, memory_per_gpu
from planner.inputs.scenario import Scenario
from planner.resolve import resolve
from ui import charts

CATS = default_catalogs()
APP = str(Path(__file__).resolve().parents[1] / "app.py")


def _filtered(frame: pl.DataFrame, **equal: object) -> dict:
    return frame.filter(**equal).row(0, named=True)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("H100", "H100 SXM"),
        ("h100-sxm5", "H100 SXM"),
        ("A100 80GB SXM", "A100 80GB SXM"),
        ("MI300X", "MI300X"),
    ],
)
def test_gpu_lookup_is_the_catalogue_row_and_a_fresh_copy(query, name):
    first = CATS.gpu(query)
    assert first == _filtered(CATS.gpus, name=name)
    first["memory_gib"] = -1.0  # a caller changing its copy never reaches the next caller
    assert CATS.gpu(query) == _filtered(CATS.gpus, name=name)


def test_other_lookups_are_the_catalogue_rows():
    assert CATS.region("France") == _filtered(CATS.grid, label="France")
    assert CATS.pricing_mode("spot") == _filtered(CATS.pricing_modes, mode="spot")
    assert CATS.snapshot_ids() == sorted(CATS.prices["snapshot"].unique().to_list())
    oldest = CATS.snapshot_ids()[0]
    for gpu, snapshot in itertools.product(["H100 SXM", "T4", "MI300X"], [None, oldest]):
        requested = snapshot or CATS.snapshot_ids()[-1]
        rows = CATS.prices.filter(pl.col("gpu") == gpu, pl.col("snapshot") <= requested).sort("snapshot")
        expected = None if rows.is_empty() else rows.row(-1, named=True)
        found = CATS.price(gpu, snapshot)
        assert (found and {k: found[k] for k in expected}) == expected if expected else found is None
    assert CATS.model("llama 3.1 8b ") == shape_from_row(_filtered(CATS.models, name="Llama 3.1 8B"))
    for n_params, bucket in ((1e8, "<3B"), (8e9, "3-20B"), (7e10, "20-100B"), (4e11, ">100B")):
        cell = _filtered(
            CATS.efficiency, generation="hopper", size_bucket=bucket, method="full", precision="bf16"
        )
        expected = (cell["mfu_low"], cell["mfu_typical"], cell["mfu_high"])
        assert CATS.efficiency_band("hopper", n_params, "full", "bf16") == expected
    _, typicals, _ = CATS.efficiency_band("Hopper", np.array([1e8, 4e11]), "full", "bf16")
    assert typicals.tolist() == [CATS.efficiency_band("hopper", n, "full", "bf16")[1] for n in (1e8, 4e11)]


def test_failed_lookups_name_the_closest_matches():
    for lookup, query, closest in [
        (CATS.gpu, "H1OO", "H100"),
        (CATS.region, "atlantis", ""),
        (CATS.pricing_mode, "spott", "spot"),
        (CATS.model, "Llama 3.1 7B", "Llama 3.1 8B"),
    ]:
        with pytest.raises(ValueError, match="closest") as error:
            lookup(query)
        assert repr(query) in str(error.value) and closest in str(error.value)


def test_indexes_follow_the_frames_of_a_copy():
    """`dataclasses.replace` (validation's refit mode) gives a new object whose indexes read its own frames."""
    doubled = replace(
        CATS,
        gpus=CATS.gpus.with_columns(pl.col("memory_gib") * 2),
        efficiency=CATS.efficiency.with_columns(pl.col("mfu_typical") / 2),
    )
    assert doubled.gpu("H100")["memory_gib"] == 2 * CATS.gpu("H100")["memory_gib"]
    halved = doubled.efficiency_band("hopper", 8e9, "full", "bf16")[1]
    assert halved == pytest.approx(CATS.efficiency_band("hopper", 8e9, "full", "bf16")[1] / 2, rel=1e-12)
    assert CATS.gpu("H100")["memory_gib"] == pytest.approx(79.65)  # the original is untouched


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
    p = memory_inputs(resolve(scenario, default_catalogs()).columns)
    assert _model_state_bytes_total(p) == _unsharded_states_through_the_whole_memory_model(p)
    # Arrays: gradient accumulation changes the gradient dtype (fp32 when accumulating), micro-batch not.
    rows = replace(p, grad_accum=np.array([1.0, 2.0, 8.0]), micro_batch=np.array([1.0, 4.0, 2.0]))
    np.testing.assert_array_equal(
        np.broadcast_to(_model_state_bytes_total(rows), (3,)),
        _unsharded_states_through_the_whole_memory_model(rows),
    )


def test_bare_count_state_total_is_params_times_16_bytes():
    # 7e9 parameters, bf16 mixed AdamW: 2 (weights) + 2 (grads) + 8 (moments) + 4 (master) = 16 B each.
    out = evaluate(resolve(Scenario(model="", params_b=7.0), default_catalogs()).columns)
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
        at.sidebar.text_input(key="w.epochs").input(str(epochs)).run()
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
