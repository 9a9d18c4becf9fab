"""Compare GPUs: every catalogue GPU under the current scenario, side by side, with a CSV export.

The filters, the sort order and the detail picks are page-local views (`compare.*` keys), not scenario fields.
"""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import (
    OVERRIDE_FIELDS,
    SORT_METRICS,
    compare_gpus,
    filter_rows,
    pareto_frontier,
    plural,
    safe_csv,
    sort_rows,
)
from ui import compare_charts, compare_table
from ui import format as fmt
from ui.blocks import assumptions
from ui.data import catalogs
from ui.methods_link import methods_link
from ui.number_entry import typed_number
from ui.safe_text import plain
from ui.state import scenario

OVERRIDE_LABELS = {
    "usd_per_gpu_hour": "price quote",
    "peak_tflops": "peak TFLOP/s",
    "vram_gib": "VRAM",
    "power_limit_w": "power limit",
}

st.title("Compare GPUs")
s = scenario()
try:
    everything = compare_gpus(s, catalogs())
except ValueError as err:
    st.error(f"Cannot compare GPUs for this scenario: {plain(err)}", icon=":material/error:")
    st.stop()
st.caption(
    f"{plain(plural(s.n_gpus, 'GPU'))} of each type, the same layout (TP {s.tp:d} · PP {s.pp:d} · CP {s.cp:d}) and global batch."
)
methods_link("catalogues", label="Where the GPU figures and prices come from")
overridden = [OVERRIDE_LABELS[name] for name in OVERRIDE_FIELDS if getattr(s, name) is not None]
if overridden:
    st.info(
        f"Your {plain(', '.join(overridden))} {'applies' if len(overridden) == 1 else 'apply'} to {plain(s.gpu)} only; "
        "every other GPU uses its catalogue figures.",
        icon=":material/info:",
    )

vendor_col, memory_col, sort_col, flags_col = st.columns([3, 2, 2, 2])
vendors = vendor_col.multiselect(
    "Vendors", sorted(set(everything["vendor"])), key="compare.vendors", placeholder="All vendors"
)
min_memory, _ = typed_number(
    memory_col, "Minimum memory per GPU (GiB)", "compare.min_memory_gib", integer=False, low=0.0, default=0.0
)
metric = sort_col.selectbox("Sort by", list(SORT_METRICS), key="compare.sort")
priced_only = flags_col.checkbox("Priced GPUs only", key="compare.priced_only")
fitting_only = flags_col.checkbox("Only GPUs that fit", key="compare.fitting_only")

shown = filter_rows(everything, vendors, min_memory, priced_only, fitting_only)
shown = sort_rows(pareto_frontier(shown, among="fits_vram"), metric)
all_columns = st.toggle(
    "All columns", key="compare.all_columns", help="Price sources, cost bands, failures..."
)
table = compare_table.table_frame(shown)
order = compare_table.column_order(table, all_columns)
st.dataframe(
    compare_table.styled(table),
    column_order=order,
    column_config=compare_table.TABLE_COLUMNS,
    hide_index=True,
    width="stretch",
    key="compare.table",
    placeholder="—",  # no count fits, or no price / rate for this GPU
)
st.download_button(
    "Download CSV",
    data=safe_csv(compare_table.shown_csv_frame(table, order)),  # the columns shown, under their headers
    file_name="gpu-comparison.csv",
    mime="text/csv",
    on_click="ignore",
    icon=":material/download:",
)
n_fit = int(shown["fits_vram"].fill_null(False).sum())
st.caption(
    f"{shown.height:d} of {everything.height:d} GPUs shown; the {n_fit:d} that fit at {plain(plural(s.n_gpus, 'GPU'))} come first, "
    "the others are greyed with the number of GPUs they would need."
)

st.subheader("Cost against wall clock")
plotted = shown.filter(pl.col("wall_clock_h").is_not_null() & pl.col("cost_usd").is_not_null())
if plotted.is_empty():
    st.info("No GPU shown has both a rate and a price to plot.")
else:
    chart_data = compare_charts.cost_vs_time_data(plotted)
    st.vega_lite_chart(spec=compare_charts.cost_vs_time_spec(chart_data), width="stretch")
    st.caption(
        "Diamonds joined by the dashed line are the Pareto frontier among GPUs that fit: none of the other "
        "GPUs that fit is both faster and cheaper."
    )

