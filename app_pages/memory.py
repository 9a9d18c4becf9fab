"""Memory: the per-GPU peak by component, what drives it, and what to change when it does not fit."""

from __future__ import annotations

import polars as pl
import streamlit as st

from planner import memory_components, memory_vs_micro_batch
from ui import charts
from ui import format as fmt
from ui.blocks import (
    assumptions,
    breakdown_table,
    context_caption,
    memory_metric,
    model_note,
    unavailable_notes,
)
from ui.estimate_cache import current_or_stop
from ui.fixes_box import render_fixes
from ui.methods_link import methods_link
from ui.state import bound, scenario

RECOMPUTE_LABELS = {
    "none": "none",
    "selective": "selective (attention scores)",
    "selective_op": "selective, op-level (torchtitan)",
    "full": "full (every layer)",
}

st.title("Memory")
left, middle, right = st.columns(3)
with left:
    bound(
        st.selectbox,
        "Method",
        "method",
        options=["full", "lora", "qlora"],
        format_func={"full": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA (4-bit base)"}.get,
    )
    if scenario().method != "full":
        bound(st.number_input, "LoRA rank", "lora_rank", min_value=1, step=8)
        bound(st.selectbox, "LoRA targets", "lora_targets", options=["all_linear", "attention"])
    if scenario().method == "qlora":
        bound(st.checkbox, "Double quantisation", "qlora_double_quant")
    bound(
        st.selectbox,
        "Optimizer",
        "optimizer",
        options=["adamw", "adamw_8bit", "sgd", "sgd_momentum", "adafactor"],
    )
    bound(
        st.selectbox,
        "Precision",
        "precision",
        options=["bf16_mixed", "fp16_mixed", "bf16_pure", "fp8_mixed", "fp32"],
    )
    bound(
        st.number_input,
        "Bytes per parameter (override)",
        "bytes_per_param",
        min_value=0.0,
        format="%.2f",
        placeholder="from the recipe",
        help="Replaces weights + gradients + optimizer + master copy: 16 for mixed-precision AdamW, ~2 for LoRA.",
    )
with middle:
    bound(
        st.selectbox,
        "ZeRO stage / FSDP",
        "zero_stage",
        options=[0, 1, 2, 3],
        format_func={
            0: "0 (DDP / NO_SHARD)",
            1: "1 (optimizer)",
            2: "2 (+gradients, SHARD_GRAD_OP)",
            3: "3 (+weights, FULL_SHARD)",
        }.get,
    )
    bound(st.checkbox, "Shard within a node only (HYBRID_SHARD)", "hybrid_shard")
    bound(
        st.selectbox,
        "Activation recompute",
        "recompute",
        options=["none", "selective", "selective_op", "full"],
        format_func=RECOMPUTE_LABELS.get,
        help="Selective (Korthikanti) recomputes only the attention scores, which flash attention already avoids storing, so with flash attention it saves nothing. Op-level selective (torchtitan's default) keeps matmul outputs and recomputes the cheap operations.",
    )
    bound(st.number_input, "Micro-batch (sequences per GPU)", "micro_batch", min_value=1, step=1)
    bound(st.number_input, "Gradient accumulation steps", "grad_accum", min_value=1, step=1)
    bound(
        st.number_input,
        "Sequence length (tokens)",
        "seq_len",
        min_value=16,
        step=512,
        placeholder="from tokens per example",
        help="Leave empty to follow the data: packed, the smallest power of two holding one example (at least 512); padded, one example rounded up to a multiple of 64.",
    )
with right:
    bound(st.number_input, "Tensor parallel", "tp", min_value=1, step=1)
    bound(st.number_input, "Pipeline parallel", "pp", min_value=1, step=1)
    bound(st.number_input, "Context parallel", "cp", min_value=1, step=1)
    bound(st.checkbox, "Sequence parallelism", "sequence_parallel")
    bound(st.checkbox, "Flash attention", "flash_attention")
    bound(st.checkbox, "Fused / chunked cross-entropy", "fused_cross_entropy")
    bound(st.checkbox, "Offload optimizer to CPU", "offload_optimizer")
    bound(st.checkbox, "Offload parameters to CPU", "offload_params")
    bound(st.number_input, "Framework overhead per GPU (GiB)", "overhead_gib", min_value=0.0, step=0.5)
    bound(
        st.number_input,
        "Allocator fragmentation (share)",
        "fragmentation_frac",
        min_value=0.0,
        max_value=1.0,
        step=0.01,
    )

est, resolved = current_or_stop()
context_caption(est, resolved.model_label, resolved.scenario.n_gpus)
methods_link("memory")
model_note(est, bool(resolved.shape and resolved.shape.is_moe))
s = resolved.scenario
st.markdown(
    f"**Global batch** = {s.micro_batch} micro-batch × {s.grad_accum} accumulation × {s.dp} replicas "
    f"× {est.seq_len:,} tokens = **{est.global_batch_tokens:,.0f} tokens**"
)
st.caption(f"Sequence length {est.seq_len:,} tokens: {est.seq_len_rule}.")
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
breakdown_table(
    [(row["component"], row["how"], fmt.gib(row["gib"])) for row in components.iter_rows(named=True)]
    + [
        ("Peak per GPU", f"largest phase: {est.peak_phase}", fmt.gib(est.peak_gib_per_device)),
        ("On the host (offloaded)", "moved to CPU memory", fmt.gib(est.host_offload_gib)),
    ]
)
unavailable_notes(est)

if est.fits_vram is False:
    st.subheader("Ways to make it fit")
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
assumptions(
    [
        "Weights, gradients, optimizer states and the fp32 master copy follow the chosen precision and optimizer; "
        "ZeRO shards them over the data-parallel replicas only, tensor and pipeline parallelism split the model.",
        "Activations follow Korthikanti et al. (2022), adapted to grouped-query attention and gated MLPs; flash "
        "attention removes the sequence-squared score term; recompute keeps less and repeats work.",
        "Logits are held in fp32 with their gradient unless a fused or chunked loss is used — at a 128k vocabulary "
        "this alone can take several GiB.",
        "The CUDA context and library workspaces (2 GiB by default) and the caching allocator's slack are added on top.",
    ]
)
