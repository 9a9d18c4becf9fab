"""The columns vision-language and diffusion plans add to the plan sheet and to Compare (`compare_columns`).

A sheet of text-only plans keeps its columns; once any row plans a multimodal model (a vision-language or
diffusion preset, or an imported config with a `vision_config`), the grid shows the image inputs beside the
others (editable like them) and the per-part memory and images per second beside the other results. The
saved-scenario CSV already carries every `Scenario` input; its result columns add these figures too
(`planner.inputs.scenario_io`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import numpy as np
import polars as pl

from planner.inputs.multimodal_inputs import SideModelMode, VaeMode, VisionEncoderMode
from planner.inputs.scenario import Scenario
from planner.model.multimodal_presets import find
from planner.results import shown


def is_multimodal(scenario: Scenario) -> bool:
    """A plan with parts beside its main transformer: a multimodal preset, or a shape with a vision encoder."""
    if scenario.model_shape is not None:
        return scenario.model_shape.vision is not None
    return find(scenario.model) is not None


# (Scenario field, label): the image inputs, in the order the sidebar shows them
MULTIMODAL_INPUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("images_per_example", "Images per example"),
    ("image_size", "Image size"),
    ("vision_encoder", "Vision encoder"),
    ("train_projector", "Train projector"),
    ("text_encoders", "Text encoders"),
    ("vae", "VAE"),
    ("lora_base_fp8", "FP8 LoRA base"),
)
# (Estimate attribute, label): each part's memory per GPU (GiB is 2^30 bytes), tokens and throughput
MULTIMODAL_RESULT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("vision_encoder_gib", "Vision encoder GiB"),
    ("text_encoders_gib", "Text encoders GiB"),
    ("vae_gib", "VAE GiB"),
    ("image_tokens_per_example", "Image tokens per example"),
    ("images_per_s", "Images/s"),
)
MULTIMODAL_NUMBER_FORMATS: dict[str, str] = {
    "Images per example": "%g",
    "Vision encoder GiB": "%.2f",
    "Text encoders GiB": "%.2f",
    "VAE GiB": "%.2f",
    "Image tokens per example": "%,.0f",
    "Images/s": "%.3g",
}
MULTIMODAL_TEXT_COLUMNS = ("Image size",)
MULTIMODAL_FLAG_COLUMNS = ("Train projector", "FP8 LoRA base")


def any_multimodal(scenarios: Sequence[Scenario]) -> bool:
    return any(is_multimodal(s) for s in scenarios)


def multimodal_pick_lists() -> dict[str, list[Any]]:
    """The allowed values of the image inputs that are choices, for the grid's drop-downs."""
    return {
        "vision_encoder": list(get_args(VisionEncoderMode)),
        "text_encoders": list(get_args(SideModelMode)),
        "vae": list(get_args(VaeMode)),
    }


# Compare's multimodal figures (one per GPU): each part's memory, image tokens, images/s and the per-epoch figures
COMPARE_FIGURES = (
    *(name for name, _ in MULTIMODAL_RESULT_COLUMNS),
    "epoch_wall_clock_h",
    "epoch_cost_usd",
)


def compare_columns(
    scenario: Scenario, out: dict[str, np.ndarray], cannot_run: np.ndarray
) -> dict[str, pl.Series]:
    """Compare's multimodal columns for a multimodal scenario (none for a text one, whose table keeps its
    columns); a GPU that cannot run the precision gets no figures, as in the other columns."""
    if not is_multimodal(scenario):
        return {}
    return {
        name: pl.Series(np.where(cannot_run, np.nan, values), dtype=pl.Float64, nan_to_null=True)
        for name, values in shown(out, COMPARE_FIGURES).items()
    }
