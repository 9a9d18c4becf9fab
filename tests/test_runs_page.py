"""Runs page (AppTest): a saved plan with runs attached shows plan versus actual; fitting the team calibration
shows the leave-one-run-out errors, and "Calibrated to your runs" changes the predictions. AppTest cannot drive
the upload box, so the runs are imported and attached through the same public API the page calls.

Each test has an empty SQLite library of its own (`fresh_library`, tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

from planner import Scenario, import_runs, open_library, save_run

PAGE = "app_pages/runs.py"
DATA = Path(__file__).parent / "data" / "runs"
TOKENS = (5100.0, 5300.0, 4900.0)  # steady tokens/s per GPU of three example runs


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _runs(folder: Path) -> list[Path]:
    paths = []
    for number, tokens in enumerate(TOKENS):
        path = folder / f"run{number}.txt"
        path.write_text(
            "".join(
                f"Step {step} | tokens_per_second_per_gpu:{tokens} peak_memory_alloc:{18 + number / 10:.1f} \n"
                for step in (1, 2, 3)
            )
        )
        paths.append(path)
    return paths


def test_plan_versus_actual_and_calibration(fresh_library, app, tmp_path: Path) -> None:
    library = open_library(fresh_library)
    plan = library.save("team plan", Scenario(gpu="H100 SXM"), author="ana", tags=())
    for record in import_runs(_runs(tmp_path)):
        save_run(library, record, plan_id=plan.id)
    at = ok(app.switch_page(PAGE).run())
    versus = at.dataframe[0].value
    tokens = versus[versus["figure"] == "throughput (tokens/s per GPU)"]
    assert sorted(tokens["measured"]) == sorted(TOKENS)
    before = float(tokens["predicted"].iloc[0])
    at = ok(at.button(key="runs.fit").click().run())
    fitted = at.dataframe[1].value
    assert fitted["n_runs"].iloc[0] == 3
    assert fitted["time_error_after"].iloc[0] <= fitted["time_error_before"].iloc[0]
    at = ok(at.toggle(key="runs.calibrated").set_value(True).run())
    calibrated = at.dataframe[0].value
    after = float(calibrated[calibrated["figure"] == "throughput (tokens/s per GPU)"]["predicted"].iloc[0])
    assert after < before  # the runs were slower than planned: the calibrated plan is slower too


def test_no_saved_plan_says_so(fresh_library, app) -> None:
    at = ok(app.switch_page(PAGE).run())
    assert any("Save a plan on the Scenarios page first" in info.value for info in at.info)


def test_scenarios_page_shows_plan_versus_actual(fresh_library, app) -> None:
    library = open_library(fresh_library)
    plan = library.save("with a run", Scenario(gpu="H100 SXM"), author="ana", tags=())
    (record,) = import_runs([DATA / "megatron.log"])
    save_run(library, record, plan_id=plan.id)
    at = ok(app.switch_page("app_pages/scenarios.py").run())
    versus = next(frame.value for frame in at.dataframe if "measured" in frame.value.columns)
    step = versus[versus["figure"] == "step time (s per optimizer step)"]
    assert float(step["measured"].iloc[0]) == 6.1
