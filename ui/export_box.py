"""The Export box: the current plan as each framework's configuration, previewed and downloadable.

One tab per target; each shows the file, a download button and, in words, what that target cannot express
(so nothing of the plan disappears without being said).
"""

from __future__ import annotations

import streamlit as st

from planner import EXPORT_TARGET_VERSIONS, EXPORT_TARGETS, PlannerError, Scenario, export_plan
from ui.data import catalogs
from ui.library import plain

PREVIEW_LANGUAGE = {"json": "json", "yaml": "yaml", "toml": "toml", "txt": "bash"}
MIME = {
    "json": "application/json",
    "yaml": "application/yaml",
    "toml": "application/toml",
    "txt": "text/plain",
}


def render_export_box(plan: Scenario, *, key: str = "export") -> None:
    # A toggle, not an expander: a closed expander still builds its content on every rerun, and five
    # configuration files are work (and elements) no rerun should pay for until someone asks for them.
    if not st.toggle("Export as a runnable configuration", key=f"{key}.show"):
        return
    with st.container(border=True):
        st.caption(
            "The plan's parallel layout, sharding and offload, precision, batch sizes, recompute, sequence length, "
            "optimizer and LoRA settings in each framework's own option names (the release each targets is on "
            "its tab). Learning rate, data and checkpoint paths are yours to add."
        )
        tabs = st.tabs([EXPORT_TARGET_VERSIONS[target] for target in EXPORT_TARGETS])
        for tab, target in zip(tabs, EXPORT_TARGETS, strict=True):
            with tab:
                _target_tab(plan, target, key)


def _target_tab(plan: Scenario, target: str, key: str) -> None:
    try:
        found = export_plan(plan, catalogs(), target)
    except PlannerError as err:
        st.error(plain(f"This plan cannot be exported for {target}: {err}"))
        return
    suffix = found.file_name.rsplit(".", 1)[-1]
    st.code(found.text, language=PREVIEW_LANGUAGE.get(suffix, "text"), line_numbers=False)
    st.download_button(
        f"Download {plain(found.file_name)}",
        data=found.text,
        file_name=found.file_name,
        mime=MIME.get(suffix, "text/plain"),
        on_click="ignore",
        key=f"{key}.download.{target}",
    )
    if found.not_expressed:
        st.markdown("**Not expressed by this target**")
        st.markdown("\n".join(f"- {plain(sentence)}" for sentence in found.not_expressed))
    if found.notes:
        st.caption(plain(" ".join(found.notes)))
