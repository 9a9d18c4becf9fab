"""The training setup's memory inputs: savers (flash attention, offload, recompute's neighbours), how the model
loads, and the tails beyond the textbook states (framework overhead, the caching allocator, fp8 weight caches).

Split from `ui.training_setup` by meaning: these inputs move only the memory figures, never the step time.
"""

from __future__ import annotations

import streamlit as st

from ui.number_entry import number_entry
from ui.state import bound

MODEL_LOADING_LABEL = "Model loading"
MODEL_LOADING_LABELS = {
    "sharded": "sharded as it loads (meta device, zero.Init, CPU-RAM-efficient)",
    "full_on_gpu": "whole model on each GPU, then sharded",
}
SEQ_LEN_SPREAD_LABEL = "Sequence-length spread between steps (share)"
EXPANDABLE_SEGMENTS_LABEL = "Allocator expandable segments"
FP8_WEIGHT_CACHE_LABEL = "fp8 weight cache (Transformer Engine)"


def render_memory_inputs() -> None:
    """The savers, then the tails (`_tail_inputs`)."""
    bound(st.checkbox, "Flash attention", "flash_attention")
    bound(st.checkbox, "Fused / chunked cross-entropy", "fused_cross_entropy")
    bound(st.checkbox, "Offload optimizer to CPU", "offload_optimizer")
    bound(st.checkbox, "Offload parameters to CPU", "offload_params")
    bound(
        st.checkbox,
        "Optimizer step is torch.optim's foreach",
        "optimizer_foreach",
        help="Plain torch.optim with neither foreach nor fused set runs its foreach step on CUDA, which holds "
        "one temporary the size of the parameters it updates; torchtitan, torchtune and DeepSpeed use fused "
        "in-place kernels (off).",
    )
    bound(
        st.selectbox,
        MODEL_LOADING_LABEL,
        "model_loading",
        options=list(MODEL_LOADING_LABELS),
        format_func=MODEL_LOADING_LABELS.get,
        help="Whole model on each GPU: model.cuda() or from_pretrained(device_map='cuda') before FSDP wraps it, "
        "so every GPU first holds all the weights at their load dtype (a 70B model in bf16: 141 GB). Sharded: "
        "torchtitan/torchtune meta-device init, DeepSpeed zero.Init, accelerate's fsdp_cpu_ram_efficient_loading "
        "or FSDP with device_id on a CPU model; loading then stays below the training peak.",
    )
    _tail_inputs()


def _tail_inputs() -> None:
    """What the device holds beyond the tensors: overhead, allocator slack and growth, fp8 caches."""
    number_entry(
        "Framework overhead per GPU (GiB)",
        "overhead_gib",
        placeholder="modelled: CUDA context, cuBLAS, NCCL",
        help="Empty: 0.75 GiB CUDA context + 2 × 32 MiB cuBLAS workspaces + 256 MiB NCCL buffers per parallel "
        "group spanning several GPUs. A number replaces that figure.",
    )
    number_entry("Allocator fragmentation (share)", "fragmentation_frac")
    number_entry(
        SEQ_LEN_SPREAD_LABEL,
        "seq_len_spread_frac",
        help="(longest − shortest) / longest sequence over a run's steps, 0-1; 0 for packed or fixed-length "
        "batches. PyTorch's caching allocator keeps the blocks a shorter step freed, and a longer step's larger "
        "requests do not fit in them, so reserved memory grows by up to this share of the activations and "
        "logits. Expandable segments avoid that growth.",
    )
    bound(
        st.checkbox,
        EXPANDABLE_SEGMENTS_LABEL,
        "expandable_segments",
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (torchtitan's launch script sets it): the "
        "allocator maps pages into one growing segment per stream and reuses freed pages for longer requests, "
        "so varying sequence lengths add no reserved memory.",
    )
    bound(
        st.checkbox,
        FP8_WEIGHT_CACHE_LABEL,
        "fp8_weight_cache",
        help="With fp8 precision only. Transformer Engine's linear layers keep an fp8 copy of each weight and "
        "its transpose (for Hopper's TN-only fp8 GEMMs) between micro-batches: 2 bytes per layer-matmul "
        "parameter. torchao's float8 (torchtitan) casts in every forward and keeps none (off).",
    )