st.subheader("Side by side")
frontier_names = shown.filter(pl.col("on_frontier"))["gpu"].to_list()
default = list(dict.fromkeys([*everything.filter(pl.col("is_scenario_gpu"))["gpu"], *frontier_names]))[:3]
picked = st.multiselect(
    "GPUs to compare in detail (up to 4)",
    everything["gpu"].to_list(),
    default=default,
    max_selections=4,
    key="compare.detail",
)
rows = {row["gpu"]: row for row in everything.filter(pl.col("gpu").is_in(picked)).iter_rows(named=True)}
for column, name in zip(st.columns(max(len(picked), 1)), picked, strict=False):
    row = rows[name]
    with column.container(border=True):
        st.markdown(f"**{plain(name)}**" + (" (your GPU)" if row["is_scenario_gpu"] else ""))
        st.caption(
            f"{plain(row['vendor'])} · {fmt.gib(row['memory_gib'], 1)}"
            + (f" · {plain(row['status'])}" if row["status"] else "")
        )
        st.metric("Memory at this count", row["fit_verdict"] or "unknown")
        st.caption(
            f"Peak use {fmt.gib(row['peak_gib_per_device'], 1)} per GPU, up to "
            f"{fmt.gib(row['peak_gib_high'], 1)} at the high end of the memory model's error band"
        )
        if "generation_frac" in row and row["generation_frac"] is not None:  # a post-training plan
            st.caption(
                f"Peak while {plain(row['peak_phase'] or 'unknown')} · reference {fmt.gib(row['reference_model_gib'], 1)}"
                f" · KV cache {fmt.gib(row['kv_cache_gib'], 2)}"
            )
            st.caption(
                f"Generation {fmt.hours(row['generation_time_h'])} ({row['generation_frac']:.0%} of the time) · "
                f"training {fmt.hours(row['training_time_h'])}"
            )
        st.metric("Fewest GPUs that fit", fmt.count(row["min_gpus_to_fit"]))
        st.metric("Wall clock", fmt.hours(row["wall_clock_h"]))
        st.metric("GPU-hours", fmt.count(row["device_hours"], 1))
        st.metric("Cost", fmt.usd(row["cost_usd"]))
        st.caption(f"Range {fmt.band(row['cost_usd_low'], row['cost_usd_high'])}")
        st.metric("Per million tokens", fmt.usd(row["usd_per_million_tokens"]))
        st.metric("Energy", f"{fmt.count(row['energy_kwh'], 1)} kWh")
        st.caption(f"{fmt.count(row['co2e_kg'], 1)} kg CO2e")
        st.caption(f"Price: {plain(row['price_basis'])}")

assumptions(
    [
        "Every GPU runs the same scenario: the same model, data, precision, GPU count, parallel layout and global "
        "batch. Only the GPU's own figures change: peak rate, memory, power, links, utilisation preset and price.",
        "A price quote, peak TFLOP/s or VRAM you entered was meant for the scenario's GPU, so it is used for that "
        "GPU only. An MFU you entered is applied to every GPU (it is a share of each GPU's own peak).",
        "Fewest GPUs that fit: the smallest count, among powers of two and whole nodes (every node count up to 32 "
        "nodes, then steps of at most 12.5 %, up to 4,096 GPUs), at which the peak memory per GPU fits; gradient "
        "accumulation shrinks as GPUs are added so the global batch stays the same.",
        "A chip that lists no peak rate at this precision cannot run it (no FP8 tensor cores on an A100, no BF16 "
        "on a V100), so it has no time, cost or energy ('no rate: cannot run ...'); one without a catalogue "
        "price has no cost ('no price').",
        "The Pareto frontier counts only GPUs that fit at the current GPU count; lower is better on both axes.",
        *(
            [
                "Post-training: on each GPU the generation engine takes its share of that GPU's own memory (the "
                "KV cache lives in it) and decodes at that GPU's memory bandwidth, so generation time and the "
                "sequences in flight change from GPU to GPU; dedicated generation GPUs are of the same type."
            ]
            if s.post_training != "sft"
            else []
        ),
    ]
)
