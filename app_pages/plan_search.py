"""Plan search: the cheapest (or fastest, greenest) GPU type, count and layout that fits, under constraints.

The constraint inputs are page-local (`search.*` keys); the last result is kept in the session under a key no
widget uses, so Apply (which changes the shared scenario) does not throw it away.
"""

from __future__ import annotations

import streamlit as st

from planner import (
    DEFAULT_MAX_GPUS,
    OBJECTIVES,
    Constraints,
    SearchResult,
    label,
    priced_gpus,
    safe_csv,
    scenario_for,
    search,
    searches_generation,
    target_batch_sequences,
    with_sequence_length,
)
from planner import SearchSpace as Space
from ui import format as fmt
from ui import search_charts
from ui.blocks import assumptions
from ui.compare_table import with_wall_clock
from ui.data import catalogs
from ui.number_entry import typed_number
from ui.safe_text import plain
from ui.search_layout import layout_choices
from ui.state import scenario, set_scenario

RESULT_KEY = "plan_search.result"  # (base scenario, SearchResult) of the last search
APPLIED_KEY = "plan_search.applied"
OBJECTIVE_LABELS = {
    "cost": "Lowest cost",
    "wall_clock": "Shortest wall clock",
    "energy": "Least energy",
    "co2e": "Least CO2e",
}
TABLE_COLUMNS = {
    "rank": st.column_config.NumberColumn("#", format="%d", pinned=True),
    "gpu": st.column_config.TextColumn("GPU", pinned=True),
    "n_gpus": st.column_config.NumberColumn("GPUs", format="%d"),
    "tp": st.column_config.NumberColumn("TP", format="%d"),
    "cp": st.column_config.NumberColumn("CP", format="%d", help="context-parallel degree (long sequences)"),
    "pp": st.column_config.NumberColumn("PP", format="%d"),
    "pp_virtual_stages": st.column_config.NumberColumn("Virtual stages", format="%d"),
    "ep": st.column_config.NumberColumn("EP", format="%d", help="expert-parallel degree (MoE models)"),
    "dp": st.column_config.NumberColumn("DP", format="%d"),
    "zero_stage": st.column_config.NumberColumn("ZeRO", format="%d"),
    "hybrid_shard": st.column_config.CheckboxColumn(
        "HSDP", help="ZeRO shards within a node, replicas across nodes"
    ),
    "recompute": st.column_config.TextColumn("Recompute"),
    "micro_batch": st.column_config.NumberColumn("Micro-batch", format="%d"),
    "grad_accum": st.column_config.NumberColumn("Accumulation", format="%d"),
    "wall_clock": st.column_config.TextColumn("Wall clock"),
    "wall_clock_h": None,  # in the data (sorting, tests); shown as the text column above
    "cost_usd": st.column_config.NumberColumn("Cost (USD)", format="$%.2f"),
    "energy_kwh": st.column_config.NumberColumn("Energy (kWh)", format="%.1f"),
    "co2e_kg": st.column_config.NumberColumn("CO2e (kg)", format="%.1f"),
    "peak_gib_per_device": st.column_config.NumberColumn("Peak GiB/GPU", format="%.1f"),
    "fit_verdict": st.column_config.TextColumn(
        "Memory verdict", help="tight plans rank after those that fit with the memory model's error band"
    ),
    "peak_gib_high": st.column_config.NumberColumn("Peak GiB/GPU, high end", format="%.1f"),
    "vram_gib": st.column_config.NumberColumn("VRAM GiB", format="%.1f"),
    "offload_optimizer": st.column_config.CheckboxColumn("Optimizer offload"),
    "offload_params": st.column_config.CheckboxColumn("Parameter offload"),
    "mfu": st.column_config.NumberColumn("MFU", format="%.3f"),
    "mfu_low": st.column_config.NumberColumn("MFU, slow end", format="%.3f"),
    "mfu_high": st.column_config.NumberColumn("MFU, fast end", format="%.3f"),
    "usd_per_gpu_hour": st.column_config.NumberColumn("$/GPU-h", format="$%.2f"),
    # PPO/GRPO searches only (planner.decide.sweep_generation)
    "generation_gpus": st.column_config.NumberColumn(
        "Generation GPUs",
        format="%d",
        help="GPUs that only generate, beside the training GPUs (0: colocated)",
    ),
    "generation_frac": st.column_config.NumberColumn("Share generating", format="percent"),
}

st.title("Plan search")
base = scenario()
cats = catalogs()
try:
    priced = list(priced_gpus(base, cats))
    target = target_batch_sequences(base, Space())
