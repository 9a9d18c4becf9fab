"""The Overview's rows for a vision-language or diffusion plan: the token rule, images per second, the parts'
memory and the figures per epoch. A text plan gets none."""

from __future__ import annotations

from planner import Estimate
from ui import format as fmt


def multimodal_rows(est: Estimate) -> list[tuple[str, str, str]]:
    if not est.token_rule or est.images_per_s is None:
        return []
    rows = [
        (
            "Image to tokens",
            est.token_rule,
            f"{fmt.count(est.image_tokens_per_example)} image tokens per example",
        ),
        (
            "Sequence per example",
            "text tokens + image tokens (diffusion: latent patches + caption tokens)",
            f"{fmt.count(est.sequence_tokens_per_example)} tokens",
        ),
        (
            "Images per second",
            "throughput ÷ tokens per example × images per example",
            f"{est.images_per_s:,.3g}",
        ),
        (
            "Per epoch",
            "wall clock ÷ epochs; cost at the GPU price",
            f"{fmt.hours(est.epoch_wall_clock_h)}, {fmt.usd(est.epoch_cost_usd)}",
        ),
    ]
    parts = [
        ("Vision encoder + projector", est.vision_encoder_gib),
        ("Text encoders", est.text_encoders_gib),
        ("VAE", est.vae_gib),
    ]
    rows += [(name, "memory per GPU, in the peak", fmt.gib(gib)) for name, gib in parts if gib]
    return rows
