"""The operator model's compute time per optimizer step and GPU, read from `planner.columns.Columns`.

The functions take the columns as `Any` (formulas sit below the pipeline's types and never import them) and
read the model, layout, recipe, workload and GPU groups by their field names.

Per micro-batch, each GPU runs its pipeline stage's layers on its share of the tokens (micro-batch × sequence
/ context-parallel ranks) with 1/tp of every matrix. The FLOP counts are the planner's own
(`planner.evaluate.flops_per_token`: weights 2·N per token per pass, attention, recompute); the operator model
says how fast each kind runs:

* the layer's matrix multiplies (QKV, attention output, MLP up/gate and down) at their per-GPU shapes, for
  the forward (M = tokens), the data gradient (M = tokens, N and K swapped) and the weight gradient (M and N
  the weight's, K = tokens; frozen weights skip it): `gemm`'s efficiency over the FLOP-weighted shapes;
* the output head (N = vocabulary / tp) the same way; attention by `attention`; the element-wise work and
  the loss by `memory_bound`; each pass at least its launches (`dispatch`);
* once per step the optimizer update and gradient clipping over the GPU's share of trainable parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.formulas.memory.recipes import Method, Recompute
from planner.formulas.operators import attention, dispatch, eager, gemm, memory_bound
from planner.formulas.scalars import is_one_of, nan_to_zero
from planner.formulas.step.adapter_time import ADAPTER_BACKWARD_TOUCHES, ADAPTER_FORWARD_TOUCHES
from planner.formulas.step.compute import Number, attention_fwd_flops_per_token


@dataclass(frozen=True)
class OperatorStep:
    """Seconds per optimizer step on one GPU, by kind; `compute_s` is what the step's compute takes."""

    gemm_s: Number
    attention_s: Number
    memory_bound_s: Number  # element-wise ops, loss, fp8 casts, optimizer step
    launch_s: Number  # what the host's launches add where they outlast the GPU's work
    compute_s: Number  # with no residual
    optimizer_s: Number  # the optimizer update and clipping (part of memory_bound_s), once per step
    gemm_frac: Number  # the layers' forward GEMMs' share of the matmul peak (the MoE experts' rate)
    residual_compute_s: Number  # compute_s with the GPU's work (not the host's launches) ÷ the residual
    adapter_s: Number  # the adapters' memory-bound time the launches do not hide (inside residual_compute_s)


def _shapes(c: Any, tokens: Any) -> tuple[Any, Any]:
    """(N, K) stacked over the GEMMs one GPU runs per layer (QKV, attention output, MLP up/gate, MLP down)
    and, last, the output head (forward: out = in[tokens × K] · W[K × N]); one row per GEMM."""
    m, tp = c.model, c.layout.tp
    q_dim, kv_dim = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
    n = ((q_dim + 2.0 * kv_dim) / tp, m.hidden_size, (m.n_mlp_matrices - 1.0) * m.ffn_hidden_size / tp)
    k = (m.hidden_size, q_dim / tp, m.hidden_size, m.ffn_hidden_size / tp, m.hidden_size)
    g = c.gpu  # every column a GEMM's time reads: the stacks take their common shape (one row per GEMM)
    columns = (
        *n,
        *k,
        tokens,
        g.peak_flops_per_s,
        g.n_sms,
        g.memory_frac,
        c.recipe.activation_bytes_per_element,
    )
    rows = np.broadcast_shapes(*(getattr(x, "shape", ()) for x in columns))
    return _stack((*n, m.hidden_size, m.vocab_size / tp), rows), _stack(k, rows)


def _stack(columns: tuple[Any, ...], rows: tuple[int, ...]) -> Any:
    stacked = np.empty((len(columns), *rows))
    for i, column in enumerate(columns):  # assignment broadcasts each column (cheaper than broadcast_to)
        stacked[i] = column
    return stacked


