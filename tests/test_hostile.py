"""Hostile input through the whole app (AppTest): share links, every input widget, uploads.

The promise under test: whatever arrives, the app renders, says what it rejected, and never shows a traceback.
Fuzzing uses one fresh AppTest per example (about 0.4 s each), so example counts are kept to what fits in
about two minutes; together the fuzz tests run well over 200 examples.

Pages are read from app.py, so pages registered later are fuzzed without touching this file; tests for an
upload that a page does not offer yet skip and name the missing piece.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from streamlit.testing.v1 import AppTest

import planner.inputs.query
from planner import open_library
from planner.catalogue.catalog import default_catalogs
from planner.errors import PlannerError
from planner.inputs.bounded_read import MAX_QUERY_STRING_CHARS
from planner.inputs.numbers import parse_field_number
from planner.inputs.scenario import Scenario
from planner.model.hf_json import parse_json_text
from tests import ci
from tests.conftest import team_uploader
from tests.shown_text import shown as shown_text
from ui.safe_text import one_line
from ui.sidebar import OVERRIDES_OPEN_KEY
from ui.state import NOTICES_KEY, SCENARIO_KEY
from ui.training_setup import OPEN_KEY

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGES = re.findall(r'st\.Page\(\s*"([^"]+\.py)"', (ROOT / "app.py").read_text())
CUSTOM_LABEL = "Custom (parameter count or imported config)"


def fuzz(n_examples: int) -> settings:
    # No "explain" phase: it reruns the failing example over a hundred times, minutes with AppTest.
    return settings(
        max_examples=ci.n_examples(n_examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )


STREAMLIT_RESERVED_QUERY_KEYS = {"embed", "embed_options"}  # Streamlit consumes these itself
PAGE_PARAMETERS = getattr(planner.inputs.query, "PAGE_PARAMETERS", frozenset())  # a page's own link keys


def new_app(query: dict[str, Any] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query or {})
    return at.run()


def assert_healthy(at: AppTest, context: object) -> None:
    """No traceback, and the page showed something: its title, or an error that explains why not."""
    assert not at.exception, (context, [e.value for e in at.exception])
    assert at.title or at.error, (context, "the page rendered nothing")


def shown(at: AppTest) -> list[str]:
    """Every warning and error text on the page, sidebar included, as the reader sees it (escaping undone)."""
    return [shown_text(w.value) for w in at.warning] + [shown_text(e.value) for e in at.error]


def told(at: AppTest) -> str:
    """What the user is told about rejected input: on the page, or queued for the next run.

    Queued counts too: never losing a notice is what the fuzz tests check.
    """
    return " ".join([*shown(at), *at.session_state[NOTICES_KEY]])


# ---------------------------------------------------------------------------------------------------------
# Share links


HOSTILE_TEXT = st.sampled_from(
    [
        "nan",
        "NaN",
        "inf",
        "-inf",
        "Infinity",
        "-1",
        "0",
        "-0",
        "1e308",
        "1e309",
        "-1e309",
        "9" * 400,
        "",
        " ",
        "null",
        "none",
        "true",
        "false",
        "[]",
        "{}",
        '{"a":',
        '{"hidden_size": 1e999}',
        "[" * 3000,
        "\x00",
        "\u202e\u200b",
        "=1+2",
        "<script>alert(1)</script>",
        "%00",
        "1,000",
        "0x10",
        "١٢",
        "8.0",
        "16 ",
        "H100 SXM",
        "FULL_SHARD",
        "x" * 30_000,
    ]
)
QUERY_VALUES = (
    HOSTILE_TEXT
    | st.text(max_size=30)
    | st.integers(-(10**20), 10**20).map(str)
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
)
QUERY_KEYS = st.sampled_from(sorted(Scenario.model_fields)) | st.text(min_size=1, max_size=50).filter(
    lambda k: k not in STREAMLIT_RESERVED_QUERY_KEYS | PAGE_PARAMETERS and k.strip() == k and "\x00" not in k
)
QUERIES = st.dictionaries(
    QUERY_KEYS, QUERY_VALUES | st.lists(QUERY_VALUES, min_size=2, max_size=3), min_size=1, max_size=6
)


def _link_value(key: str, raw: str) -> Any:
    """What a link's text means for one field, as the share-link format defines it (planner/inputs/query.py)."""
    if key == "model_shape":
        return parse_json_text(raw)  # the app's one guarded parse (a ValueError, never a RecursionError)
    if raw.lower() in {"none", "null"} and Scenario.model_fields[key].default is None:
        return None
    return raw


