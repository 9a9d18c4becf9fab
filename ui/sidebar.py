"""The shared inputs every page reads: model, dataset, GPU and the figures the seed asks for."""

from __future__ import annotations

import streamlit as st

from ui.data import catalogs, model_names
from ui.estimate_cache import derived_values
from ui.model_input import render_model_picker
from ui.multimodal_inputs import render_multimodal_inputs
from ui.number_entry import number_entry
from ui.post_training_inputs import dataset_words
from ui.safe_text import plain
from ui.state import bound, scenario


def render_sidebar() -> None:
    st.header("Run")
    render_model_picker(model_names())
    st.subheader("Dataset")
    # Preference objectives count pairs and RL objectives prompts (a pair trains two sequences, a prompt
    # `samples per prompt`), so the boxes say which.
    examples_label, tokens_label = dataset_words(scenario().post_training)
    number_entry(examples_label, "examples", help="A count: 30000, 30,000 or 3e4.")
    number_entry(
        tokens_label,
        "tokens_per_example",
        help="Prompt plus completion, after the chat template is applied.",
    )
    number_entry("Epochs", "epochs")
    render_multimodal_inputs()  # vision-language and diffusion models only
    st.subheader("Hardware")
    _gpu_select()
    number_entry("Number of GPUs", "n_gpus")
    _overrides()


OVERRIDES_OPEN_KEY = "overrides.open"  # the section's open state (Streamlit keeps it under this key)
OVERRIDE_FIELDS = {
    "peak_tflops": "peak TFLOP/s",
    "vram_gib": "VRAM",
    "usd_per_gpu_hour": "price",
    "mfu": "MFU",
    "power_limit_w": "power limit",
}


def _overrides() -> None:
    """The catalogue's and the preset's figures, each replaceable; closed unless one is replaced, so the training
    setup below stays on a laptop's first screen."""
    s = scenario()
    replaced = [word for field, word in OVERRIDE_FIELDS.items() if getattr(s, field) is not None]
    if replaced:
        st.caption(":orange[✎ Overridden:] " + plain(", ".join(replaced)))
    ss = st.session_state
    if replaced and OVERRIDES_OPEN_KEY not in ss:
        ss[OVERRIDES_OPEN_KEY] = True  # a link or a loaded plan with an override opens on it
    section = st.expander("Peak, VRAM, price and MFU", key=OVERRIDES_OPEN_KEY, on_change="rerun")
    if not section.open:
        return  # a closed section draws no inputs: each is a message and widget work on every rerun
    derived = derived_values()
    with section:
        _overridable(
            "Peak TFLOP/s (dense, training precision)",
            "peak_tflops",
            derived.get("catalog_peak_tflops"),
            "%.1f",
        )
        _overridable("VRAM per GPU (GiB)", "vram_gib", derived.get("catalog_vram_gib"), "%.2f")
        _overridable(
            "Power limit per GPU (W)",
            "power_limit_w",
            derived.get("catalog_power_limit_w"),
            "%.0f",
            default_word="catalogue",
            help="The limit each GPU runs at (nvidia-smi -pl), from a quarter of its TDP up to the TDP. Below "
            "the TDP the clocks drop, so the peak TFLOP/s falls (600 W on a 700 W H100: about 88 %) and the run "
            "draws power at the limit instead of the TDP; memory bandwidth stays. Empty: the catalogue's, its TDP "
            "or the variant's limit. A peak TFLOP/s you type is taken as measured and not lowered again.",
        )
        _overridable(
            "Price per GPU-hour (USD)", "usd_per_gpu_hour", derived.get("catalog_usd_per_gpu_hour"), "%.2f"
        )
        _overridable(
            "MFU (model FLOPs utilisation)",
            "mfu",
            derived.get("preset_mfu"),
            "%.3f",
            default_word="preset, compute only",
            help="Share of the peak a run really achieves, end to end. Leave empty for the preset derived from "
            "published measurements for this GPU generation, model size and method: the preset counts compute "
            "only, and the planner adds communication and the pipeline bubble, so the achieved MFU shown on the "
            "pages is a little lower. A value you enter is taken as end to end (as training logs report it).",
        )


def _gpu_select() -> None:
    names = catalogs().gpu_names()
    current = scenario().gpu

    def canonical(value: str) -> str:
        try:
            return str(catalogs().gpu(value)["name"])
        except ValueError:
            return names[0]

    bound(
        st.selectbox,
        "GPU",
        "gpu",
        options=names,
        to_widget=canonical,
        help="Type to search. Choosing a GPU fills peak TFLOP/s, VRAM and price below.",
    )
    if canonical(current) != current and current.lower() not in {n.lower() for n in names}:
        st.caption(plain(f"'{current}' is read as {canonical(current)}."))


def _overridable(
    label: str,
    field: str,
    derived: float | None,
    fmt: str,
    default_word: str = "default",
    help: str | None = None,
) -> None:
    """Empty means "take it from the catalogue or preset" (`derived`); a typed value is an override and is marked."""
    hint = "n/a" if derived is None else (fmt % derived)
    value = number_entry(label, field, placeholder=f"{hint} ({default_word})", help=help)
    if value is not None:
        st.caption(f":orange[✎ Override] — default would be {plain(hint)}. Clear the box to use it.")
