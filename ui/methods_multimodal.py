"""Methods & data, 'Images, video and diffusion models': how images become tokens, with a worked example per
rule, and which parts beside the main transformer hold memory and take time. The figures are the planner's own
(tests/test_multimodal.py checks the same numbers against the models' documented examples)."""

from __future__ import annotations

import streamlit as st


def multimodal() -> None:
    st.markdown("""
A **vision-language model** is a language model with a vision encoder (a ViT) and a projector in front of it.
Each image becomes a run of tokens in the language model's sequence, so an example costs its text tokens plus
its images' tokens. Each model family has its own rule:

- **Qwen2.5-VL** (dynamic resolution): both sides are rounded to multiples of 28 px (14-px patches, 2 × 2
  merged) within a pixel budget; every 14 × 14 square is a patch the encoder attends over, every 28 × 28 square
  one token. *Worked example:* a 448 × 448 image → 32 × 32 = 1,024 patches → 2 × 2 merge → **256 tokens**.
- **LLaVA-1.5** (fixed): every image is resized to 336 × 336; 14-px patches give 24 × 24 = **576 tokens**
  (the encoder also sees one class token).
- **InternVL2.5** (tiles): the image is cut into 448-px tiles on the grid closest to its aspect ratio (up to
  12, plus a thumbnail when there is more than one); each tile is 1,024 patches, shuffled 2 × 2 into
  **256 tokens**. *Example:* a 896 × 448 image → 2 tiles + thumbnail → 768 tokens.

The encoder runs over each image's patches: its FLOPs are 2 per weight per patch plus attention over the image
(or its window, for Qwen's windowed layers), once forward when frozen, about twice with LoRA (gradients flow
through it), three times when trained in full. A frozen encoder holds only its bf16 weights; a trained one
adds gradients, optimizer states (sharded by the same ZeRO stage as the language model) and its activations
for every image of a micro-batch. The projector trains by default.

A **diffusion transformer** trains on one sample at a time at a randomly drawn noise level: the VAE encodes
the pixels into a latent, the text encoders encode the caption, and the transformer runs one forward and one
backward pass over the latent's patches. *Worked example (FLUX.1-dev):* a 1024 × 1024 image → 8× VAE →
latent 128 × 128 × 16 → 2 × 2 patches → **4,096 tokens**, joined by the 512 T5 caption tokens (joint
attention): 4,608 tokens per sample. Video adds time: Wan 2.1's VAE keeps the first frame and compresses the
others 4×, so 81 frames at 832 × 480 → 21 × 60 × 104 latent cells → **32,760 tokens**.

- Attention in a diffusion transformer sees the whole sequence (no causal half), and the adaLN modulation and
  timestep weights act once per sample: they hold memory but almost no FLOPs, so the FLOPs count only the
  weights each token multiplies through.
- **Text encoders** (T5-XXL 4.76 B, CLIP-L 0.12 B, CLIP-G 0.69 B, umT5-XXL 5.68 B parameters): resident on the
  GPU in bf16, offloaded (moved in over PCIe for every micro-batch), or cached (run once over the data before
  training). The **VAE** (84 M, Wan's 127 M) is resident or its latents are cached the same way. What is cached
  costs one forward pass over the data instead of one per epoch, and no memory during training.
- Images (or clips) per second = tokens per second ÷ tokens per example × images per example; time and cost per
  epoch are the run's divided by its epochs.
- Aspect buckets are averaged for time; memory is taken at the largest bucket.
""")