def _alone(key: str, raw: str) -> tuple[bool, Any]:
    """(valid, value) of one link parameter on top of the default scenario."""
    try:
        scenario = Scenario().updated(**{key: _link_value(key, raw)})
    except (ValidationError, ValueError):
        return False, None
    return True, getattr(scenario, key)


@fuzz(200)
@given(QUERIES)
@example({"model_shape": "{}"})  # found by this test: several problems of one parameter, dropped once
@example(
    {"power_limit_w": "16 "}
)  # found on a clean-clone CI run: dropped (below the GPU's range), named in words only
@example(
    {"model_shape": "[" * 1000}
)  # found by this test on one clean-clone run: RecursionError in json.loads
@example(
    {"model_shape": "[" * 5000}
)  # found after the link limit: the test's own oracle raised RecursionError
def test_fuzzed_share_links_render_and_name_what_they_drop(query: dict[str, Any]) -> None:
    at = new_app(query)
    assert_healthy(at, query)
    notices = told(at)
    result = at.session_state[SCENARIO_KEY]
    n_chars = sum(len(k) + len(v[-1] if isinstance(v, list) else v) for k, v in query.items())
    if n_chars > MAX_QUERY_STRING_CHARS:  # no share button makes such a link: none of it is read
        assert "Ignored the link:" in notices, notices
        assert result == Scenario()
        return
    for key, value in query.items():
        raw = value[-1] if isinstance(value, list) else value  # a repeated key: the last one counts
        if key not in Scenario.model_fields:
            assert one_line(key[:40]) in notices, (key, notices)
            continue
        valid, parsed = _alone(key, raw)
        if not valid:
            assert f"'{key}'" in notices, (key, raw[:80], notices)
        elif f"'{key}'" not in notices:  # kept without a word: then it must really be in the plan
            assert getattr(result, key) == parsed, (key, raw[:80], getattr(result, key))


def test_repeated_link_keys_take_the_last_value() -> None:
    at = new_app({"n_gpus": ["4", "16"], "epochs": ["1", "oops"]})
    assert_healthy(at, "repeated keys")
    assert at.session_state[SCENARIO_KEY].n_gpus == 16
    assert at.session_state[SCENARIO_KEY].epochs == Scenario().epochs
    assert any("'epochs'" in text for text in shown(at))


@pytest.mark.parametrize(
    ("key", "value"),
    [("gpu", "Quantum 9000"), ("model", "GPT-7"), ("region", "mars"), ("snapshot", "1999-01-01")],
)
def test_unknown_names_in_a_link_are_reported_not_raised(key: str, value: str) -> None:
    at = new_app({key: value})
    assert_healthy(at, (key, value))
    assert any(value in text for text in shown(at)), shown(at)
    for page in PAGES:
        at.switch_page(page).run()
        assert_healthy(at, (key, value, page))


@pytest.mark.parametrize(("key", "value"), [("gpu", "Quantum 9000"), ("region", "mars")])
def test_unknown_names_in_a_link_are_dropped_with_a_notice(key: str, value: str) -> None:
    at = new_app({key: value})
    assert getattr(at.session_state[SCENARIO_KEY], key) == Scenario.model_fields[key].default
    assert any(f"'{key}'" in w.value for w in at.warning)
    assert not at.error


def test_notices_show_when_the_estimate_fails() -> None:
    at = new_app({"no_such_field": "1", "model": "GPT-7"})
    assert any("no_such_field" in w.value for w in at.warning), shown(at)


def test_notices_show_on_a_page_that_stops_early() -> None:
    if "app_pages/plan_search.py" not in PAGES:
        pytest.skip("the Plan search page (app_pages/plan_search.py) is not registered in app.py yet")
    at = new_app()
    at.switch_page("app_pages/plan_search.py").run()
    at.session_state[OVERRIDES_OPEN_KEY] = True  # the overrides draw their inputs only when open
    at.run()
    at.text_input(key="w.peak_tflops").input("0.0").run()
    assert any(text.startswith("Peak TFLOP/s (dense, training precision): ") for text in shown(at)), shown(at)


# ---------------------------------------------------------------------------------------------------------
# Every input widget on every page

