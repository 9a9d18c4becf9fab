"""A team's own data: the PLANNER_DATA_DIR overlay and per-session uploads reach the catalogues and the pages,
and a bad file is reported (file, row, column) while the working data keeps working."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from tests.conftest import APP, team_uploader
from ui import data as ui_data

GPU_HEADER = (
    "name,vendor,aliases,generation,tflops_bf16,memory_gib,memory_bw_tb_per_s,tdp_w,intra_node_gb_per_s,"
    "pcie_gb_per_s,launch_year,source,as_of"
)
# A made-up accelerator: 500 dense BF16 TFLOP/s, 96 GiB, 600 W, 300 GB/s NVLink-like link, PCIe Gen5.
ACME_GPU = (
    f"{GPU_HEADER}\nAcme X1,Acme,acme-x1,other,500,96,4.0,600,300,63.0,2026,team spec sheet,2026-11-20\n"
)
PRICE_HEADER = "gpu,usd_per_gpu_hour_median,price_basis,source,as_of"
# The team's negotiated quote: H100 SXM at $1.23/GPU-h (the bundled 2026-11-09 median is $3.93).
TEAM_QUOTES = (
    f"{PRICE_HEADER}\n"
    "Acme X1,2.5,neocloud_list,team quote,2026-11-25\n"
    "H100 SXM,1.23,neocloud_list,team quote,2026-11-25\n"
)
QUOTE_SNAPSHOT = "2030-01-01"  # later than every bundled snapshot, so it is the default one


def metric(at: AppTest, label: str) -> str:
    for element in at.metric:
        if element.label == label:
            return element.value
    raise AssertionError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


def errors(at: AppTest) -> str:
    return "\n".join(e.value for e in at.error)


@pytest.fixture(autouse=True)
def fresh_data(fresh_catalogs: None) -> None:
    st.cache_resource.clear()  # and the process-wide resources: these tests replace the catalogues under them


@pytest.fixture
def team_dir(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "prices").mkdir()
    (tmp_path / "gpus.csv").write_text(ACME_GPU)
    (tmp_path / "prices" / f"{QUOTE_SNAPSHOT}.csv").write_text(TEAM_QUOTES)
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path))
    return tmp_path


def run_app(page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def uploader(at: AppTest, kind: str):
    return team_uploader(at, kind)


# --- the team folder ---------------------------------------------------------------------------------------


def test_overlay_gpu_and_quote_reach_the_catalogues(team_dir):
    cats = ui_data.catalogs()
    acme = cats.gpus.filter(cats.gpus["name"] == "Acme X1")
    assert acme.height == 1 and acme["origin"][0] == "team"
    assert cats.gpus.height == ui_data.default_catalogs().gpus.height + 1
    quote = cats.prices.filter(
        (cats.prices["snapshot"] == QUOTE_SNAPSHOT) & (cats.prices["gpu"] == "H100 SXM")
    )
    assert quote["usd_per_gpu_hour_median"][0] == pytest.approx(1.23, rel=1e-9)
    assert quote["origin"][0] == "team"


def test_default_path_is_a_cache_hit(team_dir):
    first = ui_data.catalogs()
    start = time.perf_counter()
    for _ in range(1000):
        again = ui_data.catalogs()
    per_call_s = (time.perf_counter() - start) / 1000
    assert again is first  # the same object: nothing was reloaded or merged again
    print(f"catalogs() per call: {per_call_s * 1e6:.1f} us")  # shown with pytest -s


def test_overlay_gpu_is_offered_and_estimated(team_dir):
    at = run_app()
    assert "Acme X1" in at.sidebar.selectbox(key="w.gpu").options
    at.sidebar.selectbox(key="w.gpu").set_value("Acme X1").run()
    assert not at.exception
    assert at.session_state["scenario"].gpu == "Acme X1"
    # 96 GiB from the team file is the VRAM the memory verdict is measured against.
    assert any("96.0 GiB" in str(m.delta) for m in at.metric)


def test_team_quote_sets_the_rate_on_the_cost_page(team_dir):
    at = run_app("app_pages/cost.py")
    # On demand (no discount), newest snapshot = the team's: $1.23 per GPU-hour for the default H100 SXM.
    assert metric(at, "Rate") == "$1.23/GPU-h"


def test_team_rows_are_marked_on_the_compare_page(team_dir):
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    try:
        at.switch_page("app_pages/compare.py").run()
    except ValueError:
        pytest.skip("the Compare page is not registered in app.py yet")
    assert not at.exception, [e.value for e in at.exception]
    tables = [d.value for d in at.dataframe if "origin" in d.value.columns]
    assert tables, "the Compare table shows an origin column"
    rows = tables[0][tables[0].iloc[:, 0].astype(str).str.contains("Acme X1")]
    assert not rows.empty and set(rows["origin"]) == {"team"}


@pytest.mark.parametrize(
    ("file_name", "text", "where"),
    [
        ("gpus.csv", ACME_GPU.replace(",600,", ",-600,"), "row 2, column 'tdp_w'"),
        (f"prices/{QUOTE_SNAPSHOT}.csv", TEAM_QUOTES.replace("H100 SXM,1.23", "H100 SXM,lots"), "row 3"),
    ],
)
def test_malformed_overlay_is_reported_and_bundled_data_works(team_dir, file_name, text, where):
    (team_dir / file_name).write_text(text)
    at = run_app()
    message = errors(at)
    assert file_name.split("/")[-1] in message and where in message, message
    assert "bundled" in message
    assert any(where in w.value for w in at.main.warning), "the page itself says the team data is not used"
    # The bundled catalogue still drives the estimate: H100 SXM at the bundled 2026-11-09 median, $3.93.
    assert "Acme X1" not in at.sidebar.selectbox(key="w.gpu").options
    at.switch_page("app_pages/cost.py").run()
    assert not at.exception
    assert metric(at, "Rate") == "$3.93/GPU-h"


def test_missing_overlay_folder_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv(ui_data.OVERLAY_ENV, str(tmp_path / "nowhere"))
    assert "no such folder" in (ui_data.team_data().error or "")
    assert ui_data.catalogs() is ui_data.default_catalogs()


def test_overlay_change_is_picked_up_without_restart(team_dir, monkeypatch):
    assert ui_data.catalogs().gpus.filter(ui_data.catalogs().gpus["name"] == "Acme X1").height == 1
    renamed = {"Acme X1": "Acme X2", "acme-x1": "acme-x2"}
    for path, text in (
        (team_dir / "gpus.csv", ACME_GPU),
        (team_dir / "prices" / f"{QUOTE_SNAPSHOT}.csv", TEAM_QUOTES),
    ):
        for old, new in renamed.items():
            text = text.replace(old, new)
        path.write_text(text)
    monkeypatch.setattr(ui_data, "RECHECK_S", 0.0)
    names = ui_data.catalogs().gpus["name"].to_list()
    assert "Acme X2" in names and "Acme X1" not in names


# --- uploads for one session -------------------------------------------------------------------------------


def test_uploaded_gpu_and_price_are_used_in_this_session_only():
    at = run_app("app_pages/cost.py")
    uploader(at, "gpus").upload("our-gpus.csv", ACME_GPU.encode(), "text/csv").run()
    assert not at.exception and not at.error, errors(at)
    uploader(at, "prices").upload(f"{QUOTE_SNAPSHOT}.csv", TEAM_QUOTES.encode(), "text/csv").run()
    assert not at.exception and not at.error, errors(at)
    assert "Acme X1" in at.sidebar.selectbox(key="w.gpu").options
    assert metric(at, "Rate") == "$1.23/GPU-h"
    assert any(f"in use: {QUOTE_SNAPSHOT}.csv" in c.value for c in at.sidebar.caption)
    other = run_app("app_pages/cost.py")  # another browser session sees the bundled data
    assert "Acme X1" not in other.sidebar.selectbox(key="w.gpu").options
    assert metric(other, "Rate") == "$3.93/GPU-h"


@pytest.mark.parametrize(
    ("kind", "file_name", "text", "where"),
    [
        ("gpus", "bad-gpus.csv", ACME_GPU.replace(",96,", ",ninety-six,"), "row 2, column 'memory_gib'"),
        # "h100" already names the bundled H100 SXM: a new GPU may not take it over.
        ("gpus", "alias.csv", ACME_GPU.replace("acme-x1", "h100"), "row 2, column 'aliases'"),
        ("prices", f"{QUOTE_SNAPSHOT}.csv", TEAM_QUOTES, "row 2, column 'gpu'"),  # Acme X1 is not uploaded
    ],
)
def test_bad_upload_shows_its_error_and_keeps_the_working_data(kind, file_name, text, where):
    at = run_app("app_pages/cost.py")
    before_rate = metric(at, "Rate")
    uploader(at, kind).upload(file_name, text.encode(), "text/csv").run()
    assert not at.exception
    message = errors(at)
    assert f"uploaded {file_name}" in message and where in message, message
    assert metric(at, "Rate") == before_rate
    assert "Acme X1" not in at.sidebar.selectbox(key="w.gpu").options


def test_bad_upload_after_a_good_one_keeps_the_good_one():
    at = run_app()
    uploader(at, "gpus").upload("our-gpus.csv", ACME_GPU.encode(), "text/csv").run()
    uploader(at, "gpus").upload("broken.csv", b"name,vendor\nx,y\n", "text/csv").run()
    assert "uploaded broken.csv" in errors(at)
    assert "Acme X1" in at.sidebar.selectbox(key="w.gpu").options


def test_stop_using_an_upload_restores_the_plan():
    at = run_app()
    uploader(at, "gpus").upload("our-gpus.csv", ACME_GPU.encode(), "text/csv").run()
    at.sidebar.selectbox(key="w.gpu").set_value("Acme X1").run()
    at.sidebar.button(key="team_data.remove.gpus").click().run()
    assert not at.exception
    assert "Acme X1" not in at.sidebar.selectbox(key="w.gpu").options
    assert at.session_state["scenario"].gpu == "H100 SXM"  # the default GPU again, with a notice
    assert any("Acme X1" in w.value for w in at.warning)


def test_upload_snapshot_id_rules():
    assert ui_data.upload_snapshot_id("2026-12-01.csv") == "2026-12-01"
    assert ui_data.upload_snapshot_id("2026-12-01-acme.csv") == "2026-12-01-acme"
    assert ui_data.upload_snapshot_id("our quotes.csv").endswith("-upload")


def test_upload_that_no_longer_fits_the_team_data_is_dropped_with_a_message(team_dir, monkeypatch):
    at = run_app()
    acme_quote = f"{PRICE_HEADER}\nAcme X1,2.0,neocloud_list,our quote,2026-11-26\n"
    uploader(at, "prices").upload("2029-06-01.csv", acme_quote.encode(), "text/csv").run()
    assert not at.error, errors(at)
    # The team drops Acme X1 from its folder: the session's quote for it cannot stay.
    (team_dir / "gpus.csv").unlink()
    (team_dir / "prices" / f"{QUOTE_SNAPSHOT}.csv").write_text(
        TEAM_QUOTES.splitlines()[0] + "\n" + TEAM_QUOTES.splitlines()[2]
    )
    monkeypatch.setattr(ui_data, "RECHECK_S", 0.0)
    at.run()
    assert not at.exception
    assert "no longer fit" in errors(at) and "Acme X1" in errors(at)
    assert "Acme X1" not in at.sidebar.selectbox(key="w.gpu").options


def test_the_upload_section_draws_its_uploaders_only_while_open():
    """A closed "Your own GPUs and prices" draws no uploaders (two widgets fewer on every rerun); opened, it shows
    them and the upload in use; closed again, the upload stays in use."""
    from ui.team_data import UPLOADS_OPEN_KEY

    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.sidebar.get("file_uploader")
    uploader(at, "gpus").upload("our-gpus.csv", ACME_GPU.encode(), "text/csv").run()
    assert len(at.sidebar.get("file_uploader")) == 2
    assert any("our-gpus.csv" in c.value for c in at.sidebar.caption)
    at.session_state[UPLOADS_OPEN_KEY] = False
    at.run()
    assert not at.sidebar.get("file_uploader")
    assert "Acme X1" in at.sidebar.selectbox(key="w.gpu").options
