"""The Overview's banners and its greyed figures, in the app (AppTest)."""

from __future__ import annotations

from planner import Scenario
from ui.state import SCENARIO_KEY


def show(app, scenario: Scenario):
    app.session_state[SCENARIO_KEY] = scenario
    app.switch_page("app_pages/overview.py").run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_a_plan_spread_over_eight_nodes_says_it_is_communication_bound(app):
    # Llama 3.1 8B on 64 H100 at micro-batch 1 (tests/test_plan_warnings.py has its figures)
    show(app, Scenario(model="Llama 3.1 8B", n_gpus=64, micro_batch=1))
    warnings = [w.value for w in app.warning]
    assert any(w.startswith("Communication is 94% of the step: raise the micro-batch") for w in warnings)


def test_the_default_plan_in_one_node_has_no_communication_banner(app):
    # 8 GPUs in one node: the ZeRO-3 gathers and the gradient sync hide behind the compute beside them
    assert not any("Communication is" in w.value for w in app.warning)


def test_grpo_with_few_prompts_per_rollout_says_so(app):
    show(app, Scenario(model="Llama 3.1 8B", n_gpus=8, post_training="grpo", rollout_prompts=4))
    assert any("only 4 prompts" in w.value for w in app.warning)


def test_a_plan_that_does_not_fit_greys_its_time_and_cost(app):
    show(app, Scenario(model="Llama 3.1 70B", n_gpus=1, gpu="H100 SXM"))
    values = {m.label: m.value for m in app.metric}
    for label in ("Wall clock", "GPU-hours", "Cost"):
        assert values[label].startswith(":grey["), (label, values[label])
    fitting = show(app, Scenario(model="Llama 3.1 8B", n_gpus=8, micro_batch=8))
    assert not {m.label: m.value for m in fitting.metric}["Cost"].startswith(":grey[")


def test_the_compute_page_warns_and_greys_too(app):
    app.session_state[SCENARIO_KEY] = Scenario(model="Llama 3.1 70B", n_gpus=1)
    app.switch_page("app_pages/compute.py").run()
    assert not app.exception
    assert {m.label: m.value for m in app.metric}["Wall clock"].startswith(":grey[")
    app.session_state[SCENARIO_KEY] = Scenario(model="Llama 3.1 8B", n_gpus=16, micro_batch=1, examples=1000)
    app.run()
    assert any(w.value.startswith("More GPUs make this plan slower: 8 GPUs take ") for w in app.warning)
    app.switch_page("app_pages/cost.py").run()
    assert not {m.label: m.value for m in app.metric}["Cost"].startswith(":grey[")  # this one fits
