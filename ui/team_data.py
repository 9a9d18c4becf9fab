"""The team's own data in the UI: uploads for one browser session, the team folder's status, origin badges.

Uploads live in `st.session_state` (never on disk, never shared with other sessions). An upload is checked
by merging it over the working catalogues first; only a file that merges cleanly replaces what the session
uses, so a bad file shows its error (file, row, column) and the previous data keeps working.
"""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from planner import CATALOGUE_FILE_LIMIT, MAX_SNAPSHOT_ID_CHARS, CatalogError, Resolved, Scenario
from ui.data import (
    MERGE_ERROR_KEY,
    OVERLAY_ENV,
    UPLOAD,
    Upload,
    catalogs,
    session_uploads,
    team_data,
    upload_snapshot_id,
    use_uploads,
)
from ui.safe_text import plain, plain_lines
from ui.state import add_notice, apply_changes, scenario

# Streamlit counts the upload limit in whole MB (10^6 bytes): the catalogue file limit, which the overlay checks
# again to the byte (planner.catalogue.catalog_read.CATALOGUE_FILE, with its reason).
MAX_UPLOAD_MB = max(1, CATALOGUE_FILE_LIMIT.max_bytes // 1_000_000)
ERRORS_KEY = (
    "team_data.errors"  # session_state: {kind: (headline, problems) of the last rejected upload, raw}
)
VERSION_KEY = "team_data.widget_versions"  # {kind: n}; a new n gives that uploader a new key, emptying it
KINDS = {
    "gpus": ("GPU catalogue", "columns of data/gpus.csv; a GPU with a bundled name replaces it"),
    "prices": (
        "Price quotes",
        "columns of data/prices/*.csv; name the file YYYY-MM-DD.csv (or YYYY-MM-DD-suffix.csv, letters, "
        f"digits, - and _, at most {MAX_SNAPSHOT_ID_CHARS} characters) for that snapshot, otherwise it "
        "becomes today's snapshot",
    ),
}
ORIGINS = {
    "team": ("Team data", "violet", ":material/groups:"),
    UPLOAD: ("Your upload", "orange", ":material/upload_file:"),
}


# --- origin marks ------------------------------------------------------------------------------------------


def origin_markdown(origin: str | None) -> str:
    """An inline badge (":violet-badge[...]") for team or uploaded figures; "" for bundled ones."""
    if origin not in ORIGINS:
        return ""
    label, color, icon = ORIGINS[origin]
    return f":{color}-badge[{icon} {label}]"


def origin_badge(origin: str | None) -> None:
    """A badge beside a figure that comes from the team folder or this session's upload; nothing otherwise."""
    if origin in ORIGINS:
        label, color, icon = ORIGINS[origin]
        st.badge(label, color=color, icon=icon)  # type: ignore[arg-type]


def price_row(resolved: Resolved) -> dict[str, Any] | None:
    """The catalogue price row behind a resolved scenario (with its `origin`), or None without one."""
    if resolved.price_snapshot is None:
        return None
    return catalogs().price(str(resolved.gpu["name"]), resolved.price_snapshot)


def origin_note(resolved: Resolved) -> None:
    """One caption saying which of the plan's GPU specs and price come from team or uploaded data."""
    parts = []
    gpu_origin = resolved.gpu.get("origin")
    if gpu_origin in ORIGINS:
        parts.append(f"{origin_markdown(gpu_origin)} {plain(resolved.gpu['name'])} specs")
    row = price_row(resolved)
    if resolved.scenario.usd_per_gpu_hour is None and row is not None and row.get("origin") in ORIGINS:
        parts.append(f"{origin_markdown(row['origin'])} price from snapshot {plain(row['snapshot'])}")
    if parts:
        st.caption(" · ".join(parts))


def problems_markdown(headline: str, problems: str) -> str:
    """A headline and one bullet per problem line (each names its file, row and column), lines shown as typed."""
    return plain(headline) + "\n" + "".join(f"\n- {line}" for line in plain_lines(problems))


def team_error_markdown(error: str) -> str:
    headline = f"The team's data ({OVERLAY_ENV}) is not used until this is fixed; the bundled catalogues are."
    return problems_markdown(headline, error)


# --- the sidebar block -------------------------------------------------------------------------------------


UPLOADS_OPEN_KEY = "uploads.open"  # the upload section's open state (Streamlit keeps it under this key)


def render_data_uploads() -> None:
    """Sidebar block: the team folder's problem if any, and an expander to upload GPU or price CSV files."""
    team = team_data()
    if team.error:
        st.error(team_error_markdown(team.error), icon=":material/error:")
        first = team.error.splitlines()[0]
        add_notice(f"The team's data is not used (details in the sidebar): {first}")
    for line in team.ignored:  # a misspelled file name would otherwise be skipped without a word
        add_notice(f"Team folder: {line}")
    merge_error = st.session_state.pop(MERGE_ERROR_KEY, None)
    if merge_error:
        headline = "Your uploads no longer fit the team's data and are not used."
        st.error(problems_markdown(headline, merge_error), icon=":material/error:")
    errors = st.session_state.get(ERRORS_KEY, {})
    # Closed until the user opens it (an upload happens inside it, so it is open then, and stays so until closed).
    section = st.expander(
        "Your own GPUs and prices", icon=":material/upload_file:", key=UPLOADS_OPEN_KEY, on_change="rerun"
    )
    if not section.open:
        return  # a closed section draws no uploaders: each is a message and widget work on every rerun
    with section:
        st.caption(plain(_team_status(team.folder, team.files, team.error)))
        for kind in KINDS:
            _uploader(kind, errors.get(kind))


def _team_status(folder: str, files: tuple[str, ...], error: str | None) -> str:
    if not folder:
        return f"No team folder ({OVERLAY_ENV} is not set): bundled catalogues."
    if error:
        return f"Team folder {folder}: not used (see the error)."
    listed = ", ".join(files) if files else "no catalogue files"
    return f"Team folder {folder}: {listed}."


def _uploader(kind: str, error: tuple[str, str] | None) -> None:
    label, help_text = KINDS[kind]
    key = f"team_data.w.{kind}.{st.session_state.get(VERSION_KEY, {}).get(kind, 0)}"
    st.file_uploader(
        f"{label} (CSV, this browser session only)",
        type=["csv"],
        key=key,
        help=help_text,
        on_change=_on_upload,
        args=(kind, key),
        max_upload_size=MAX_UPLOAD_MB,
    )
    if error:
        st.error(problems_markdown(*error), icon=":material/error:")
    upload = session_uploads().get(kind)
    if upload is not None:
        st.caption(f"{origin_markdown(UPLOAD)} in use: {plain(upload.file_name)} — {plain(_summary(upload))}")
        st.button("Stop using it", key=f"team_data.remove.{kind}", on_click=_remove, args=(kind,))


def _summary(upload: Upload) -> str:
    cats = catalogs()
    if upload.kind == "gpus":
        n = cats.gpus.filter(cats.gpus["origin"] == UPLOAD).height
        return f"{n} GPU{'' if n == 1 else 's'}"
    snapshot = upload_snapshot_id(upload.file_name)
    n = cats.prices.filter((cats.prices["origin"] == UPLOAD) & (cats.prices["snapshot"] == snapshot)).height
    if snapshot == cats.latest_snapshot():
        where = "the newest snapshot, used by default"
    else:
        where = "choose it as the price snapshot on the Cost page"
    return f"{n} price{'' if n == 1 else 's'} in snapshot {snapshot}, {where}"


def _on_upload(kind: str, key: str) -> None:
    file = st.session_state.get(key)
    errors = st.session_state.setdefault(ERRORS_KEY, {})
    errors.pop(kind, None)
    if file is None:  # the user emptied the uploader
        _remove(kind, bump=False)
        return
    data = file.getvalue()
    upload = Upload(kind, file.name, hashlib.sha256(data).hexdigest(), data)
    try:
        use_uploads({**session_uploads(), kind: upload})
    except CatalogError as err:
        errors[kind] = (f"{file.name} is not used; the data in use is unchanged.", str(err))


def _remove(kind: str, bump: bool = True) -> None:
    uploads = dict(session_uploads())
    uploads.pop(kind, None)
    try:
        use_uploads(uploads)
    except CatalogError:  # the prices named GPUs of the removed file: they cannot stay without them
        uploads.pop("prices", None)
        add_notice("Your uploaded prices named GPUs from the removed GPU file, so they were removed too.")
        use_uploads(uploads)
    st.session_state.get(ERRORS_KEY, {}).pop(kind, None)
    if bump:
        versions = st.session_state.setdefault(VERSION_KEY, {})
        versions[kind] = versions.get(kind, 0) + 1
    _keep_gpu_valid()


def _keep_gpu_valid() -> None:
    """If the plan's GPU came from the removed file, go back to the default GPU and say so."""
    try:
        catalogs().gpu(scenario().gpu)
    except CatalogError:
        default = Scenario.model_fields["gpu"].default
        add_notice(f"GPU '{scenario().gpu}' came from the removed upload; the plan now uses {default}.")
        apply_changes(gpu=default)
