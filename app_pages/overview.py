"""Overview: the headline answers — how long, how much, does it fit, how fast."""

from __future__ import annotations

import streamlit as st

from planner import plural
from ui import format as fmt
from ui.blocks import (
    TIGHT,
    assumptions,
    band_words,
    breakdown_table,
    context_caption,
    fit_verdict,
    memory_metric,
    model_note,
    unavailable_notes,
)
from ui.estimate_cache import current_or_stop
from ui.export_box import render_export_box
from ui.fixes_box import OVERVIEW_FIXES, render_fixes
from ui.goodput_inputs import goodput_rows
from ui.methods_link import methods_link
from ui.multimodal_view import multimodal_rows
from ui.plan_banners import greyed, render_plan_warnings
from ui.safe_text import plain
from ui.team_data import origin_note

st.title("Overview")
est, resolved = current_or_stop()
model_note(est, bool(resolved.shape and resolved.shape.is_moe))
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
origin_note(resolved)
methods_link("time")
render_plan_warnings(resolved, est)

# One row of three columns holding two figures each: half the layout messages of two rows of columns, which a
# rerun pays for in the browser (bench/browser_bench.py). Every figure carries a second line, so the rows align.
first, second, third = st.columns(3)


def figure(column, label: str, value: str, note: str) -> None:
    """A headline figure with its second line in grey (a note, not a change)."""
    column.metric(label, value, note, delta_color="off", delta_arrow="off")


n_gpus = resolved.scenario.n_gpus
figure(
    first,
    "Wall clock",
    greyed(fmt.hours(est.wall_clock_h), est),
    f"range {fmt.band(est.wall_clock_h_low, est.wall_clock_h_high, 'hours')}",
)
figure(
    second, "GPU-hours", greyed(fmt.count(est.device_hours, 1), est), f"wall clock × {plural(n_gpus, 'GPU')}"
)
figure(
    third,
    "Cost",
    greyed(fmt.usd(est.cost_usd), est),
    f"range {fmt.band(est.cost_usd_low, est.cost_usd_high)}",
)
with first:
    memory_metric(est)
# The unit in the label: it fits at 1,100 px.
figure(
    second,
    "Throughput (tokens/s)",
    fmt.count(est.tokens_per_s),
    f"{fmt.count(est.tokens_per_s / n_gpus)} per GPU",
)
figure(third, "Energy and carbon", f"{fmt.sig(est.energy_kwh)} kWh", f"{fmt.sig(est.co2e_kg)} kg CO2e")

if est.fit_verdict in ("does not fit", TIGHT):
    with st.container(border=True):
        head = "Does not fit" if est.fit_verdict == "does not fit" else "Tight — may run out of memory"
        st.markdown(
            f"**{plain(head)}: {fmt.gib(est.peak_gib_per_device)} per GPU** ({plain(band_words(est))}). "
            "Ways to make it fit with margin, best first:"
        )
        render_fixes(resolved, key="overview", limit=OVERVIEW_FIXES)
        st.page_link("app_pages/memory.py", label="More on the Memory page", icon=":material/memory:")

st.subheader("Breakdown")
breakdown_table(
    [
        ("Training tokens", "examples × tokens per example × epochs", fmt.count(est.training_tokens)),
        ("Sequence length", est.seq_len_rule, f"{est.seq_len:,} tokens"),
        ("Total FLOPs", resolved.flops_rule, fmt.sci(est.total_flops, "FLOP")),
        (
            "Per GPU, after utilisation",
            f"peak {est.peak_tflops:,.1f} TFLOP/s × achieved MFU {est.mfu:.3f}",
            fmt.sci(est.per_device_flops_per_s, "FLOP/s"),
        ),
        (
            "Across the cluster",
            f"per GPU × {plural(resolved.scenario.n_gpus, 'GPU')}",
            fmt.sci(est.cluster_flops_per_s, "FLOP/s"),
        ),
        (
            "Wall clock",
            "FLOPs ÷ cluster rate, plus exposed communication and checkpoint I/O",
            fmt.hours(est.wall_clock_h),
        ),
        ("GPU-hours", "wall clock × GPUs", fmt.count(est.device_hours, 1)),
        ("Cost", est.price_basis, fmt.usd(est.cost_usd)),
        *goodput_rows(est),
        ("Training throughput", "training tokens ÷ wall clock", f"{fmt.count(est.tokens_per_s)} tokens/s"),
        *multimodal_rows(est),  # vision-language and diffusion plans
        ("Weights and optimizer state, total", resolved.state_rule, fmt.gib(est.model_state_gib_total)),
        ("Per GPU, sharded evenly", "total ÷ GPUs", fmt.gib(est.model_state_gib_per_device)),
        (
            "Peak memory per GPU",
            "all components at the peak phase (Memory page)",
            fmt.gib(est.peak_gib_per_device),
        ),
        ("Memory verdict", band_words(est), fit_verdict(est)),
    ]
)
unavailable_notes(est)
render_export_box(resolved.scenario)
assumptions(
    [
        "Compute follows the 6·N·T rule (two FLOPs forward, four backward, per parameter and token) plus the "
        "attention term from the model's shape; an explicit FLOPs-per-parameter-per-token figure replaces both.",
        "Utilisation (MFU) is the share of the datasheet peak the run achieves. Unless you enter one, it comes from "
        "published measurements for this GPU generation, model size and method, and its spread gives the range.",
        "Multi-GPU runs lose time to communication that computation does not hide, and pipelines to their bubble; "
        "both are modelled on the Compute page and are approximate.",
        "Memory is the per-GPU peak over the training step, not just weights and optimizer state: activations, "
        "logits, framework overhead and allocator slack are what usually cause out-of-memory errors.",
        'Failures: the rows "with failures" add the expected interruptions (a failure rate per GPU-hour from '
        "Meta's published cluster record), checkpoint writes at the Young/Daly interval, the redone work and the "
        "restarts; the Compute page has their inputs. The figures above them assume a run that never fails.",
        "Not included: data preparation, evaluation runs, queueing, failed experiments and hyperparameter search — "
        "use the experiments multiplier on the Cost page for the last two.",
    ]
)