WIDGET_KINDS = ("number_input", "text_input", "text_area", "selectbox", "multiselect", "checkbox", "toggle")
FLOAT_VALUES = st.sampled_from(
    [0.0, -0.0, -1.0, 1e-12, 0.5, 1.0, 1e6, 1e15, 1e300, -1e300, 2.0**53]
) | st.floats(-1e12, 1e12, allow_nan=False)
INT_VALUES = st.sampled_from([0, -1, 1, 2, 3, 7, 1024, 2**31, 2**53 - 1, -(2**53) + 1]) | st.integers(
    -(10**9), 10**9
)
TEXT_VALUES = HOSTILE_TEXT.filter(lambda t: len(t) < 5000) | st.text(max_size=200)


def _widgets(at: AppTest) -> list[Any]:
    found = []
    for kind in WIDGET_KINDS:
        for widget in getattr(at, kind):
            if not getattr(widget.proto, "disabled", False):
                found.append(widget)
    return found


# One change = a widget pick and one candidate value of every kind, all drawn up front: what the app shows
# must not steer the drawing, or hypothesis cannot replay an example (the widget list varies with the page).
CHANGES = st.fixed_dictionaries(
    {
        "pick": st.integers(0, 10_000),
        "float": FLOAT_VALUES,
        "int": INT_VALUES,
        "text": TEXT_VALUES,
        "bool": st.booleans(),
        "empty": st.integers(0, 9).map(lambda n: n == 0),  # one in ten: an emptied number box
        "subset": st.lists(st.integers(0, 10_000), max_size=4),
        # how a number is typed into a number box (ui/number_entry.py): as Python writes it, with thousands
        # separators, in exponent form, or as hostile text
        "typed": st.sampled_from(["plain", "grouped", "exponent", "text"]),
    }
)


def _value_for(widget: Any, change: dict[str, Any]) -> Any:
    kind = widget.type
    if kind == "number_input":
        if change["empty"]:
            # An emptied box: the browser sends None only for a clearable one (no default), and the
            # default (the min_value of a bound widget) otherwise, so that is what AppTest sends too.
            return widget.proto.default if widget.proto.HasField("default") else None
        integer = widget.proto.data_type == widget.proto.INT
        return change["int"] if integer else change["float"]
    if kind == "text_input" and _number_field(widget) is not None:
        return _typed_number(_number_field(widget), change)
    if kind in ("text_input", "text_area"):
        return change["text"]
    if kind in ("checkbox", "toggle"):
        return change["bool"]
    if kind == "selectbox":
        choices = selectbox_values(widget)
        return choices[change["pick"] % len(choices)] if choices else None
    options = widget.options  # multiselect: labels only when they are the values themselves
    # _formats_as, not format_func: the Scenarios page's plan picker formats plan ids, and calling it with a
    # label raised KeyError in this test (seen once in a full run, where earlier tests had saved plans).
    if not options or _formats_as(widget, options[0]) != options[0]:
        return []
    return list(dict.fromkeys(options[i % len(options)] for i in change["subset"]))


def _formats_as(widget: Any, value: Any) -> str | None:
    try:
        return str(widget.format_func(value))
    except Exception:  # a format_func made for other values (dict.get, lambdas over one type)
        return None


def _raw_candidates(field: str) -> list[Any]:
    """Values a `w.<field>` selectbox may hold: a Literal's choices, ZeRO stages, catalogue names."""

    annotation = _base_type(field)
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    cats = default_catalogs()
    known: dict[str, list[Any]] = {
        "zero_stage": [0, 1, 2, 3],
        "region": cats.grid["region"].to_list(),
        "snapshot": ["", *cats.snapshot_ids()],
    }
    return known.get(field, [])


def selectbox_values(widget: Any) -> list[Any]:
    """The values (not labels) a selectbox can take: AppTest's select_index would store the label instead."""
    options = list(widget.options)
    if all(_formats_as(widget, option) == option for option in options[:5]):
        return options
    field = (widget.key or "").removeprefix("w.")
    if field in Scenario.model_fields:
        return [value for value in _raw_candidates(field) if _formats_as(widget, value) in options]
    return []


def _set(widget: Any, value: Any) -> None:
    if widget.type == "selectbox" and value is None:
        return  # a selectbox with labels this test cannot map back to values: left alone
    widget.set_value(value)


def _base_type(field: str) -> Any:
    annotation = Scenario.model_fields[field].annotation
    if get_origin(annotation) in (Union, UnionType):
        return next(a for a in get_args(annotation) if a is not type(None))
    return annotation


def _number_field(widget: Any) -> str | None:
    """The numeric scenario field of a number box (a text input keyed `w.<field>`), else None."""
    field = (widget.key or "").removeprefix("w.")
    if widget.type != "text_input" or field not in Scenario.model_fields:
        return None
    return field if _base_type(field) in (int, float) else None


