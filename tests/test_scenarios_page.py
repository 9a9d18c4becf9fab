"""Scenarios page (AppTest): the team plan library. Save, list, search, load, duplicate, rename, tag, delete and
undo, stale saves refused with both versions kept, plans that no longer validate listed and repaired, compare,
CSV out into a fresh library and back, an unreachable library, the share link.

Each test has an empty SQLite library of its own (`fresh_library`); "another user" is the library opened
directly between two runs of the app.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import update
from streamlit.runtime.media_file_manager import MediaFileManager

from planner import open_library
from planner.catalogue.catalog import default_catalogs
from planner.catalogue.models import find_model, load_model_presets
from planner.decide.scenario_results import saved_scenarios_csv
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import scenarios_to_csv
from planner.library.tables import plans as plans_table
from ui.library import AUTHOR_KEY, LOADED_KEY, LoadedPlan
from ui.state import SCENARIO_KEY

PAGE = "app_pages/scenarios.py"


@pytest.fixture
def page(fresh_library, app):
    app.switch_page(PAGE).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


@pytest.fixture
def lib(fresh_library):
    return open_library(fresh_library)


def ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def save_as(at, name: str, tags: str = ""):
    at.text_input(key="scn.name").input(name)
    at.text_input(key="scn.tags").input(tags)
    return ok(at.button(key="scn.save").click().run())


def use(at, scenario: Scenario):
    at.session_state[SCENARIO_KEY] = scenario
    return at.run()


def pick(at, lib, name: str):
    at.selectbox(key="scn.pick").set_value(lib.find(name).id)
    return at


def live(lib) -> dict[str, Scenario | None]:
    return {plan.name: plan.scenario for plan in lib.plans()}


def names_shown(at) -> list[str]:
    return list(table(at, "Name")["Name"])


def uploader(at):
    return next(u for u in at.file_uploader if (u.key or "").startswith("scn.upload"))


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def table(at, first_column: str):
    """The dataframe whose first column is `first_column` (pandas, as AppTest returns it)."""
    return next(d.value for d in at.dataframe if d.value.columns[0] == first_column)


def texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


ODD = {
    '=SUM(A1), "quoted"': Scenario(n_gpus=16, mfu=0.30000000000000004),
    "Ünïcødé 模型 🚀": Scenario(
        model="", model_shape=find_model(load_model_presets(), "Qwen2.5 7B"), usd_per_gpu_hour=2.5
    ),
    "-spot, eastus": Scenario(pricing="spot", region="eastus", snapshot="2025-09-30"),
}


def test_save_lists_the_plan_with_author_tags_version_and_results(page, lib):
    page.text_input(key="scn.author").input("Ada").run()
    save_as(use(page, Scenario(n_gpus=16)), "sixteen", "project-x, lora")
    assert any("Saved 'sixteen' to the team library (version 1)" in t for t in texts(page.success))
    row = table(page, "Name").iloc[0]
    assert (row["Name"], row["GPUs"], row["Tags"], row["Author"], row["Version"]) == (
        "sixteen",
        "16 × H100 SXM",
        "project-x, lora",
        "Ada",
        1,
    )
    assert row["GPU-hours"] > 0 and row["Fits"] in {"yes", "no"}
    stored = lib.find("sixteen")
    assert (stored.scenario, stored.author, stored.tags) == (
        Scenario(n_gpus=16),
        "Ada",
        ("project-x", "lora"),
    )
    assert any(s.value.startswith("Team library (1 plan) · SQLite at ") for s in page.subheader)
    # The name is the session's: the next save carries it too, and it is never in the URL.
    page.switch_page("app_pages/overview.py").run()
    page.switch_page(PAGE).run()
    assert page.text_input(key="scn.author").value == "Ada"
    assert page.session_state[AUTHOR_KEY] == "Ada" and "Ada" not in str(page.query_params)


def test_load_changes_the_overview_and_remembers_the_version(page, lib):
    save_as(page, "eight GPUs")
    eight = table(page, "Name")
    page.sidebar.text_input(key="w.n_gpus").input("32").run()
    page.switch_page("app_pages/overview.py").run()
    hours_at_32 = metric(page, "GPU-hours")
    page.switch_page(PAGE).run()
    pick(page, lib, "eight GPUs")
    ok(page.button(key="scn.load").click().run())
    assert page.session_state[SCENARIO_KEY] == Scenario()
    assert page.session_state[LOADED_KEY] == LoadedPlan(lib.find("eight GPUs").id, 1, "eight GPUs")
    assert page.sidebar.text_input(key="w.n_gpus").value == "8"
    page.switch_page("app_pages/overview.py").run()
    hours_at_8 = metric(page, "GPU-hours")
    assert hours_at_8 != hours_at_32
    assert hours_at_8 == f"{eight['GPU-hours'][0]:,.1f}"  # the Overview shows one decimal
    # "Save changes" writes version 2 of the same plan.
    page.sidebar.text_input(key="w.n_gpus").input("16").run()
    page.switch_page(PAGE).run()
    ok(page.button(key="scn.save_changes").click().run())
    stored = lib.find("eight GPUs")
    assert (stored.version, stored.scenario) == (2, Scenario(n_gpus=16))
    assert page.button(key="scn.save_changes").label == "Save changes to 'eight GPUs' (version 2)"


def test_duplicate_rename_retag_delete_and_undo(page, lib):
    save_as(page, "a")
    save_as(use(page, Scenario(n_gpus=16)), "b", "one")
    pick(page, lib, "a")
    page.text_input(key="scn.rename_to").input("alpha")
    ok(page.button(key="scn.rename").click().run())
    assert set(live(lib)) == {"alpha", "b"}
    pick(page, lib, "b")
    page.text_input(key="scn.rename_to").input("alpha")
    ok(page.button(key="scn.rename").click().run())
    assert set(live(lib)) == {"alpha", "b"}
    assert any("another plan is called 'alpha'" in text for text in texts(page.error))

    pick(page, lib, "b").button(key="scn.duplicate").click().run()
    pick(page, lib, "b").button(key="scn.duplicate").click().run()
    assert set(live(lib)) == {"alpha", "b", "b (copy)", "b (copy 2)"}
    assert live(lib)["b (copy 2)"] == Scenario(n_gpus=16)
    assert lib.find("b (copy)").tags == ("one",)

    pick(page, lib, "b (copy)")
    page.run()
    assert page.text_input(key="scn.tags_to").value == "one"
    page.text_input(key="scn.tags_to").input("one, two")
    ok(page.button(key="scn.set_tags").click().run())
    assert lib.find("b (copy)").tags == ("one", "two")
    page.switch_page("app_pages/overview.py").run()
    pick(page.switch_page(PAGE).run(), lib, "b (copy)").run()
    assert page.text_input(key="scn.tags_to").value == "one, two"  # seeded again after a page switch

    alpha = lib.find("alpha").id
    ok(pick(page, lib, "alpha").button(key="scn.delete").click().run())
    assert set(live(lib)) == {"b", "b (copy)", "b (copy 2)"}
    assert "alpha" not in names_shown(page)
    assert any("Deleted 'alpha'" in text for text in texts(page.success))
    ok(page.button(key=f"scn.undo_flash.{alpha}").click().run())  # the Undo beside the message
    assert "alpha" in live(lib) and "alpha" in names_shown(page)
    ok(pick(page, lib, "alpha").button(key="scn.delete").click().run())
    ok(page.run())  # the message is gone; the plan is under "Recently deleted"
    assert not [b for b in page.button if b.key == f"scn.undo_flash.{alpha}"]
    ok(page.button(key=f"scn.undo.{alpha}").click().run())
    assert live(lib)["alpha"] == Scenario()
    assert any("Restored 'alpha'" in text for text in texts(page.success))


def test_search_by_name_tag_model_and_gpu(page, lib):
    save_as(page, "baseline", "team-a")
    save_as(use(page, Scenario(gpu="H200 SXM")), "bigger memory", "team-b")
    save_as(use(page, Scenario(model="Qwen2.5 7B")), "qwen try", "team-a, qlora")
    for words, expected in [
        ("team-a", {"baseline", "qwen try"}),
        ("qwen", {"qwen try"}),
        ("H200", {"bigger memory"}),
        ("team-a qlora", {"qwen try"}),
        ("BASELINE", {"baseline"}),
    ]:
        page.text_input(key="scn.search").input(words).run()
        assert set(names_shown(page)) == expected, words
    page.text_input(key="scn.search").input("nothing-like-this").run()
    assert any("No plan matches 'nothing-like-this'" in text for text in texts(page.info))


def test_taken_names_bad_names_and_bad_tags_are_refused(page, lib):
    save_as(page, "plan")
    save_as(use(page, Scenario(n_gpus=16)), "plan")
    assert live(lib) == {"plan": Scenario()}
    assert any("already in the team library" in t and "Save changes" in t for t in texts(page.error))
    save_as(page, "   ")
    assert any("Not saved: Name: a name is needed" in text for text in texts(page.error))
    save_as(page, "tagged", "x" * 41)
    assert any("Not saved: Tags: a tag has at most 40 characters" in text for text in texts(page.error))
    assert set(live(lib)) == {"plan"}


def test_a_stale_save_is_refused_with_a_message_and_both_versions_kept(page, lib):
    page.text_input(key="scn.author").input("me").run()
    save_as(page, "shared plan")
    stored = lib.find("shared plan")
    lib.update(stored.id, Scenario(n_gpus=64), expected_version=1, author="Grace")  # another user, meanwhile
    use(page, Scenario(n_gpus=32))
    assert any("changed by Grace since you loaded it (now version 2)" in t for t in texts(page.warning))
    ok(page.button(key="scn.save_changes").click().run())
    errors = " ".join(texts(page.error))
    assert "Not saved over 'shared plan': it was changed by Grace at " in errors
    assert "kept as 'shared plan (copy)'" in errors and "both versions are in the team library" in errors
    assert live(lib) == {"shared plan": Scenario(n_gpus=64), "shared plan (copy)": Scenario(n_gpus=32)}
    assert "conflict" in lib.find("shared plan (copy)").tags
    assert page.session_state[LOADED_KEY].name == "shared plan (copy)"  # further saves go to your copy


def _break(lib, name: str) -> int:
    """A plan an older planner saved: an input today's planner lacks and a value it refuses."""
    plan = lib.find(name)
    stored = json.loads(plan.scenario_json) | {"flux_capacitor": 1.21, "mfu": 7}
    with lib.engine.begin() as connection:
        connection.execute(
            update(plans_table).where(plans_table.c.id == plan.id).values(scenario_json=json.dumps(stored))
        )
    return plan.id


