"""Streamlit glue shared by the pages: state binding, widgets, charts and formatting."""