except ValueError as err:
    st.error(f"Cannot search for this scenario: {plain(err)}", icon=":material/error:")
    st.stop()
st.caption(
    f"{plain(base.model or 'Custom model')}, {plain(base.method)} training: every GPU type × GPU count × tensor and pipeline "
    f"parallelism × ZeRO stage × recompute × micro-batch, with gradient accumulation set so each step trains at "
    f"least the global batch below (default {target:,} sequences of {with_sequence_length(base, cats).seq_len:,} tokens, the scenario's). Fix any searched choice below to keep every plan at it."
)

with st.form("search.form", border=True):
    first, second, third = st.columns(3)
    # Typed boxes (ui/number_entry.py): 1e6 or 30,000 read exactly; a bad entry is refused beside its box.
    deadline, deadline_ok = typed_number(
        first,
        "Deadline (hours of wall clock)",
        "search.deadline_h",
        integer=False,
        low=0.01,
        placeholder="no deadline",
    )
    budget, budget_ok = typed_number(
        second, "Budget (USD)", "search.budget_usd", integer=False, low=1.0, placeholder="no budget"
    )
    max_gpus, max_gpus_ok = typed_number(
        third, "Most GPUs", "search.max_gpus", integer=True, low=1, high=1_000_000, default=DEFAULT_MAX_GPUS
    )
    gpus = st.multiselect(
        "GPU types",
        cats.gpus["name"].to_list(),
        default=priced,
        key="search.gpus",
        help="Default: every GPU with a catalogue price. An unpriced GPU has no cost.",
    )
    fourth, fifth = st.columns(2)
    objective = fourth.selectbox(
        "Best means", OBJECTIVES, format_func=OBJECTIVE_LABELS.get, key="search.objective"
    )
    top_n, top_n_ok = typed_number(
        fifth, "Results to list", "search.top_n", integer=True, low=1, high=100, default=10
    )
    layout = layout_choices(base, target)
    st.caption(plain(f"Pricing: {base.pricing.replace('_', ' ')} (sidebar). Region for CO2e: {base.region}."))
    submitted = st.form_submit_button("Search", type="primary", icon=":material/search:", key="search.run")


