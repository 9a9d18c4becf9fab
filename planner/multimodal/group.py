"""The multimodal group of `planner.columns.Columns`; `planner.multimodal.plan` builds it.

A text model carries `TEXT_ONLY` (kind 0, every part empty), so its figures are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.post.group import Column

TEXT, VISION_LANGUAGE, DIFFUSION = 0.0, 1.0, 2.0  # `multimodal_kind` codes


@dataclass(frozen=True)
class MultimodalColumns:
    """Counts per training example (one image-text example, or one diffusion sample), bytes per GPU."""

    multimodal_kind: Column = TEXT  # code: TEXT, VISION_LANGUAGE or DIFFUSION
    n_images_per_example: Column = 0.0  # images (vision-language) or samples (diffusion: 1)
    n_image_tokens_per_example: Column = 0.0  # image (or latent-patch) tokens in the main sequence
    n_image_patches_max: Column = 0.0  # the largest image's encoder patches (its activations)
    n_side_flops_per_example: Column = 0.0  # encoders, projector, VAE: per example and epoch
    bidirectional: Column = 0.0  # flag: the main transformer attends over the whole sequence (diffusion)
    # vision encoder + projector: frozen weights stay whole on every GPU; trained ones follow the recipe
    vision_frozen_weight_bytes: Column = 0.0
    n_vision_trainable_params: Column = 0.0  # encoder (full or LoRA adapters) + projector when trained
    n_vision_full_params: Column = (
        0.0  # trained parameters stored at the recipe's weight bytes (not adapters)
    )
    vision_patch_activation_bytes: Column = 0.0  # kept for backward when the encoder trains (else 0)
    text_encoder_bytes: Column = 0.0  # resident text encoders' weights on each GPU
    text_encoder_stream_bytes: Column = 0.0  # offloaded text encoders moved in for each micro-batch
    vae_bytes: Column = 0.0  # a resident VAE's weights on each GPU
    buffer_bytes: Column = 0.0  # the main transformer's stored, never-trained tensors (SD3's position table)
    n_side_params: Column = 0.0  # every parameter outside the main transformer
    n_epochs: Column = 1.0  # passes over the data (the per-epoch figures)


TEXT_ONLY = MultimodalColumns()
