"""Catalogues loaded once per process and shared read-only by every session (never mutated)."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from planner.catalog import Catalogs, load_catalogs
from planner.models import load_model_presets, preset_names

OVERLAY_ENV = "PLANNER_DATA_DIR"


@st.cache_resource(show_spinner=False)
def _catalogs(overlay: str) -> Catalogs:
    # cache_resource hands every session the same frozen object; polars frames are immutable in our use.
    return load_catalogs(overlay_dir=Path(overlay) if overlay else None)


def catalogs() -> Catalogs:
    return _catalogs(os.environ.get(OVERLAY_ENV, ""))


@st.cache_resource(show_spinner=False)
def model_names() -> list[str]:
    return preset_names(load_model_presets())