def _run_search() -> None:
    if not (deadline_ok and budget_ok and max_gpus_ok and top_n_ok) or layout.space is None:
        return  # each refused box says why beside it; nothing is searched with a value the user did not type
    if not gpus:
        st.warning("Choose at least one GPU type.")
        return
    constraints = Constraints(
        deadline_h=deadline, budget_usd=budget, max_gpus=int(max_gpus), gpus=tuple(gpus), objective=objective
    )
    bar = st.progress(0.0, text="Searching…")

    shown_percent = [0]

    def report(done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        if percent > shown_percent[0]:  # a message per whole percent, not per chunk of a large search
            shown_percent[0] = percent
            bar.progress(percent / 100, text=f"Evaluated {done:,} of {total:,} configurations")

    result = search(base, constraints, layout.space, catalogs=cats, top_n=int(top_n), progress=report)
    bar.empty()
    st.session_state[RESULT_KEY] = (base, result)
    st.session_state.pop(APPLIED_KEY, None)


if submitted:
    try:
        _run_search()
    except ValueError as err:
        st.error(f"Cannot search: {plain(err)}", icon=":material/error:")

stored = st.session_state.get(RESULT_KEY)
if stored is None:
    st.info("Set the constraints and press Search.", icon=":material/search:")
    st.stop()
searched_base, result = stored
assert isinstance(result, SearchResult)


def _apply(rank: int) -> None:
    row = result.top.row(rank - 1, named=True)
    set_scenario(scenario_for(row, searched_base, cats))
    st.session_state[APPLIED_KEY] = label(row)


applied = st.session_state.get(APPLIED_KEY)
if applied:
    st.success(plain(f"Applied {applied}: every page now shows this configuration."), icon=":material/check:")
elif searched_base != base:
    st.warning("The scenario has changed since this search; press Search again for current results.")

for note in result.notes:
    st.warning(plain(note))
st.markdown(
    plain(f"Global batch target: {result.target_batch_sequences:,} sequences per optimizer step.")
    + (plain(f" Kept fixed: {result.fixed_choices}.") if result.fixed_choices else "")
)
(st.success if result.top.height else st.error)(plain(result.reason))
st.caption(
    f"{result.n_evaluated:,} configurations evaluated in {result.elapsed_s:.2f} s on {len(result.gpus)} GPU "
    f"types; {result.n_fit:,} fit in memory, {result.n_feasible:,} meet the constraints."
    + (
        f" Left out: {plain('; '.join(f'{k} ({v})' for k, v in result.skipped_gpus.items()))}."
        if result.skipped_gpus
        else ""
    )
)
if not result.top.height:
    st.stop()

st.subheader("Best configurations")
top = with_wall_clock(result.top)
shown = [name for name in TABLE_COLUMNS if name in top.columns]
st.dataframe(
    top.select(shown),
    column_config=TABLE_COLUMNS,
    hide_index=True,
    width="stretch",
    key="search.table",
)
pick_col, apply_col = st.columns([4, 1], vertical_alignment="bottom")
ranks = result.top["rank"].to_list()
labels = {row["rank"]: f"{row['rank']}. {label(row)}" for row in result.top.iter_rows(named=True)}
picked = pick_col.selectbox("Configuration to apply", ranks, format_func=labels.get, key="search.pick")
apply_col.button(
    "Apply",
    type="primary",
    icon=":material/done_all:",
    key="search.apply",
    on_click=_apply,
    args=(picked,),
    width="stretch",
)
st.download_button(
    "Download CSV",
    data=safe_csv(result.top),
    file_name="plan-search.csv",
    mime="text/csv",
    on_click="ignore",
    icon=":material/download:",
)

st.subheader("Cost against wall clock")
if result.frontier.height:
    st.altair_chart(
        search_charts.pareto_chart(
            result.frontier, result.top, result.constraints.deadline_h, result.constraints.budget_usd
        ),
        width="stretch",
    )
    fastest = result.frontier.row(0, named=True)
    cheapest = result.frontier.row(-1, named=True)
    st.caption(
        f"The Pareto frontier: {result.frontier.height:d} configurations, none beaten on both time and cost. "
        f"From {plain(label(fastest))} ({fmt.hours(fastest['wall_clock_h'])}, {fmt.usd(fastest['cost_usd'])}) to "
        f"{plain(label(cheapest))} ({fmt.hours(cheapest['wall_clock_h'])}, {fmt.usd(cheapest['cost_usd'])}). "
        "The diamond is the winner; rings are the other listed results."
    )
    with st.expander("Frontier table"):
        st.dataframe(
            with_wall_clock(result.frontier).select(shown).drop("rank"),
            column_config=TABLE_COLUMNS,
            hide_index=True,
            width="stretch",
        )
else:
    st.info("No priced configuration to plot (a frontier needs a cost).")

assumptions(
    [
        "Every configuration trains the same model on the same data with the same method, optimizer and precision "
        "as the scenario; only the GPU type, the GPU count and the layout change.",
        f"GPU counts: powers of two and whole nodes of {base.gpus_per_node}, up to the maximum. Tensor parallelism "
        "stays inside a node and divides the attention heads; pipeline depths 1-16.",
        "Gradient accumulation is rounded up so each step trains at least the scenario's global batch; a layout "
        "whose replicas × micro-batch already exceed it is skipped.",
        "A layout fits when its peak memory per GPU (Memory page) is at most the GPU's memory; the time, cost and "
        "energy come from the same estimate as every other page, so Apply reproduces the row exactly.",
        "A price, peak TFLOP/s or VRAM you entered for your GPU applies to that GPU only; other GPUs use the "
        "catalogue. An unpriced GPU cannot be ranked by cost or held to a budget.",
        "The frontier compares cost with wall clock among the configurations that meet the constraints.",
        "A layout choice set to a value is kept in every plan; when nothing meets the constraints, CPU offload "
        "(the optimizer, then the parameters too) is searched as well, with ZeRO stage 1-3 for optimizer offload "
        "and stage 3 for parameter offload (DeepSpeed's rules). The result says what was tried and, when "
        "nothing fits, how far the closest plan is over the GPU's memory and which fixed choice is in the way.",
        *(
            [
                "PPO/GRPO: each plan generates its rollouts on its training GPUs (colocated, the engine taking its "
                "memory share) or on dedicated GPUs of the same type beside them; the search tries colocated and "
                "about 1/8, 1/4 and 1/2 of each GPU total for generation (whole nodes past one node). The cost, "
                "energy and the 'Most GPUs' limit count the generation GPUs too."
            ]
            if searches_generation(base)
            else []
        ),
        "The MFU band (slow and fast end) is end to end: the same plan at the efficiency preset's low and high "
        "compute efficiency, with communication and the pipeline bubble, so it brackets the plan's MFU.",
    ]
)
