"""Scenarios page (AppTest): save, CSV out and back in, load, rename, duplicate, delete, compare, share link."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.models import find_model, load_model_presets
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import scenarios_to_csv
from ui.state import SAVED_KEY, SCENARIO_KEY

PAGE = "app_pages/scenarios.py"


@pytest.fixture
def page(app):
    app.switch_page(PAGE).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def save_as(at, name: str, *, overwrite: bool = False):
    at.text_input(key="scn.name").input(name)
    if overwrite:
        at.checkbox(key="scn.overwrite").check()
    at.button(key="scn.save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def use(at, scenario: Scenario):
    at.session_state[SCENARIO_KEY] = scenario
    return at.run()


def uploader(at):
    return next(u for u in at.file_uploader if (u.key or "").startswith("scn.upload"))


def saved(at) -> dict[str, Scenario]:
    return dict(at.session_state[SAVED_KEY])


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


def test_save_download_clear_upload_restores_identical_scenarios(page, monkeypatch):
    for name, scenario in ODD.items():
        save_as(use(page, scenario), name)
    assert saved(page) == ODD

    captured: list[bytes] = []
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        if filename == "scenarios.csv":
            captured.append(path_or_data if isinstance(path_or_data, bytes) else path_or_data.encode())
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    page.run()
    assert page.download_button(key="scn.download").label == "Download all as CSV"
    data = captured[-1]
    assert data.decode() == scenarios_to_csv(ODD, None, default_catalogs())
    assert data.startswith(b"name,") and b"'=SUM(A1)" in data  # the formula name is neutralised

    page.session_state[SAVED_KEY] = {}
    page.run()
    uploader(page).upload("scenarios.csv", data, "text/csv")
    page.run()
    assert not page.error, texts(page.error)
    assert any("3 scenario(s)" in text for text in texts(page.markdown))
    page.button(key="scn.import").click().run()
    assert saved(page) == ODD
    assert list(saved(page)) == list(ODD)
    assert any("Imported 3" in text for text in texts(page.success))
    assert uploader(page).value is None  # the uploader starts empty again, so a rerun cannot re-import


def test_load_changes_the_overview(page):
    save_as(page, "eight GPUs")
    eight = page.dataframe[0].value
    page.sidebar.number_input(key="w.n_gpus").set_value(32).run()
    page.switch_page("app_pages/overview.py").run()
    hours_at_32 = metric(page, "GPU-hours")
    page.switch_page(PAGE).run()
    page.selectbox(key="scn.pick").set_value("eight GPUs")
    page.button(key="scn.load").click().run()
    assert page.session_state[SCENARIO_KEY] == Scenario()
    assert page.sidebar.number_input(key="w.n_gpus").value == 8
    page.switch_page("app_pages/overview.py").run()
    hours_at_8 = metric(page, "GPU-hours")
    assert hours_at_8 != hours_at_32
    assert hours_at_8 == f"{eight['GPU-hours'][0]:,.1f}"  # the Overview shows one decimal


def test_rename_duplicate_delete_keep_order_and_names_unique(page):
    save_as(page, "a")
    save_as(use(page, Scenario(n_gpus=16)), "b")
    page.selectbox(key="scn.pick").set_value("a")
    page.text_input(key="scn.rename_to").input("alpha")
    page.button(key="scn.rename").click().run()
    assert list(saved(page)) == ["alpha", "b"]
    page.selectbox(key="scn.pick").set_value("b")
    page.text_input(key="scn.rename_to").input("alpha")
    page.button(key="scn.rename").click().run()
    assert list(saved(page)) == ["alpha", "b"]
    assert any("another scenario is called 'alpha'" in text for text in texts(page.error))

    page.selectbox(key="scn.pick").set_value("b")
    page.button(key="scn.duplicate").click().run()
    page.selectbox(key="scn.pick").set_value("b")
    page.button(key="scn.duplicate").click().run()
    assert list(saved(page)) == ["alpha", "b", "b (copy)", "b (copy 2)"]
    assert saved(page)["b (copy 2)"] == Scenario(n_gpus=16)

    page.selectbox(key="scn.pick").set_value("alpha")
    page.button(key="scn.delete").click().run()
    assert list(saved(page)) == ["b", "b (copy)", "b (copy 2)"]
    assert list(page.dataframe[0].value["Name"]) == ["b", "b (copy)", "b (copy 2)"]


def test_same_name_needs_confirmation_and_bad_names_are_refused(page):
    save_as(page, "plan")
    save_as(use(page, Scenario(n_gpus=16)), "plan")
    assert saved(page) == {"plan": Scenario()}
    assert any("already saved" in text for text in texts(page.error))
    save_as(page, "plan", overwrite=True)
    assert saved(page) == {"plan": Scenario(n_gpus=16)}
    save_as(page, "   ")
    assert any("a name is needed" in text for text in texts(page.error))
    assert list(saved(page)) == ["plan"]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"name,n_gpus\nok,8\nbad,0\n", "Row 3, column n_gpus"),
        (b"name,method\nx,dora\n", "Row 2, column method"),
        (b"title,n_gpus\nx,8\n", "no 'name' column"),
        (b"name,n_gpus\n\xff\xfe,8\n", "UTF-8"),
        (b"", "empty"),
    ],
)
def test_bad_upload_explains_and_keeps_saved(page, data, expected):
    save_as(page, "keep me")
    before = saved(page)
    uploader(page).upload("scenarios.csv", data, "text/csv")
    page.run()
    errors = texts(page.error)
    assert any("Nothing was imported" in text for text in errors)
    assert any(expected in text for text in errors), errors
    assert not any(button.key == "scn.import" for button in page.button)
    assert saved(page) == before


def test_good_upload_with_a_clash_says_what_it_replaces_and_adds(page):
    save_as(page, "shared")
    data = scenarios_to_csv(
        {"shared": Scenario(n_gpus=64), "new": Scenario(epochs=1)}, None, default_catalogs()
    )
    uploader(page).upload("mine.csv", data.encode(), "text/csv")
    page.run()
    assert any("1 will replace saved ones with the same name: shared" in t for t in texts(page.markdown))
    assert saved(page) == {"shared": Scenario()}  # nothing changes before "Import them"
    page.button(key="scn.import").click().run()
    assert saved(page) == {"shared": Scenario(n_gpus=64), "new": Scenario(epochs=1)}


def test_compare_marks_the_inputs_that_differ(page):
    save_as(page, "base")
    save_as(use(page, Scenario(n_gpus=16, method="lora")), "lora 16")
    save_as(use(page, Scenario(n_gpus=16)), "full 16")
    page.multiselect(key="scn.compare").set_value(["base", "lora 16", "full 16"]).run()
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


def test_copy_link_shows_the_current_query_string(page):
    page.sidebar.number_input(key="w.n_gpus").set_value(16).run()
    page.sidebar.number_input(key="w.epochs").set_value(2.5).run()
    link = page.code[0].value
    assert link.startswith("?") and "n_gpus=16" in link and "epochs=2.5" in link
    assert page.query_params["n_gpus"] == "16"  # the address bar (app.py's sync) holds the same values
