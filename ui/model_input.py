"""Model choice: a preset, a bare parameter count, or a shape imported from a Hugging Face config.json."""

from __future__ import annotations

import json

import streamlit as st
from pydantic import ValidationError

from planner import CUSTOM_MODEL, ModelShape, PlannerError, from_validation_error, shape_from_hf_config
from ui.number_entry import number_entry
from ui.safe_text import plain
from ui.state import WIDGET_PREFIX, add_notice, apply_changes, scenario, show_in_widget

CUSTOM_LABEL = "Custom (parameter count or imported config)"
MODEL_LABEL = "Model"
CONFIG_LABEL = "config.json"
SHAPE_LABEL = "Shape (JSON, editable)"
MAX_CONFIG_BYTES = 1_000_000  # a real config.json is a few kB


def _choose_model() -> None:
    choice = st.session_state[WIDGET_PREFIX + "model"]
    if choice == CUSTOM_LABEL:
        current = scenario()
        apply_changes(labels={"model": MODEL_LABEL}, model=CUSTOM_MODEL, params_b=current.params_b or 8.0)
    else:
        apply_changes(labels={"model": MODEL_LABEL}, model=choice, model_shape=None, params_b=None)


def render_model_picker(presets: list[str]) -> None:
    options = [*presets, CUSTOM_LABEL]
    current = scenario().model
    show_in_widget("model", current if current in presets else CUSTOM_LABEL)
    st.selectbox(
        MODEL_LABEL,
        options,
        key=WIDGET_PREFIX + "model",
        on_change=_choose_model,
        help="Type to search the presets. Custom takes a bare parameter count or an imported shape.",
    )
    if scenario().model != CUSTOM_MODEL:
        return
    shape = scenario().model_shape
    if shape is None:
        number_entry(
            "Parameters (billions)",
            "params_b",
            help="Total parameters. For a mixture-of-experts model import its config to separate active "
            "from total parameters.",
        )
        st.caption(
            "A bare count gives compute, cost and model-state memory; activation memory needs a shape."
        )
    else:
        st.caption(f"Using imported shape **{plain(shape.name)}**.")
        if st.button("Forget imported shape", key="forget_shape"):
            apply_changes(model_shape=None, params_b=scenario().params_b or 8.0)
            st.rerun()
    _import_config()


def _import_config() -> None:
    with st.expander("Import a Hugging Face config.json"):
        upload = st.file_uploader(CONFIG_LABEL, type=["json"], key="config_upload", max_upload_size=1)
        text = st.text_area("…or paste it here", key="config_paste", height=120)
        if st.button("Use this config", key="config_apply"):
            raw = upload.getvalue() if upload is not None else text.encode("utf-8")
            _apply_config(raw, upload.name.removesuffix(".json") if upload is not None else "pasted config")


def _apply_config(raw: bytes, name: str) -> None:
    if not raw.strip():
        add_notice("config.json: nothing to import — upload a file or paste its text.")
        return
    if len(raw) > MAX_CONFIG_BYTES:
        add_notice("config.json: file is larger than 1 MB; a model config is a few kB.")
        return
    try:
        shape = shape_from_hf_config(raw, name=name)
    except PlannerError as err:  # ConfigImportError: the problem names the config key at fault
        add_notice(err.describe(CONFIG_LABEL))
        return
    if apply_changes(
        labels={"model_shape": CONFIG_LABEL}, model=CUSTOM_MODEL, model_shape=shape.model_dump()
    ):
        st.toast(f"Imported {plain(shape.name)}: shape applied.")
    st.rerun()


def render_shape_editor(shape: ModelShape | None) -> None:
    """Expander to view and edit the shape; an edit turns the model into a custom one."""
    with st.expander("Model shape", expanded=False):
        if shape is None:
            st.info("No shape: the plan uses a bare parameter count. Import a config.json to add one.")
            return
        text = st.text_area(
            SHAPE_LABEL,
            value=json.dumps(shape.model_dump(), indent=1),
            height=260,
            key=f"shape_json.{shape.name}",
        )
        if st.button("Apply shape edits", key="shape_apply"):
            try:
                edited = ModelShape.model_validate_json(text)
            except ValidationError as err:
                problem = from_validation_error(err, ModelShape)
                add_notice(problem.describe(SHAPE_LABEL, subject=problem.field))
            else:
                apply_changes(
                    labels={"model_shape": SHAPE_LABEL}, model=CUSTOM_MODEL, model_shape=edited.model_dump()
                )
            st.rerun()
