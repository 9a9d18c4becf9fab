"""Shared fixtures: AppTest helpers with isolated Streamlit caches."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


@pytest.fixture
def app():
    """A fresh AppTest of the whole app, run once (caches cleared so tests never share state)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    return at