def test_a_plan_that_no_longer_validates_is_listed_with_its_reason_and_repair_saves_it(page, lib):
    save_as(use(page, Scenario(n_gpus=16)), "old plan")
    plan_id = _break(lib, "old plan")
    use(page, Scenario())
    page.run()
    row = table(page, "Name").set_index("Name").loc["old plan"]
    assert "mfu" in row["Problem"] and "less than or equal to 1" in row["Problem"]
    pick(page, lib, "old plan").run()
    assert page.button(key="scn.load").disabled and page.button(key="scn.duplicate").disabled
    assert any("no longer validates" in text for text in texts(page.warning))
    ok(page.button(key="scn.repair").click().run())
    assert page.session_state[SCENARIO_KEY] == Scenario(n_gpus=16)  # the bad fields at their defaults
    warnings = " ".join(texts(page.warning))
    assert "Dropped saved field 'flux_capacitor'" in warnings and "mfu" in warnings
    assert lib.get(plan_id).problem is not None  # the stored original stays until "Save changes"
    ok(page.button(key="scn.save_changes").click().run())
    fixed = lib.get(plan_id)
    assert (fixed.problem, fixed.scenario, fixed.version) == (None, Scenario(n_gpus=16), 2)


def test_csv_download_into_a_fresh_library_restores_identical_plans(page, lib, tmp_path, monkeypatch):
    for name, scenario in ODD.items():
        save_as(use(page, scenario), name)
    assert live(lib) == ODD

    built = []
    original = MediaFileManager.add_deferred

    def spy(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        if file_name == "scenarios.csv":
            built.append(data_callable)
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    page.run()
    assert page.download_button(key="scn.download").label == "Download all as CSV"
    data = built[-1]().encode()
    assert data.decode() == saved_scenarios_csv(  # inputs and headline results, newest change first
        {plan.name: plan.scenario for plan in lib.plans()}, default_catalogs()
    )
    assert data.startswith(b"name,") and b"'=SUM(A1)" in data  # the formula name is neutralised

    empty = f"sqlite:///{tmp_path / 'restored.sqlite3'}"
    monkeypatch.setenv("PLANNER_DB_URL", empty)
    page.run()
    assert any("Team library (0 plans)" in s.value for s in page.subheader)
    uploader(page).upload("scenarios.csv", data, "text/csv")
    page.run()
    assert not page.error, texts(page.error)
    assert any("3 scenario(s)" in text for text in texts(page.markdown))
    ok(page.button(key="scn.import").click().run())
    assert live(open_library(empty)) == ODD
    assert any("Imported 3 plan(s)" in text for text in texts(page.success))
    assert uploader(page).value is None  # the uploader starts empty again, so a rerun cannot re-import


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"name,n_gpus\nok,8\nbad,0\n", "Row 3, column n_gpus"),
        (b"name,method\nx,dora\n", "Row 2, column method"),
        (b"name,tp\nx,3\n", "Row 2, column tp: n_gpus must be a multiple of tp x pp x cp = 3"),
        (b"name,gpu\nx,H900\n", "Row 2, column gpu: unknown GPU (got 'H900'; closest: H200 SXM"),
        (b"title,n_gpus\nx,8\n", "no 'name' column"),
        (b"name,n_gpus\n\xff\xfe,8\n", "UTF-8"),
        (b"", "empty"),
    ],
)
def test_bad_upload_explains_and_imports_nothing(page, lib, data, expected):
    save_as(page, "keep me")
    before = live(lib)
    uploader(page).upload("scenarios.csv", data, "text/csv")
    page.run()
    errors = texts(page.error)
    assert any("Nothing was imported" in text and "library is unchanged" in text for text in errors)
    assert any(expected in text for text in errors), errors
    assert not any(button.key == "scn.import" for button in page.button)
    assert live(lib) == before


