"""Scenarios: save the current plan under a name, load, rename, copy, delete, compare, share, CSV out and in.

The page lays out the sections; the session store and the button callbacks live in `ui.saved_scenarios`.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from planner import (
    MAX_CSV_BYTES,
    MAX_NAME_CHARS,
    Scenario,
    ScenarioImport,
    comparison_rows,
    read_saved_scenarios,
    saved_scenarios_csv,
    summary_rows,
)
from ui.data import catalogs
from ui.saved_scenarios import (
    PARSED,
    UPLOAD_GEN,
    on_delete,
    on_duplicate,
    on_import,
    on_load,
    on_rename,
    on_save,
    plain,
    results_for,
    saved,
    show_flash,
)
from ui.share import render_share_link

MAX_PROBLEMS_SHOWN = 20
COMPARE_MAX = 4
TABLE_FORMATS = {
    "Tokens (B)": st.column_config.NumberColumn(format="%.3f"),
    "Wall clock (h)": st.column_config.NumberColumn(format="%.2f"),
    "GPU-hours": st.column_config.NumberColumn(format="%.1f"),
    "Cost (USD)": st.column_config.NumberColumn(format="dollar"),
    "Peak GiB/GPU": st.column_config.NumberColumn(format="%.1f"),
    "Energy (kWh)": st.column_config.NumberColumn(format="%.1f"),
    "CO2e (kg)": st.column_config.NumberColumn(format="%.1f"),
}
RESULT_LABELS = {
    "wall_clock_h": "Wall clock (h)",
    "device_hours": "GPU-hours",
    "cost_usd": "Cost (USD)",
    "peak_gib_per_device": "Peak memory per GPU (GiB)",
    "fits_vram": "Fits in VRAM",
    "energy_kwh": "Energy (kWh)",
    "co2e_kg": "CO2e (kg)",
}


# --------------------------------------------------------------------------------------------- sections


def save_section() -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Save the current scenario")
        st.text_input(
            "Name", key="scn.name", max_chars=MAX_NAME_CHARS, placeholder="e.g. 8B LoRA on 4×H100, spot"
        )
        st.checkbox("Replace a saved scenario with the same name", key="scn.overwrite")
        st.button("Save", key="scn.save", on_click=on_save, type="primary")
    with right:
        st.subheader("Share the current scenario")
        render_share_link()


def saved_table(named: dict[str, Scenario]) -> None:
    frame = pl.DataFrame(summary_rows(named, results_for(named)), infer_schema_length=None)
    if not frame["Problem"].str.len_chars().sum():
        frame = frame.drop("Problem")
    st.dataframe(frame, hide_index=True, width="stretch", column_config=TABLE_FORMATS)


def manage_section(named: dict[str, Scenario]) -> None:
    ss = st.session_state
    if ss.get("scn.pick") not in named:
        ss.pop("scn.pick", None)
    st.selectbox("Scenario", list(named), key="scn.pick")
    load, copy, delete = st.columns(3)
    load.button("Load into the planner", key="scn.load", on_click=on_load, type="primary")
    copy.button("Duplicate", key="scn.duplicate", on_click=on_duplicate)
    delete.button("Delete", key="scn.delete", on_click=on_delete)
    new_name, go = st.columns([3, 1], vertical_alignment="bottom")
    new_name.text_input("Rename to", key="scn.rename_to", max_chars=MAX_NAME_CHARS)
    go.button("Rename", key="scn.rename", on_click=on_rename)


def compare_section(named: dict[str, Scenario]) -> None:
    ss = st.session_state
    ss["scn.compare"] = [n for n in ss.get("scn.compare", []) if n in named]
    chosen = st.multiselect(
        "Compare 2 to 4 scenarios", list(named), key="scn.compare", max_selections=COMPARE_MAX
    )
    if len(chosen) < 2:
        st.caption("Choose at least two to see them side by side.")
        return
    only_differing = st.toggle("Only inputs that differ", value=True, key="scn.only_differing")
    labels = [f"{chr(ord('A') + i)} · {name}" for i, name in enumerate(chosen)]
    rows = comparison_rows([named[n] for n in chosen], only_differing)
    if not rows:
        st.info("These scenarios have identical inputs.")
    else:
        frame = pl.DataFrame(
            {"Input": [r.field for r in rows]}
            | {label: [r.values[i] for r in rows] for i, label in enumerate(labels)}
            | {"Differs": ["≠" if r.differs else "" for r in rows]}
        )
        styled = frame.to_pandas().style.apply(_highlight_differing, axis=1)
        st.dataframe(styled, hide_index=True, width="stretch")
    results = results_for({n: named[n] for n in chosen})
    table = {"Result": list(RESULT_LABELS.values())}
    for label, name in zip(labels, chosen, strict=True):
        table[label] = [_result_label(results[name][key]) for key in RESULT_LABELS]
    st.dataframe(pl.DataFrame(table), hide_index=True, width="stretch")


def _highlight_differing(row: Any) -> list[str]:
    style = "background-color: rgba(255, 193, 7, 0.25); font-weight: 600" if row["Differs"] else ""
    return [style] * len(row)


def _result_label(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"


def csv_section(named: dict[str, Scenario]) -> None:
    st.subheader("Files")
    st.download_button(
        "Download all as CSV",
        data=saved_scenarios_csv(named, catalogs(), results_for(named)) if named else "",
        file_name="scenarios.csv",
        mime="text/csv",
        disabled=not named,
        on_click="ignore",
        key="scn.download",
    )
    upload_limit_mb = min(int(st.get_option("server.maxUploadSize")), -(-MAX_CSV_BYTES // 1_000_000))
    uploaded = st.file_uploader(
        "Restore scenarios from a CSV (as downloaded above)",
        type=["csv"],
        key=f"scn.upload.{st.session_state.get(UPLOAD_GEN, 0)}",
        max_upload_size=upload_limit_mb,
        help="Rows with a name already saved replace that scenario. A file with any bad row is not "
        "imported at all.",
    )
    if uploaded is not None:
        upload_report(uploaded)


def upload_report(uploaded: Any) -> None:
    ss = st.session_state
    cached = ss.get(PARSED)
    if cached is None or cached[0] != uploaded.file_id:
        with st.spinner("Reading and checking every row…"):  # ~3 ms a row: 3 s for the largest file
            cached = (uploaded.file_id, read_saved_scenarios(uploaded.getvalue(), catalogs()))
        ss[PARSED] = cached
    parsed: ScenarioImport = cached[1]
    if parsed.problems:
        fine = len(parsed.scenarios)
        st.error(
            plain(
                f"Nothing was imported from {uploaded.name}: fix the rows below and upload it again "
                f"({fine} row{'s' * (fine != 1)} had no problem). Your saved scenarios are unchanged."
            )
        )
        for problem in parsed.problems[:MAX_PROBLEMS_SHOWN]:
            st.error(plain(str(problem)))
        if len(parsed.problems) > MAX_PROBLEMS_SHOWN:
            st.caption(f"… and {len(parsed.problems) - MAX_PROBLEMS_SHOWN} more problems.")
        return
    for notice in parsed.notices:
        st.info(plain(notice))
    clashes = [name for name in parsed.scenarios if name in saved()]
    note = (
        f" {len(clashes)} will replace saved ones with the same name: {', '.join(clashes)}."
        if clashes
        else ""
    )
    st.markdown(plain(f"{len(parsed.scenarios)} scenario(s) in {uploaded.name}.{note}"))
    st.button("Import them", key="scn.import", on_click=on_import, args=(parsed,), type="primary")


# --------------------------------------------------------------------------------------------- page

st.title("Scenarios")
show_flash()
save_section()
named = saved()
st.subheader(f"Saved in this session ({len(named)})")
if named:
    saved_table(named)
    manage_section(named)
    compare_section(named)
else:
    st.info("Nothing saved yet. Name the current scenario above and save it, or restore a CSV below.")
csv_section(named)
