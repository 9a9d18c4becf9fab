"""The floor for the browser input-to-figure timing: one number input and the one figure it drives."""

import streamlit as st

gpus = st.number_input("Number of GPUs", min_value=1, value=8, step=1, key="gpus")
st.metric("GPU-hours", f"{gpus * 2.5:,.1f}")
