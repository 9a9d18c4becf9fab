"""Scenarios <-> CSV: exact round trips, spreadsheet-safe cells, and every bad-file kind named by row and column."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.models import find_model, load_model_presets
from planner.decide.scenario_results import read_saved_scenarios, saved_scenarios_csv
from planner.estimate import estimate
from planner.inputs.safe_csv import FORMULA_PREFIXES, csv_number
from planner.inputs.scenario import Scenario
from planner.inputs.scenario_io import (
    INPUT_COLUMNS,
    MAX_ROWS,
    RESULT_COLUMNS,
    ImportProblem,
    guard_cell,
    read_scenarios_csv,
    scenarios_to_csv,
    unguard_cell,
)
from planner.inputs.scenario_set import ComparisonRow, comparison_rows, copy_name, name_problem, renamed

CATS = default_catalogs()


def _read(data: bytes | str):
    """Read as the app does: every row must also resolve against the catalogues."""
    return read_saved_scenarios(data, CATS)


ODD_NAMES = [
    "plain",
    "with, commas, inside",
    'say "hello"',
    "Ünïcødé 模型 🚀",
    '=HYPERLINK("http://x")',
    "+1 GPU",
    "-minus",
    "@SUM(A1)",
    "'=already quoted",
    "''+two quotes",
    "'just a quote",
    "x" * 80,
]


def _imported_shape():
    shape = find_model(load_model_presets(), "Llama 3.1 8B")
    # An edited shape whose own name would be a formula if it stood alone in a cell.
    return shape.model_copy(update={"name": "=my fine-tune, v2", "n_layers": 30})


def odd_scenarios() -> dict[str, Scenario]:
    base = Scenario()
    variants = [
        base,
        base.updated(model="", params_b=3.3, model_shape=None),  # custom model by count alone
        base.updated(model="", model_shape=_imported_shape(), seq_len=8192),
        base.updated(peak_tflops=400.5, vram_gib=79.5, mfu=0.30000000000000004, usd_per_gpu_hour=0.0),
        base.updated(total_tokens_b=1e-3, bytes_per_param=18.0, flops_per_param_token=6.0),
        base.updated(method="qlora", lora_rank=64, lora_targets="attention", qlora_double_quant=False),
        base.updated(gpu="H200 SXM", n_gpus=64, tp=2, pp=2, zero_stage=1, hybrid_shard=True, packing=False),
        base.updated(snapshot="2025-09-30", pricing="spot", region="eastus", storage_gb_per_s=2.5),
        base.updated(overlap_frac=0.1 + 0.2, fragmentation_frac=1 / 3, epochs=2.5, examples=1),
        base.updated(
            recompute="full", offload_optimizer=True, fused_cross_entropy=True, experiments_multiplier=3
        ),
        base.updated(efficiency_band="low", overhead_gib=0.0, idle_power_frac=0.0, usd_per_kwh=1e-5),
        base.updated(gpu="h100"),  # an alias the catalogue resolves; kept as typed
    ]
    return dict(zip(ODD_NAMES, variants, strict=True))


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _file(header: str, *rows: str) -> bytes:
    return ("\n".join((header, *rows)) + "\n").encode()


# ------------------------------------------------------------------------------------------------ round trip


def test_round_trip_restores_identical_scenarios_in_order():
    saved = odd_scenarios()
    result = _read(scenarios_to_csv(saved))
    assert result.problems == []
    assert result.notices == []
    assert result.scenarios == saved
    assert list(result.scenarios) == list(saved)


def test_round_trip_through_bytes_with_bom_and_crlf_as_excel_writes_it():
    saved = odd_scenarios()
    text = scenarios_to_csv(saved).replace("\n", "\r\n")
    # Embedded newlines are absent (names forbid them, JSON is compact), so this rewrites only row ends.
    result = _read(b"\xef\xbb\xbf" + text.encode())
    assert result.problems == [] and result.scenarios == saved


def test_header_is_name_then_every_input_then_results():
    header = _cells(scenarios_to_csv({"a": Scenario()}))[0]
    assert header == ["name", *Scenario.model_fields, *RESULT_COLUMNS]
    assert set(INPUT_COLUMNS) == set(Scenario.model_fields)


def test_no_written_cell_starts_like_a_formula():
    for row in _cells(scenarios_to_csv(odd_scenarios()))[1:]:
        for cell in row:
            assert not cell.startswith(FORMULA_PREFIXES), cell


def test_formula_name_is_written_with_a_leading_quote():
    rows = _cells(scenarios_to_csv({"=1+1": Scenario()}))
    assert rows[1][0] == "'=1+1"


def test_none_is_written_as_an_empty_cell_and_shape_as_json():
    header, *body = _cells(scenarios_to_csv(odd_scenarios()))
    rows = {row[0]: dict(zip(header, row, strict=True)) for row in body}
    assert rows["plain"]["params_b"] == "" and rows["plain"]["model_shape"] == ""
    assert rows['say "hello"']["model_shape"].startswith('{"name":"=my fine-tune, v2"')
    assert rows["Ünïcødé 模型 🚀"]["mfu"] == "0.30000000000000004"  # shortest round-trip float text


def test_results_match_the_estimate_to_four_significant_figures():
    scenario = Scenario(gpu="H200 SXM", n_gpus=16)
    rows = _cells(saved_scenarios_csv({"a": scenario}, CATS))
    cells = dict(zip(rows[0], rows[1], strict=True))
    est = estimate(scenario, default_catalogs())
    for column in (
        "wall_clock_h",
        "device_hours",
        "cost_usd",
        "energy_kwh",
        "co2e_kg",
        "peak_gib_per_device",
    ):
        assert float(cells[column]) == pytest.approx(getattr(est, column), rel=5e-4), column
        assert cells[column] == csv_number(getattr(est, column)), column  # planner/inputs/safe_csv.py
    assert float(cells["mfu_used"]) == pytest.approx(est.mfu, rel=5e-4)
    assert cells["fits_vram"] == ("true" if est.fits_vram else "false")
    assert cells["estimate_problem"] == ""


def test_precomputed_results_are_used_as_given():
    given = {"a": {"cost_usd": 12.5, "fits_vram": False}}
    rows = _cells(saved_scenarios_csv({"a": Scenario()}, CATS, results=given))
    cells = dict(zip(rows[0], rows[1], strict=True))
    assert (cells["cost_usd"], cells["fits_vram"], cells["wall_clock_h"]) == ("12.5", "false", "")


def test_result_columns_are_ignored_on_read():
    text = scenarios_to_csv({"a": Scenario(n_gpus=16)})
    header, row = _cells(text)
    row[header.index("cost_usd")] = "not a number"
    row[header.index("fits_vram")] = "maybe"
    buffer = io.StringIO()
    csv.writer(buffer).writerows([header, row])
    assert _read(buffer.getvalue()).scenarios == {"a": Scenario(n_gpus=16)}


@given(st.text(max_size=30))
def test_guard_is_reversible_and_never_leaves_a_formula(text):
    guarded = guard_cell(text)
    assert unguard_cell(guarded) == text
    assert not guarded.startswith(FORMULA_PREFIXES)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=80))
def test_any_valid_name_round_trips(name):
    name = name.strip()
    if name_problem(name):
        return
    result = _read(scenarios_to_csv({name: Scenario()}))
    assert list(result.scenarios) == [name], result.problems


# ------------------------------------------------------------------------------------------------ tolerant reads


def test_minimal_file_fills_missing_inputs_with_defaults_and_says_so():
    result = _read(_file("name,n_gpus,notes", "small,16,try this first"))
    assert result.problems == []
    assert result.scenarios == {"small": Scenario(n_gpus=16)}
    assert any("notes" in notice and "Ignored" in notice for notice in result.notices)
    assert any("default" in notice and "examples" in notice for notice in result.notices)


def test_spreadsheet_habits_are_accepted():
    # Excel upper-cases booleans, pads cells with spaces and leaves rows of empty cells at the end.
    result = _read(_file("name,packing,flash_attention,n_gpus", " a ,FALSE, TRUE , 16", ",,,", ""))
    assert result.problems == []
    assert result.scenarios == {"a": Scenario(packing=False, flash_attention=True, n_gpus=16)}


def test_row_numbers_count_records_not_lines():
    # A quoted cell spanning three lines is still one spreadsheet row.
    shape_json = '"{\n""name"": ""x"",\n""vocab_size"": 0}"'
    data = _file("name,model,model_shape,n_gpus", f"a,,{shape_json},8", "b,,,0")
    problems = _read(data).problems
    assert (problems[0].row, problems[0].column) == (2, "model_shape")
    assert (problems[1].row, problems[1].column) == (3, "n_gpus")
    assert str(problems[1]).startswith("Row 3, column n_gpus:")


def test_every_bad_row_is_reported_and_good_rows_are_counted():
    data = _file("name,n_gpus,tp", "ok1,8,1", "bad1,0,1", "ok2,16,2", "bad2,6,4")
    result = _read(data)
    assert [p.row for p in result.problems] == [3, 5]
    assert list(result.scenarios) == ["ok1", "ok2"]  # for "2 rows were fine"; the caller saves nothing


# ------------------------------------------------------------------------------------------------ bad files

BAD_FILES = [
    pytest.param(b"", ["empty"], id="empty"),
    pytest.param(b"  \n\n", ["empty"], id="blank"),
    pytest.param(b"name,n_gpus\nab\xff\xfe,8\n", ["UTF-8", "position 14"], id="not-utf8"),
    pytest.param(b"name,n_gpus\na\x00,8\n", ["NUL"], id="binary"),
    pytest.param(_file("name,n_gpus"), ["header but no scenario rows"], id="header-only"),
    pytest.param(_file("name,n_gpus", ",,", ""), ["header but no scenario rows"], id="only-empty-rows"),
    pytest.param(_file("title,n_gpus", "a,8"), ["Row 1", "no 'name' column"], id="no-name-column"),
    pytest.param(_file("name;n_gpus", "a;8"), ["Row 1", "';'"], id="semicolons"),
    pytest.param(
        _file("name,n_gpus,n_gpus", "a,8,8"), ["Row 1", "'n_gpus' appears more than once"], id="dup-col"
    ),
    pytest.param(
        _file("name,n_gpus", "a,8", "b,0"), ["Row 3, column n_gpus:", ">= 1", "got '0'"], id="range"
    ),
    pytest.param(_file("name,mfu", "a,1.5"), ["Row 2, column mfu:", ">= 0.001 and <= 1"], id="fraction"),
    pytest.param(
        _file("name,n_gpus", "a,eight"), ["Row 2, column n_gpus:", "valid integer"], id="not-a-number"
    ),
    pytest.param(_file("name,examples", "a,"), ["Row 2, column examples:", ">= 1"], id="empty-required"),
    pytest.param(_file("name,method", "a,dora"), ["Row 2, column method:", "full, lora, qlora"], id="choice"),
    pytest.param(_file("name,packing", "a,perhaps"), ["Row 2, column packing:", "boolean"], id="bool"),
    pytest.param(
        _file("name,n_gpus,tp", "a,6,4"), ["Row 2, column n_gpus:", "multiple of"], id="cross-field"
    ),
    pytest.param(_file("name,model_shape", "a,{oops"), ["Row 2, column model_shape:", "JSON"], id="bad-json"),
    pytest.param(
        _file("name,model,model_shape", 'a,,"{""vocab_size"": 1}"'),
        ["Row 2, column model_shape:", "hidden_size", "Field required"],
        id="incomplete-shape",
    ),
    pytest.param(
        _file("name,gpu", "a,H900"),
        ["Row 2, column gpu:", "unknown GPU", "got 'H900'", "closest: H200 SXM"],
        id="unknown-gpu",
    ),
    pytest.param(_file("name,model", "a,Llama 9"), ["Row 2, column model:", "no preset"], id="unknown-model"),
    pytest.param(
        _file("name,region", "a,mars"), ["Row 2, column region:", "unknown region"], id="unknown-region"
    ),
    pytest.param(
        _file("name,n_gpus", "a,8", "b,8", "a,16"), ["Row 4, column name:", "row 2"], id="duplicate"
    ),
    pytest.param(
        _file("name,n_gpus", "x" * 81 + ",8"), ["Row 2, column name:", "at most 80"], id="long-name"
    ),
    pytest.param(_file("name,n_gpus", "  ,8"), ["Row 2, column name:", "a name is needed"], id="no-name"),
    pytest.param(_file("name,n_gpus", "a,8,extra"), ["Row 2:", "3 cells", "2 columns"], id="ragged"),
    pytest.param(
        _file("name,n_gpus", *(f"s{i},8" for i in range(MAX_ROWS + 1))),
        ["1,001 rows", "at most 1,000"],
        id="rows",
    ),
    pytest.param(
        b"name,model\n" + b"a," + b"x" * 2_000_000 + b"\n", ["bytes", "at most 2,000,000"], id="size"
    ),
]


@pytest.mark.parametrize(("data", "expected"), BAD_FILES)
def test_bad_file_is_explained(data, expected):
    result = _read(data)
    assert result.problems, "a bad file must report a problem"
    message = str(result.problems[0])
    for part in expected:
        assert part in message, (part, message)


def test_several_errors_in_one_row_are_counted():
    message = str(_read(_file("name,n_gpus,mfu,method", "a,0,7,dora")).problems[0])
    assert message.startswith("Row 2, column n_gpus:")
    assert "and 2 more problems in this row" in message


@pytest.mark.parametrize(
    ("name", "problem"),
    [("", "needed"), ("x" * 81, "at most 80"), (" padded", "spaces"), ("tab\there", "control"), ("ok", None)],
)
def test_name_rules(name, problem):
    found = name_problem(name)
    assert (found is None) if problem is None else (problem in found)


# ------------------------------------------------------------------------------------------------ the saved set


@pytest.mark.parametrize(
    ("name", "taken", "expected"),
    [
        ("plan", {"plan"}, "plan (copy)"),
        ("plan", {"plan", "plan (copy)"}, "plan (copy 2)"),
        ("plan", {"plan", "plan (copy)", "plan (copy 2)"}, "plan (copy 3)"),
        # 80 characters in all: 73 of the name (trailing space dropped) + " (copy)" = 80.
        ("y" * 72 + " " + "z" * 7, set(), "y" * 72 + " (copy)"),
    ],
)
def test_copy_name(name, taken, expected):
    found = copy_name(name, taken)
    assert found == expected
    assert name_problem(found) is None


def test_rename_keeps_the_position():
    saved = {"a": Scenario(), "b": Scenario(n_gpus=16), "c": Scenario(n_gpus=32)}
    out = renamed(saved, "b", "beta")
    assert list(out) == ["a", "beta", "c"]
    assert out["beta"] == Scenario(n_gpus=16)


def test_comparison_rows_mark_differences_and_label_values():
    chosen = [Scenario(), Scenario(n_gpus=16, mfu=0.45), Scenario(n_gpus=16, packing=False)]
    rows = {row.field: row for row in comparison_rows(chosen)}
    assert len(rows) == len(Scenario.model_fields)
    assert rows["n_gpus"] == ComparisonRow("n_gpus", ["8", "16", "16"], True)
    assert rows["mfu"].values == ["— (default)", "0.45", "— (default)"]
    assert rows["packing"].values == ["yes", "yes", "no"]
    assert rows["gpu"].differs is False
    differing = [row.field for row in comparison_rows(chosen, only_differing=True)]
    assert differing == ["packing", "n_gpus", "mfu"]  # Scenario declaration order, as in the CSV header


def test_comparison_labels_an_imported_shape_by_its_size():
    shape = find_model(load_model_presets(), "Llama 3.1 8B")
    rows = comparison_rows([Scenario(), Scenario(model="", model_shape=shape)], only_differing=True)
    labels = {row.field: row.values for row in rows}
    assert labels["model"] == ["Llama 3.1 8B", "— (empty)"]
    assert labels["model_shape"][1] == f"{shape.name}: 32 layers × 4096 wide"  # Llama 3.1 8B config.json


def test_a_rule_over_several_inputs_names_the_column_the_file_has():
    # n_gpus is not in the file (default 8); the rule n_gpus % (tp x pp x cp) == 0 is broken by the tp column.
    problem = _read(_file("name,tp", "a,3")).problems[0]
    assert (problem.row, problem.column) == (2, "tp")
    assert str(problem) == "Row 2, column tp: n_gpus must be a multiple of tp x pp x cp = 3 (got 8)"


def test_problems_are_structured_not_text():
    problem = _read(_file("name,n_gpus", "a,8", "b,0")).problems[0]
    assert problem == ImportProblem(3, "n_gpus", problem.problem)
    assert "allowed: >= 1 and <= 1e+06" in problem.problem and "got '0'" in problem.problem


def test_the_csv_half_runs_no_pipeline():
    # Without a check the reader validates the inputs only; results are written only when given.
    assert read_scenarios_csv(_file("name,gpu", "a,H900")).problems == []
    header, row = _cells(scenarios_to_csv({"a": Scenario()}))
    assert row[header.index("cost_usd")] == ""


def _planner_imports(path) -> set[str]:
    """Every planner module a file imports, lazy (inside functions) and TYPE_CHECKING imports included."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("planner"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names if alias.name.startswith("planner")}
    return names


def test_the_inputs_package_does_not_depend_on_the_pipeline():
    from pathlib import Path

    below = ("planner.inputs", "planner.model", "planner.errors")  # what inputs may build on
    folder = Path(__file__).resolve().parents[1] / "planner" / "inputs"
    offenders = {
        (path.name, name)
        for path in folder.glob("*.py")
        for name in _planner_imports(path)
        if not name.startswith(below)
    }
    assert offenders == set()
