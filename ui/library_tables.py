"""The Scenarios page's library views: the plans table with headline results, the side-by-side comparison,
and the CSV download and import (the existing round trip, `read_saved_scenarios` -> `import_plans`).

Results are computed only for the rows shown (and remembered per scenario, `ui.library.results_for`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import streamlit as st

from planner import (
    MAX_CSV_BYTES,
    Catalogs,
    LibraryUnavailable,
    ScenarioImport,
    StoredPlan,
    comparison_rows,
    library_url,
    open_library,
    read_saved_scenarios,
    saved_scenarios_csv,
)
from ui.data import catalogs
from ui.library import PARSED, UPLOAD_GEN, library, plain, results_for, unavailable_message, updated_label
from ui.library_actions import on_import

MAX_PROBLEMS_SHOWN = 20
COMPARE_MAX = 4
TABLE_FORMATS = {
    "Version": st.column_config.NumberColumn(format="%d"),
    "Wall clock (h)": st.column_config.NumberColumn(format="%.2f"),
    "GPU-hours": st.column_config.NumberColumn(format="%.1f"),
    "Cost (USD)": st.column_config.NumberColumn(format="dollar"),
    "Peak GiB/GPU": st.column_config.NumberColumn(format="%.1f"),
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
FITS = {True: "yes", False: "no", None: "?"}


def library_rows(shown: list[StoredPlan]) -> list[dict[str, Any]]:
    """One row per plan: what it is, who changed it when, its headline results, and why it needs repair."""
    results = results_for({plan.id: plan.scenario for plan in shown if plan.scenario is not None})
    rows = []
    for plan in shown:
        item, found = plan.scenario, results.get(plan.id, {})
        rows.append(
            {
                "Name": plan.name,
                "Model": plan.model,
                "Method": item.method if item else "",
                "GPUs": f"{item.n_gpus} × {item.gpu}" if item else plan.gpu,
                "Tags": ", ".join(plan.tags),
                "Author": plan.author,
                "Updated by": plan.updated_by,
                "Updated (UTC)": updated_label(plan.updated_at),
                "Version": plan.version,
                "Wall clock (h)": found.get("wall_clock_h"),
                "GPU-hours": found.get("device_hours"),
                "Cost (USD)": found.get("cost_usd"),
                "Peak GiB/GPU": found.get("peak_gib_per_device"),
                "Fits": FITS[found.get("fits_vram")],
                "Problem": plan.problem or found.get("estimate_problem") or "",
            }
        )
    return rows


def library_table(shown: list[StoredPlan]) -> None:
    frame = pl.DataFrame(library_rows(shown), infer_schema_length=None)
    if not frame["Problem"].str.len_chars().sum():
        frame = frame.drop("Problem")
    st.dataframe(frame, hide_index=True, width="stretch", column_config=TABLE_FORMATS)


# --------------------------------------------------------------------------------------------- compare


def compare_section(shown: list[StoredPlan]) -> None:
    ss = st.session_state
    valid = {plan.id: plan for plan in shown if plan.scenario is not None}
    st.subheader("Compare side by side")
    ss["scn.compare"] = [i for i in ss.get("scn.compare", []) if i in valid]
    chosen = st.multiselect(
        "Compare 2 to 4 plans",
        list(valid),
        key="scn.compare",
        max_selections=COMPARE_MAX,
        format_func=lambda i: valid[i].name,
    )
    if len(chosen) < 2:
        st.caption("Choose at least two to see them side by side.")
        return
    only_differing = st.toggle("Only inputs that differ", value=True, key="scn.only_differing")
    labels = [f"{chr(ord('A') + i)} · {valid[plan_id].name}" for i, plan_id in enumerate(chosen)]
    scenarios = {plan_id: valid[plan_id].scenario for plan_id in chosen}
    rows = comparison_rows([s for s in scenarios.values() if s is not None], only_differing)
    if not rows:
        st.info("These plans have identical inputs.")
    else:
        frame = pl.DataFrame(
            {"Input": [r.field for r in rows]}
            | {label: [r.values[i] for r in rows] for i, label in enumerate(labels)}
            | {"Differs": ["≠" if r.differs else "" for r in rows]}
        )
        styled = frame.to_pandas().style.apply(_highlight_differing, axis=1)
        st.dataframe(styled, hide_index=True, width="stretch")
    results = results_for({i: s for i, s in scenarios.items() if s is not None})
    table = {"Result": list(RESULT_LABELS.values())}
    for label, plan_id in zip(labels, chosen, strict=True):
        table[label] = [_result_label(results[plan_id][key]) for key in RESULT_LABELS]
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


# --------------------------------------------------------------------------------------------- files


def library_csv(url: str, search: str, cats: Catalogs) -> Callable[[], str]:
    """The CSV of the library's valid plans (or a search's), built when the user clicks: it may be thousands
    of plans, and it runs outside the session (no session state), so it takes what it needs as arguments."""

    def build() -> str:
        found = open_library(url).plans(search)
        return saved_scenarios_csv({p.name: p.scenario for p in found if p.scenario is not None}, cats)

    return build


def csv_section(search: str) -> None:
    st.subheader("Files")
    st.download_button(
        "Download all as CSV" if not search else "Download these as CSV",
        data=library_csv(library_url(), search, catalogs()),
        file_name="scenarios.csv",
        mime="text/csv",
        on_click="ignore",
        key="scn.download",
        help="Every plan of the team library that validates (or those the search finds), with headline results.",
    )
    upload_limit_mb = min(int(st.get_option("server.maxUploadSize")), -(-MAX_CSV_BYTES // 1_000_000))
    uploaded = st.file_uploader(
        "Restore or import plans from a CSV (as downloaded above)",
        type=["csv"],
        key=f"scn.upload.{st.session_state.get(UPLOAD_GEN, 0)}",
        max_upload_size=upload_limit_mb,
        help="Rows with the name of a plan in the library replace it with a new version. A file with any bad "
        "row is not imported at all.",
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
                f"({fine} row{'s' * (fine != 1)} had no problem). The team library is unchanged."
            )
        )
        for problem in parsed.problems[:MAX_PROBLEMS_SHOWN]:
            st.error(plain(str(problem)))
        if len(parsed.problems) > MAX_PROBLEMS_SHOWN:
            st.caption(f"… and {len(parsed.problems) - MAX_PROBLEMS_SHOWN:d} more problems.")
        return
    for notice in parsed.notices:
        st.info(plain(notice))
    try:
        live = library().live_names()
    except LibraryUnavailable as err:
        st.error(plain(unavailable_message(err)))
        return
    clashes = [name for name in parsed.scenarios if name in live]
    note = (
        f" {len(clashes)} will replace plans with the same name (as a new version): {', '.join(clashes)}."
        if clashes
        else ""
    )
    st.markdown(plain(f"{len(parsed.scenarios)} scenario(s) in {uploaded.name}.{note}"))
    st.button("Import them", key="scn.import", on_click=on_import, args=(parsed,), type="primary")
