"""The "Training code" choice: Hugging Face eager code or a fused framework (the scenario's `hf_eager_code`).

The choice changes both models: memory (what eager code keeps for backward: planner/formulas/memory/eager.py)
and time (one host dispatch per aten operation, unfused norms and loss: planner/formulas/operators/eager.py).
"""

from __future__ import annotations

import streamlit as st

from ui.state import bound

TRAINING_CODE_LABEL = "Training code"
TRAINING_CODE_LABELS = {
    False: "fused framework (torchtitan, Megatron, torchtune compiled)",
    True: "Hugging Face Trainer/PEFT (eager)",
}
TRAINING_CODE_HELP = (
    "Hugging Face transformers, Trainer, TRL and PEFT run the model eagerly: the CPU dispatches about 220 "
    "operations per layer per step (~21 µs each on the lent H200's host), the RMSNorm and the loss run as chains "
    "of fp32 element-wise kernels, and each LoRA matrix adds casts. Small models at small micro-batches then "
    "wait for the CPU. torchtitan, Megatron and compiled torchtune fuse these into a few kernels."
)


def render_training_code() -> None:
    """The selectbox, bound to `hf_eager_code` like every other setup widget."""
    bound(
        st.selectbox,
        TRAINING_CODE_LABEL,
        "hf_eager_code",
        options=list(TRAINING_CODE_LABELS),
        format_func=TRAINING_CODE_LABELS.__getitem__,
        help=TRAINING_CODE_HELP,
    )
