"""The inputs of vision-language and diffusion-transformer plans: ranges, defaults and the image-size text.

A text model ignores them all. `Scenario` declares each field with `Field(**FIELDS[name])`; the pixel sizes
travel as text ("448x448", several for aspect buckets, a third number for video frames) so that one value
works the same in a CLI flag, a share link, a CSV cell and a text box.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator

from planner.errors import PlannerError

VisionEncoderMode = Literal["frozen", "full", "lora"]
SideModelMode = Literal["resident", "offloaded", "cached"]
VaeMode = Literal["resident", "cached"]

# 1-16384 px a side: the largest inputs the processors here accept are far smaller (Qwen2.5-VL's pixel budget
# 12,845,056 is about 3584 × 3584); 16384 leaves room for a panorama without accepting a typo like 1e6.
MAX_SIDE_PX = 16_384
# 1-10,000 frames: Wan 2.1 trains on 81-frame clips; ten thousand is minutes of video, far beyond any recipe.
MAX_FRAMES = 10_000
MAX_BUCKETS = 32  # aspect buckets in one plan; trainers use a few dozen at most (SimpleTuner's defaults)
ALLOWED = (
    f"WIDTHxHEIGHT[xFRAMES] in pixels, 1-{MAX_SIDE_PX} a side, 1-{MAX_FRAMES} frames; several comma-separated"
)
_SIZE = re.compile(r"^\s*(-?\d+)\s*[x×]\s*(-?\d+)\s*(?:[x×]\s*(-?\d+)\s*)?$", re.IGNORECASE)


def parse_sizes(text: str, field: str = "image_size") -> list[tuple[int, int, int]]:
    """(width, height, frames) per bucket; frames 1 where not given. Empty text: no sizes (the model's own)."""
    if not text.strip():
        return []
    parts = text.split(",")
    if len(parts) > MAX_BUCKETS:
        raise PlannerError(field, f"at most {MAX_BUCKETS} sizes", value=text, allowed=ALLOWED)
    sizes = []
    for part in parts:
        match = _SIZE.match(part)
        if match is None:
            raise PlannerError(field, "not a size", value=part.strip(), allowed=ALLOWED)
        width, height = int(match[1]), int(match[2])
        frames = int(match[3]) if match[3] is not None else 1
        if not (1 <= width <= MAX_SIDE_PX and 1 <= height <= MAX_SIDE_PX and 1 <= frames <= MAX_FRAMES):
            raise PlannerError(field, "outside the range", value=part.strip(), allowed=ALLOWED)
        sizes.append((width, height, frames))
    return sizes


def _checked(text: str) -> str:
    parse_sizes(text, field="")  # pydantic names the field (planner.errors.from_validation_error)
    return text.strip()


ImageSize = Annotated[str, AfterValidator(_checked)]

FIELDS: dict[str, dict[str, Any]] = {
    # 0-1000 images per example: multi-image conversations use a handful; 0 = text-only examples
    "images_per_example": {
        "default": 1.0,
        "ge": 0,
        "le": 1000,
        "description": "images per training example (vision-language models)",
    },
    "image_size": {
        "default": "",
        "max_length": 400,
        "description": "image or video size, WIDTHxHEIGHT[xFRAMES], comma-separated buckets; empty = model's",
    },
    # Frozen by default: Qwen2.5-VL's and LLaVA-1.5's fine-tuning scripts freeze the vision tower unless asked.
    "vision_encoder": {"default": "frozen", "description": "vision encoder: frozen, full or lora"},
    "train_projector": {"default": True, "description": "train the vision-to-language projector"},
    "text_encoders": {
        "default": "resident",
        "description": "diffusion text encoders: resident on the GPU, offloaded to the host, or cached outputs",
    },
    "vae": {"default": "resident", "description": "diffusion VAE: resident on the GPU or latents cached"},
    "lora_base_fp8": {"default": False, "description": "LoRA's frozen base weights stored in fp8 (1 byte)"},
}
