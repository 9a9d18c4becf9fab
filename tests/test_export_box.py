"""The Overview's Export box: one tab per framework, each file parses back and follows the current plan."""

from __future__ import annotations

import json
import shlex
import tomllib

import yaml

from planner import EXPORT_TARGETS, Scenario
from ui.state import SCENARIO_KEY

PLAN = Scenario(
    model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=16, tp=2, pp=2, zero_stage=1, micro_batch=2, grad_accum=4
)


def _files(at) -> dict[str, str]:
    codes = [c.value for c in at.code if not c.value.startswith("(the app")][: len(EXPORT_TARGETS)]
    return dict(zip(EXPORT_TARGETS, codes, strict=True))


def _opened(app):
    app.toggle(key="export.show").set_value(True).run()
    assert not app.exception
    return app


def test_the_box_stays_closed_until_asked_for(app):
    assert not app.tabs and not app.get("download_button")


def test_every_target_has_a_tab_a_preview_and_a_download(app):
    _opened(app)
    assert [t.label for t in app.tabs][: len(EXPORT_TARGETS)] == [
        "DeepSpeed v0.19.8",
        "accelerate v1.15.0",
        "torchtune v0.6.1",
        "torchtitan v0.3.0",
        "torchtitan v0.2.2",
        "Megatron-LM core_v0.19.2",
        "TRL v1.16.0",
    ]
    labels = [b.label for b in app.get("download_button")]
    names = (
        "ds_config.json",
        "accelerate_config.yaml",
        "torchtune_recipe.yaml",
        "torchtitan_args.txt",
        "torchtitan.toml",
    )
    for name in names:
        assert f"Download {name}" in labels


def test_the_files_carry_the_current_plan(app):
    app.session_state[SCENARIO_KEY] = PLAN
    _opened(app)
    files = _files(app)
    deepspeed = json.loads(files["deepspeed"])
    # Global batch = micro-batch 2 × accumulation 4 × data-parallel 16 / (tp 2 × pp 2) = 4 → 32 sequences.
    assert deepspeed["train_batch_size"] == 32 and deepspeed["zero_optimization"]["stage"] == 1
    titan = tomllib.loads(files["torchtitan-0.2"])
    assert (
        titan["parallelism"]["tensor_parallel_degree"] == 2 and titan["training"]["global_batch_size"] == 32
    )
    megatron = shlex.split(files["megatron"])
    assert megatron[megatron.index("--pipeline-model-parallel-size") + 1] == "2"
    assert megatron[megatron.index("--global-batch-size") + 1] == "32"
    assert isinstance(yaml.safe_load(files["accelerate"]), dict) and isinstance(
        yaml.safe_load(files["torchtune"]), dict
    )


def test_what_a_target_cannot_express_is_said(app):
    app.session_state[SCENARIO_KEY] = Scenario(method="lora", n_gpus=8)
    _opened(app)
    said = " ".join(m.value for m in app.markdown)
    assert "Not expressed by this target" in said and "LoRA" in said
