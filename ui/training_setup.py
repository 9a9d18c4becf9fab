"""The training setup — method, optimizer, precision, batch, sequence, sharding and memory savers — in the sidebar.

It used to live on the Memory page only, so a plan's most consequential inputs were out of reach on every other
page, and at 1280×720 the Memory page showed inputs and no result. In the sidebar it is one click away
on every page; a one-line summary says what is set while the section is closed.
"""

from __future__ import annotations

import streamlit as st

from planner import Scenario
from ui.estimate_cache import current_resolved
from ui.memory_inputs import render_memory_inputs
from ui.number_entry import number_entry
from ui.post_training_inputs import (
    METHOD_LABEL,
    OBJECTIVE_SHORT,
    render_objective_input,
    render_post_training_inputs,
)
from ui.safe_text import plain
from ui.state import bound, scenario
from ui.training_code import render_training_code

METHOD_LABELS = {"full": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA (4-bit base)"}
RECOMPUTE_LABELS = {
    "none": "none",
    "selective": "selective (attention scores)",
    "selective_op": "selective, op-level (torchtitan)",
    "full": "full (every layer)",
}
ZERO_LABELS = {
    0: "0 (DDP / NO_SHARD)",
    1: "1 (optimizer)",
    2: "2 (+gradients, SHARD_GRAD_OP)",
    3: "3 (+weights, FULL_SHARD)",
}
OPTIMIZER_LABELS = {  # the names people use, not the field's values
    "adamw": "AdamW",
    "adamw_8bit": "8-bit AdamW",
    "paged_adamw_8bit": "paged 8-bit AdamW",
    "paged_adamw": "paged 32-bit AdamW",
    "sgd": "SGD",
    "sgd_momentum": "SGD with momentum",
    "adafactor": "Adafactor",
}
OPEN_KEY = "setup.open"  # the section's open state (Streamlit keeps it under this key)
LAST_PAGE_KEY = "setup.last_page"  # the page of the previous run: arriving on Memory opens the section
VIRTUAL_STAGES_LABEL = "Virtual stages per GPU (interleaved 1F1B)"
EXPERT_PARALLEL_LABEL = "Expert parallel (MoE)"
EXPERT_TENSOR_LABEL = "Expert tensor parallel (MoE)"
REDUCE_DTYPE_LABEL = "Gradient reduce dtype"
REDUCE_DTYPE_LABELS = {
    "auto": "auto (fp32 with a master copy, else the gradients' dtype)",
    "fp32": "fp32",
    "bf16": "bf16",
    "fp16": "fp16",
}
OVERLAP_MODEL_LABEL = "Communication overlap model"
OVERLAP_MODEL_LABELS = {
    "constant": "constant share (published-consistent)",
    "windows": "behind its compute window (needs the real micro-batch split)",
}


def setup_summary(s: Scenario, derived_seq_len: int | None) -> str:
    """One line naming what is set, so a closed section still tells what the pages are computing."""
    method = METHOD_LABELS[s.method] + (f" r{s.lora_rank}" if s.method != "full" else "")
    if s.post_training != "sft":  # the objective first: it changes what every page computes
        method = f"{OBJECTIVE_SHORT[s.post_training]}, policy {method}"
    if s.seq_len is not None:
        sequence = f"{s.seq_len:,}-token sequences"
    elif derived_seq_len is not None:
        sequence = f"{derived_seq_len:,}-token sequences (from the data)"
    else:
        sequence = "sequence length from the data"
    parts = [
        method,
        OPTIMIZER_LABELS[s.optimizer],
        s.precision.replace("_", " "),
        f"ZeRO {s.zero_stage}",
        f"micro-batch {s.micro_batch} × {s.grad_accum} accumulation",
        sequence,
        "no recompute" if s.recompute == "none" else f"recompute {RECOMPUTE_LABELS[s.recompute]}",
    ]
    if s.tp * s.pp * s.cp > 1:
        parts.append(f"TP{s.tp} PP{s.pp} CP{s.cp}")
    if s.pp_virtual_stages > 1:
        parts.append(f"interleaved ×{s.pp_virtual_stages}")
    if s.ep > 1:
        parts.append(f"EP{s.ep}")
    if s.etp is not None and s.etp != s.tp:
        parts.append(f"ETP{s.etp}")
    return " · ".join(parts)


def render_training_setup(page_title: str) -> None:
    """The summary, and the inputs only while the section is open.

    Streamlit draws every widget of a closed expander on each run all the same; these twenty-odd widgets were
    then about half of a rerun's server CPU under load (bench/load_bench.py), so a closed section draws none.
    Arriving on the Memory page opens it: that page explains these inputs.
    """
    ss = st.session_state
    if page_title == "Memory" and ss.get(LAST_PAGE_KEY) != "Memory":
        ss[OPEN_KEY] = True
    ss[LAST_PAGE_KEY] = page_title
    # The heading and the summary in one element: every element is a message on each rerun.
    st.markdown(
        f"#### Training setup\n\n:small[:gray[{plain(setup_summary(scenario(), _derived_seq_len()))}]]"
    )
    section = st.expander("Method, batch, sharding, memory savers", key=OPEN_KEY, on_change="rerun")
    if not section.open:
        return
    with section:
        _method_inputs()
        _batch_inputs()
        _sharding_inputs()
        render_memory_inputs()


def _derived_seq_len() -> int | None:
    try:
        return current_resolved().seq_len
    except ValueError:  # an unknown name: the page says so; the summary just omits the figure
        return None


def _method_inputs() -> None:
    render_objective_input()
    bound(
        st.selectbox,
        METHOD_LABEL,
        "method",
        options=list(METHOD_LABELS),
        format_func=METHOD_LABELS.get,
        help="How the policy's weights are trained, whatever the objective: all of them, or low-rank adapters "
        "on a frozen base (QLoRA: a 4-bit base).",
    )
    if scenario().method != "full":
        number_entry("LoRA rank", "lora_rank")
        bound(st.selectbox, "LoRA targets", "lora_targets", options=["all_linear", "attention"])
    if scenario().method == "qlora":
        bound(st.checkbox, "Double quantisation", "qlora_double_quant")
    render_post_training_inputs()
    bound(
        st.selectbox,
        "Optimizer",
        "optimizer",
        options=list(OPTIMIZER_LABELS),
        format_func=OPTIMIZER_LABELS.__getitem__,
    )
    bound(
        st.selectbox,
        "Precision",
        "precision",
        options=["bf16_mixed", "fp16_mixed", "bf16_pure", "fp8_mixed", "fp32"],
        format_func=lambda precision: precision.replace("_", " "),  # "bf16 mixed", not the field's value
    )
    render_training_code()
    number_entry(
        "Bytes per parameter (override)",
        "bytes_per_param",
        placeholder="from the recipe",
        help="Replaces weights + gradients + optimizer + master copy: 16 for mixed-precision AdamW, ~2 for LoRA.",
    )


def _batch_inputs() -> None:
    number_entry("Micro-batch (sequences per GPU)", "micro_batch")
    number_entry("Gradient accumulation steps", "grad_accum")
    number_entry(
        "Sequence length (tokens)",
        "seq_len",
        placeholder="from tokens per example",
        help="Leave empty to follow the data: packed, the smallest power of two holding one example (at least "
        "512); padded, one example rounded up to a multiple of 64.",
    )
    bound(
        st.checkbox,
        "Pack examples into full sequences",
        "packing",
        help="Without packing every example is padded to the sequence length, and padding costs compute.",
    )
    bound(
        st.selectbox,
        "Activation recompute",
        "recompute",
        options=list(RECOMPUTE_LABELS),
        format_func=RECOMPUTE_LABELS.get,
        help="Selective (Korthikanti) recomputes only the attention scores, which flash attention already avoids "
        "storing, so with flash attention it saves nothing. Op-level selective (torchtitan's default) keeps "
        "matmul outputs and recomputes the cheap operations.",
    )


def _sharding_inputs() -> None:
    bound(
        st.selectbox,
        "ZeRO stage / FSDP",
        "zero_stage",
        options=list(ZERO_LABELS),
        format_func=ZERO_LABELS.get,
    )
    bound(st.checkbox, "Shard within a node only (HYBRID_SHARD)", "hybrid_shard")
    bound(
        st.selectbox,
        REDUCE_DTYPE_LABEL,
        "reduce_dtype",
        options=list(REDUCE_DTYPE_LABELS),
        format_func=REDUCE_DTYPE_LABELS.get,
        help="The dtype the data-parallel gradient reduction moves: PyTorch FSDP MixedPrecision(reduce_dtype), "
        "Megatron --accumulate-allreduce-grads-in-fp32, DeepSpeed communication_data_type. fp32 moves twice "
        "the bytes of bf16.",
    )
    bound(
        st.selectbox,
        OVERLAP_MODEL_LABEL,
        "overlap_model",
        options=list(OVERLAP_MODEL_LABELS),
        format_func=OVERLAP_MODEL_LABELS.get,
        help="constant: the overlap share of all communication hides under all compute (what published runs "
        "agree with). windows: the data-parallel sync hides only behind the compute beside it (DDP and ZeRO-1 "
        "behind the last micro-batch's backward), so gradient accumulation exposes more of it.",
    )
    number_entry("Tensor parallel", "tp")
    number_entry("Pipeline parallel", "pp")
    number_entry(
        VIRTUAL_STAGES_LABEL,
        "pp_virtual_stages",
        help="1 = plain 1F1B. v > 1 = interleaved 1F1B (Megatron): each GPU holds v chunks of layers, the "
        "bubble shrinks v-fold, point-to-point traffic grows v-fold and the first stage keeps more "
        "activations. Needs pp > 1, accumulation a multiple of pp, and layers that split into pp × v chunks.",
    )
    number_entry(
        EXPERT_PARALLEL_LABEL,
        "ep",
        help="Mixture-of-experts models only: the routed experts are spread over this many GPUs, carved out of "
        "the data-parallel replicas (Megatron's --expert-model-parallel-size). Must divide the model's routed "
        "experts and the data-parallel degree; 1 for dense models. Each MoE layer then exchanges tokens "
        "all-to-all (dispatch and combine) in the forward and backward passes.",
    )
    number_entry(
        EXPERT_TENSOR_LABEL,
        "etp",
        placeholder="follows tensor parallel",
        help="Mixture-of-experts models only: each routed expert's matrices split over this many GPUs "
        "(Megatron's --expert-tensor-parallel-size); empty = the tensor-parallel degree. 1 = whole experts per "
        "GPU, no tensor collectives inside them. etp x ep must divide tp x dp and the expert width.",
    )
    number_entry(
        "MoE capacity factor",
        "moe_capacity_factor",
        help="Mixture-of-experts models with expert parallelism: the busiest GPU's routed tokens over the "
        "average (Switch Transformer's capacity factor; 1.25-2 for padded routers). It scales that GPU's "
        "all-to-all and expert compute, which every GPU waits for. 1 = dropless with balanced routing.",
    )
    number_entry("Context parallel", "cp")
    bound(st.checkbox, "Sequence parallelism", "sequence_parallel")
