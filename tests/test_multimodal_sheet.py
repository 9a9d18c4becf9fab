"""Vision-language and diffusion plans on the plan sheet, in its CSV, in Compare and in a share link: the image
inputs stay with the row, and the parts' memory and images per second show beside the other results.

Expected figures are the single estimate's (the sheet, Compare and the CSV must agree with it), and the part
sizes are written out from the presets' parameter counts (tests/test_multimodal.py cites them).
"""

from __future__ import annotations

import csv
import io

import pytest

from planner import (
    Scenario,
    compare_gpus,
    default_catalogs,
    estimate,
    evaluate_rows,
    read_saved_scenarios,
    result_cells,
    saved_scenarios_csv,
    sheet_input_columns,
    sheet_inputs,
    sheet_result_columns,
    with_cell,
)

CATS = default_catalogs()
GIB = 2**30
FLUX = Scenario(
    model="FLUX.1-dev", method="lora", image_size="1024x1024,832x1216", text_encoders="offloaded",
    lora_base_fp8=True, gpu="RTX 4090", examples=10_000,
)  # fmt: skip
QWEN = Scenario(
    model="Qwen2.5-VL 7B", method="lora", images_per_example=2, image_size="448x448", vision_encoder="lora",
    train_projector=False, gpu="H100 SXM", examples=10_000,
)  # fmt: skip
TEXT = Scenario()


def test_a_text_only_sheet_keeps_its_columns() -> None:
    labels = [c.label for c in sheet_input_columns([TEXT])]
    assert "Image size" not in labels
    assert "VAE GiB" not in [label for _, label in sheet_result_columns([TEXT])]


def test_a_multimodal_row_shows_its_image_inputs_and_parts() -> None:
    columns = sheet_input_columns([TEXT, FLUX, QWEN])
    flux, qwen = sheet_inputs(FLUX, columns), sheet_inputs(QWEN, columns)
    assert flux["Image size"] == "1024x1024,832x1216" and flux["Text encoders"] == "offloaded"
    assert flux["FP8 LoRA base"] is True and flux["VAE"] == "resident"
    assert qwen["Images per example"] == 2 and qwen["Vision encoder"] == "lora"
    assert qwen["Train projector"] is False

    shown = sheet_result_columns([TEXT, FLUX, QWEN])
    text_row, flux_row, qwen_row = (result_cells(r, shown) for r in evaluate_rows([TEXT, FLUX, QWEN], CATS))
    alone = estimate(FLUX, CATS)
    # FLUX's VAE resident in bf16: 83,819,683 × 2 bytes; the text encoders offloaded hold no GPU memory
    assert flux_row["VAE GiB"] == pytest.approx(83_819_683 * 2 / GIB, rel=1e-9)
    assert flux_row["Text encoders GiB"] == 0
    assert flux_row["Images/s"] == pytest.approx(alone.images_per_s, rel=1e-9)
    # two 1024-px-class buckets: (4096 + 104 × 76 = 3952) / 2 latent tokens
    assert flux_row["Image tokens per example"] == pytest.approx((4096 + 3952) / 2)
    assert qwen_row["Image tokens per example"] == 2 * 256  # 448² -> 256 tokens an image
    assert qwen_row["Vision encoder GiB"] == pytest.approx(estimate(QWEN, CATS).vision_encoder_gib, rel=1e-9)
    assert qwen_row["Vision encoder GiB"] > 0
    assert text_row["VAE GiB"] is None and text_row["Images/s"] is None


def test_image_inputs_edit_like_every_other_cell() -> None:
    edited = with_cell(FLUX, "Image size", "512x512", CATS)
    assert edited.image_size == "512x512" and edited.lora_base_fp8  # the other inputs stay
    assert with_cell(QWEN, "Vision encoder", "full", CATS).vision_encoder == "full"
    assert with_cell(QWEN, "Images per example", 3, CATS).images_per_example == 3
    small, large = evaluate_rows([with_cell(FLUX, "Image size", "512x512", CATS), FLUX], CATS)
    assert small.image_tokens_per_example == 1024 and small.images_per_s > large.images_per_s
    with pytest.raises(ValueError, match="image_size") as refused:
        with_cell(FLUX, "Image size", "1024 by 1024", CATS)
    assert "WIDTHxHEIGHT" in str(refused.value)
    with pytest.raises(ValueError, match="vision_encoder"):
        with_cell(QWEN, "Vision encoder", "half", CATS)