def _typed_number(field: str, change: dict[str, Any]) -> str:
    if change["empty"]:
        return ""
    number = change["int"] if _base_type(field) is int else change["float"]
    forms = {
        "plain": str(number),
        "grouped": f"{number:,}",
        "exponent": f"{number:e}",
        "text": change["text"],
    }
    return forms[change["typed"]]


def _received(widget: Any, value: Any) -> Any:
    """What the scenario is offered: a number box's text read by the planner's parser (an unreadable one stays
    text, which the scenario refuses); Streamlit resets a number outside a number_input's bounds to its default."""
    proto = widget.proto
    field = _number_field(widget)
    if field is not None:
        try:
            return parse_field_number(field, value)
        except PlannerError:
            return value
    if widget.type != "number_input" or value is None:
        return value
    if (proto.has_min and value < proto.min) or (proto.has_max and value > proto.max):
        return proto.default if proto.HasField("default") else None
    return value


def _bound_field(widget: Any) -> str | None:
    """The scenario field of a bound number/text widget (`w.<field>` keys), else None."""
    field = (widget.key or "").removeprefix("w.")
    if not (widget.key or "").startswith("w.") or field not in Scenario.model_fields:
        return None
    return field if widget.type in ("number_input", "text_input", "text_area") else None


def _rejected(before: Scenario, field: str, value: Any) -> bool:
    try:
        before.updated(**{field: value})
    except (ValidationError, ValueError):
        return True
    return False


