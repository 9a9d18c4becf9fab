"""The Runs page in a real browser: upload Hugging Face trainer logs, attach them to a saved plan, see plan
versus actual, fit and apply the team calibration, restart the server and find it all still there (the team
library holds the runs and the calibration, not the process or the browser session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import Scenario, open_library
from tests.e2e.app_page import AppPage
from tests.e2e.conftest import start_server, stop_server

pytestmark = pytest.mark.e2e

PLAN = "team plan"
# train_steps_per_second of three example runs (3 s, 2.5 s and 2.86 s per step): the runs the team uploads
STEPS_PER_S = (0.3333, 0.4, 0.35)


def _trainer_state(folder: Path, number: int, steps_per_s: float) -> Path:
    path = folder / f"trainer_state_{number}.json"
    final = {"epoch": 1.0, "step": 100, "train_runtime": 100 / steps_per_s, "train_samples_per_second": 8.0,
             "train_steps_per_second": steps_per_s, "total_flos": 1e17}  # fmt: skip
    path.write_text(json.dumps({"global_step": 100, "log_history": [{"loss": 1.2, "step": 50}, final]}))
    return path


def _open(new_context, url: str, label: str, request) -> AppPage:
    page = new_context().new_page()
    return AppPage(page, url, f"{request.node.name}-{label}").goto(
        "/runs", heading="Runs: plan versus actual"
    )


def test_upload_attach_compare_calibrate_and_restart(browser_available, tmp_path: Path, request) -> None:
    new_context = request.getfixturevalue("new_context")
    environment = {"PLANNER_DB_URL": f"sqlite:///{tmp_path / 'team.sqlite3'}"}
    open_library(environment["PLANNER_DB_URL"]).save(PLAN, Scenario(gpu="H100 SXM"), author="ana", tags=())
    server, url = start_server(tmp_path / "first.log", environment)
    try:
        app = _open(new_context, url, "first", request)
        logs = [_trainer_state(tmp_path, n, rate) for n, rate in enumerate(STEPS_PER_S)]
        app.page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([str(p) for p in logs])
        app.wait_idle()
        app.page.get_by_text("trainer_state_2.json").first.wait_for()
        app.page.get_by_role("button", name="Attach the imported runs to this plan").click()
        app.wait_idle()
        assert any("Attached 3 run(s)" in text for text in app.alerts()), app.alerts()
        assert sorted(set(app.dataframe_column(nth=0, column=1))) == [
            f"trainer_state_{n}.json" for n in range(3)
        ]
        app.page.get_by_role("button", name="Fit from the team's runs").click()
        app.wait_idle()
        assert app.dataframe_column(nth=1, column=5) == ["3"]  # n_runs
        app.page.get_by_text("Calibrated to your runs").click()
        app.wait_idle()
        app.shot("calibrated")
        assert not any("no team calibration" in text for text in app.alerts())
    finally:
        stop_server(server)
    server, url = start_server(tmp_path / "restarted.log", environment)
    try:
        again = _open(new_context, url, "restarted", request)
        assert sorted(set(again.dataframe_column(nth=0, column=1))) == [
            f"trainer_state_{n}.json" for n in range(3)
        ]
        again.page.get_by_text("Calibrated to your runs").click()
        again.wait_idle()
        again.shot("after-restart")
        assert not any("no team calibration" in text for text in again.alerts()), again.alerts()
    finally:
        stop_server(server)
