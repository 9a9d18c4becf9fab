"""The Plan sheet page: a row per plan, cell edits recompute that row, refused cells keep their value, a row
becomes the current plan, and rows save to the team library (AppTest; the grid's edits are seeded the way
AppTest documents for a keyed data_editor)."""

from __future__ import annotations

import pytest

from planner import Scenario, default_catalogs, estimate, open_library
from ui.state import SCENARIO_KEY

PAGE = "app_pages/plan_sheet.py"


@pytest.fixture
def sheet(app, fresh_library):
    open_library(fresh_library).create("four GPUs", Scenario(n_gpus=4), author="Ann")
    app.switch_page(PAGE).run()
    assert not app.exception
    return app


def grid(at):
    return at.data_editor[0].value


def edit(at, edited=None, added=None, deleted=None):
    generation = at.session_state["sheet.gen"] if "sheet.gen" in at.session_state else 0  # noqa: SIM401 (no .get on AppTest state)
    at.session_state[f"sheet.editor.{generation}"] = {
        "edited_rows": edited or {},
        "added_rows": added or [],
        "deleted_rows": deleted or [],
    }
    at.run()
    assert not at.exception


def test_the_current_plan_comes_first_then_the_library_with_results_from_the_one_estimate(sheet):
    frame = grid(sheet)
    assert list(frame["Name"]) == ["Current plan", "four GPUs"]
    cats = default_catalogs()
    for index, plan in enumerate([Scenario(), Scenario(n_gpus=4)]):
        expected = estimate(plan, cats)
        assert frame["Wall clock (h)"][index] == pytest.approx(expected.wall_clock_h, rel=1e-9)
        assert frame["Peak GiB/GPU"][index] == pytest.approx(expected.peak_gib_per_device, rel=1e-9)
        assert frame["Cost (USD)"][index] == pytest.approx(expected.cost_usd, rel=1e-9)


def test_editing_a_cell_recomputes_that_row_only(sheet):
    before = grid(sheet)
    # 4 -> 8 GPUs in one node: at the derived 1,024-token sequences and one micro-batch per step, 16 GPUs over
    # two nodes would be bound by the inter-node gradient traffic and slower, which is not what this test is about
    edit(sheet, edited={1: {"GPUs": 8}})
    after = grid(sheet)
    assert after["GPUs"][1] == 8
    assert after["Wall clock (h)"][1] == pytest.approx(
        estimate(Scenario(n_gpus=8), default_catalogs()).wall_clock_h
    )
    assert after["Wall clock (h)"][1] < before["Wall clock (h)"][1]
    assert after["Wall clock (h)"][0] == before["Wall clock (h)"][0]


def test_editing_the_current_plans_row_changes_every_page(sheet):
    edit(sheet, edited={0: {"Method": "qlora"}})
    assert sheet.session_state[SCENARIO_KEY].method == "qlora"
    sheet.switch_page("app_pages/overview.py").run()
    assert not sheet.exception


def test_a_refused_cell_names_the_row_and_column_and_keeps_the_old_value(sheet):
    edit(sheet, edited={1: {"GPUs": 0, "Micro-batch": 2}})
    messages = [e.value for e in sheet.error]
    assert any(
        "Row 2 (four GPUs), column “GPUs”" in m and ">= 1" in m and "previous value stays" in m
        for m in messages
    )
    frame = grid(sheet)
    assert frame["GPUs"][1] == 4 and frame["Micro-batch"][1] == 2  # the good cell of the same edit applies


def test_added_rows_save_to_the_library_and_edited_ones_as_new_versions(sheet, fresh_library):
    edit(sheet, added=[{"Name": "sixty-four", "GPUs": 64}])
    edit(sheet, edited={1: {"Epochs": 1}})
    sheet.button(key="sheet.save").click().run()
    library = open_library(fresh_library)
    assert library.find("sixty-four").scenario == Scenario(n_gpus=64)
    four = library.find("four GPUs")
    assert four.version == 2 and four.scenario.epochs == 1
    assert any("Saved 2 rows" in s.value for s in sheet.success)


def test_a_stale_row_is_refused_and_kept_beside_the_other_version(sheet, fresh_library):
    library = open_library(fresh_library)
    plan = library.find("four GPUs")
    library.update(plan.id, Scenario(n_gpus=2), expected_version=1, author="Bob")
    edit(sheet, edited={1: {"GPUs": 32}})
    sheet.button(key="sheet.save").click().run()
    assert any("changed by Bob" in e.value for e in sheet.error)
    assert library.find("four GPUs").scenario.n_gpus == 2
    assert library.find("four GPUs (copy)").scenario.n_gpus == 32


def test_a_row_made_current_is_what_every_page_shows(sheet):
    sheet.selectbox(key="sheet.pick").set_value(1).run()
    sheet.button(key="sheet.current").click().run()
    assert sheet.session_state[SCENARIO_KEY] == Scenario(n_gpus=4)
    assert list(grid(sheet)["GPUs"][:2]) == [4, 4]


def test_the_first_row_cannot_be_deleted_or_renamed(sheet):
    edit(sheet, edited={0: {"Name": "mine"}}, deleted=[0])
    messages = " ".join(e.value for e in sheet.error)
    assert "keeps its name" in messages and "current plan and stays" in messages
    assert list(grid(sheet)["Name"]) == ["Current plan", "four GPUs"]


def test_a_csv_adds_rows_updates_rows_of_the_same_name_and_a_bad_file_adds_nothing(sheet):
    from planner import saved_scenarios_csv

    cats = default_catalogs()
    good = saved_scenarios_csv({"four GPUs": Scenario(n_gpus=2), "from file": Scenario(n_gpus=32)}, cats)
    upload = next(u for u in sheet.file_uploader if (u.key or "").startswith("sheet.upload"))
    upload.upload("plans.csv", good.encode(), "text/csv").run()
    sheet.button(key="sheet.import").click().run()
    frame = grid(sheet)
    assert list(frame["Name"]) == ["Current plan", "four GPUs", "from file"]
    assert list(frame["GPUs"]) == [8, 2, 32]
    bad = good.replace(",32,", ",0,", 1)
    upload = next(u for u in sheet.file_uploader if (u.key or "").startswith("sheet.upload"))
    upload.upload("bad.csv", bad.encode(), "text/csv").run()
    assert any("Nothing was added from bad.csv" in e.value for e in sheet.error)
    assert not [b for b in sheet.button if b.key == "sheet.import"]


def test_an_emptied_sequence_length_follows_the_data_again(sheet):
    edit(sheet, edited={1: {"Sequence length": 8192}})
    assert grid(sheet)["Sequence length"][1] == 8192
    edit(sheet, edited={1: {"Sequence length": None}})
    assert not sheet.error
    assert sheet.session_state["sheet.rows"][0].scenario.seq_len is None
