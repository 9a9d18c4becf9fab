"""Memory: the per-GPU peak by component, what drives it, and what to change when it does not fit."""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import memory_components, memory_vs_micro_batch
from ui import charts
from ui import format as fmt
from ui.blocks import (
    TIGHT,
    assumptions,
    band_words,
    breakdown_table,
    context_caption,
    fit_verdict,
    loading_row,
    memory_metric,
    model_note,
    unavailable_notes,
)
from ui.estimate_cache import current_or_stop
from ui.fixes_box import render_fixes
from ui.methods_link import methods_link
from ui.post_training_view import memory_rows, render_memory_notes
from ui.safe_text import plain
from ui.trace_box import render_trace
from ui.training_setup import RECOMPUTE_LABELS

st.title("Memory")
est, resolved = current_or_stop()
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
st.caption(
    "Method, optimizer, batch, sequence length, sharding and memory savers: **Training setup** in the sidebar."
)
methods_link("memory")
model_note(est, bool(resolved.shape and resolved.shape.is_moe))
s = resolved.scenario
st.markdown(
    f"**Global batch** = {s.micro_batch:d} micro-batch × {s.grad_accum:d} accumulation × {s.dp:d} replicas "
    f"× {est.seq_len:,} tokens = **{est.global_batch_tokens:,.0f} tokens**"
)
st.caption(f"Sequence length {est.seq_len:,} tokens: {plain(est.seq_len_rule)}.")
first, second, third = st.columns(3)
with first:
    memory_metric(est)
second.metric(
    "Headroom",
    fmt.gib(est.headroom_gib),
    f"peak during {est.peak_phase or 'n/a'}",
    delta_color="off",
    delta_arrow="off",
)
third.metric("Largest micro-batch that fits", fmt.micro_batch(est.max_micro_batch))

components = memory_components(est)
st.vega_lite_chart(spec=charts.memory_stack(components, est.vram_gib), width="stretch")
if est.peak_gib_per_device is not None:
    st.caption(
        f"The bar adds every component at its own largest, {fmt.gib(float(components['gib'].sum()))}. They are "
        "not all held at once: gradients grow as the backward pass frees activations, and activations and logits "
        f"are gone by the optimizer step. The peak per GPU, during the {plain(est.peak_phase)}, is "
        f"{fmt.gib(est.peak_gib_per_device)}."
    )
render_memory_notes(est, s)
breakdown_table(
    [(row["component"], row["how"], fmt.gib(row["gib"])) for row in components.iter_rows(named=True)]
    + memory_rows(est)
    + [
        loading_row(est),
        ("Peak per GPU", f"largest phase: {est.peak_phase}", fmt.gib(est.peak_gib_per_device)),
        (
            "Allocated peak",
            "tensors alive at the worst moment (what PyTorch reports as its peak allocated memory)",
            fmt.gib(est.peak_allocated_gib),
        ),
        (
            "Reserved peak",
            "allocated + the caching allocator's slack (PyTorch's peak reserved memory)",
            fmt.gib(est.peak_reserved_gib),
        ),
        (
            "Device total",
            "reserved + CUDA context and library workspaces (nvidia-smi)",
            fmt.gib(est.device_total_gib),
        ),
        (
            "Device total, high end",
            "× the memory model's error band on published runs",
            fmt.gib(est.peak_gib_high),
        ),
        ("Memory verdict", band_words(est), fit_verdict(est)),
        ("On the host (offloaded)", "moved to CPU memory", fmt.gib(est.host_offload_gib)),
    ]
)
unavailable_notes(est)

if est.fit_verdict in ("does not fit", TIGHT):
    st.subheader("Ways to make it fit with margin")
    render_fixes(resolved, key="memory")

st.subheader("Peak memory against micro-batch")
curve = memory_vs_micro_batch(resolved)
if curve.height:
    st.vega_lite_chart(
        spec=charts.lines_with_limit(
            curve.with_columns(pl.col("recompute").replace(RECOMPUTE_LABELS)),
            "micro_batch",
            "peak_gib",
            "recompute",
            est.vram_gib,
            "Micro-batch (sequences per GPU)",
            "Peak GiB per GPU",
            colour_title="Activation recompute",
        ),
        width="stretch",
    )
    st.caption(
        "With flash attention the attention scores are never stored, so recomputing them saves nothing: the "
        "“selective (attention scores)” line then lies on the “none” line (dashes tell them apart)."
    )
render_trace(resolved)
assumptions(
    [
        "Weights, gradients, optimizer states and the fp32 master copy follow the chosen precision and optimizer; "
        "ZeRO shards them over the data-parallel replicas only, tensor and pipeline parallelism split the model.",
        "Activations follow Korthikanti et al. (2022), adapted to grouped-query attention and gated MLPs; flash "
        "attention removes the sequence-squared score term; recompute keeps less and repeats work.",
        "The verdict judges the device total (what nvidia-smi shows) against the GPU's memory with the margin the "
        "memory model missed by on published runs: the high end is the estimate times the ratio (measured ÷ "
        "predicted) that nine sources in ten stayed under; “tight” means the estimate fits and the high end does not.",
        "Logits are held in fp32 with their gradient unless a fused or chunked loss is used — at a 128k vocabulary "
        "this alone can take several GiB.",
        "The CUDA context and library workspaces (2 GiB by default) and the caching allocator's slack are added on top.",
    ]
)
