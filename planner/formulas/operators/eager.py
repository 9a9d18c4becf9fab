"""Eager Hugging Face code (`hf_eager_code`): the host's dispatch and the unfused memory-bound operations.

The fused-kernel model (`dispatch`, `memory_bound`) describes torchtitan, Megatron or compiled torchtune: about
33 kernels per layer per forward at ~8 µs each, norms and the loss in one kernel each. Hugging Face transformers
(`LlamaForCausalLM`, PEFT LoRA) run in eager PyTorch one aten operation at a time, and each operation reads and
writes its whole tensor. Every constant below comes from the lent H200's tables of 2026-12-04
(data/microbench/README.md): `h200_run_phases.csv` (bench/gpu_run_phases.py: the top-level aten operations the
host dispatched in one profiled step) and `h200.csv` (bench/gpu_micro.py: the eager RMSNorm, the cross-entropy
with its fp32 upcast, a copy, AdamW foreach). None is fitted to the runs' tokens/s.

Operation counts (`n_host_ops_per_step`, transformers 5.17.0, sdpa attention, AdamW foreach):
- per layer per step 221.5 = (3,649 − 2,763) / 4: Llama 3.2 1B (16 layers) against the 0.13B model (12 layers),
  the same code; what is left, 2,763 − 12 × 221.5 ≈ 105, is outside the layers (embedding, final norm, head,
  loss, the optimizer's foreach calls), and the Llama 3.1 8B cut to 4 layers agrees: 987 − 4 × 221.5 = 101;
- of those, the forward's 53 per layer: full recompute (Hugging Face gradient checkpointing) runs the forward
  again, Llama 3.2 1B at 8 × 2,048 dispatches 4,499 against 3,651 without it: 848 / 16 = 53;
- LoRA (PEFT, q/k/v/o and gate/up/down, 7 matrices per layer) adds (6,162 − 3,649) / 16 = 157 per layer, 22.4
  per adapted matrix; with recompute the LoRA forward is (7,685 − 6,164) / 16 = 95 per layer, 42 more than the
  base's 53: 6 per matrix forward, 16.4 backward.
Host cost per operation: the 0.13B model at micro-batch 1 × 1,024 tokens keeps the GPU busy 17 % of its step, so
its forward and backward phases are the host's: (24.7 + 32.3) ms over its 2,763 operations less the AdamW step's
~20 foreach calls = 20.8 µs. Forward and backward share the figure. The same table's other host-bound runs spread
it from ~15 µs (Llama 3.2 1B at 1 × 512 in h200_runs.csv: (85 − 29) ms / ~3,630) to ~30 µs (the same run with
the phases' synchronizes): host-side timing repeats to ±18 % between machines (the README's spread).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.formulas.memory.recipes import Method, Recompute
from planner.formulas.operators import memory_bound
from planner.formulas.step.adapter_time import ADAPTER_BACKWARD_TOUCHES, ADAPTER_FORWARD_TOUCHES

HOST_S_PER_OP = 20.8e-6
OPS_PER_LAYER_FORWARD = 53.0
OPS_PER_LAYER_BACKWARD = 221.5 - 53.0
# per micro-batch, counted with the backward (the loss's and head's); the AdamW step's ~20 foreach calls among
# them run once per step, so with accumulation this overcounts by at most 20 × 20.8 µs per extra micro-batch
OPS_OUTSIDE_LAYERS = 105.0
LORA_OPS_PER_MATRIX_FORWARD = 6.0
LORA_OPS_PER_MATRIX_BACKWARD = 22.4 - 6.0

# transformers' LlamaRMSNorm.forward (models/llama/modeling_llama.py, commit 5dd4a635): to(float32), pow(2),
# mean, rsqrt, multiply, to(input dtype), weight × — each its own kernel over the tensor. Bytes per element with
# e-byte activations: upcast e + 4, pow 4 + 4, mean 4, multiply 4 + 4, downcast 4 + e, weight product 2e: 24 + 4e.
RMSNORM_FP32_BYTES = 24.0
RMSNORM_E_BYTES = 4.0
# The chain runs at 325 GB/s of its least bytes (2e per element; h200.csv rms_norm_eager_llama, 4 GiB) = 325 ×
# 32 / 4 = 2,600 GB/s of the bytes counted above, against 4,214 for a copy (h200.csv copy, 4 GiB): 0.617 of the
# achievable bandwidth `memory_frac` stands for (short kernels, reductions over a row).
RMSNORM_BANDWIDTH_FRAC = 325.0 * 32.0 / 4.0 / 4214.0
# transformers' ForCausalLMLoss (loss/loss_utils.py, commit d0fed636): logits.float() then cross_entropy, i.e.
# log_softmax and nll_loss. Bytes per logit forward: upcast e + 4, log_softmax 4 + 4 (12 + e); backward: the
# gradient of nll_loss written 4, log_softmax's backward reads two and writes one fp32 (12), the downcast 4 + e
# (20 + e). Measured forward 304 GB/s of the bf16 logits' 2 bytes (h200.csv cross_entropy_vocab128k_fp32_upcast,
# 4 GiB) = 304 × 14 / 2 = 2,128 GB/s of the counted bytes, 0.505 of a copy; the backward is taken at the same.
LOSS_FIXED_BYTES = 32.0
LOSS_E_BYTES = 2.0
LOSS_BANDWIDTH_FRAC = 304.0 * 14.0 / 2.0 / 4214.0
# torch.optim.AdamW with foreach (torch's default on CUDA): 1,214 GB/s of 28 bytes per fp32 parameter against
# 3,105 fused (h200.csv adamw_step, 1 B parameters), over 4,214 for a copy: 0.288 of the achievable bandwidth.
FOREACH_BANDWIDTH_FRAC = 1214.0 / 4214.0
# Unfused element-wise work beside the norms, elements read + written per token (each op reads its inputs and
# writes its output): rotary per query/key element (modeling_llama.py apply_rotary_pos_emb) q·cos 2, rotate_half's
# neg of one half 1 and cat 2 (its slices are views), ·sin 2, the sum 3: 10 against the fused kernel's 2; the gated
# activation (LlamaMLP) act(gate) 2 then × up 3: 5 per F against 3.
ROTARY_ELEMENTS = 10.0
GATED_ACTIVATION_ELEMENTS = 5.0
# PEFT's LoRA layer (tuners/lora/layer.py `Linear.forward`, fp32 adapters under bf16 autocast), bytes per
# element of an adapted matrix's input (d_in) and output (d_out) per token. Forward: the input cast to fp32
# (e + 4) and autocast's cast back for A's matmul (4 + e) on d_in; B's output written (e), × scaling (2e), added
# to the base output (3e) on d_out: (8 + 2e + 6e) / 2 per element of d_in + d_out, 12 at e = 2. Backward: the
# scaling's gradient (2e) and B's data-gradient read (e) on d_out; A's data gradient written (e), both casts'
# gradients (2·(4 + e)), the sum into the input's gradient (3e) on d_in: (3e + 8 + 6e) / 2, 13 at e = 2.
# `planner.step_parts.adapter_memory_time_s` already counts 1.5e forward and 2e backward (fused adapters).
PEFT_FIXED_BYTES_FORWARD, PEFT_E_BYTES_FORWARD = 4.0, 4.0
PEFT_FIXED_BYTES_BACKWARD, PEFT_E_BYTES_BACKWARD = 4.0, 4.5


def is_eager(c: Any) -> Any:
    """The flag as a bool column, or False when no row runs eager code (the usual case: the fused model)."""
    flag = np.asarray(c.layout.hf_eager_code)
    return False if flag.ndim == 0 and not flag else flag > 0


def host_s(c: Any, layers: Any) -> tuple[Any, Any]:
    """(forward, backward + recompute) host seconds per micro-batch of eager code on one GPU (module docstring)."""
    lay = c.layout
    lora = np.where(c.recipe.method != Method.FULL, adapted_matrices(c), 0.0)
    fwd_ops = OPS_PER_LAYER_FORWARD + lora * LORA_OPS_PER_MATRIX_FORWARD
    bwd_ops = OPS_PER_LAYER_BACKWARD + lora * LORA_OPS_PER_MATRIX_BACKWARD
    recompute = np.where(lay.recompute == Recompute.FULL, fwd_ops, 0.0)
    last_stage = 1.0 / lay.pp  # the head and loss run on one stage of pp: spread like the memory model's loss
    fwd = layers * fwd_ops * HOST_S_PER_OP
    bwd = (layers * (bwd_ops + recompute) + OPS_OUTSIDE_LAYERS * last_stage) * HOST_S_PER_OP
    return fwd, bwd


def adapted_matrices(c: Any) -> Any:
    """LoRA matrices per layer: q, k, v, o, and the MLP's when all linear layers are adapted."""
    return 4.0 + c.layout.lora_all_linear * c.model.n_mlp_matrices


