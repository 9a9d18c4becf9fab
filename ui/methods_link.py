"""A one-click link from any figure to the Methods & data section that explains how it is computed."""

from __future__ import annotations

import streamlit as st

METHODS_PAGE = "app_pages/methods.py"
TOPIC_PARAM = "topic"
# Section anchors of pages/methods.py, in page order: {anchor: heading}.
TOPICS: dict[str, str] = {
    "tokens": "Training tokens",
    "flops": "Compute: FLOPs",
    "time": "Time: wall clock, communication and utilisation",
    "memory": "Memory per GPU",
    "cost": "Cost and its range",
    "energy": "Energy, PUE and carbon",
    "post_training": "Post-training: preference and RL",
    "multimodal": "Images, video and diffusion models",
    "catalogues": "Catalogues",
    "accuracy": "Accuracy against published measurements",
    "version": "Version and data in use",
}


def methods_link(topic: str, label: str = "How this is computed") -> None:
    """A page link to the Methods & data page, which then shows the `topic` section first.

    A plain `#anchor` link cannot be used across pages: it reloads the app in a new session. The link
    passes the topic as a query parameter instead, and the page reads it (`requested_topic`).
    """
    if topic not in TOPICS:
        raise ValueError(f"unknown methods topic {topic!r}; choose one of {', '.join(TOPICS)}")
    st.page_link(METHODS_PAGE, label=label, icon=":material/function:", query_params={TOPIC_PARAM: topic})


def requested_topic() -> str | None:
    """The topic a link asked for, if it names a section."""
    topic = st.query_params.get(TOPIC_PARAM)
    return topic if topic in TOPICS else None
