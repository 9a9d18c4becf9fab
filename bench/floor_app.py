"""The floor for page-rerun timings: one widget, nothing else (bench/run.py measures it like a real page)."""

import streamlit as st

st.number_input("Epochs", value=3.0, key="epochs")