def _pass_fracs(c: Any, tokens: Any, n: Any, k: Any) -> Any:
    """Share of the matmul peak, FLOP-weighted, for (forward, data gradient, weight gradient) × (layer, head).

    A plan search holds millions of rows but few distinct GEMM shapes (micro-batch × TP × GPU): past
    UNIQUE_ROWS rows the shares are computed once per distinct row of inputs and gathered back."""
    g = c.gpu
    bw = g.memory_gb_per_s * 1e9 * g.memory_frac
    inputs = [
        tokens,
        g.peak_flops_per_s,
        g.gemm_peak_frac,
        g.n_sms,
        bw,
        c.recipe.activation_bytes_per_element,
    ]
    if n.ndim < 2 or n.shape[1] < UNIQUE_ROWS:
        return _fracs(n, k, *inputs)
    rows = n.shape[1:]
    table = np.concatenate([n, k, _stack(tuple(inputs), rows)]).reshape(-1, int(np.prod(rows))).T
    table = np.ascontiguousarray(table)
    keys = table.view(np.dtype((np.void, table.dtype.itemsize * table.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    distinct = table[first].T  # one column per distinct row
    layer, head = _fracs(distinct[:5], distinct[5:10], *distinct[10:])
    return layer[:, inverse.ravel()].reshape(3, *rows), head[:, inverse.ravel()].reshape(3, *rows)


UNIQUE_ROWS = 20_000  # below this, timing every row is cheaper than finding the distinct ones


def _fracs(n: Any, k: Any, tokens: Any, peak: Any, ceiling: Any, sms: Any, bw: Any, bytes_el: Any) -> Any:
    """The 3 passes' GEMMs timed in one stacked call (a weight gradient is M = K, N = N, K = tokens)."""
    m_dim = np.concatenate([np.broadcast_to(tokens, n.shape), np.broadcast_to(tokens, n.shape), k])
    dims = (m_dim, np.concatenate([n, k, n]), np.concatenate([k, n, np.broadcast_to(tokens, n.shape)]))
    flops = gemm.gemm_flops(*dims).reshape(3, *n.shape)
    seconds = gemm.gemm_time_s(*dims, peak, ceiling, sms, bw, bytes_el).reshape(3, *n.shape) * peak
    layer = flops[:, :4].sum(axis=1) / seconds[:, :4].sum(axis=1)
    return layer, flops[:, 4] / seconds[:, 4]


def _gemm_s(c: Any, tokens: Any, shards: Any) -> tuple[Any, Any, Any, Any]:
    """(forward, backward, recompute seconds of the GEMMs per micro-batch, forward rate) on one GPU."""
    m, lay, g = c.model, c.layout, c.gpu
    frozen = c.recipe.method != Method.FULL
    layer_fwd = 2.0 * (m.n_layer_matmul_params + m.n_adapter_params * frozen) * tokens / shards
    head_fwd = 2.0 * np.maximum(m.n_matmul_params - m.n_layer_matmul_params, 0.0) * tokens / shards
    layer, head = _pass_fracs(c, tokens, *_shapes(c, tokens))
    fwd, dgrad, wgrad = ((layer_fwd / layer[i] + head_fwd / head[i]) / g.peak_flops_per_s for i in range(3))
    backward = dgrad + np.where(frozen, 0.0, wgrad)
    recompute = np.where(lay.recompute == Recompute.FULL, layer_fwd / layer[0] / g.peak_flops_per_s, 0.0)
    return fwd, backward, recompute, layer[0]


def _attention_s(c: Any, tokens: Any, shards: Any) -> tuple[Any, Any]:
    """(forward, backward + recompute seconds of the attention core per micro-batch) on one GPU."""
    m, lay, g, seq = c.model, c.layout, c.gpu, c.workload.seq_len_tokens
    flash = lay.flash_attention
    per_token = attention_fwd_flops_per_token(m.n_layers, m.n_heads, m.head_dim, seq, 1) * np.where(
        flash, 1.0, 2.0
    )
    fwd_flops = nan_to_zero(per_token) * tokens / shards
    scores = lay.micro_batch_seqs * m.n_heads / lay.tp * seq / lay.cp * seq * m.n_layers / lay.pp
    bf16 = np.where(np.isnan(g.bf16_flops_per_s), g.peak_flops_per_s, g.bf16_flops_per_s)
    bw = g.memory_gb_per_s * 1e9 * g.memory_frac

    # the forward: its FLOPs and a third of the unfused score traffic; the backward (and a recomputed forward)
    # repeats both in proportion, so it is the forward's time × (2 + recompute)
    fwd = attention.attention_time_s(
        fwd_flops, flash, bf16, g.attention_frac, g.gemm_peak_frac, seq, m.head_dim, scores / 3.0, bw, 2.0,
        lay.flash1_attention,
    )  # fmt: skip
    recompute = is_one_of(lay.recompute, (Recompute.FULL, Recompute.SELECTIVE, Recompute.SELECTIVE_OP))
    return fwd, fwd * (2.0 + recompute)


def _memory_bound_s(c: Any, tokens: Any) -> tuple[Any, Any, Any]:
    """(forward, backward + recompute seconds of element-wise work and the loss per micro-batch, the
    optimizer step per optimizer step) on one GPU."""
    m, lay, r, g = c.model, c.layout, c.recipe, c.gpu
    q_dim, kv_dim = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
    shape = (m.hidden_size, q_dim, kv_dim, m.ffn_hidden_size, m.n_mlp_matrices, lay.tp)
    per_layer = memory_bound.layer_elements_per_token(*shape, lay.sequence_parallel, lay.dropout)
    layers = m.n_layers / lay.pp
    act_bytes = per_layer * tokens * layers * r.activation_bytes_per_element
    cast_bytes = memory_bound.fp8_cast_elements_per_token(*shape) * tokens * layers
    loss_per_logit = np.where(
        lay.fused_cross_entropy, memory_bound.FUSED_LOSS_BYTES_PER_LOGIT, memory_bound.LOSS_BYTES_PER_LOGIT
    )
    loss_bytes = (
        loss_per_logit * tokens * m.vocab_size / lay.tp / lay.pp
    )  # the last stage's, spread like the head
    full = lay.recompute == Recompute.FULL
    fwd_bytes = act_bytes + g.fp8_compute * cast_bytes / 3.0
    bwd_bytes = (
        act_bytes * (memory_bound.BACKWARD_OVER_FORWARD + full) + g.fp8_compute * cast_bytes * 2.0 / 3.0
    )
    fwd = memory_bound.memory_time_s(fwd_bytes, g.memory_gb_per_s, g.memory_frac)
    bwd = memory_bound.memory_time_s(bwd_bytes + loss_bytes, g.memory_gb_per_s, g.memory_frac)
    on = eager.is_eager(c)
    if on is not False:  # Hugging Face eager code: its unfused norms, rotary, activation and loss
        extra_fwd, extra_bwd = eager.extra_memory_s(c, tokens)
        fwd, bwd = fwd + np.where(on, extra_fwd, 0.0), bwd + np.where(on, extra_bwd, 0.0)
    return fwd, bwd, _optimizer_s(c)


def _optimizer_s(c: Any) -> Any:
    """The optimizer update and gradient clipping over this GPU's share of the trainable parameters."""
    m, lay, r, g = c.model, c.layout, c.recipe, c.gpu
    trainable = np.where(r.method != Method.FULL, m.n_adapter_params, m.n_params)
    share = trainable / (lay.tp * lay.pp) / np.where(lay.zero_stage >= 1, lay.dp, 1.0)
    per_param = memory_bound.optimizer_step_bytes_per_param(
        r.grad_bytes_per_param,
        r.master_bytes_per_param,
        r.optimizer_bytes_per_param,
        r.weight_bytes_per_param,
    )
    # With the optimizer offloaded the offload model adds the CPU step; the GPU's pass is kept (it still
    # clips and casts the gradients it sends), so offloading never makes a step faster.
    rate_frac = g.memory_frac * eager.optimizer_rate_frac(c)  # torch's foreach step is slower than fused
    return memory_bound.memory_time_s(share * per_param, g.memory_gb_per_s, rate_frac)


def operator_step(
    c: Any,
    host_s_per_kernel: Any = dispatch.HOST_S_PER_KERNEL,
    residual_frac: Any = 1.0,
    adapter_s: Any = 0.0,
) -> OperatorStep:
    """Seconds per optimizer step on one GPU by kind of operator (see the module docstring). `residual_frac`
    divides the GPU's work only: the host's launches are timed by their own measurement (dispatch).
    `adapter_s`: LoRA/QLoRA memory-bound GPU time per step (`planner.step_parts.adapter_memory_time_s`), run
    inside each pass, so it hides under the host's launches as the full run's weight gradients do."""
    lay = c.layout
    tokens = lay.micro_batch_seqs * c.workload.seq_len_tokens / lay.cp  # this GPU's tokens per micro-batch
    shards = lay.tp * lay.pp  # FLOPs per token are for the whole model; a GPU holds 1/(tp·pp) of them
    gemm_fwd, gemm_bwd, gemm_rc, gemm_frac = _gemm_s(c, tokens, shards)
    attn_fwd, attn_bwd = _attention_s(c, tokens, shards)
    mem_fwd, mem_bwd, optimizer = _memory_bound_s(c, tokens)
    layers = c.model.n_layers / lay.pp
    recompute_kernels = np.where(lay.recompute == Recompute.FULL, dispatch.KERNELS_PER_LAYER_FORWARD, 0.0)
    gpu_fwd = gemm_fwd + attn_fwd + mem_fwd
    gpu_bwd = gemm_bwd + gemm_rc + attn_bwd + mem_bwd
    fwd_host = layers * dispatch.KERNELS_PER_LAYER_FORWARD * host_s_per_kernel
    bwd_host = layers * (dispatch.KERNELS_PER_LAYER_BACKWARD + recompute_kernels) * host_s_per_kernel
    on = eager.is_eager(c)
    if on is not False:  # Hugging Face eager code dispatches its aten operations one by one
        eager_fwd, eager_bwd = eager.host_s(c, layers)
        fwd_host, bwd_host = np.where(on, eager_fwd, fwd_host), np.where(on, eager_bwd, bwd_host)
    n = lay.n_micro_batches
    adapter_fwd = adapter_s / n * ADAPTER_FORWARD_SHARE
    adapter_bwd = adapter_s / n - adapter_fwd
    fwd, bwd = dispatch.host_or_gpu_s(gpu_fwd, fwd_host), dispatch.host_or_gpu_s(gpu_bwd, bwd_host)
    fwd_r = dispatch.host_or_gpu_s(gpu_fwd / residual_frac, fwd_host)
    bwd_r = dispatch.host_or_gpu_s(gpu_bwd / residual_frac, bwd_host)
    adapter_fwd = dispatch.host_or_gpu_s(gpu_fwd / residual_frac + adapter_fwd, fwd_host) - fwd_r
    adapter_bwd = dispatch.host_or_gpu_s(gpu_bwd / residual_frac + adapter_bwd, bwd_host) - bwd_r
    return OperatorStep(
        gemm_s=n * (gemm_fwd + gemm_bwd + gemm_rc),
        attention_s=n * (attn_fwd + attn_bwd),
        memory_bound_s=n * (mem_fwd + mem_bwd) + optimizer,
        launch_s=n * ((fwd - gpu_fwd) + (bwd - gpu_bwd)),
        compute_s=n * (fwd + bwd) + optimizer,
        optimizer_s=optimizer,
        gemm_frac=gemm_frac,
        residual_compute_s=n * (fwd_r + bwd_r + adapter_fwd + adapter_bwd) + optimizer / residual_frac,
        adapter_s=n * (adapter_fwd + adapter_bwd),
    )


# The adapters' forward share of their memory-bound bytes: PEFT's unfused layer touches 1.5 (d_in + d_out) per
# token forward and 2 backward (planner.formulas.step.adapter_time); a recomputed forward runs in the backward.
ADAPTER_FORWARD_SHARE = ADAPTER_FORWARD_TOUCHES / (ADAPTER_FORWARD_TOUCHES + ADAPTER_BACKWARD_TOUCHES)

# The band around the operator model's compute: ±20 % of its rate, the narrowest band the efficiency presets
# allowed (planner.catalogue.efficiency.MIN_BAND_FRAC: one setup cannot show the spread between a first attempt
# and a tuned run). Slow end: compute / 0.8, fast end: compute / 1.2.
BAND = (0.8, 1.2)


def operator_compute(c: Any, adapter_s: Any = 0.0) -> tuple[OperatorStep, Any]:
    """The operator model's parts and its compute per step (the adapters' memory-bound time inside it); NaN for
    a model without a shape (a bare parameter count has no matrices to time, so the utilisation preset stays)."""
    ops = operator_step(c, residual_frac=c.gpu.residual_frac, adapter_s=adapter_s)  # NaN residual: presets
    return ops, np.where(c.model.has_shape > 0, ops.residual_compute_s, np.nan)