@pytest.fixture(scope="module")
def library_with_plans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A library holding two plans, so the Scenarios page's plan widgets (picker, compare) are fuzzed too.

    Module-scoped (hypothesis refuses function-scoped fixtures under @given); the app finds it through
    PLANNER_DB_URL, restored afterwards."""
    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz-library') / 'plans.sqlite3'}"
    library = open_library(url)
    library.create("alpha", Scenario(), author="fuzz")
    library.create("beta", Scenario(n_gpus=16), author="fuzz")
    before = os.environ["PLANNER_DB_URL"]
    os.environ["PLANNER_DB_URL"] = url
    yield url
    os.environ["PLANNER_DB_URL"] = before


# Found by this test in a full run (plans saved by earlier tests were in the library): the compare multiselect
# (widget 17 of 19 on the Scenarios page with two plans) made the test's own label check raise KeyError.
COMPARE_PICK = {
    "pick": 17,
    "float": 0.0,
    "int": 0,
    "text": "",
    "bool": False,
    "empty": False,
    "subset": [0, 1],
}


@fuzz(120)
@given(st.sampled_from(PAGES), st.lists(CHANGES, min_size=1, max_size=3))
@example("app_pages/scenarios.py", [{**COMPARE_PICK, "typed": "plain"}])
def test_fuzzed_widget_values_never_raise(
    library_with_plans: str, page: str, changes: list[dict[str, Any]]
) -> None:
    at = new_app()
    at.session_state[OPEN_KEY] = (
        True  # fuzz the sidebar's training setup too (it draws inputs only when open)
    )
    at.switch_page(page).run()
    assert_healthy(at, page)
    done = []
    for change in changes:
        widgets = _widgets(at)
        if not widgets:
            break
        widget = widgets[change["pick"] % len(widgets)]
        value = _value_for(widget, change)
        before, field, label = at.session_state[SCENARIO_KEY], _bound_field(widget), widget.label
        done.append((widget.type, widget.key or widget.label, value))
        _set(widget, value)
        at.run()
        assert_healthy(at, (page, done))
        if field is None:
            continue
        received = _received(widget, value)
        after = at.session_state[SCENARIO_KEY]
        if _rejected(before, field, received):
            assert after == before, ("a rejected value changed the plan", done)
            # the notice names the widget by the label on screen, never by the internal field name
            assert f"{label}: " in told(at), (label, done, shown(at))
        elif received != getattr(before, field):
            assert getattr(after, field) == received, ("an accepted value was not applied", done)


# ---------------------------------------------------------------------------------------------------------
# The config.json import (sidebar, custom model)


def _nested(depth: int) -> bytes:
    return b'{"model_type": "llama", "x": ' + b"[" * depth + b"]" * depth + b"}"


LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "intermediate_size": 11008,
    "vocab_size": 32000,
}
BAD_CONFIGS = [
    ("config.json", b'{"model_type": "llama", "hidden_size": ', "not valid JSON"),
    ("config.json", b"\xff\xfe\x00{\x00", "UTF-8"),
    ("config.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "UTF-8"),
    ("config.json", b"", "nothing to import"),
    ("config.json", b"   \n", "nothing to import"),
    ("config.json", b"[1, 2, 3]", "JSON object"),
    ("config.json", _nested(5000), "deep"),
    ("config.json", json.dumps({**LLAMA, "hidden_size": "big"}).encode(), "hidden_size"),
    ("config.json", json.dumps({**LLAMA, "hidden_size": -4096}).encode(), "hidden_size"),
    ("config.json", json.dumps({**LLAMA, "num_hidden_layers": 1e999}).encode(), "Infinity"),
    ("config.json", json.dumps({k: v for k, v in LLAMA.items() if k != "vocab_size"}).encode(), "vocab_size"),
    ("config.json", json.dumps({"model_type": "=cmd|' /C calc'!A0"}).encode(), "model_type"),
    ("config.json", b'{"model_type": "llama", "pad": "' + b"x" * 1_100_000 + b'"}', "1 MB"),
]


def _custom_model_app() -> AppTest:
    at = new_app()
    at.sidebar.selectbox(key="w.model").set_value(CUSTOM_LABEL).run()
    assert_healthy(at, "custom model")
    return at


@pytest.mark.parametrize(("name", "data", "expected"), BAD_CONFIGS, ids=lambda v: str(v)[:24])
def test_bad_config_upload_gets_a_clear_message(name: str, data: bytes, expected: str) -> None:
    at = _custom_model_app()
    before = at.session_state[SCENARIO_KEY]
    at.sidebar.file_uploader(key="config_upload").upload(name, data, "application/json").run()
    at.sidebar.button(key="config_apply").click().run()
    assert_healthy(at, name)
    messages = [w.value for w in at.warning if w.value.startswith("config.json:")]
    assert messages and expected.lower() in messages[0].lower(), (expected, shown(at))
    assert len(messages[0]) < 400 and "Traceback" not in messages[0]
    assert at.session_state[SCENARIO_KEY] == before


@pytest.mark.parametrize("text", ['{"model_type": "mixtral"}', "not json at all", '{"model_type": null}'])
def test_bad_pasted_config_gets_a_clear_message(text: str) -> None:
    at = _custom_model_app()
    at.sidebar.text_area(key="config_paste").set_value(text).run()
    at.sidebar.button(key="config_apply").click().run()
    assert_healthy(at, text)
    assert any(w.value.startswith("config.json:") for w in at.warning), shown(at)


def test_good_config_upload_is_applied() -> None:
    """The control for the bad cases above: the same path with a valid file changes the plan."""
    at = _custom_model_app()
    at.sidebar.file_uploader(key="config_upload").upload("tiny.json", json.dumps(LLAMA).encode()).run()
    at.sidebar.button(key="config_apply").click().run()
    assert_healthy(at, "good config")
    shape = at.session_state[SCENARIO_KEY].model_shape
    assert shape is not None and shape.hidden_size == 4096 and shape.n_layers == 32


# ---------------------------------------------------------------------------------------------------------
# CSV uploads: the Scenarios page and the team's own GPUs/prices (sidebar)


def _header(path: Path) -> bytes:
    return path.read_bytes().splitlines()[0] + b"\n"


def bad_csvs(header: bytes) -> list[tuple[str, bytes]]:
    """Files no CSV upload may accept; `header` is the real header of that upload's format."""
    return [
        ("wrong-type.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"),
        ("latin1.csv", header + "caf\xe9,H100 SXM\n".encode("latin-1")),
        ("header-only.csv", header),
        ("empty.csv", b""),
        ("ragged.csv", header + b"a,H100 SXM\nb\n"),
        ("oversized.csv", header + b"x,H100 SXM\n" * 600_000),  # 6.6 MB: over every upload limit
        ("formula.csv", header + b"\"=cmd|' /C calc'!A0\",=1+1,@SUM(A1)\n"),
    ]


SCENARIO_HEADER = ("name," + ",".join(Scenario.model_fields) + "\n").encode()
TEAM_HEADERS = {
    "gpus": _header(ROOT / "data" / "gpus.csv"),
    "prices": _header(ROOT / "data/prices/2026-11-09.csv"),
}


def _page_or_skip(page: str) -> None:
    if page not in PAGES:
        pytest.skip(f"{page} is not registered in app.py yet")


