"""Sessions never share state: no module-level mutable state, caches never mutated, two sessions stay apart.

Streamlit runs every browser session in the same process, so anything a module keeps at import level is seen by
every user. Page scripts are executed afresh on each run, so only `planner/` and `ui/` are scanned.

The team plan library is shared by design (a database every session, app process and the CLI use): one
session's save shows in another's library table. What stays apart is each session's current plan, the plan it
loaded (for "Save changes"), its name and its uploads.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import team_uploader
from ui.library import AUTHOR_KEY, LOADED_KEY
from ui.state import SCENARIO_KEY

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
SCANNED = ("planner", "ui")
MUTABLE_CALLS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque", "Counter", "bytearray"}
MUTATING_METHODS = {
    "append",
    "extend",
    "insert",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "add",
    "discard",
    "remove",
    "sort",
    "reverse",
    "move_to_end",
    "appendleft",
    "__setitem__",
}
# Process-wide caches that are deliberately shared: (module, name) -> why no session's data can leak through.
ALLOWED_SHARED = {
    ("ui/data.py", "_stamps"): "file stamps of the team folder, the same for every session",
    ("ui/data.py", "_team"): "the team folder's catalogues, the same for every session",
    (
        "ui/garbage.py",
        "_modules_at_last_freeze",
    ): "how many modules the process had at its last gc.freeze(): a "
    "process-wide fact about imports, holding no session's data",
    ("ui/warmup.py", "_done"): "whether the process imported every module yet: one answer for all",
    ("planner/catalogue/microbench.py", "_ALIASES"): "each catalogue GPU's names, read from the catalogue: "
    "the same for every session",
    ("planner/catalogue/microbench.py", "_FIELDS_CACHE"): "a GPU's operator constants per precision and "
    "power limit, computed from catalogue tables alone: the same for every session, bounded and cleared",
    ("planner/catalogue/microbench.py", "_BY_GPU"): "the microbenchmark tables' rows grouped by GPU name, "
    "built from the tables alone: the same for every session, one table set at a time",
    ("planner/library/opening.py", "_opened"): "the plan library opened per database URL (an engine per "
    "process, as SQLAlchemy intends): no session's data, every read goes to the database",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in SCANNED:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text(), filename=str(path))


def _is_mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in MUTABLE_CALLS
    return False


def _module_level_mutables(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and _is_mutable(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif (
            isinstance(node, ast.AnnAssign) and _is_mutable(node.value) and isinstance(node.target, ast.Name)
        ):
            names.add(node.target.id)
    return names


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names whose object is changed in place anywhere in the module, or rebound through `global`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript | ast.Attribute) and isinstance(target.value, ast.Name):
                found.add(target.value.id)
        call = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(call, ast.Attribute)
            and call.attr in MUTATING_METHODS
            and isinstance(call.value, ast.Name)
        ):
            found.add(call.value.id)
        if isinstance(node, ast.Global):
            found |= set(node.names)
    return found


def _imported_from(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """local name -> (module file, name there) for `from planner.x import NAME` / `from ui.x import NAME`."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in SCANNED:
            source = node.module.replace(".", "/") + ".py"
            for alias in node.names:
                out[alias.asname or alias.name] = (source, alias.name)
    return out


def shared_mutable_state() -> set[tuple[str, str]]:
    """(module, name) of every module-level mutable object that some module changes after import."""
    modules = dict(_modules())
    mutables = {(path, name) for path, tree in modules.items() for name in _module_level_mutables(tree)}
    found = set()
    for path, tree in modules.items():
        mutated = _mutated_names(tree)
        found |= {(path, name) for name in mutated if (path, name) in mutables}
        found |= {
            origin
            for local, origin in _imported_from(tree).items()
            if local in mutated and origin in mutables
        }
    globals_rebound = {
        (path, name)
        for path, tree in modules.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Global)
        for name in node.names
    }
    return found | globals_rebound


def test_the_scan_finds_what_it_should() -> None:
    tree = ast.parse(
        "CACHE = {}\nSEEN: list = []\nLIMITS = {'a': 1}\nN = 0\n"
        "def f(x):\n    CACHE[x] = 1\n    SEEN.append(x)\n    return LIMITS['a']\n"
        "def g():\n    global N\n    N += 1\n"
    )
    mutables = _module_level_mutables(tree)
    assert mutables == {"CACHE", "SEEN", "LIMITS"}
    assert _mutated_names(tree) & mutables == {"CACHE", "SEEN"}
    assert "N" in _mutated_names(tree)


def test_no_module_keeps_mutable_state_shared_across_sessions() -> None:
    unexpected = shared_mutable_state() - set(ALLOWED_SHARED)
    assert not unexpected, (
        "module-level state changed at run time is shared by every browser session; keep per-session data in "
        f"st.session_state, or add a reasoned entry to ALLOWED_SHARED: {sorted(unexpected)}"
    )


# ---------------------------------------------------------------------------------------------------------
# Cached objects handed to every session are never changed by a full run of the app


