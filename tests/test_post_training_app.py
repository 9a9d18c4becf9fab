"""The post-training inputs and pages in the app (AppTest).

The objective is set through its sidebar widget, and the pages are read for what that must change: the
Memory page's reference-model row, the Compute page's per-step timeline and its generation time, and a bad
entry in a new box refused by its label with the allowed range.
"""

from __future__ import annotations

import itertools
import json

import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from planner import Scenario, estimate_resolved, resolve
from planner.catalogue.catalog import default_catalogs
from ui import format as fmt
from ui.post_charts import TIMELINE_DATASET
from ui.post_training_inputs import ENGINE_SHARE_LABEL, OBJECTIVE_LABEL, SAMPLES_LABEL
from ui.state import NOTICES_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY


def estimate(s: Scenario):
    return estimate_resolved(resolve(s, default_catalogs()))


def open_setup(app, page: str):
    app.session_state[OPEN_KEY] = True  # the training setup draws its inputs only while open
    app.switch_page(page).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def choose(app, objective: str):
    app.selectbox(key="w.post_training").set_value(objective).run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.session_state[SCENARIO_KEY].post_training == objective


def breakdown_value(app, quantity: str) -> str:
    """The Value cell of the breakdown table's row `quantity` (the tables are markdown)."""
    for block in app.markdown:
        for line in block.value.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 3 and cells[0] == quantity:
                return cells[2]
    raise AssertionError(f"no breakdown row {quantity!r}")


def gib(cell: str) -> float:
    number, unit = cell.split()
    assert unit == "GiB", cell
    return float(number.replace(",", ""))


def metric_hours(app, label: str) -> float:
    """A metric shown by ui.format.hours ("12.3 hours", "2.1 days", "45 min" ...), in hours."""
    return metric_hours_of(next(m.value for m in app.metric if m.label == label))


def metric_hours_of(value: str) -> float:
    number, unit = value.replace(",", "").split()[:2]
    per_hour = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0, "hours": 1.0, "hour": 1.0, "days": 24.0, "day": 24.0}
    return float(number) * per_hour[unit]


def timeline(app) -> dict[str, dict[str, float]]:
    """The timeline chart's rows by part, from the chart element's attached dataset."""
    for chart in app.get("vega_lite_chart"):
        named = {d.name: d for d in chart.proto.datasets}
        if TIMELINE_DATASET in named:
            spec = json.loads(chart.proto.spec)
            assert spec["mark"]["type"] == "bar" and spec["encoding"]["x2"]["field"] == "end_s"
            rows = convert_arrow_bytes_to_pandas_df(named[TIMELINE_DATASET].data.data)
            return {r["part"]: r for r in rows.to_dict("records")}
    raise AssertionError("no timeline chart on the page")


def test_the_objective_and_the_method_are_two_pickers_and_the_dataset_says_pairs(app):
    open_setup(app, "app_pages/memory.py")
    labels = {s.key: s.label for s in app.sidebar.selectbox}
    assert labels["w.post_training"] == OBJECTIVE_LABEL
    assert "full / LoRA / QLoRA" in labels["w.method"]
    assert app.sidebar.text_input(key="w.examples").label == "Training examples"
    choose(app, "dpo")
    assert app.sidebar.text_input(key="w.examples").label == "Preference pairs"
    assert "w.reference" in {s.key for s in app.sidebar.selectbox}, "DPO has a reference to choose"
    assert "w.samples_per_prompt" not in {t.key for t in app.sidebar.text_input}, "no rollouts for DPO"
    choose(app, "grpo")
    assert app.sidebar.text_input(key="w.examples").label == "Prompts"
    assert app.sidebar.text_input(key="w.samples_per_prompt").label == SAMPLES_LABEL


def test_dpo_shows_a_reference_model_on_the_memory_page(app):
    open_setup(app, "app_pages/memory.py")
    with pytest.raises(AssertionError):
        breakdown_value(app, "Reference model")  # supervised: no reference row
    sft_peak = gib(breakdown_value(app, "Peak per GPU"))
    choose(app, "dpo")
    # Llama 3.1 8B (8.03e9 parameters), bf16 reference (2 B each), ZeRO-3 over 8 GPUs (the defaults):
    # 8.03e9 × 2 / 8 / 2^30 = 1.87 GiB.
    reference = gib(breakdown_value(app, "Reference model"))
    assert reference == pytest.approx(8.03e9 * 2 / 8 / 2**30, rel=0.01)
    assert gib(breakdown_value(app, "Peak per GPU")) > sft_peak
    # With the policy trained by LoRA the reference is its own base: no row.
    app.selectbox(key="w.method").set_value("lora").run()
    assert app.session_state[SCENARIO_KEY].method == "lora"
    with pytest.raises(AssertionError):
        breakdown_value(app, "Reference model")


def test_grpo_memory_page_names_the_peak_phase_and_the_kv_cache(app):
    open_setup(app, "app_pages/memory.py")
    choose(app, "grpo")
    assert gib(breakdown_value(app, "Of which KV cache")) > 0
    assert gib(breakdown_value(app, "Generation engine share")) > 0
    assert any(
        "phase:" in m.value and "while the colocated engine generates" in m.value for m in app.markdown
    )