def rmsnorm_bytes(n_elements: Any, e: Any) -> Any:
    """Bytes the eager RMSNorm's kernels read and write over `n_elements` e-byte elements (24 + 4e each)."""
    return n_elements * (RMSNORM_FP32_BYTES + RMSNORM_E_BYTES * e)


def rmsnorm_s(n_elements: Any, e: Any, bw: Any) -> Any:
    """Seconds of the eager RMSNorm over `n_elements`, at its measured share of the achievable bandwidth `bw`."""
    return rmsnorm_bytes(n_elements, e) / (bw * RMSNORM_BANDWIDTH_FRAC)


def extra_memory_s(c: Any, tokens: Any) -> tuple[Any, Any]:
    """(forward, backward) seconds per micro-batch the unfused norms, rotary, activation and loss take beyond
    what `memory_bound` counts for fused kernels, on one GPU."""
    m, lay, g = c.model, c.layout, c.gpu
    e = c.recipe.activation_bytes_per_element
    bw = g.memory_gb_per_s * 1e9 * g.memory_frac
    layers = m.n_layers / lay.pp
    hidden = m.hidden_size * np.where(lay.sequence_parallel, 1.0 / lay.tp, 1.0)
    # two norms per layer: the eager chain against the fused kernel's read + write (memory_bound's 4h of 10h)
    norm_elements = 2.0 * hidden * tokens * layers
    norm_s = rmsnorm_s(norm_elements, e, bw) - norm_elements * 2.0 * e / bw
    rotary = (ROTARY_ELEMENTS - 2.0) * (m.n_heads + 2.0 * m.n_kv_heads) * m.head_dim / lay.tp
    gated = np.where(m.n_mlp_matrices >= 3, GATED_ACTIVATION_ELEMENTS - 3.0, 0.0) * m.ffn_hidden_size / lay.tp
    other_s = (rotary + gated) * tokens * layers * e / bw
    logits = tokens * m.vocab_size / lay.tp / lay.pp
    fused_loss = np.where(
        lay.fused_cross_entropy, memory_bound.FUSED_LOSS_BYTES_PER_LOGIT, memory_bound.LOSS_BYTES_PER_LOGIT
    )
    loss_s = logits * ((LOSS_FIXED_BYTES + LOSS_E_BYTES * e) / LOSS_BANDWIDTH_FRAC - fused_loss) / bw
    loss_s = np.where(lay.fused_cross_entropy, 0.0, np.maximum(loss_s, 0.0))  # a chunked loss is not HF's
    layer_s = norm_s + other_s
    peft_fwd, peft_bwd = _peft_s(c, tokens, bw)
    full = lay.recompute == Recompute.FULL  # the recomputed forward runs the same unfused operations again
    return layer_s + peft_fwd, layer_s * (memory_bound.BACKWARD_OVER_FORWARD + full) + peft_bwd + loss_s


