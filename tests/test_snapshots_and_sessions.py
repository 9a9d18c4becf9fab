"""Snapshot ids and session-scoped uploads in the app, through AppTest.

- A price file named `quote.csv` or `2026-12-01-acme.csv` (the suffix form data/README.md documents) no longer
  crashes the Cost page's price history, uploaded or in the team folder.
- Two sessions uploading the same bytes under different names each see their own snapshot name: the merged
  catalogues are cached per session and keyed by name as well as content.
- A session's merged catalogues are released with the session (nothing process-wide keeps them).
- A team folder's FIFO or misspelled file gives a message naming the file, not a hang or silence.
"""

from __future__ import annotations

import gc
import os
import weakref
from datetime import date
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import APP
from tests.test_team_data import PRICE_HEADER, uploader
from ui import data as ui_data

COST = "app_pages/cost.py"
# The bundled H100 SXM at $2.10: a quote below the 2026-11-09 median ($3.93), dated before the file name's date.
QUOTE = f"{PRICE_HEADER}\nH100 SXM,2.10,neocloud_list,our quote,2026-11-30\n".encode()


pytestmark = pytest.mark.usefixtures("fresh_catalogs")


def _cost_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(COST).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _in_use(at: AppTest) -> str:
    return " ".join(c.value for c in at.sidebar.caption if "in use:" in c.value)


@pytest.mark.parametrize(
    ("file_name", "snapshot"),
    [
        ("2026-12-01-acme.csv", "2026-12-01-acme"),  # the documented suffix form
        ("2026-12-01_acme.csv", "2026-12-01_acme"),
        ("quote.csv", f"{date.today().isoformat()}-upload"),  # no date in the name: today's snapshot
    ],
)
def test_uploaded_snapshot_names_keep_the_cost_page_working(file_name, snapshot):
    at = _cost_page()
    uploader(at, "prices").upload(file_name, QUOTE, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]  # old code: str.to_date() raised here
    assert not at.error, [e.value for e in at.error]
    assert f"snapshot {snapshot}" in _in_use(at)
    assert at.get("vega_lite_chart"), "the price history is drawn"


def test_a_team_snapshot_with_a_suffix_keeps_the_cost_page_working(tmp_path, monkeypatch):
    (tmp_path / "prices").mkdir()
    (tmp_path / "prices" / "2026-12-01-acme.csv").write_bytes(QUOTE)
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    at = _cost_page()  # old code: the team folder broke Cost for every session
    assert not at.error, [e.value for e in at.error]
    assert "2026-12-01-acme" in at.selectbox(key="w.snapshot").options


def test_two_sessions_uploading_the_same_bytes_see_their_own_names():
    # Plain dates, which even the old Cost page could chart: this test is about whose name a session sees.
    first, second = _cost_page(), _cost_page()
    uploader(first, "prices").upload("2026-12-01.csv", QUOTE, "text/csv").run()
    uploader(second, "prices").upload("2026-12-02.csv", QUOTE, "text/csv").run()
    for at, mine, theirs in ((first, "2026-12-01", "2026-12-02"), (second, "2026-12-02", "2026-12-01")):
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert f"snapshot {mine}" in _in_use(at), _in_use(at)  # old code: the second saw the first's name
        options = at.selectbox(key="w.snapshot").options
        assert mine in options and theirs not in options, options


def test_a_sessions_merged_catalogues_are_released_with_the_session():
    at = _cost_page()
    uploader(at, "prices").upload("2026-12-03.csv", QUOTE, "text/csv").run()
    assert not at.exception, [e.value for e in at.exception]
    held = [
        weakref.ref(c) for c in gc.get_objects() if type(c).__name__ == "Catalogs" and _has(c, "2026-12-03")
    ]
    assert held, "no merged catalogues with the upload"
    del at  # the browser session ends
    gc.collect()
    alive = [ref for ref in held if ref() is not None]
    assert not alive, (
        "something outside the session still holds its uploaded catalogues (a process-wide cache)"
    )


def _has(cats: object, snapshot: str) -> bool:
    return snapshot in cats.snapshot_ids()  # type: ignore[attr-defined]


# --- the team folder in the app -------------------------------------------------------


def test_a_team_fifo_is_an_error_naming_the_file_not_a_hang(tmp_path, monkeypatch):
    (tmp_path / "prices").mkdir()
    os.mkfifo(tmp_path / "prices" / "2026-12-01.csv")
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    at = _cost_page()  # old code: the page never finished (default_timeout raised)
    message = " ".join(e.value for e in at.error)
    assert "2026-12-01.csv: is a FIFO" in message, message


def test_a_misspelled_team_file_gives_a_notice_with_the_closest_name(tmp_path: Path, monkeypatch):
    (tmp_path / "gpu.csv").write_text("name\n")
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    at = _cost_page()
    notices = [w.value for w in at.warning if "gpu.csv" in w.value]
    assert notices and "did you mean gpus.csv?" in notices[0], [w.value for w in at.warning]
