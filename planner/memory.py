"""Peak memory per GPU of a training step, by component and phase, in bytes.

Model states come from `planner.model_states`, activations and logits from `planner.activations`. The peak
is the larger of two phases (peers.md §5.5; llm-analysis's peak, §3.1):
- forward/backward (code 0): weights + optimizer + master (kept between steps) + ZeRO-3 gathered weights
  + max(activations + logits, gradients), since gradients grow as backward frees activations; their sum
  when gradients outlive a micro-batch (gradient accumulation, optimizer-in-backward);
- optimizer step (code 1): weights + gradients + optimizer + master + the fp32 gradient copy a master
  update reads (`planner.model_states`). Fused optimizers (torch `fused=True`, DeepSpeed FusedAdam, the
  torchtitan and torchtune defaults) update in place, so no other temporary is charged.
The reported pipeline stage is the worse of the first (embedding; min(micro-batches, pp) micro-batches in
flight under 1F1B) and the last (head and logits); with pp = 1 they are the same GPU. On top of the
allocated peak: reserved = allocated × (1 + fragmentation) and device memory = reserved + overhead.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planner.activations import (
    RECOMPUTE_FULL,
    RECOMPUTE_NONE,
    RECOMPUTE_OP,
    FloatOrArray,
    layer_activation_bytes,
    layer_input_bytes,
    logits_bytes,
    op_selective_layer_bytes,
    stack_activation_bytes,
)
from planner.memory_inputs import GIB, MemoryBreakdown, MemoryInputs
from planner.model_states import model_state_bytes, stage_model_states, zero_shard_degree

__all__ = [
    "GIB",
    "MemoryBreakdown",
    "MemoryInputs",
    "max_micro_batch",
    "memory_per_gpu",
    "model_state_bytes",
    "stage_activations",
    "zero_shard_degree",
]


def stage_activations(p: MemoryInputs, first_stage: bool, has_head) -> dict[str, FloatOrArray]:
    """Activations (on the GPU and offloaded to the host) and logits on one GPU of a pipeline stage.

    Under 1F1B the first stage holds min(micro-batches, pp) micro-batches of its n_layers/pp layers
    (Korthikanti et al. 2022 §4.2.3: the first stage stores n_layers layers' worth); the last stage one.
    Full and op-level recompute keep `layer_input_bytes` or `op_selective_layer_bytes` per layer plus one
    layer's working set while it is rebuilt; none/selective keep `layer_activation_bytes` per layer.
    """
    in_flight = np.minimum(p.grad_accum, p.pp) if first_stage else 1.0
    shape = (
        p.hidden,
        p.n_heads,
        p.n_kv_heads,
        p.head_dim,
        p.ffn_hidden,
        p.n_mlp_matrices,
        p.activation_bytes,
    )
    split = (p.tp, p.cp, p.sequence_parallel, p.flash_attention)
    stored = layer_activation_bytes(p.seq_len, p.micro_batch, *shape, *split, p.recompute, p.dropout)
    working = layer_activation_bytes(p.seq_len, p.micro_batch, *shape, *split, RECOMPUTE_NONE, p.dropout)
    layer_input = layer_input_bytes(
        p.seq_len, p.micro_batch, p.hidden, p.activation_bytes, p.tp, p.cp, p.sequence_parallel
    )
    op_kept = op_selective_layer_bytes(p.seq_len, p.micro_batch, *shape, *split)
    code = np.asarray(p.recompute)
    kept = np.where(code == RECOMPUTE_FULL, layer_input, np.where(code == RECOMPUTE_OP, op_kept, stored))
    rebuilds = (code == RECOMPUTE_FULL) | (code == RECOMPUTE_OP)
    on_gpu, on_host = stack_activation_bytes(
        p.n_layers / p.pp * in_flight, kept, np.where(rebuilds, working, 0.0), p.offload_activations
    )
    logits = has_head * logits_bytes(
        p.seq_len, p.micro_batch, p.vocab, p.hidden, p.activation_bytes, p.tp, p.cp, p.fused_cross_entropy
    )
    return {"activations": on_gpu, "activations_host": on_host, "logits": logits}


def _stage_terms(p: MemoryInputs, first_stage: bool) -> dict[str, FloatOrArray]:
    """Every component on one GPU of the first or the last pipeline stage.

    Offloading moves the optimizer states and master copy (optimizer offload) or the weights and gradients
    (parameter offload, as FSDP's CPUOffload and DeepSpeed's offload_param do) to host memory; ZeRO-3's
    gathered working copies stay on the GPU.
    """
    single = np.asarray(p.pp) == 1
    has_embedding = np.where(single, 1.0, float(first_stage))
    has_head = np.where(single, 1.0, float(not first_stage))
    states = stage_model_states(p, has_embedding, has_head)
    acts = stage_activations(p, first_stage, has_head)
    offload_opt, offload_par = np.asarray(p.offload_optimizer) > 0, np.asarray(p.offload_params) > 0
    host = np.where(offload_opt, states["optimizer"] + states["master"], 0.0)
    host = host + np.where(offload_par, states["weights"] + states["grads"], 0.0) + acts["activations_host"]
    return {
        "weights": np.where(offload_par, 0.0, states["weights"]),
        "grads": np.where(offload_par, 0.0, states["grads"]),
        "optimizer": np.where(offload_opt, 0.0, states["optimizer"]),
        "master": np.where(offload_opt, 0.0, states["master"]),
        "prefetch": states["prefetch"],
        "step_temp": np.where(offload_opt, 0.0, states["step_temp"]),
        "activations": acts["activations"],
        "logits": acts["logits"],
        "host": host,
    }


def _keeps_gradients(p: MemoryInputs):
    """Gradients outlive a micro-batch: accumulation over micro-batches, or optimizer-in-backward."""
    return (np.asarray(p.grad_accum) > 1) | (np.asarray(p.optimizer_in_backward) > 0)


def _phases(p: MemoryInputs, t: dict[str, FloatOrArray]):
    """(forward/backward, optimizer step) allocated bytes of one stage (module docstring)."""
    states = t["weights"] + t["optimizer"] + t["master"]
    transient = t["activations"] + t["logits"]
    live = np.where(_keeps_gradients(p), t["grads"] + transient, np.maximum(transient, t["grads"]))
    return states + t["prefetch"] + live, states + t["grads"] + t["step_temp"]


def memory_per_gpu(p: MemoryInputs) -> MemoryBreakdown:
    """Peak memory of one GPU for a training step, by component (formulas in the module docstrings)."""
    first, last = _stage_terms(p, first_stage=True), _stage_terms(p, first_stage=False)
    (first_fb, first_step), (last_fb, last_step) = _phases(p, first), _phases(p, last)
    first_peak, last_peak = np.maximum(first_fb, first_step), np.maximum(last_fb, last_step)
    is_last = last_peak > first_peak
    terms = {key: np.where(is_last, last[key], first[key]) for key in first}
    allocated = np.maximum(first_peak, last_peak)
    phase = np.where(is_last, last_step > last_fb, first_step > first_fb)
    fragmentation = p.fragmentation_frac * allocated
    reserved = allocated + fragmentation
    overhead = p.overhead_bytes + 0.0 * allocated
    return MemoryBreakdown(
        weights_bytes=terms["weights"],
        gradients_bytes=terms["grads"],
        optimizer_bytes=terms["optimizer"],
        master_bytes=terms["master"],
        activations_bytes=terms["activations"],
        logits_bytes=terms["logits"],
        prefetch_bytes=terms["prefetch"],
        optimizer_step_temp_bytes=terms["step_temp"],
        overhead_bytes=overhead,
        fragmentation_bytes=fragmentation,
        allocated_peak_bytes=allocated,
        reserved_peak_bytes=reserved,
        peak_bytes=reserved + overhead,
        peak_phase=phase.astype(float),
        pp_stage=is_last.astype(float),
        host_offload_bytes=terms["host"],
    )


def max_micro_batch(p: MemoryInputs, vram_bytes) -> FloatOrArray:
    """Largest micro-batch whose device peak fits in `vram_bytes`; 0 when even one sequence does not fit.

    Activations and logits are proportional to the micro-batch b and nothing else depends on it, so each
    stage's peak is a maximum of affine functions of b: C + G_kept + b·A (forward/backward; G_kept are the
    gradients that outlive a micro-batch), C + G (gradients outgrowing the activations) and the optimizer
    step. b = floor((budget − C − G_kept)/A), provided the b-free terms fit; the minimum over both stages.
    """
    budget = (vram_bytes - p.overhead_bytes) / (1.0 + p.fragmentation_frac)
    one = replace(p, micro_batch=1.0)
    best: FloatOrArray = np.inf
    for first_stage in (True, False):
        t = _stage_terms(one, first_stage)
        states = t["weights"] + t["optimizer"] + t["master"]
        fixed = states + t["prefetch"] + np.where(_keeps_gradients(p), t["grads"], 0.0)
        per_sequence = t["activations"] + t["logits"]
        largest = np.floor((budget - fixed) / per_sequence)
        fits_without_b = states + t["grads"] + np.maximum(t["prefetch"], t["step_temp"]) <= budget
        best = np.minimum(best, np.where(fits_without_b, np.maximum(largest, 0.0), 0.0))
    return best