def _peft_s(c: Any, tokens: Any, bw: Any) -> tuple[Any, Any]:
    """(forward, backward + recompute) seconds of PEFT's unfused adapter operations beyond the fused adapters'."""
    lay, e = c.layout, c.recipe.activation_bytes_per_element
    lora = c.recipe.method != Method.FULL
    # Σ (d_in + d_out) over this GPU's adapted matrices: the adapter parameters over the rank
    io = np.where(lora, c.model.n_adapter_params / np.maximum(lay.lora_rank, 1.0), 0.0) / (lay.tp * lay.pp)
    fwd = io * tokens * (PEFT_FIXED_BYTES_FORWARD + (PEFT_E_BYTES_FORWARD - ADAPTER_FORWARD_TOUCHES) * e) / bw
    bwd = (
        io
        * tokens
        * (PEFT_FIXED_BYTES_BACKWARD + (PEFT_E_BYTES_BACKWARD - ADAPTER_BACKWARD_TOUCHES) * e)
        / bw
    )
    return fwd, bwd + fwd * (lay.recompute == Recompute.FULL)


def optimizer_rate_frac(c: Any) -> Any:
    """Share of the achievable bandwidth the optimizer step reaches: torch's foreach step, or a fused one."""
    return np.where(c.layout.optimizer_foreach > 0, FOREACH_BANDWIDTH_FRAC, 1.0)