def test_sheet_csv_round_trip_keeps_the_image_inputs_and_writes_the_parts() -> None:
    text = saved_scenarios_csv({"flux": FLUX, "qwen": QWEN, "text": TEXT}, CATS)
    back = read_saved_scenarios(text, CATS)
    assert back.problems == [] and back.scenarios == {"flux": FLUX, "qwen": QWEN, "text": TEXT}
    rows = {r["name"]: r for r in csv.DictReader(io.StringIO(text))}
    flux = estimate(FLUX, CATS)
    assert float(rows["flux"]["vae_gib"]) == pytest.approx(flux.vae_gib, rel=1e-3)  # 4 significant figures
    assert float(rows["flux"]["images_per_s"]) == pytest.approx(flux.images_per_s, rel=1e-3)
    assert float(rows["qwen"]["image_tokens_per_example"]) == 512
    assert rows["flux"]["image_size"] == "1024x1024,832x1216" and rows["flux"]["lora_base_fp8"] == "true"
    assert rows["text"]["vae_gib"] == "" and rows["text"]["images_per_s"] == ""


def test_compare_carries_the_parts_and_images_per_second() -> None:
    frame = compare_gpus(FLUX, CATS)
    mine = frame.filter(frame["is_scenario_gpu"]).row(0, named=True)
    alone = estimate(FLUX, CATS)
    assert mine["vae_gib"] == pytest.approx(alone.vae_gib, rel=1e-9)
    assert mine["images_per_s"] == pytest.approx(alone.images_per_s, rel=1e-9)
    assert mine["image_tokens_per_example"] == pytest.approx(alone.image_tokens_per_example, rel=1e-9)
    assert mine["epoch_wall_clock_h"] == pytest.approx(alone.epoch_wall_clock_h, rel=1e-9)
    assert mine["epoch_wall_clock_h"] == pytest.approx(alone.wall_clock_h / FLUX.epochs, rel=1e-9)
    h100 = frame.filter(frame["gpu"] == "H100 SXM").row(0, named=True)
    assert h100["images_per_s"] > mine["images_per_s"]  # a faster card, the same plan
    assert "vae_gib" not in compare_gpus(TEXT, CATS).columns


@pytest.mark.parametrize("plan", [FLUX, QWEN], ids=["flux", "qwen"])
def test_a_share_link_restores_a_multimodal_plan(plan: Scenario) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from planner import scenario_to_query
    from tests.conftest import APP
    from ui.state import NOTICES_KEY, SCENARIO_KEY

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in scenario_to_query(plan).items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.session_state[SCENARIO_KEY] == plan  # the model's name too: it was reset to the default
    assert not any("model" in notice for notice in at.session_state[NOTICES_KEY])


def test_the_sheet_page_shows_a_flux_rows_inputs_and_parts(app, fresh_library) -> None:
    from ui.state import SCENARIO_KEY

    app.session_state[SCENARIO_KEY] = FLUX
    app.switch_page("app_pages/plan_sheet.py").run()
    assert not app.exception
    row = app.data_editor[0].value.iloc[0]
    assert row["Image size"] == "1024x1024,832x1216" and row["Text encoders"] == "offloaded"
    assert bool(row["FP8 LoRA base"]) is True
    assert row["VAE GiB"] == pytest.approx(83_819_683 * 2 / GIB, rel=1e-9)
    assert row["Images/s"] == pytest.approx(estimate(FLUX, CATS).images_per_s, rel=1e-9)
    # an image-size edit recomputes the row like any other cell (seeded as tests/test_plan_sheet_page.py does)
    generation = app.session_state["sheet.gen"] if "sheet.gen" in app.session_state else 0  # noqa: SIM401 (no .get on AppTest state)
    edits = {"edited_rows": {0: {"Image size": "512x512"}}, "added_rows": [], "deleted_rows": []}
    app.session_state[f"sheet.editor.{generation}"] = edits
    app.run()
    assert not app.exception
    row = app.data_editor[0].value.iloc[0]
    assert row["Image size"] == "512x512" and row["Image tokens per example"] == 1024


def test_the_compare_page_shows_a_flux_plans_parts_under_all_columns(app) -> None:
    from ui import compare_table
    from ui.state import SCENARIO_KEY

    app.session_state[SCENARIO_KEY] = FLUX
    app.switch_page("app_pages/compare.py").run()
    assert not app.exception
    app.toggle(key="compare.all_columns").set_value(True).run()
    assert not app.exception
    shown = app.dataframe[0].value
    mine = shown[shown["gpu"] == "RTX 4090"].iloc[0]
    assert mine["vae_gib"] == pytest.approx(83_819_683 * 2 / GIB, rel=1e-9)
    assert mine["images_per_s"] == pytest.approx(estimate(FLUX, CATS).images_per_s, rel=1e-9)
    labels = {compare_table.TABLE_COLUMNS[name]["label"] for name in ("vae_gib", "images_per_s")}
    assert labels == {"VAE (GiB)", "Images/s"}
    assert {"vae_gib", "images_per_s", "text_encoders_gib"} <= set(app.dataframe[0].proto.column_order)
