"""Preset pickers that fill a scenario field once, when chosen; typing in the field afterwards wins."""

from __future__ import annotations

import streamlit as st

from ui.state import apply_changes

CUSTOM = "custom value"


def preset_picker(
    label: str, key: str, field: str, presets: dict[str, float | None], help_text: str = ""
) -> None:
    """A selectbox whose choice is copied into `field` in its on_change callback (never on later reruns)."""

    def _apply() -> None:
        choice = st.session_state[key]
        if choice != CUSTOM:
            apply_changes(labels={field: label}, **{field: presets[choice]})

    st.selectbox(label, [CUSTOM, *presets], key=key, on_change=_apply, help=help_text or None)