def _scenarios_uploader(at: AppTest) -> Any:
    uploaders = [u for u in at.file_uploader if (u.key or "").startswith("scn.upload")]
    assert uploaders, "the Scenarios page has no CSV uploader"
    return uploaders[0]


@pytest.mark.parametrize(("name", "data"), bad_csvs(SCENARIO_HEADER), ids=lambda v: str(v)[:16])
def test_bad_scenarios_csv_is_rejected_with_a_message(name: str, data: bytes, fresh_library: str) -> None:
    _page_or_skip("app_pages/scenarios.py")
    at = new_app()
    at.switch_page("app_pages/scenarios.py").run()
    _scenarios_uploader(at).upload(name, data, "text/csv").run()
    assert_healthy(at, name)
    assert at.error, f"{name}: no error shown"
    assert not [b for b in at.button if b.key == "scn.import"], "a bad file offered an import"
    assert open_library(fresh_library).count() == 0


def test_formula_names_survive_a_scenarios_csv_round_trip_as_text(fresh_library: str) -> None:
    """A name that looks like a formula is written neutralised and read back exactly (planner/scenario_io)."""
    _page_or_skip("app_pages/scenarios.py")
    from planner.inputs.scenario_io import read_scenarios_csv, scenarios_to_csv

    hostile = {
        '=HYPERLINK("http://x.invalid")': Scenario(),
        "+1-1": Scenario(n_gpus=16),
        "@SUM(A1)": Scenario(),
    }
    text = scenarios_to_csv(hostile)
    for line in text.splitlines()[1:]:
        assert line[0] not in "=+-@\t\r", line[:40]
    at = new_app()
    at.switch_page("app_pages/scenarios.py").run()
    _scenarios_uploader(at).upload("mine.csv", text.encode(), "text/csv").run()
    assert_healthy(at, "round trip")
    at.button(key="scn.import").click().run()
    assert_healthy(at, "import")
    assert open_library(fresh_library).live_names() == set(hostile)
    assert read_scenarios_csv(text).scenarios == hostile


def _team_uploader(at: AppTest, kind: str) -> Any:
    return team_uploader(at, kind)


@pytest.mark.parametrize(
    ("kind", "name", "data"),
    [(kind, *case) for kind, header in TEAM_HEADERS.items() for case in bad_csvs(header)],
    ids=lambda v: str(v)[:16],
)
def test_bad_team_data_upload_is_rejected_and_the_data_in_use_kept(kind: str, name: str, data: bytes) -> None:
    at = new_app()
    before = at.metric[0].value if at.metric else None
    _team_uploader(at, kind).upload(name, data, "text/csv").run()
    assert_healthy(at, (kind, name))
    assert any(name in e.value for e in at.sidebar.error), [e.value for e in at.sidebar.error]
    assert (at.metric[0].value if at.metric else None) == before


HOSTILE_PLAN_NAMES = [
    "**bold** _x_ `code` [link](http://x.invalid) $E=mc^2$ ~~gone~~",
    "<script>alert(1)</script>",
    "Robert'); DROP TABLE plans;--",
    "=cmd|' /C calc'!A0",
]


@pytest.mark.parametrize("name", HOSTILE_PLAN_NAMES, ids=range(len(HOSTILE_PLAN_NAMES)))
def test_hostile_scenario_names_and_tags_are_stored_and_shown_as_typed(name: str, fresh_library: str) -> None:
    """Names and tags are user text: stored exactly, shown escaped (ui.library.plain), never run as markup."""
    _page_or_skip("app_pages/scenarios.py")
    from ui.library import plain

    at = new_app()
    at.switch_page("app_pages/scenarios.py").run()
    at.text_input(key="scn.author").input("$evil$ *author*").run()
    at.text_input(key="scn.name").input(name)
    at.text_input(key="scn.tags").input("<b>x</b>, $y$")
    at.button(key="scn.save").click().run()
    assert_healthy(at, name)
    assert [s.value for s in at.success] == [plain(f"Saved '{name}' to the team library (version 1).")]
    stored = open_library(fresh_library).find(name)
    assert (stored.name, stored.tags, stored.author) == (name, ("<b>x</b>", "$y$"), "$evil$ *author*")
    shown = next(d.value for d in at.dataframe if d.value.columns[0] == "Name")
    assert list(shown["Name"]) == [name] and list(shown["Tags"]) == ["<b>x</b>, $y$"]
    at.button(key="scn.delete").click().run()
    assert_healthy(at, name)
    assert any(plain(f"Deleted '{name}'.") == s.value for s in at.success)