def _cached_objects() -> dict[str, Any]:
    """Everything a process-wide cache hands out, as returned right now."""
    from planner.catalogue.catalog import default_catalogs

    cats = default_catalogs()
    objects: dict[str, Any] = {f"catalogs.{name}": getattr(cats, name) for name in cats.__dataclass_fields__}
    objects["presets"] = default_catalogs().models
    objects["efficiency"] = default_catalogs().efficiency
    try:
        from ui.data import model_names

        objects["model_names"] = model_names()
    except ImportError:
        pass
    try:
        from ui.compare_charts import _spec

        objects["compare_spec_log"] = _spec(True)
        objects["compare_spec_linear"] = _spec(False)
    except ImportError:
        pass
    return objects


def _snapshot(value: Any) -> Any:
    return value.clone() if isinstance(value, pl.DataFrame) else copy.deepcopy(value)


def _same(before: Any, after: Any) -> bool:
    if isinstance(before, pl.DataFrame):
        return before.schema == after.schema and before.equals(after, null_equal=True)
    return before == after


def _gpu_row_csv(name: str) -> bytes:
    lines = (ROOT / "data" / "gpus.csv").read_text().splitlines()
    header, first = lines[0], next(line for line in lines[1:] if line.startswith("H100 SXM,"))
    row = first.replace("H100 SXM,", f"{name},", 1)
    # aliases are the third column; drop them so the copy does not claim the H100's names
    cells = row.split(",", 3)
    return f"{header}\n{cells[0]},{cells[1]},,{cells[3]}\n".encode()


def _full_run(at: AppTest, pages: list[str]) -> None:
    """Every page, a few shared inputs changed, a scenario saved, a GPU uploaded for this session."""
    at.sidebar.selectbox(key="w.gpu").set_value("H200 SXM").run()
    at.sidebar.text_input(key="w.n_gpus").input("64").run()
    team_uploader(at, "gpus").upload("mine.csv", _gpu_row_csv("Session GPU X1"), "text/csv").run()
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert "Session GPU X1" in at.sidebar.selectbox(key="w.gpu").options
    for page in pages:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    if "app_pages/scenarios.py" in pages:
        at.switch_page("app_pages/scenarios.py").run()
        at.text_input(key="scn.author").set_value("first user").run()
        at.text_input(key="scn.name").set_value("first's plan").run()
        at.button(key="scn.save").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]


def _pages() -> list[str]:
    return re.findall(r'st\.Page\(\s*"([^"]+\.py)"', (ROOT / "app.py").read_text())


def test_cached_catalogues_are_unchanged_after_a_full_app_run(fresh_library: str) -> None:
    before_objects = _cached_objects()
    snapshots = {key: _snapshot(value) for key, value in before_objects.items()}
    at = AppTest.from_file(APP, default_timeout=60).run()
    _full_run(at, _pages())
    after_objects = _cached_objects()
    for key, before in snapshots.items():
        assert after_objects[key] is before_objects[key], f"{key}: the cache handed out a new object"
        assert _same(before, after_objects[key]), f"{key} was changed in place by a session"


def test_two_sessions_never_see_each_others_current_plan_or_uploads(fresh_library: str) -> None:
    pages = _pages()
    first = AppTest.from_file(APP, default_timeout=60).run()
    _full_run(first, pages)
    second = AppTest.from_file(APP, default_timeout=60).run()
    scenario = second.session_state[SCENARIO_KEY]
    assert (scenario.gpu, scenario.n_gpus) == ("H100 SXM", 8)
    assert LOADED_KEY not in second.session_state and AUTHOR_KEY not in second.session_state
    assert "Session GPU X1" not in second.sidebar.selectbox(key="w.gpu").options
    assert second.query_params == {} or "n_gpus" not in second.query_params
    # ... and the first session still has all of its own.
    first.switch_page(pages[0]).run()
    assert first.session_state[SCENARIO_KEY].n_gpus == 64
    assert first.session_state[LOADED_KEY].name == "first's plan"


def _library_names(at: AppTest) -> list[str]:
    at.switch_page("app_pages/scenarios.py").run()
    assert not at.exception, [e.value for e in at.exception]
    tables = [d.value for d in at.dataframe if d.value.columns[0] == "Name"]
    return list(tables[0]["Name"]) if tables else []


def test_two_sessions_on_one_library_see_each_others_saves(fresh_library: str) -> None:
    if "app_pages/scenarios.py" not in _pages():
        pytest.skip("the Scenarios page is not registered in app.py yet")
    first = AppTest.from_file(APP, default_timeout=60).run()
    second = AppTest.from_file(APP, default_timeout=60).run()
    assert _library_names(first) == _library_names(second) == []
    first.sidebar.text_input(key="w.n_gpus").input("32").run()
    first.switch_page("app_pages/scenarios.py").run()
    first.text_input(key="scn.name").set_value("from the first").run()
    first.button(key="scn.save").click().run()
    assert _library_names(second) == ["from the first"]
    second.text_input(key="scn.name").set_value("from the second").run()
    second.button(key="scn.save").click().run()
    assert _library_names(first) == ["from the second", "from the first"]
    # Shared plans, separate current plans: the second session's plan is still its own default.
    assert second.session_state[SCENARIO_KEY].n_gpus == 8
    assert first.session_state[SCENARIO_KEY].n_gpus == 32
