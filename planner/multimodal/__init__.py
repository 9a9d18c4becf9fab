"""Vision-language models and diffusion transformers in the planner's one pipeline.

`planner.multimodal.plan` turns a multimodal preset and the scenario's image inputs into the main transformer's
token counts and a column group (`planner.multimodal.group`) for the parts beside it (vision encoder and
projector, text encoders, VAE); `planner.multimodal.step` adds their FLOPs to the time path and their memory
to the peak inside `planner.evaluate`; `planner.multimodal.outputs` names the figures users see.
"""
