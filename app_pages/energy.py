"""Energy and carbon: GPU, host and facility energy, CO2e for the chosen grid, and across regions."""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import GPU_UTIL_EXPLANATION, PUE_EXPLANATION, co2e_by_region, energy_components
from ui import charts
from ui import format as fmt
from ui.blocks import assumptions, breakdown_table, context_caption
from ui.data import catalogs
from ui.estimate_cache import current_or_stop
from ui.methods_link import methods_link
from ui.number_entry import number_entry
from ui.presets import preset_picker
from ui.state import bound

N_CLEANEST, N_DIRTIEST = 12, 5  # enough to see the spread; the table lists every region
BAR_PX = 22  # a bar and its label at the default 11 px font

st.title("Energy")
grid = catalogs().grid
pue_presets = catalogs().pue
left, right = st.columns(2)
with left:
    bound(
        st.selectbox,
        "Grid region",
        "region",
        options=grid["region"].to_list(),
        format_func=dict(zip(grid["region"], grid["label"], strict=True)).get,
    )
    preset_picker(
        "PUE preset",
        "energy.pue_preset",
        "pue",
        {
            f"{row['preset'].replace('_', ' ')} ({row['pue']:.2f})": row["pue"]
            for row in pue_presets.iter_rows(named=True)
        },
        PUE_EXPLANATION,
    )
    number_entry("PUE (facility ÷ IT energy)", "pue")
with right:
    bound(
        st.slider,
        "GPU busy share (not MFU)",
        "gpu_util_frac",
        min_value=0.0,
        max_value=1.0,
        step=0.05,
        help=GPU_UTIL_EXPLANATION,
    )
    bound(st.slider, "Idle draw (share of TDP)", "idle_power_frac", min_value=0.0, max_value=1.0, step=0.05)
    number_entry("Host overhead (share of GPU power)", "host_overhead_frac")
    number_entry("Electricity price (USD/kWh, on premises)", "usd_per_kwh")

est, resolved = current_or_stop()
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
methods_link("energy")
first, second, third = st.columns(3)
first.metric(
    "Energy",
    f"{fmt.sig(est.energy_kwh)} kWh",
    f"range {fmt.sig(est.energy_kwh_low)} – {fmt.sig(est.energy_kwh_high)} kWh",
    delta_color="off",
    delta_arrow="off",
)
second.metric(
    "Carbon",
    f"{fmt.sig(est.co2e_kg)} kg CO2e",
    f"range {fmt.sig(est.co2e_kg_low)} – {fmt.sig(est.co2e_kg_high)}",
    delta_color="off",
    delta_arrow="off",
)
third.metric("Electricity cost (on premises)", fmt.usd(est.electricity_cost_usd))
parts = energy_components(est)
breakdown_table(
    [(row["component"], row["how"], f"{row['kwh']:,.1f} kWh") for row in parts.iter_rows(named=True)]
    + [
        ("Grid intensity", resolved.region_label, f"{est.grid_g_co2e_per_kwh:,.0f} g CO2e/kWh"),
        ("Carbon", "energy × grid intensity", f"{fmt.sig(est.co2e_kg)} kg CO2e"),
    ]
)
st.vega_lite_chart(spec=charts.bars(parts, "kwh", "component", "kWh"), width="stretch")
st.subheader("This run's carbon across regions")
regions = co2e_by_region(est.energy_kwh, grid).sort("co2e_kg")
# A bar per region of 130+ leaves ~4 px a bar: Vega then drops most labels and the highlighted bar sits beside a
# neighbour's name. The chart keeps the cleanest and the dirtiest grids and the plan's own; the table has all.
shown = pl.concat(
    [
        regions.head(N_CLEANEST),
        regions.tail(N_DIRTIEST),
        regions.filter(pl.col("label") == resolved.region_label),
    ]
)
shown = shown.unique("region", keep="first").sort("co2e_kg")
st.vega_lite_chart(
    spec=charts.bars(
        shown.select(pl.col("label").alias("region_label"), "co2e_kg"),
        "co2e_kg",
        "region_label",
        "kg CO2e",
        highlight=resolved.region_label,
        height=BAR_PX * shown.height,
    ),
    width="stretch",
)
st.caption(
    f"The {N_CLEANEST} lowest- and {N_DIRTIEST} highest-carbon grids of {regions.height:d}, with this plan's region "
    "in orange; every region is in the table below."
)
# Drawn only while open (the state is kept under its key): a closed expander still sends its content, and the
# data grid made every visit to this page load 1.2 MB more script in the browser.
every_region = st.expander(f"All {regions.height:d} regions", key="energy.regions", on_change="rerun")
if every_region.open:
    every_region.dataframe(
        regions.select(
            pl.col("label").alias("Region"),
            pl.col("g_co2e_per_kwh").alias("g CO2e per kWh"),
            pl.col("co2e_kg").alias("This run, kg CO2e"),
        ),
        hide_index=True,
        width="stretch",
    )
assumptions(
    [
        "GPU draw = TDP × (idle share + (1 − idle share) × busy share); training keeps GPUs busy most of the time, "
        "but 'busy' is not MFU — a GPU at 40 % MFU still draws near its TDP. A power limit below the TDP takes "
        "the TDP's place (and lowers the peak TFLOP/s).",
        "The host (CPUs, memory, network) adds a share of GPU power; the facility multiplies IT energy by its PUE.",
        "Carbon uses the region's average grid intensity on the basis and year the data file states; a market-based "
        "figure (renewable contracts) can be much lower.",
    ]
)
