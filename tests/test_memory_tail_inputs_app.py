"""The memory-tail inputs in the sidebar's training setup (AppTest): the sequence-length spread, expandable
segments and the fp8 weight cache each move the Memory page's device total by what the library computes, a bad
spread is refused by its label with its range, and a share link carries all three into the widgets."""

from __future__ import annotations

import pytest

from planner import Scenario, estimate_resolved, resolve, scenario_to_query
from planner.catalogue.catalog import default_catalogs
from tests.conftest import APP
from ui import format as fmt
from ui.memory_inputs import SEQ_LEN_SPREAD_LABEL
from ui.state import NOTICES_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY


def device_total(s: Scenario) -> float:
    total = estimate_resolved(resolve(s, default_catalogs())).device_total_gib
    assert total is not None
    return total


def shown_device_total(app) -> str:
    """The Value cell of the Memory page's "Device total" row (the breakdown tables are markdown)."""
    for block in app.markdown:
        for line in block.value.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0] == "Device total":
                return cells[2]
    raise AssertionError("no Device total row")


def on_memory_page(app):
    app.session_state[OPEN_KEY] = True  # the training setup draws its inputs only while open
    app.switch_page("app_pages/memory.py").run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_spread_and_expandable_segments_move_the_device_total(app):
    on_memory_page(app)
    base = app.session_state[SCENARIO_KEY]
    assert shown_device_total(app) == fmt.gib(device_total(base))
    app.text_input(key="w.seq_len_spread_frac").input("0.5").run()
    spread = base.updated(seq_len_spread_frac=0.5)
    assert app.session_state[SCENARIO_KEY].seq_len_spread_frac == 0.5
    # The allocator keeps half the transient bytes again (planner.formulas.memory.allocator): a visible step.
    assert device_total(spread) > device_total(base) + 0.5
    assert shown_device_total(app) == fmt.gib(device_total(spread))
    app.checkbox(key="w.expandable_segments").check().run()
    assert app.session_state[SCENARIO_KEY].expandable_segments
    assert shown_device_total(app) == fmt.gib(device_total(base)), "one growing segment: no growth"


def test_the_fp8_weight_cache_adds_two_bytes_per_layer_weight(app):
    on_memory_page(app)
    app.selectbox(key="w.precision").set_value("fp8_mixed").run()
    fp8 = app.session_state[SCENARIO_KEY]
    assert fp8.precision == "fp8_mixed"
    app.checkbox(key="w.fp8_weight_cache").check().run()
    assert not app.exception
    cached = fp8.updated(fp8_weight_cache=True)
    # Llama 3.1 8B: 8.03e9 parameters less 2 × 128256 × 4096 embedding and head = 6.98e9 in the layers' matmuls
    # (and norms), 2 B each, ZeRO-3 over the default 8 GPUs shards them with the weights: about 1.6 GiB.
    added = device_total(cached) - device_total(fp8)
    assert added == pytest.approx(6.98e9 * 2 / 8 / 2**30, rel=0.1)
    assert shown_device_total(app) == fmt.gib(device_total(cached))


def test_a_spread_above_one_is_refused_by_its_label(app):
    on_memory_page(app)
    app.text_input(key="w.seq_len_spread_frac").input("1.5").run()
    assert not app.exception
    said = [e.value for e in app.error] + list(app.session_state[NOTICES_KEY])
    assert any(text.startswith(f"{SEQ_LEN_SPREAD_LABEL}: ") and "<= 1" in text for text in said), said
    assert app.session_state[SCENARIO_KEY].seq_len_spread_frac == 0.0


def test_a_share_link_carries_the_three_inputs_into_the_widgets():
    from streamlit.testing.v1 import AppTest

    linked = Scenario(
        precision="fp8_mixed", fp8_weight_cache=True, seq_len_spread_frac=0.25, expandable_segments=True
    )
    query = scenario_to_query(linked)
    assert {"fp8_weight_cache", "seq_len_spread_frac", "expandable_segments"} <= set(query)
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in query.items():
        at.query_params[name] = value
    at.session_state[OPEN_KEY] = True
    at.run()
    assert not at.exception
    assert at.session_state[SCENARIO_KEY] == linked
    assert at.sidebar.text_input(key="w.seq_len_spread_frac").value == "0.25"
    assert at.sidebar.checkbox(key="w.expandable_segments").value
    assert at.sidebar.checkbox(key="w.fp8_weight_cache").value
