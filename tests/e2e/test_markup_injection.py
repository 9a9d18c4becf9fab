"""Hostile text in every field a stranger or colleague controls never turns into markup in the browser.

A share link, an uploaded file's name and cells, a config.json and a team folder (its path,
file names and cells) all reach messages, captions and labels. In chromium, on every page, no image, link,
Material icon, emoji shortcode, coloured directive or KaTeX formula made from that text appears, and the browser
asks no other host for anything. Each hostile text carries the marker 666 so the checks tell it from the app's
own icons and links.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest

from tests.e2e.app_page import AppPage
from tests.e2e.conftest import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "![px666](http://evil.test/p666.png)"
LINK = "[click666](http://evil.test/c666)"
ICON = ":material/skull: 666"
EMOJI = ":skull: 666"
DIRECTIVE = ":red[alarm666]"
FORMULA = "$x^{666}$"
BARE = "http://evil.test/bare666 www.evil666.test a666@evil.test"
EVERYTHING = " ".join((IMAGE, LINK, ICON, EMOJI, DIRECTIVE, FORMULA, BARE))
# A folder name cannot hold "/" (so no URL, no :material/ icon): a relative image or link still counts.
FOLDER = "![d666](d666.png) [f666](f666) :skull: :red[alarm666] $y^{666}$"
PAGES = ("Overview", "Compute", "Memory", "Cost", "Energy", "Compare GPUs", "Plan search", "Scenarios",
         "Plan sheet", "Methods & data")  # fmt: skip
GPU_HEADER, GPU_ROW = (ROOT / "data" / "gpus.csv").read_text().splitlines()[:2]
LLAMA = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 512, "intermediate_size": 1024,
         "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8}  # fmt: skip

# What a hostile text would leave in the DOM: elements made of user text carry the marker 666.
FOUND_SCRIPT = """() => {
  const hit = (s) => (s || "").includes("666") || (s || "").includes("evil");
  const out = [];
  for (const el of document.querySelectorAll("img")) if (hit(el.src) || hit(el.alt)) out.push("img " + el.src);
  // The app's own links (page links, heading anchors) carry the share link, user text encoded in its query:
  // a link counts when it leaves the app's origin or its text is user text.
  for (const el of document.querySelectorAll("a[href]"))
    if (new URL(el.href).origin !== location.origin || hit(el.textContent)) out.push("a " + el.href);
  for (const el of document.querySelectorAll("[data-testid='stIconMaterial'], [role='img']"))
    if ((el.textContent || "").includes("skull") || (el.getAttribute("aria-label") || "").includes("skull"))
      out.push("icon " + el.textContent);
  for (const el of document.querySelectorAll(".katex, .katex-display")) if (hit(el.textContent)) out.push("katex");
  for (const el of document.querySelectorAll(".stMarkdownColoredText, .stMarkdownBadge"))
    if (hit(el.textContent)) out.push("directive " + el.textContent);
  if (document.body.innerText.includes("\\u{1F480}")) out.push("emoji skull");
  return out;
}"""


@pytest.fixture(scope="module")
def hostile_url(browser_available: None) -> Iterator[str]:
    """A server whose team folder has a hostile path, a hostile ignored file and a GPU file with a hostile name."""
    # Its own temporary folder: pytest's shared basetemp is pruned by other pytest sessions on this machine.
    with tempfile.TemporaryDirectory(prefix="markup-") as parent:
        team = Path(parent) / FOLDER
        team.mkdir()
        (team / "gpus.csv").write_text(_gpu_csv(IMAGE))
        (team / f"{LINK.replace('/', '-')}.csv").write_text("not a catalogue\n")
        server, url = start_server(Path(parent) / "server.log", {"PLANNER_DATA_DIR": str(team)})
        yield url
        stop_server(server)


def _gpu_csv(name: str) -> str:
    return f"{GPU_HEADER}\n{name}{GPU_ROW[GPU_ROW.index(',') :]}\n"


def _open(new_context: Any, url: str, path: str, name: str) -> tuple[AppPage, list[str]]:
    page = new_context().new_page()
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if urlsplit(r.url).hostname != "127.0.0.1" else None)
    return AppPage(page, url, name).goto(path), outside


def _markup(app: AppPage) -> list[str]:
    return list(app.page.evaluate(FOUND_SCRIPT))


def _expand(app: AppPage, title: str) -> Any:
    box = app.page.get_by_test_id("stSidebar").get_by_test_id("stExpander").filter(has_text=title)
    box.get_by_text(title).first.click()
    app.wait_idle()
    return box


def test_every_page_shows_hostile_link_values_as_text(hostile_url: str, new_context: Any) -> None:
    shape = {"name": EVERYTHING, "vocab_size": 1000, "hidden_size": 64, "n_layers": 2, "n_heads": 4,
             "n_kv_heads": 2, "head_dim": 16, "ffn_hidden": 256}  # fmt: skip
    params = {"gpu": IMAGE, "snapshot": LINK, "region": DIRECTIVE + " " + ICON, "model": FORMULA,
              "pricing": EMOJI, EVERYTHING[:40]: "1"}  # fmt: skip
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in params.items())
    app, outside = _open(new_context, hostile_url, "/?" + query, "hostile-link")
    assert "666" in app.page.get_by_test_id("stMain").inner_text()  # the notices do show the text
    found = _markup(app)
    # The shape's name is a label: it stays, travels in the link and is shown on every page.
    app, more = _open(new_context, hostile_url, "/?model=&model_shape=" + quote(json.dumps(shape)), "shape")
    for title in PAGES:
        app.nav(title)
        found += [f"{title}: {hit}" for hit in _markup(app)]
    assert not found, found
    assert not outside + more, outside + more


def test_hostile_uploads_and_config_show_as_text(hostile_url: str, new_context: Any) -> None:
    app, outside = _open(new_context, hostile_url, "/", "hostile-upload")
    uploads = _expand(app, "Your own GPUs and prices")
    hostile_name = f"{IMAGE.replace('/', '-')} {ICON}.csv"
    uploads.get_by_test_id("stFileUploaderDropzoneInput").first.set_input_files(
        {"name": hostile_name, "mimeType": "text/csv", "buffer": _gpu_csv(LINK).encode()}
    )
    app.wait_idle()
    assert any("666" in alert for alert in app.alerts()), app.alerts()
    found = _markup(app)
    app.select("Model", "Custom (parameter count or imported config)", sidebar=True)
    importer = _expand(app, "Import a Hugging Face config.json")
    for name, config in (
        (f"{LINK.replace('/', '-')}.json", LLAMA),
        ("bad.json", {**LLAMA, "model_type": IMAGE}),
    ):
        importer.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
            {"name": name, "mimeType": "application/json", "buffer": json.dumps(config).encode()}
        )
        app.wait_idle()
        importer.get_by_role("button", name="Use this config").click()
        app.wait_idle()
        found += _markup(app)
    assert "666" in app.page.get_by_test_id("stSidebar").inner_text()  # the imported shape's name is shown
    for title in ("Memory", "Compare GPUs", "Methods & data"):
        app.nav(title)
        found += [f"{title}: {hit}" for hit in _markup(app)]
    assert not found, found
    assert not outside, outside