def test_grpo_timeline_has_four_parts_and_more_samples_take_longer(app):
    open_setup(app, "app_pages/compute.py")
    choose(app, "grpo")
    parts = timeline(app)
    assert set(parts) == {"Generation", "Scoring (frozen forwards)", "Training", "Weight hand-over"}
    assert parts["Generation"]["seconds"] > 0 and parts["Training"]["seconds"] > 0
    # the parts follow one another: each starts where the one before it ends
    ordered = sorted(parts.values(), key=lambda r: r["order"])
    for before, after in itertools.pairwise(ordered):
        assert after["start_s"] == pytest.approx(before["end_s"])
    share = next(m.value for m in app.metric if m.label == "Share of time generating")
    assert 0 < float(share.rstrip("%")) < 100
    # A global batch of 8 × 16 = 128 sequences: 16 prompts of 8 completions, or 8 prompts of 16, per rollout
    # step; twice the completions per prompt means twice the rollout steps, each about as long.
    app.text_input(key="w.grad_accum").input("16").run()
    app.text_input(key="w.samples_per_prompt").input("8").run()
    eight = metric_hours(app, "Generation time")
    app.text_input(key="w.samples_per_prompt").input("16").run()
    assert app.session_state[SCENARIO_KEY].samples_per_prompt == 16
    sixteen = metric_hours(app, "Generation time")
    assert sixteen > 1.5 * eight
    # The page shows the planner's figures, as ui.format.hours writes them ("4.2 days").
    for samples, shown in ((8, eight), (16, sixteen)):
        plan = Scenario(post_training="grpo", samples_per_prompt=samples, grad_accum=16)
        expected = estimate(plan).generation_time_h
        assert shown == metric_hours_of(fmt.hours(expected))


def test_sft_has_no_timeline(app):
    open_setup(app, "app_pages/compute.py")
    assert all(TIMELINE_DATASET not in {d.name for d in c.proto.datasets} for c in app.get("vega_lite_chart"))


@pytest.mark.parametrize(
    ("key", "label", "typed", "allowed"),
    [
        ("w.generation_memory_frac", ENGINE_SHARE_LABEL, "1.5", "<= 1"),
        ("w.samples_per_prompt", SAMPLES_LABEL, "1", "2-1024"),  # GRPO's rule: at least 2 to compare
        ("w.rollout_epochs", "Rollout epochs", "0", ">= 1"),
    ],
)
def test_a_bad_entry_is_refused_by_its_label_and_the_plan_keeps_its_value(app, key, label, typed, allowed):
    open_setup(app, "app_pages/compute.py")
    choose(app, "grpo")
    field = key.removeprefix("w.")
    kept = getattr(app.session_state[SCENARIO_KEY], field)
    app.text_input(key=key).input(typed).run()
    assert not app.exception
    said = [e.value for e in app.error] + list(app.session_state[NOTICES_KEY])
    assert any(text.startswith(f"{label}: ") and allowed in text for text in said), said
    assert getattr(app.session_state[SCENARIO_KEY], field) == kept
    assert app.text_input(key=key).value == typed, "what the user typed stays in the box"


def test_a_link_with_post_training_fields_reads_into_the_widgets():
    """The share link carries the new fields like every other (planner's query code is generic)."""
    from streamlit.testing.v1 import AppTest

    from planner import scenario_to_query
    from tests.conftest import APP

    linked = Scenario(post_training="grpo", samples_per_prompt=16, generation_gpus=8)
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in scenario_to_query(linked).items():
        at.query_params[name] = value
    at.session_state[OPEN_KEY] = True
    at.run()
    assert not at.exception
    assert at.session_state[SCENARIO_KEY].samples_per_prompt == 16
    assert at.sidebar.text_input(key="w.samples_per_prompt").value == "16"
    assert at.sidebar.text_input(key="w.generation_gpus").value == "8"


@pytest.mark.parametrize(
    "changes",
    [
        {"post_training": "dpo"},
        {"post_training": "grpo"},  # colocated engine: its share is in the bar
        {"post_training": "grpo", "generation_sleeps": True},  # the generation phase may then peak
        {"post_training": "ppo", "reward_model": "Llama 3.2 1B"},
        {"post_training": "grpo", "generation_gpus": 8},  # the engine on GPUs of its own: not in this bar
    ],
)
def test_the_memory_bar_holds_every_byte_of_a_post_training_peak(changes):
    """The Memory page's bar adds each component at its largest, so with the models beside the policy and a
    colocated engine it still never falls short of the peak (the check tests/test_memory.py makes for SFT)."""
    from planner import memory_components

    est = estimate(Scenario(**changes))
    components = memory_components(est)
    assert est.peak_gib_per_device is not None
    assert float(components["gib"].sum()) >= est.peak_gib_per_device - 1e-9
    names = set(components["component"])
    assert ("Reference model" in names) == (est.reference_model_gib > 0)
    assert ("Generation engine (colocated)" in names) == (est.generation_phase_gib > 0)
    assert ("Reward model" in names) == (est.reward_model_gib > 0)
    if changes["post_training"] == "ppo":  # a named 1B reward model, and a value model of its size
        assert {"Reward model", "Value model (critic)"} <= names


def test_the_methods_page_explains_post_training():
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.query_params["topic"] = "post_training"
    at.switch_page("app_pages/methods.py").run()
    assert not at.exception
    assert at.main.header[0].proto.anchor == "post_training"
    text = "\n".join(m.value for m in at.main.markdown)
    assert "layers × 2 (key and value) × KV heads × head dim × 2 bytes" in text
    assert "bound by memory bandwidth" in text and "60%" in text
    assert "adapters switched off" in text  # the LoRA reference costs no memory