def test_good_upload_with_a_clash_says_what_it_replaces_and_adds(page, lib):
    save_as(page, "shared")
    data = scenarios_to_csv({"shared": Scenario(n_gpus=64), "new": Scenario(epochs=1)})
    uploader(page).upload("mine.csv", data.encode(), "text/csv")
    page.run()
    assert any("1 will replace plans with the same name" in t and "shared" in t for t in texts(page.markdown))
    assert live(lib) == {"shared": Scenario()}  # nothing changes before "Import them"
    ok(page.button(key="scn.import").click().run())
    assert live(lib) == {"shared": Scenario(n_gpus=64), "new": Scenario(epochs=1)}
    assert lib.find("shared").version == 2


def test_compare_marks_the_inputs_that_differ(page, lib):
    save_as(page, "base")
    save_as(use(page, Scenario(n_gpus=16, method="lora")), "lora 16")
    save_as(use(page, Scenario(n_gpus=16)), "full 16")
    ids = [lib.find(name).id for name in ("base", "lora 16", "full 16")]
    page.multiselect(key="scn.compare").set_value(ids).run()
    inputs = table(page, "Input")
    assert list(inputs["Input"]) == ["n_gpus", "method"]
    assert list(inputs.columns) == ["Input", "A · base", "B · lora 16", "C · full 16", "Differs"]
    assert list(inputs["B · lora 16"]) == ["16", "lora"]
    assert set(inputs["Differs"]) == {"≠"}
    page.toggle(key="scn.only_differing").set_value(False).run()
    everything = table(page, "Input")
    assert len(everything) == len(Scenario.model_fields)
    assert everything.set_index("Input").loc["gpu", "Differs"] == ""
    results = table(page, "Result")
    assert "Cost (USD)" in list(results["Result"])


