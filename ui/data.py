"""The catalogues a session sees: bundled data, the team's folder merged over it, then this session's uploads.

A team points `PLANNER_DATA_DIR` at a folder of CSV files in the formats of `data/` (data/README.md, "A team's
own data"); a user can also upload a GPU file or a price snapshot for their own browser session
(`ui.team_data`). Pages call `catalogs()` several times per rerun, so its usual path is a few dictionary
look-ups: the team folder is looked at (file sizes and modification times) at most every `RECHECK_S`
seconds, so a team adding a quote snapshot shows up without a restart; loads are memoised by those file
stamps. A session's merged view lives in its own `st.session_state` (released when the session ends, never
seen by another session), keyed by everything that shapes it: the team folder's stamps and each upload's kind,
file name, snapshot id and SHA-256. A broken team file never breaks the app: the bundled data is used alone
and `team_data().error` names the file, row and column.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from planner import (
    DATA_DIR_ENV,
    TEAM_FILES,
    UPLOAD,
    CatalogError,
    Catalogs,
    LayerFile,
    catalogs_from_environment,
    default_catalogs,
    overlay,
    preset_names,
    snapshot_date,
    unread_files,
)

OVERLAY_ENV = DATA_DIR_ENV  # PLANNER_DATA_DIR, read by planner.catalogue.catalog.catalogs_from_environment
RECHECK_S = 5.0  # the team folder may look this stale; re-stating a handful of files costs well under 1 ms
UPLOADS_KEY = "team_data.uploads"  # session_state: {"gpus"|"prices": Upload}; no widget uses the key
MERGE_ERROR_KEY = "team_data.merge_error"
MERGED_KEY = "team_data.merged"  # session_state: (key, merged catalogues or why not) of this session


@dataclass(frozen=True)
class TeamData:
    """Bundled + team catalogues, and what the team folder held or why it was ignored."""

    catalogs: Catalogs
    folder: str  # PLANNER_DATA_DIR as given; "" when unset
    files: tuple[str, ...]  # team files read, relative to the folder
    ignored: tuple[str, ...]  # a line per file no catalogue reads (a typo in its name?) naming the closest
    error: str | None  # why the team folder is not in use; the bundled data is then used alone


@dataclass(frozen=True)
class Upload:
    """An uploaded CSV kept in a browser session (its bytes, to merge again over changed team data)."""

    kind: str  # "gpus" or "prices"
    file_name: str
    sha256: str
    data: bytes


_lock = threading.Lock()
_stamps: dict[str, tuple[float, tuple]] = {}  # folder -> (when looked at, file stamps)
_team: dict[tuple, TeamData] = {}  # (folder, stamps) -> loaded


def catalogs() -> Catalogs:
    """The catalogues this session sees: bundled, the team folder over them, then the session's uploads."""
    team, key = _team_data_and_key()
    uploads = session_uploads()
    if not uploads:
        return team.catalogs
    merged_key = (key, upload_key(uploads))
    cached = st.session_state.get(MERGED_KEY)
    if cached is not None and cached[0] == merged_key:
        merged = cached[1]
    else:
        try:
            merged = merge_uploads(team.catalogs, uploads)
        except CatalogError as err:  # the team data changed under an upload: keep working without it
            merged = str(err)
        st.session_state[MERGED_KEY] = (merged_key, merged)  # one entry: the previous view is let go
    if isinstance(merged, str):
        st.session_state[MERGE_ERROR_KEY] = merged
        return team.catalogs
    return merged


def use_uploads(uploads: Mapping[str, Upload]) -> None:
    """Make `uploads` this session's uploads if they merge over the team data; CatalogError if not."""
    team, key = _team_data_and_key()
    merged = merge_uploads(team.catalogs, uploads)
    st.session_state[UPLOADS_KEY] = dict(uploads)
    st.session_state[MERGED_KEY] = ((key, upload_key(uploads)), merged)  # checked once, not merged again


def upload_key(uploads: Mapping[str, Upload]) -> tuple:
    """Everything about the uploads that shapes the merged catalogues: the bytes, and the name, which sets the
    snapshot id (today's date for an undated quote, so the key changes at midnight too) and the file label."""
    return tuple(
        sorted((kind, u.file_name, upload_snapshot_id(u.file_name), u.sha256) for kind, u in uploads.items())
    )


