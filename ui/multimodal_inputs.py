"""The image inputs of a vision-language or diffusion plan, in the sidebar under the dataset.

Only a multimodal model draws them: images per example, image size and what trains for a vision-language model;
resolution buckets (and frames for video), text encoders and VAE for a diffusion transformer. The image size is
one text box ("448x448", several sizes comma-separated for aspect buckets, a third number for video frames), so
a refused entry stays in its box with the allowed form beside it, like every other input.
"""

from __future__ import annotations

import streamlit as st

from ui.estimate_cache import current_resolved
from ui.number_entry import number_entry
from ui.state import bound, scenario

VISION_LANGUAGE, DIFFUSION = 1.0, 2.0  # `Resolved.columns.mm.multimodal_kind`
IMAGES_LABEL = "Images per example"
IMAGE_SIZE_LABEL = "Image size (W×H, comma-separated buckets)"
RESOLUTION_LABEL = "Resolution (W×H[×frames], comma-separated buckets)"
ENCODER_LABEL = "Vision encoder"
ENCODER_LABELS = {"frozen": "frozen", "full": "trained in full", "lora": "LoRA adapters"}
PROJECTOR_LABEL = "Train the projector"
TEXT_ENCODERS_LABEL = "Text encoders"
TEXT_ENCODER_LABELS = {
    "resident": "on the GPU",
    "offloaded": "in CPU memory, moved in per micro-batch",
    "cached": "outputs cached beforehand",
}
VAE_LABEL = "VAE"
VAE_LABELS = {"resident": "on the GPU", "cached": "latents cached beforehand"}
FP8_LABEL = "LoRA base in fp8"


def multimodal_kind() -> float:
    """1 vision-language, 2 diffusion, 0 text (or an unknown name: the page says so)."""
    try:
        return float(current_resolved().columns.mm.multimodal_kind)
    except ValueError:
        return 0.0


def render_multimodal_inputs() -> None:
    kind = multimodal_kind()
    if kind == VISION_LANGUAGE:
        _vision_language()
    elif kind == DIFFUSION:
        _diffusion()
    if kind and scenario().method == "lora":
        bound(st.checkbox, FP8_LABEL, "lora_base_fp8", help="Frozen base weights stored in one byte each.")


def _vision_language() -> None:
    st.subheader("Images")
    number_entry(IMAGES_LABEL, "images_per_example", help="Images in one training example; 0 for text only.")
    bound(
        st.text_input,
        IMAGE_SIZE_LABEL,
        "image_size",
        beside=True,
        placeholder="model default",
        help="Pixels, e.g. 448x448 or 1280x720,448x448. The model's own rule turns each image into tokens "
        "(Methods & data, 'Images, video and diffusion').",
    )
    bound(
        st.selectbox,
        ENCODER_LABEL,
        "vision_encoder",
        options=list(ENCODER_LABELS),
        format_func=ENCODER_LABELS.get,
    )
    bound(st.checkbox, PROJECTOR_LABEL, "train_projector")
    st.caption("Tokens per example above counts the text; the images' tokens are added to it.")


def _diffusion() -> None:
    st.subheader("Images")
    bound(
        st.text_input,
        RESOLUTION_LABEL,
        "image_size",
        beside=True,
        placeholder="model default",
        help="Pixels, e.g. 1024x1024 or 1024x1024,832x1216 for aspect buckets; video adds frames: 832x480x81.",
    )
    bound(
        st.selectbox,
        TEXT_ENCODERS_LABEL,
        "text_encoders",
        options=list(TEXT_ENCODER_LABELS),
        format_func=TEXT_ENCODER_LABELS.get,
    )
    bound(st.selectbox, VAE_LABEL, "vae", options=list(VAE_LABELS), format_func=VAE_LABELS.get)
    st.caption(
        "Examples count images (or clips); each one's tokens follow from its size, not from the box above."
    )
