"""Plan sheet: a row per plan, inputs edited in place, results for every row recomputed in one pass.

The page lays out the grid, its row actions and the cost-against-time chart; the rows and the callbacks live in
`ui.plan_sheet`.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from planner import (
    MAX_CSV_BYTES,
    MULTIMODAL_FLAG_COLUMNS,
    MULTIMODAL_NUMBER_FORMATS,
    MULTIMODAL_TEXT_COLUMNS,
    SHEET_INPUT_COLUMNS,
    SHEET_MULTIMODAL_INPUT_COLUMNS,
    evaluate_rows,
    pick_lists,
    plural,
    read_saved_scenarios,
    result_cells,
    saved_scenarios_csv,
    sheet_input_columns,
    sheet_inputs,
    sheet_result_columns,
    sheet_row_problem,
)
from ui import charts
from ui.data import catalogs
from ui.library import author, plain, take_flash
from ui.plan_sheet import (
    MAX_ROWS,
    NAME_LABEL,
    UPLOAD_GEN_KEY,
    add_rows,
    duplicate,
    editor_key,
    has_edits,
    make_current,
    on_sheet_edit,
    reload_from_library,
    rows,
    save_changed,
)

MAX_PROBLEMS_SHOWN = 20
COLUMN_HELP = {"Sequence length": "Empty: follows tokens per example (packed or padded, as the plan says)."}
NUMBER_FORMATS = {
    "GPUs": "%d",
    "Examples": "%d",
    "Tokens per example": "%g",
    "Epochs": "%g",
    "Sequence length": "%d",
    "Micro-batch": "%d",
    "Accumulation": "%d",
    "Peak GiB/GPU": "%.1f",
    "Peak GiB/GPU, high end": "%.1f",
    "Headroom GiB": "%.1f",
    "Wall clock (h)": "%.2f",
    "GPU-hours": "%.1f",
    "Cost (USD)": "dollar",
    "USD per M tokens": "%.3f",
    "Energy (kWh)": "%.1f",
    "CO2e (kg)": "%.1f",
    # post-training results, shown when any row is post-training
    "Reference GiB": "%.1f",
    "Reward model GiB": "%.1f",
    "Value model GiB": "%.1f",
    "KV cache GiB": "%.2f",
    "Generation (h)": "%.2f",
    "Training (h)": "%.2f",
    "Share generating": "percent",
}
TEXT_RESULTS = ("Peak phase", "Bound by", "Memory verdict")
NUMBER_FORMATS |= MULTIMODAL_NUMBER_FORMATS  # images per example, the parts' GiB, image tokens, images/s
EDITABLE = (*SHEET_INPUT_COLUMNS, *SHEET_MULTIMODAL_INPUT_COLUMNS)


def sheet_frame() -> tuple[pl.DataFrame, list[Any]]:
    all_rows = rows()
    results = evaluate_rows([r.scenario for r in all_rows], catalogs())
    shown = sheet_result_columns([r.scenario for r in all_rows])
    inputs = sheet_input_columns([r.scenario for r in all_rows])  # + the image inputs of multimodal plans
    records = [
        {NAME_LABEL: r.name}
        | sheet_inputs(r.scenario, inputs)
        | result_cells(result, shown)
        | {"Problem": _problem(result)}
        for r, result in zip(all_rows, results, strict=True)
    ]
    return pl.DataFrame(records, infer_schema_length=None), results


def _problem(result: Any) -> str:
    if isinstance(result, Exception):
        return sheet_row_problem(result)
    return "" if result.fits_vram is not False else "does not fit"


def result_labels(frame: pl.DataFrame) -> list[str]:
    """The frame's result columns (the post-training ones only where a row is post-training)."""
    inputs = {NAME_LABEL, "Problem", *(column.label for column in EDITABLE)}
    return [label for label in frame.columns if label not in inputs]


def input_columns(frame: pl.DataFrame) -> tuple[Any, ...]:
    """The frame's input columns (the image inputs only where a row is multimodal)."""
    return tuple(column for column in EDITABLE if column.label in frame.columns)


def column_config(results: list[str], inputs: tuple[Any, ...] = SHEET_INPUT_COLUMNS) -> dict[str, Any]:
    choices = pick_lists(catalogs())
    config: dict[str, Any] = {
        # pinned: the plan's name stays in view while the grid scrolls sideways to the inputs
        NAME_LABEL: st.column_config.TextColumn(NAME_LABEL, required=True, max_chars=80, pinned=True)
    }
    for column in inputs:
        if column.label in MULTIMODAL_TEXT_COLUMNS:
            config[column.label] = st.column_config.TextColumn(column.label, max_chars=400)
        elif column.label in MULTIMODAL_FLAG_COLUMNS:
            config[column.label] = st.column_config.CheckboxColumn(column.label)
        elif column.field in choices:
            config[column.label] = st.column_config.SelectboxColumn(
                column.label, options=choices[column.field]
            )
        else:
            config[column.label] = st.column_config.NumberColumn(
                column.label, format=NUMBER_FORMATS[column.label]
            )
    for label in results:
        if label in TEXT_RESULTS:
            config[label] = st.column_config.TextColumn(label)
        else:
            config[label] = st.column_config.NumberColumn(label, format=NUMBER_FORMATS[label])
    config["Problem"] = st.column_config.TextColumn("Problem", width="medium")
    return config


