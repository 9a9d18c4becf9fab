"""The traced second opinion for memory: one real training step of the model on fake tensors.

`trace_plan` builds the plan's model from its shape (Hugging Face modeling code, PEFT for LoRA), runs one
forward, backward and optimizer step on PyTorch fake tensors (no byte is allocated, no weight downloaded)
and counts the bytes alive at every moment (`tracker`), by phase and by module, beside the formulas'
allocated peak. It needs the optional extra `pip install .[trace]`; `scope` says which plans it follows and
refuses the others by name.
"""
