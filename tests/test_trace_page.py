"""The Memory page's "Trace this plan" box (AppTest): why a plan cannot be traced, and a real trace of one."""

from __future__ import annotations

from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape
from tests.trace_extra import require_trace_extra

MEMORY = "app_pages/memory.py"
# two layers of width 128: traced in a second, most of the child process's time is importing torch
TOY = ModelShape(name="toy", family="llama", vocab_size=512, hidden_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                 head_dim=32, ffn_hidden=384, context_len=4096)  # fmt: skip


def test_a_tensor_parallel_plan_says_why_it_cannot_be_traced(app):
    require_trace_extra()
    app.session_state["scenario"] = Scenario(n_gpus=8, tp=2)
    app.switch_page(MEMORY).run()
    assert not app.exception
    notes = [c.value for c in app.caption if "cannot be traced" in c.value]
    assert len(notes) == 1 and "tensor, pipeline and context parallelism" in notes[0], notes
    assert not [b for b in app.button if b.key == "trace.run"]


def test_trace_this_plan_shows_the_traced_peak_beside_the_formulas(app):
    require_trace_extra()
    app.session_state["scenario"] = Scenario(model="", model_shape=TOY, n_gpus=1, seq_len=128)
    app.switch_page(MEMORY).run()
    app.button(key="trace.run").click().run(timeout=300)
    assert not app.exception and not app.error, [e.value for e in app.error]
    shown = {m.label: m.value for m in app.metric}
    # full bf16 AdamW: the optimizer step is the peak, 20 B per parameter in both (tests/test_trace.py)
    assert shown["Traced allocated peak"] == "0.01 GiB"
    assert shown["Formulas' allocated peak"] == "0.01 GiB"
    assert abs(float(shown["Formulas against the trace"].rstrip("%"))) < 1.0
