"""Compute: tokens, FLOPs, utilisation, communication and time — and where more GPUs stop paying."""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import MAX_SCALING_GPUS, parameter_breakdown, scaling_curve
from ui import charts
from ui import format as fmt
from ui.blocks import (
    assumptions,
    breakdown_table,
    context_caption,
    model_note,
    small_table,
    unavailable_notes,
)
from ui.data import catalogs
from ui.estimate_cache import current_or_stop
from ui.goodput_inputs import goodput_rows, render_goodput_inputs
from ui.methods_link import methods_link
from ui.model_input import render_shape_editor
from ui.number_entry import number_entry
from ui.plan_banners import greyed, render_plan_warnings
from ui.post_training_view import render_step_time
from ui.presets import preset_picker
from ui.state import bound
from ui.step_parts_view import render_step_parts

st.title("Compute")
# Sequence length, packing and the parallel degrees are in the sidebar's training setup, on every page.
with st.expander("Data, efficiency, network and storage", expanded=False):
    left, middle, right = st.columns(3)
    with left:
        number_entry(
            "Total tokens (billions, replaces examples × tokens × epochs)",
            "total_tokens_b",
            placeholder="from the dataset inputs",
        )
        number_entry(
            "FLOPs per parameter per token (override)",
            "flops_per_param_token",
            placeholder="from the model shape",
            help="6 for full training (2 forward, 4 backward); about 4 for LoRA. Replaces the FLOP model.",
        )
    with middle:
        bound(
            st.selectbox,
            "Efficiency preset",
            "efficiency_band",
            options=["low", "typical", "high"],
            help="Which point of the published-measurement range to use when MFU is left empty.",
        )
        number_entry("GPUs per node", "gpus_per_node")
        number_entry(
            "Inter-node bandwidth per GPU (GB/s)",
            "inter_node_gb_per_s",
            help="50 GB/s is one 400 Gb/s InfiniBand NDR link per GPU.",
        )
        bound(
            st.slider,
            "Communication hidden under compute",
            "overlap_frac",
            min_value=0.0,
            max_value=1.0,
            step=0.05,
        )
    with right:
        storage = catalogs().storage
        preset_picker(
            "Checkpoint storage preset",
            "compute.storage_preset",
            "storage_gb_per_s",
            {
                "not counted": None,
                **{
                    row["preset"].replace("_", " "): row["read_gb_per_s"]
                    for row in storage.iter_rows(named=True)
                },
            },
        )
        number_entry(
            "Storage bandwidth (GB/s)",
            "storage_gb_per_s",
            placeholder="not counted",
            help="Model load and checkpoint saves (write assumed as fast as read where only read is "
            "published). Empty: checkpoint I/O is left out of the wall clock.",
        )
        number_entry("Checkpoints saved", "n_checkpoints")
        number_entry(
            "Host memory bandwidth per node (GB/s)",
            "host_memory_gb_per_s",
            help="What the CPU optimizer step of optimizer offload streams through, shared by the node's "
            "GPUs. 300 GB/s is about half the theoretical rate of a two-socket DDR5-4800 server.",
        )

render_goodput_inputs()

est, resolved = current_or_stop()
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
methods_link("flops")
model_note(est, bool(resolved.shape and resolved.shape.is_moe))
render_plan_warnings(resolved, est)  # communication-bound, few prompts a rollout, more GPUs slower
first, second, third, fourth = st.columns(4)
first.metric("Wall clock", greyed(fmt.hours(est.wall_clock_h), est))  # grey: a plan that does not fit
# MFU and HFU side by side no longer fit a quarter of a laptop screen ("44.5% / 44.5%" was cut off): HFU below.
second.metric("MFU", f"{est.mfu:.1%}", help="Model FLOPs per second ÷ peak (what published MFU figures use).")
second.caption(f"HFU {est.hfu:.1%}: hardware FLOPs, the recomputed forward pass included, ÷ peak")
third.metric("Tokens/s per GPU", fmt.count(est.tokens_per_s_per_gpu))
fourth.metric("Optimizer steps", fmt.count(est.n_steps))

