"""A FLUX.1-dev LoRA and a Qwen2.5-VL LoRA planned in the real browser: the model picked in the sidebar, the
method in the training setup, the image size typed into its box; the Overview's rows carry the token rule, the
images per second and the parts' memory, and the share link holds the plan."""

from __future__ import annotations

import re

import pytest

from tests.e2e.app_page import RUN_TIMEOUT_MS, AppPage

pytestmark = pytest.mark.e2e

METHOD_LABEL = "Policy training (full / LoRA / QLoRA)"


def _main_text(app_page: AppPage) -> str:
    return app_page.page.get_by_test_id("stMain").inner_text()


def _plan(app_page: AppPage, model: str, size_label: str, size: str) -> None:
    app_page.select("Model", model, sidebar=True)
    app_page.nav("Memory")  # arriving on Memory opens the training setup
    app_page.select(METHOD_LABEL, "LoRA", sidebar=True)
    app_page.set_number(size_label, size, sidebar=True)
    app_page.page.wait_for_url(re.compile(r"image_size="), timeout=RUN_TIMEOUT_MS)
    app_page.nav("Overview")
    assert not app_page.exceptions(), app_page.exceptions()


def test_flux_lora_plan_end_to_end(app_page: AppPage) -> None:
    _plan(app_page, "FLUX.1-dev", "Resolution (W×H[×frames], comma-separated buckets)", "1024x1024")
    text = _main_text(app_page)
    # 1024 × 1024 -> latent 128 × 128 × 16 -> 2 × 2 patches -> 4,096 tokens (+ 512 T5 caption tokens)
    assert "latent 128×128×16" in text and "4,096 image tokens per example" in text, text
    assert "4,608 tokens" in text and "Images per second" in text
    assert "Text encoders" in text and "9.10 GiB" in text  # CLIP-L + T5-XXL encoder in bf16
    query = app_page.query()
    assert query.get("model") == "FLUX.1-dev" and query.get("method") == "lora"
    assert query.get("image_size") == "1024x1024"
    app_page.select("Text encoders", "outputs cached beforehand", sidebar=True)
    assert "9.10 GiB" not in _main_text(app_page)  # cached: no text encoder on the GPU
    app_page.shot("flux-lora-overview")
    # the share link, opened afresh, restores the whole plan: the model's name included
    app_page.goto(app_page.page.url)
    assert app_page.selected("Model", sidebar=True) == "FLUX.1-dev"
    assert "4,096 image tokens per example" in _main_text(app_page)
    assert app_page.query().get("text_encoders") == "cached"


def test_qwen_vl_lora_plan_end_to_end_and_a_refused_size(app_page: AppPage) -> None:
    label = "Image size (W×H, comma-separated buckets)"
    _plan(app_page, "Qwen2.5-VL 7B", label, "448x448")
    text = _main_text(app_page)
    assert "2×2 merged into one token: 1,024 patches → 256 tokens" in text, text  # markdown draws -> as →
    assert "256 image tokens per example" in text and "1,256 tokens" in text  # 1,000 text tokens + 256
    assert "Vision encoder + projector" in text
    app_page.set_number(label, "0x448", sidebar=True)
    sidebar = app_page.page.get_by_test_id("stSidebar")
    alert = sidebar.get_by_test_id("stAlert").filter(has_text="outside the range")
    alert.wait_for(timeout=RUN_TIMEOUT_MS)
    assert "1-16384 a side" in alert.inner_text()
    assert app_page.query().get("image_size") == "448x448"  # the plan kept its size
    app_page.shot("qwen-vl-lora-overview")
