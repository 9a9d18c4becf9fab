"""A share link whose model-shape name spans several lines cannot add keys to an exported file: in a real browser
the Overview page's export box offers each file for download, and each downloaded file, parsed by its format's
own parser, is exactly the plan's export (no injected key, no changed value)."""

from __future__ import annotations

import json
import shlex
import tomllib
from typing import Any
from urllib.parse import parse_qsl, urlencode

import yaml

from planner import EXPORT_TARGET_VERSIONS, EXPORT_TARGETS, PlannerError, default_catalogs, export_plan
from planner.inputs.query import scenario_from_query, scenario_to_query
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape
from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage

# What an attacker puts in a link: each line break kind, then keys a torchtune/accelerate YAML, a torchtitan TOML
# and a Megatron argument list would run.
HOSTILE_NAME = (
    "Evil\ntokenizer: {_component_: os.system, command: id}\r\n[evil]\u2028command = 'id'"
    "\x85--data-path /etc/passwd\u2029end"
)
SHAPE = ModelShape(
    name="placeholder",
    vocab_size=32000,
    hidden_size=256,
    n_layers=2,
    n_heads=4,
    n_kv_heads=2,
    head_dim=64,
    ffn_hidden=688,
)


def _link() -> str:
    plan = Scenario(model="", model_shape=SHAPE, method="lora", n_gpus=2, micro_batch=2, seq_len=1024)
    query = scenario_to_query(plan)
    shape = json.loads(query["model_shape"])
    query["model_shape"] = json.dumps({**shape, "name": HOSTILE_NAME})  # as a hand-made link would carry it
    return "/?" + urlencode(query)


def _parsed(target: str, text: str) -> Any:
    if target == "deepspeed":
        return json.loads(text)
    if target in ("accelerate", "torchtune", "trl"):
        return yaml.safe_load(text)
    if target == "torchtitan-0.2":
        return tomllib.loads(text)
    return [shlex.split(line) for line in text.split("\n")[:-1]]


def _download(app: AppPage, target: str) -> tuple[str, str]:
    main = app.page.get_by_test_id("stMain")
    main.get_by_role("tab", name=EXPORT_TARGET_VERSIONS[target], exact=True).click()
    button = main.get_by_role("button", name="Download", exact=False).locator("visible=true").first
    with app.page.expect_download(timeout=RUN_TIMEOUT_MS) as download:
        button.click()
    return download.value.suggested_filename, download.value.path().read_text(encoding="utf-8")


def test_a_multi_line_shape_name_in_a_share_link_cannot_inject_into_any_export(app_page: AppPage) -> None:
    link = _link()
    app = app_page.goto(link)
    plan, notices = scenario_from_query(dict(parse_qsl(link[2:])))
    assert not notices and plan.model_shape is not None
    assert plan.model_shape.name == (
        "Evil tokenizer: {_component_: os.system, command: id} [evil] command = 'id' "
        "--data-path /etc/passwd end"
    )  # every line break folded to a space at the boundary: one line, one name
    app.page.get_by_text("Export as a runnable configuration").click()
    app.wait_idle()
    for target in EXPORT_TARGETS:
        try:
            expected = export_plan(plan, default_catalogs(), target)
        except PlannerError:  # torchtitan ships no such model: its tab says so instead of offering a file
            main = app.page.get_by_test_id("stMain")
            main.get_by_role("tab", name=EXPORT_TARGET_VERSIONS[target], exact=True).click()
            assert main.get_by_text("cannot be exported for").locator("visible=true").count() == 1
            continue
        file_name, text = _download(app, target)
        assert file_name == expected.file_name
        assert _parsed(target, text) == expected.content, target
        assert text.splitlines() == text.split("\n")[:-1]  # no line break but \n anywhere in the file
        if target in ("accelerate", "torchtune", "trl"):
            assert "os.system" not in json.dumps(yaml.safe_load(text)) and "evil" not in yaml.safe_load(text)
        if target == "torchtitan-0.2":
            assert "evil" not in tomllib.loads(text)
        if target == "megatron":
            assert "--data-path" not in text
    app.shot("exports-downloaded")