def test_an_unreachable_library_says_so_and_the_rest_of_the_page_works(app, monkeypatch):
    monkeypatch.setenv("PLANNER_DB_URL", "postgresql+psycopg://x@127.0.0.1:1/nope")
    app.sidebar.text_input(key="w.n_gpus").input("16").run()
    ok(app.switch_page(PAGE).run())
    errors = texts(app.error)
    assert len(errors) == 1, errors
    assert "cannot be used" in errors[0] and "PLANNER_DB_URL" in errors[0] and "127.0.0.1:1" in errors[0]
    app.session_state["scn.share"] = True  # the share link's popover opened
    app.run()
    assert "n_gpus=16" in app.code[0].value
    assert app.download_button(key="scn.download_current").label == "Download the current plan as CSV"
    assert app.session_state[SCENARIO_KEY].n_gpus == 16  # nothing the user entered is lost
    ok(app.switch_page("app_pages/overview.py").run())
    assert metric(app, "GPU-hours")


def test_copy_link_shows_the_current_query_string(page):
    page.sidebar.text_input(key="w.n_gpus").input("16").run()
    page.sidebar.text_input(key="w.epochs").input("2.5").run()
    assert len(page.code) == 0  # the link waits for its popover: no code block (and highlighter) on arrival
    page.session_state["scn.share"] = True
    page.run()
    link = page.code[0].value
    assert link.startswith("?") and "n_gpus=16" in link and "epochs=2.5" in link
    assert page.query_params["n_gpus"] == "16"  # the address bar (app.py's sync) holds the same values
