"""User and file text reaches Streamlit's markdown escaped, checked fast through AppTest.

AppTest hands back the markdown source each element was given; the real browser (tests/e2e/
test_markup_injection.py) checks what that source renders to. Here: the hostile text never appears raw in any
rendered source, and the message that echoes it carries `plain(text)`; names that identify catalogue rows are
refused with the allowed characters.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from planner import PlannerError
from planner.errors import NAME_CHARS, check_name
from tests.conftest import team_uploader
from tests.shown_text import shown
from ui import data as ui_data
from ui.model_input import CUSTOM_LABEL
from ui.safe_text import WORD_JOINER, plain

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

IMAGE = "![px](http://evil.test/p.png)"
LINK = "[click](http://evil.test/c)"
ICON = ":material/home:"
EMOJI = ":smile:"
DIRECTIVE = ":red[alarm]"
FORMULA = "$x^2$"
BARE_URL = "http://evil.test/bare"
HOSTILE = (IMAGE, LINK, ICON, EMOJI, DIRECTIVE, FORMULA, BARE_URL)
MARKDOWN_ELEMENTS = ("markdown", "caption", "warning", "error", "info", "success", "toast", "title", "header",
                     "subheader")  # fmt: skip
GPU_HEADER, GPU_ROW = (ROOT / "data" / "gpus.csv").read_text().splitlines()[:2]


@pytest.fixture(autouse=True)
def fresh_data(fresh_catalogs: None) -> None:
    st.cache_resource.clear()  # and the process-wide resources: these tests replace the catalogues under them


def sources(at: AppTest) -> list[str]:
    """The markdown source of every element that Streamlit renders as markdown, sidebar included."""
    found = [str(element.value) for kind in MARKDOWN_ELEMENTS for element in at.get(kind)]
    found += [str(metric.label) for metric in at.metric] + [str(metric.value) for metric in at.metric]
    return found + [str(expander.label) for expander in at.get("expander")]


def raw_markup(at: AppTest) -> list[str]:
    """Sources in which a hostile text appears unescaped."""
    return [source for source in sources(at) if any(text in source for text in HOSTILE)]


def gpu_csv(name: str) -> str:
    return f"{GPU_HEADER}\n{name}{GPU_ROW[GPU_ROW.index(',') :]}\n"


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(
    "text",
    [*HOSTILE, "**bold** _it_ `code` ~~gone~~", "# heading", "- item", "1. item", "<img src=x>", "a@evil.test",
     "www.evil.test", ":+1: :100:", "| a | b |", "$$x$$", "a\\b", "=== ---", "&lt;b&gt;"],
)  # fmt: skip
def test_plain_reads_as_typed_and_keeps_no_markup_active(text: str) -> None:
    escaped = plain(text)
    assert shown(escaped) == text  # a reader sees exactly what was typed
    for active in ("](", "[", "$", "`", "*", "<", "|", "~", "#"):
        assert escaped.replace("\\" + active, "").count(active) == 0 or active not in text, (active, escaped)
    for pattern in (":material/", ":smile:", ":red[", "http://", "www.", "@evil"):
        assert pattern not in escaped  # broken by a backslash or the invisible word joiner


def test_plain_keeps_ports_times_and_word_underscores_readable() -> None:
    assert plain("127.0.0.1:8080 at 10: 3 n_gpus") == "127.0.0.1:8080 at 10: 3 n_gpus"
    assert WORD_JOINER in plain("see :smile: now")


def test_share_link_notices_carry_the_escaped_text() -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"gpu": IMAGE, "snapshot": LINK, "region": DIRECTIVE + ICON, "model": FORMULA})
    run(at)
    assert not raw_markup(at), raw_markup(at)
    notices = " ".join(w.value for w in at.warning)
    for text in (IMAGE, LINK, FORMULA):
        assert plain(text) in notices, (text, notices)


def test_an_imported_shape_name_with_markup_is_shown_escaped_on_every_page() -> None:
    """A shape's name is a label (free text): it is kept as given, travels in links, and is escaped on show."""
    shape = {"name": f"{IMAGE} {ICON}", "vocab_size": 1000, "hidden_size": 64, "n_layers": 2, "n_heads": 4,
             "n_kv_heads": 2, "head_dim": 16, "ffn_hidden": 256}  # fmt: skip
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"model": "", "model_shape": json.dumps(shape)})
    run(at)
    assert at.session_state["scenario"].model_shape.name == shape["name"]
    for page in ("app_pages/overview.py", "app_pages/memory.py", "app_pages/compute.py"):
        run(at.switch_page(page))
        assert not raw_markup(at), (page, raw_markup(at))
    assert any(plain(IMAGE) in source for source in sources(at))


def test_team_folder_error_shown_to_every_user_is_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gpus.csv").write_text(gpu_csv(IMAGE))
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    at = run(AppTest.from_file(APP, default_timeout=60))
    errors = [e.value for e in at.error]
    assert any(plain(IMAGE) in error and NAME_CHARS in shown(error) for error in errors), errors
    assert not raw_markup(at), raw_markup(at)


def test_upload_with_a_hostile_file_name_and_cells_is_refused_escaped() -> None:
    at = run(AppTest.from_file(APP, default_timeout=60))
    team_uploader(at, "gpus").upload(f"{LINK}.csv", gpu_csv(IMAGE).encode(), "text/csv")
    run(at)
    errors = [e.value for e in at.sidebar.error]
    assert any(plain(f"{LINK}.csv") in error and plain(IMAGE) in error for error in errors), errors
    assert not raw_markup(at), raw_markup(at)


def test_config_json_with_hostile_values_and_file_name() -> None:
    at = run(AppTest.from_file(APP, default_timeout=60))
    at.sidebar.selectbox(key="w.model").set_value(CUSTOM_LABEL)
    run(at)
    config = {"model_type": IMAGE, "hidden_size": 64}
    at.sidebar.file_uploader(key="config_upload").upload(f"{LINK}.json", json.dumps(config).encode())
    at.sidebar.button(key="config_apply").click()
    run(at)
    assert not raw_markup(at), raw_markup(at)
    assert any(plain(IMAGE)[:20] in w.value for w in at.warning), [w.value for w in at.warning]


@pytest.mark.parametrize(
    "name", ["H100 SXM", "Llama 3.1 8B", "us-east-1", "Mixtral 8x7B (base)", "昇腾 910B"]
)
def test_names_of_the_safe_set_are_accepted(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", [IMAGE, LINK, ICON, FORMULA, "a*b", "<b>", "x`y", "a|b", "H100\nSXM"])
def test_names_with_markup_characters_are_refused_naming_the_allowed_set(name: str) -> None:
    with pytest.raises(PlannerError) as refused:
        check_name(name, "gpu")
    assert refused.value.field == "gpu" and refused.value.allowed == NAME_CHARS