breakdown_table(
    [
        ("Training tokens", "examples × tokens per example × epochs", fmt.count(est.training_tokens)),
        (
            "Tokens processed",
            "training tokens, plus padding when not packed",
            fmt.count(est.processed_tokens),
        ),
        ("Global batch", resolved.batch_rule, f"{fmt.count(est.global_batch_tokens)} tokens"),
        ("Model FLOPs", resolved.flops_rule, fmt.sci(est.model_flops, "FLOP")),
        ("Hardware FLOPs", "model FLOPs plus recomputed forward passes", fmt.sci(est.hardware_flops, "FLOP")),
        (
            "Per-GPU rate",
            f"{est.peak_tflops:,.1f} TFLOP/s peak × achieved MFU {est.mfu:.3f}",
            fmt.sci(est.per_device_flops_per_s, "FLOP/s"),
        ),
        (
            "Step time",
            "compute + exposed communication, with the pipeline bubble, + exposed offload",
            f"{est.step_time_s:,.3f} s",
        ),
        (
            "Communication per step",
            "gradient sync, ZeRO-3 gathers, tensor-parallel all-reduces",
            f"{est.comm_time_s:,.3f} s",
        ),
        (
            "Offload per step",
            "host transfers over PCIe and the CPU optimizer step that compute does not hide",
            f"{est.offload_time_s:,.3f} s",
        ),
        (
            "LoRA/QLoRA memory-bound work per step",
            "4-bit weights dequantised each pass, adapters' thin matmuls; inside the step time",
            f"{est.adapter_memory_time_s:,.3f} s",
        ),
        (
            "Pipeline bubble",
            "(p − 1) ÷ (virtual stages × micro-batches + p − 1)",
            f"{est.bubble_frac:.1%}",
        ),
        ("Checkpoint I/O", "load once + save each checkpoint", fmt.hours(est.checkpoint_io_h)),
        (
            "Wall clock (range)",
            "operator compute ± 20 % (a preset band for a bare parameter count)",
            fmt.band(est.wall_clock_h_low, est.wall_clock_h_high, "hours"),
        ),
        *goodput_rows(est),
    ]
)
unavailable_notes(est)
render_step_parts(est)
render_step_time(est, resolved.scenario)

st.subheader("Scaling with GPU count")
curve = scaling_curve(resolved)
st.vega_lite_chart(spec=charts.scaling(curve, resolved.scenario.gpus_per_node), width="stretch")
best = curve.filter(pl.col("scaling_efficiency_frac") >= 0.8)
sequences_per_step = resolved.scenario.sequences_per_step
last_gpus = int(curve["n_gpus"].max())
ending = (
    f"it is drawn up to {last_gpus:,} GPUs"
    if last_gpus * 2 > MAX_SCALING_GPUS
    else f"it ends at {last_gpus:,} GPUs, past which the batch could not be split evenly over the replicas "
    "(more gradient accumulation extends it)"
)
st.caption(
    f"Every point keeps this run's global batch of {sequences_per_step:,} sequences per optimizer step; {ending}."
    + (f" Up to {best['n_gpus'].max():,} GPUs keep at least 80 % scaling efficiency." if best.height else "")
)

st.subheader("Parameters by component")
params = parameter_breakdown(resolved)
if params is None:
    st.info("Parameter breakdown needs the model's shape: choose a preset or import a config.json.")
else:
    # A markdown table of eight rows: the data grid made a page opened by its URL load 1.2 MB more script
    rows = [(c, f"{n:,.0f}", f"{b:.3f}", f"{s:.2%}") for c, n, b, s in params.iter_rows()]
    small_table(
        pl.DataFrame(rows, schema=["Component", "Parameters", "Billions", "Share of total"], orient="row")
    )
render_shape_editor(resolved.shape)
assumptions(
    [
        "Model FLOPs are 6 per active parameter per token (forward 2, backward 4) plus causal attention "
        "(12 · layers · sequence · attention width per token for forward and backward, halved for the causal mask).",
        "LoRA and QLoRA skip the frozen weights' gradients: about 4 per base parameter plus 6 per adapter parameter.",
        "Full recompute repeats the forward pass (hardware FLOPs ≈ 8 per parameter per token); selective recompute "
        "repeats only the attention scores. Time is computed from hardware FLOPs at the hardware rate.",
        "Communication uses ring collectives over the GPU's own link inside a node and the inter-node bandwidth "
        "across nodes; the overlap share of it hides under compute.",
    ]
)