def column_order(frame: pl.DataFrame) -> list[str]:
    """Results first, right after the name, so they are in view at 1440 px without scrolling; the inputs
    follow (edits address columns by label, so the order changes nothing else)."""
    inputs = [column.label for column in input_columns(frame)]
    return [NAME_LABEL, *result_labels(frame), "Problem", *inputs]


def grid(frame: pl.DataFrame) -> None:
    key = editor_key()
    st.data_editor(
        frame,
        key=key,
        column_order=column_order(frame),
        column_config=column_config(result_labels(frame), input_columns(frame)),
        disabled=[*result_labels(frame), "Problem"],
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
    )
    # Applied here rather than in on_change, so the same path serves a browser edit and an AppTest-seeded one:
    # the rows change, the editor gets a new key and the rerun draws every recomputed result.
    if has_edits(st.session_state.get(key)):
        on_sheet_edit()
        st.rerun()


def row_actions(names: list[str]) -> None:
    pick, current, copy, save, reload = st.columns([3, 2, 2, 2, 2], vertical_alignment="bottom")
    index = pick.selectbox(
        "Row", range(len(names)), format_func=lambda i: f"{i + 1} · {names[i]}", key="sheet.pick"
    )
    current.button(
        "Make current", key="sheet.current", on_click=make_current, args=(index,), disabled=index == 0
    )
    copy.button("Duplicate row", key="sheet.duplicate", on_click=duplicate, args=(index,))
    save.button(
        "Save changed rows", key="sheet.save", on_click=save_changed, args=(author(),), type="primary"
    )
    reload.button("Reload from library", key="sheet.reload", on_click=reload_from_library)


def cost_time_chart(frame: pl.DataFrame) -> None:
    data = frame.select(
        pl.col(NAME_LABEL).alias("plan"),
        pl.col("Wall clock (h)").alias("wall_clock_h"),
        pl.col("Cost (USD)").alias("cost_usd"),
        pl.when(pl.col("Memory verdict") == "does not fit")
        .then(pl.lit("does not fit"))
        .otherwise(pl.lit("fits"))
        .alias("fit"),
    ).drop_nulls(["wall_clock_h", "cost_usd"])
    if data.is_empty():
        return
    st.vega_lite_chart(spec=charts.labelled_cost_vs_time(data), width="stretch")
    st.caption("Each point is a row of the sheet, labelled with its name; red rows do not fit in GPU memory.")


def files_section() -> None:
    """The sheet as the saved-scenario CSV (the same round trip as the Scenarios page), out and back in."""
    st.subheader("The sheet as CSV")
    named = {row.name: row.scenario for row in rows()}
    st.download_button(
        "Download the sheet as CSV",
        data=lambda: saved_scenarios_csv(named, catalogs()),
        file_name="plan_sheet.csv",
        mime="text/csv",
        on_click="ignore",
        key="sheet.download",
    )
    uploaded = st.file_uploader(
        "Add rows from a CSV (as downloaded here or from Scenarios)",
        type=["csv"],
        key=f"sheet.upload.{st.session_state.get(UPLOAD_GEN_KEY, 0)}",
        max_upload_size=min(int(st.get_option("server.maxUploadSize")), -(-MAX_CSV_BYTES // 1_000_000)),
        help="A row whose name is already in the sheet takes the file's inputs; a file with any bad row adds nothing.",
    )
    if uploaded is None:
        return
    parsed = read_saved_scenarios(uploaded.getvalue(), catalogs())
    if parsed.problems:
        st.error(plain(f"Nothing was added from {uploaded.name}: fix these rows and upload it again."))
        for problem in parsed.problems[:MAX_PROBLEMS_SHOWN]:
            st.error(plain(str(problem)))
        return
    st.button(
        plain(f"Add the {plural(len(parsed.scenarios), 'row')} of {uploaded.name}"),
        key="sheet.import",
        on_click=add_rows,
        args=(parsed.scenarios,),
        type="primary",
    )


st.title("Plan sheet")
rows()  # the library's rows load first, so a library that cannot be opened is said in this run, not the next
for kind, text, _undo in take_flash():  # undo buttons belong to the Scenarios page; here only the words
    getattr(st, kind)(plain(text))
st.caption(
    f"A row per plan: the current plan first, then the team library's plans (up to {MAX_ROWS} rows). Edit a "
    "cell and that row's results recompute; a refused value keeps the previous one and says why. Deleting a row "
    "here only removes it from the sheet; “Save changed rows” writes new and edited rows to the team library."
)
frame, results = sheet_frame()
grid(frame)
misfits = sum(1 for r in results if getattr(r, "fits_vram", None) is False)
if misfits:
    st.warning(plain(f"{misfits} row{'s' * (misfits != 1)} do not fit in GPU memory (see Memory verdict)."))
row_actions(frame[NAME_LABEL].to_list())
cost_time_chart(frame)
files_section()
