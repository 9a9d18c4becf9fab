"""Runs: real training logs against the team's saved plans (plan versus actual) and the team's calibration.

Upload logs (Hugging Face trainer_state.json with its config.json / training_args.json, torchtune metric logs,
torchtitan / Megatron-LM / DeepSpeed console logs, a W&B or MLflow CSV with a column map), see what each one
said and did not say, attach them to a saved plan, compare, fit the team's scale factors. Everything is stored
in the team library (`planner.runs`), so it is there after a restart.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import streamlit as st

from planner import LibraryUnavailable, RunLogError, compare_plan, fit_team_calibration, import_runs, save_run
from ui.data import catalogs
from ui.library import author, library, plain, unavailable_message

RECORDS = "runs.records"  # (upload ids, [RunRecord]) of the files in the upload box, parsed once
COPY_CHUNK_BYTES = 1 << 20  # an upload is copied to disk in 1 MiB pieces, then read line by line

st.title("Runs: plan versus actual")
st.caption(
    "Import what your training runs logged, hold them against a saved plan, and calibrate the planner to your "
    "team's runs. Memory is compared statistic for statistic (allocated with allocated, reserved with "
    "reserved), in GiB (2^30 bytes)."
)

uploads = st.file_uploader("Training logs", accept_multiple_files=True, key="runs.upload")
columns = st.text_input(
    "CSV column map (W&B / MLflow exports)",
    key="runs.columns",
    placeholder="step_time_s=perf/step_ms*0.001,tokens_per_s_per_gpu=perf/tps",
)


def _parse(files: list, column_map: str) -> list:
    ident = (tuple(f.file_id for f in files), column_map)
    cached = st.session_state.get(RECORDS)
    if cached and cached[0] == ident:
        return list(cached[1])
    bar = st.progress(0.0, text="Reading logs")
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for upload in files:
            path = Path(folder) / Path(upload.name).name
            with path.open("wb") as out:
                shutil.copyfileobj(upload, out, COPY_CHUNK_BYTES)
            paths.append(path)
        records = import_runs(
            paths, column_map, progress=lambda share: bar.progress(share, text="Reading logs")
        )
    bar.empty()
    st.session_state[RECORDS] = (ident, records)
    return records


records: list = []
if uploads:
    try:
        records = _parse(list(uploads), columns)
    except RunLogError as err:
        st.error(plain(str(err)))
    for record in records:
        st.markdown(f"**{plain(record.path)}** — {plain(record.log_format)}, {record.n_lines:,} lines")
        st.markdown(f"Found: {plain('; '.join(record.found()) or 'nothing')}")
        st.markdown(f"Missing: {plain('; '.join(record.missing()) or 'nothing')}")

try:
    team = library()
    plans = team.plans()
except LibraryUnavailable as err:
    st.error(plain(unavailable_message(err)))
    st.stop()

names = [plan.name for plan in plans]
if not names:
    st.info("Save a plan on the Scenarios page first: runs are attached to a saved plan.")
    st.stop()
chosen = st.selectbox("Saved plan", names, key="runs.plan")
plan = plans[names.index(chosen)]
if records and st.button("Attach the imported runs to this plan", key="runs.attach"):
    for record in records:
        save_run(team, record, plan_id=plan.id, author=author())
    st.session_state.pop(RECORDS, None)
    st.success(f"Attached {len(records)} run(s) to {plain(plan.name)}.")

st.subheader("Plan versus actual")
use_calibration = st.toggle("Calibrated to your runs", key="runs.calibrated")
try:
    rows = compare_plan(team, plan.id, catalogs(), use_calibration=use_calibration)
    st.dataframe(rows, hide_index=True, key="runs.versus")
    st.caption("Error = predicted / measured - 1. 'Explained by' sets the gap beside the model's parts.")
except RunLogError as err:
    st.info(plain(str(err)))

st.subheader("Team calibration")
st.caption(
    "One time and one memory scale per GPU and regime from every run attached to a plan; the error is shown "
    "before and after, each run predicted from the others (leave-one-run-out)."
)
if st.button("Fit from the team's runs", key="runs.fit"):
    try:
        fitted = fit_team_calibration(team, author(), catalogs())
        st.dataframe([c.to_flat() for c in fitted], hide_index=True, key="runs.fitted")
    except RunLogError as err:
        st.error(plain(str(err)))
