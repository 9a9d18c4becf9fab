"""What only a real browser shows: cross-page state, the share link, downloads, uploads (DESIGN.md §5).

Each test leaves screenshots under tests/e2e/screenshots/ for a human look.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from tests.e2e.app_page import AppPage

pytestmark = pytest.mark.e2e

PLAN_PAGES = ["Overview", "Compute", "Memory", "Cost", "Energy"]
NEW_MODEL = "Qwen2.5 14B"
NEW_GPU = "H200 SXM"
CUSTOM_MODEL_LABEL = "Custom (parameter count or imported config)"


def _figures_per_page(app: AppPage, step: str | None) -> dict[str, dict[str, str]]:
    figures = {}
    for title in PLAN_PAGES:
        app.nav(title)
        assert not app.exceptions(), f"{title}: {app.exceptions()}"
        figures[title] = app.metrics()
        assert figures[title], f"{title} shows no metric"
        if step:
            app.shot(f"{step}-{title.lower()}")
    return figures


def test_model_and_gpu_choice_reach_every_page(app_page: AppPage) -> None:
    before = _figures_per_page(app_page, None)
    app_page.select("Model", NEW_MODEL, sidebar=True)
    app_page.select("GPU", NEW_GPU, sidebar=True)
    after = _figures_per_page(app_page, "after")
    for title in PLAN_PAGES:
        assert after[title] != before[title], f"{title} did not follow the model/GPU change: {after[title]}"
    app_page.nav("Overview")
    assert any(NEW_MODEL in c and NEW_GPU in c for c in app_page.captions()), app_page.captions()
    assert app_page.selected("Model", sidebar=True) == NEW_MODEL
    assert app_page.selected("GPU", sidebar=True) == NEW_GPU
    # H200 SXM: 140.4 GiB usable (data/gpus.csv), shown beside the memory metric.
    assert "140.4 GiB" in app_page.metrics()["Peak memory per GPU"]


def test_memory_inputs_survive_visits_to_other_pages(app_page: AppPage) -> None:
    app_page.nav("Memory")
    default_peak = app_page.metrics()["Peak memory per GPU"]
    app_page.set_number("Micro-batch (sequences per GPU)", "2", sidebar=True)
    app_page.select("ZeRO stage / FSDP", "2 (+gradients", sidebar=True)
    changed_peak = app_page.metrics()["Peak memory per GPU"]
    assert changed_peak != default_peak
    for title in ("Overview", "Cost", "Energy", "Compute"):
        app_page.nav(title)
    # The Overview carries the same memory figure, so the change was visible off the Memory page too.
    app_page.nav("Overview")
    assert app_page.metrics()["Peak memory per GPU"] == changed_peak
    app_page.nav("Memory")
    assert app_page.number_input("Micro-batch (sequences per GPU)", sidebar=True).input_value() == "2"
    assert app_page.selected("ZeRO stage / FSDP", sidebar=True).startswith("2 (+gradients")
    assert app_page.metrics()["Peak memory per GPU"] == changed_peak
    app_page.shot("memory-after-round-trip")


def test_share_link_reproduces_the_figures_in_a_new_browser(app_page: AppPage, open_app_page) -> None:
    app_page.select("GPU", NEW_GPU, sidebar=True)
    app_page.set_number("Number of GPUs", "16", sidebar=True)
    app_page.nav("Memory")
    app_page.set_number("Micro-batch (sequences per GPU)", "2", sidebar=True)
    query = app_page.query()
    assert query.get("gpu") == NEW_GPU and query.get("n_gpus") == "16" and query.get("micro_batch") == "2"
    assert re.search(r"/memory\?", app_page.page.url), app_page.page.url
    mine = app_page.metrics()
    app_page.shot("sender")

    other = open_app_page(app_page.page.url)
    other.expect_heading("Memory")
    other.shot("receiver")
    assert other.metrics() == mine
    assert other.selected("GPU", sidebar=True) == NEW_GPU
    assert other.number_input("Number of GPUs", sidebar=True).input_value() == "16"
    assert not other.alerts(), f"a clean share link raised notices: {other.alerts()}"
    other.nav("Overview")
    app_page.nav("Overview")
    assert other.metrics() == app_page.metrics()


def _read_csv_download(app: AppPage, button_name: str) -> tuple[str, list[list[str]]]:
    with app.page.expect_download() as download:
        app.page.get_by_role("button", name=button_name).click()
    text = download.value.path().read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) >= 2, text[:500]
    assert all(len(row) == len(rows[0]) for row in rows), "ragged CSV"
    for row in rows[1:]:
        for (
            cell
        ) in row:  # spreadsheet formula injection: text cells are neutralised (planner/inputs/safe_csv.py)
            assert not re.match(r"^[=+@\t\r]", cell) and not re.match(r"^-[^0-9.]", cell), cell
    return download.value.suggested_filename, rows


def test_compare_page_csv_download(app_page: AppPage) -> None:
    if not app_page.has_page("Compare GPUs"):
        pytest.skip("the Compare GPUs page (app_pages/compare.py) is not registered in app.py yet")
    app_page.nav("Compare GPUs")
    app_page.shot("compare")
    name, rows = _read_csv_download(app_page, "Download CSV")
    assert name.endswith(".csv")
    header = rows[0]
    # the CSV holds the table as drawn, under its headers
    gpus = {row[header.index("GPU")] for row in rows[1:]} if "GPU" in header else set()
    assert "H100 SXM" in gpus, header


def test_scenarios_page_csv_download_neutralises_formulas(app_page: AppPage) -> None:
    if not app_page.has_page("Scenarios"):
        pytest.skip("the Scenarios page (app_pages/scenarios.py) is not registered in app.py yet")
    app_page.nav("Scenarios")
    hostile_name = '=HYPERLINK("http://example.invalid","x")'
    name_box = app_page.page.get_by_test_id("stMain").get_by_label("Name", exact=True)
    name_box.fill(hostile_name)
    name_box.press("Enter")
    app_page.wait_idle()
    app_page.page.get_by_role("button", name="Save as a new plan", exact=True).click()
    app_page.wait_idle()
    app_page.shot("saved")
    file_name, rows = _read_csv_download(app_page, "Download all as CSV")
    assert file_name.endswith(".csv")
    cells = [cell for row in rows[1:] for cell in row]
    assert "'" + hostile_name in cells, rows[:2]


def test_malformed_config_upload_is_reported(app_page: AppPage, tmp_path) -> None:
    app_page.select("Model", CUSTOM_MODEL_LABEL, sidebar=True)
    importer = (
        app_page.page.get_by_test_id("stSidebar")
        .get_by_test_id("stExpander")
        .filter(has_text="Import a Hugging Face config.json")
    )
    importer.get_by_text("Import a Hugging Face config.json").click()
    broken = tmp_path / "config.json"
    broken.write_text('{"model_type": "llama", "hidden_size": ')
    importer.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(broken))
    app_page.wait_idle()
    importer.get_by_role("button", name="Use this config").click()
    app_page.wait_idle()
    app_page.shot("malformed")
    assert any("config.json" in a and "not valid JSON" in a for a in app_page.alerts()), app_page.alerts()
    assert not app_page.exceptions()
    # The plan is untouched: still the bare-count custom model, every page still renders.
    assert app_page.metrics()["Wall clock"]