def team_data() -> TeamData:
    return _team_data_and_key()[0]


def session_uploads() -> dict[str, Upload]:
    """This browser session's uploads; empty outside a Streamlit run (the CLI, plain tests)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return {}
    return st.session_state.get(UPLOADS_KEY) or {}


def clear_data_cache() -> None:
    """Forget every loaded and merged catalogue (tests; an operator who replaced files in place)."""
    with _lock:
        _stamps.clear()
        _team.clear()


@st.cache_resource(show_spinner=False)
def model_names() -> list[str]:
    # presets are bundled only: no team or upload layer; the vision-language and diffusion presets after them
    return preset_names(default_catalogs().models, multimodal=True)


# --- the team folder -----------------------------------------------------------------------------------


def _team_data_and_key() -> tuple[TeamData, tuple]:
    folder = os.environ.get(OVERLAY_ENV, "").strip()
    key = (folder, _folder_stamps(folder))
    loaded = _team.get(key)
    if loaded is None:
        loaded = _load_team(folder)
        with _lock:
            _team.clear()  # only the current state of the folder is worth keeping
            _team[key] = loaded
    return loaded, key


def _folder_stamps(folder: str) -> tuple:
    if not folder:
        return ()
    now = time.monotonic()
    seen = _stamps.get(folder)
    if seen is not None and now - seen[0] < RECHECK_S:
        return seen[1]
    stamps = _stat_files(Path(folder))
    with _lock:
        _stamps[folder] = (now, stamps)
    return stamps


def _stat_files(folder: Path) -> tuple:
    """(name, size, mtime) of every CSV the overlay may read: a change in any of them means a reload."""
    paths = [*folder.glob("*.csv"), *folder.glob("prices/*.csv")]
    stamps = []
    for path in sorted(paths):
        try:
            stat = path.stat()
        except OSError:
            continue
        stamps.append((str(path.relative_to(folder)), stat.st_size, stat.st_mtime_ns))
    return tuple(stamps)


def _load_team(folder: str) -> TeamData:
    bundled = default_catalogs()
    if not folder:
        return TeamData(bundled, "", (), (), None)
    path = Path(folder)
    files = tuple(name for name, _, _ in _stat_files(path) if name in TEAM_FILES or name.startswith("prices"))
    ignored = tuple(unread_files(path))
    try:  # the same function the CLI calls, so the app and `planner compare` see the same catalogues
        return TeamData(catalogs_from_environment({OVERLAY_ENV: folder}), folder, files, ignored, None)
    except CatalogError as err:
        return TeamData(bundled, folder, files, ignored, str(err))


# --- session uploads -------------------------------------------------------------------------------------


def merge_uploads(base: Catalogs, uploads: Mapping[str, Upload]) -> Catalogs:
    """`base` with an uploaded GPU file and/or price snapshot over it, rows tagged origin "upload".

    The same overlay as the team folder's (planner.catalogue.catalog_overlay: an uploaded GPU replaces the
    one its name names, a price replaces the same GPU in the same snapshot). Raises CatalogError naming the
    uploaded file, row and column.
    """
    return overlay(base, upload_files(uploads), UPLOAD)


def upload_files(uploads: Mapping[str, Upload]) -> list[LayerFile]:
    """The uploads as a layer of catalogue files: a GPU file, and a price snapshot named by its id."""
    files = []
    for kind, upload in uploads.items():
        path = "gpus.csv" if kind == "gpus" else f"prices/{upload_snapshot_id(upload.file_name)}.csv"
        files.append(LayerFile(path, upload.data, f"uploaded {upload.file_name}"))
    return files


def upload_snapshot_id(file_name: str) -> str:
    """A price upload's snapshot id: the file name when it is one (2026-12-01.csv, 2026-12-01-acme.csv),
    otherwise today's date with "-upload", so a quote without a dated name is the newest snapshot."""
    stem = Path(file_name).stem.strip()
    try:
        snapshot_date(stem)  # the one rule for ids (planner.catalogue.catalog_tables)
    except ValueError:
        return f"{date.today().isoformat()}-upload"
    return stem
