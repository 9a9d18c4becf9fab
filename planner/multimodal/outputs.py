"""The vision-language and diffusion figures an estimate reports: their Estimate fields and their rows of the
output table (`planner.results.OUTPUTS` takes both from here). A text model reports them as None."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel


class MultimodalFigures(BaseModel):
    """Per-part memory per GPU, tokens per example and the throughput in images (or diffusion samples)."""

    vision_encoder_gib: float | None = None  # encoder + projector: weights, trained states, activations
    text_encoders_gib: float | None = None  # resident diffusion text encoders (0 offloaded or cached)
    vae_gib: float | None = None  # a resident VAE (0 with cached latents)
    image_tokens_per_example: float | None = (
        None  # vision-language: images' tokens; diffusion: latent patches
    )
    sequence_tokens_per_example: float | None = None  # the main transformer's tokens per example
    images_per_s: float | None = None  # images (vision-language) or samples (diffusion) per second, all GPUs
    epoch_wall_clock_h: float | None = None
    epoch_cost_usd: float | None = None
    n_params_all_parts: float | None = None  # main transformer + encoders + projector (+ text encoders, VAE)
    side_transfer_h: float | None = None  # offloaded text encoders moved onto the GPUs
    token_rule: str = ""  # image -> tokens, in words


# (key, unit, label, evaluate's output); units convert as in planner.results.SCALE
MULTIMODAL_ROWS: Final = (
    ("vision_encoder_gib", "GiB", "Vision encoder + projector (GiB)", "vision_encoder_bytes"),
    ("text_encoders_gib", "GiB", "Text encoders (GiB)", "text_encoders_bytes"),
    ("vae_gib", "GiB", "VAE (GiB)", "vae_bytes"),
    ("image_tokens_per_example", "tokens", "Image tokens per example", "image_tokens_per_example"),
    ("sequence_tokens_per_example", "tokens", "Sequence tokens per example", "sequence_tokens_per_example"),
    ("images_per_s", "images/s", "Images (or samples) per second", "images_per_s"),
    ("epoch_wall_clock_h", "h", "Wall clock per epoch (h)", "epoch_wall_clock_s"),
    ("epoch_cost_usd", "USD", "Cost per epoch (USD)", "epoch_cost_usd"),
    ("n_params_all_parts", "parameters", "Parameters, all parts", "n_params_all_parts"),
    ("side_transfer_h", "h", "Offloaded text encoders' transfers (h)", "side_transfer_s"),
)
