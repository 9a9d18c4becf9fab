"""Cost: which price applies, the band around it, and the price trend across snapshots."""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import EXPERIMENTS_MULTIPLIER_GUIDANCE
from ui import charts
from ui import format as fmt
from ui.blocks import assumptions, breakdown_table, context_caption
from ui.data import catalogs
from ui.estimate_cache import current_or_stop
from ui.methods_link import methods_link
from ui.number_entry import number_entry
from ui.plan_banners import greyed
from ui.state import bound
from ui.team_data import origin_note

PRICING_LABELS = {
    "on_demand": "On demand",
    "spot": "Spot / preemptible",
    "commit_1y": "1-year commitment",
    "commit_3y": "3-year commitment",
}

st.title("Cost")
snapshots = catalogs().snapshot_ids()
left, right = st.columns(2)
with left:
    bound(
        st.selectbox, "Pricing mode", "pricing", options=list(PRICING_LABELS), format_func=PRICING_LABELS.get
    )
    bound(
        st.selectbox,
        "Price snapshot",
        "snapshot",
        options=["", *reversed(snapshots)],
        format_func=lambda s: f"latest ({snapshots[-1]})" if s == "" else s,
    )
    st.caption(
        "Your own quote per GPU-hour goes in the sidebar; it overrides the catalogue and the pricing mode."
    )
with right:
    number_entry(
        "Experiments overhead multiplier", "experiments_multiplier", help=EXPERIMENTS_MULTIPLIER_GUIDANCE
    )
    st.caption(EXPERIMENTS_MULTIPLIER_GUIDANCE)

est, resolved = current_or_stop()
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
origin_note(resolved)
methods_link("cost")
first, second, third = st.columns(3)
first.metric(
    "Cost",
    greyed(fmt.usd(est.cost_usd), est),
    f"range {fmt.band(est.cost_usd_low, est.cost_usd_high)}",
    delta_color="off",
    delta_arrow="off",
)
second.metric("Rate", f"{fmt.usd(est.usd_per_gpu_hour)}/GPU-h")
third.metric("Per million training tokens", fmt.usd(est.usd_per_million_tokens))
breakdown_table(
    [
        ("Rate per GPU-hour", est.price_basis, fmt.usd(est.usd_per_gpu_hour)),
        ("GPU-hours", "wall clock × GPUs", fmt.count(est.device_hours, 1)),
        (
            "Experiments multiplier",
            "search, trial and failed runs",
            f"× {resolved.scenario.experiments_multiplier:g}",
        ),
        ("Cost", "GPU-hours × rate × multiplier", fmt.usd(est.cost_usd)),
        (
            "Cost range",
            "fewest GPU-hours at the cheapest provider … most at the dearest",
            fmt.band(est.cost_usd_low, est.cost_usd_high),
        ),
        (
            "Per million training tokens",
            "one run's cost ÷ training tokens × 10⁶",
            fmt.usd(est.usd_per_million_tokens),
        ),
        ("Electricity if on premises", "energy × $/kWh (Energy page)", fmt.usd(est.electricity_cost_usd)),
    ]
)

st.subheader("Price across snapshots")
prices = catalogs().prices
gpus = sorted(prices["gpu"].unique().to_list())
default = [g for g in (est.gpu, "H100 SXM", "A100 80GB SXM") if g in gpus]
chosen = st.multiselect("GPUs", gpus, default=list(dict.fromkeys(default)), key="price_history_gpus")
history = prices.filter(pl.col("gpu").is_in(chosen)).select(
    # The date the loader took from each validated snapshot id; ids themselves are never parsed here.
    "gpu",
    pl.col("snapshot_date").alias("snapshot"),
    "usd_per_gpu_hour_median",
)
st.vega_lite_chart(spec=charts.price_history(history), width="stretch")
assumptions(
    [
        "Catalogue rates are the median on-demand price across providers in the chosen dated snapshot; providers "
        "commonly differ by two to three times, which is the low–high band.",
        "Spot and committed prices apply a typical discount with its own range (data/pricing_modes.csv); your quote "
        "replaces all of it.",
        "Storage, networking egress, CPU-only nodes and engineers' time are not priced.",
    ]
)
