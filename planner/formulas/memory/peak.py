"""Peak memory per GPU of a training step, by component and phase, in bytes.

Model states come from `planner.formulas.memory.model_states`, activations and logits from `planner.formulas.memory.activations`. The peak
is the larger of two phases (peers.md §5.5; llm-analysis's peak, §3.1):
- forward/backward (code 0): weights + optimizer + master (kept between steps) + ZeRO-3 gathered weights
  + max(kept activations + max(rebuilt layer, logits), gradients) (`_transient`), since gradients grow as backward frees activations; their sum
  when gradients outlive a micro-batch (gradient accumulation, optimizer-in-backward);
- optimizer step (code 1): weights + gradients + optimizer + master + the fp32 gradient copy a master
  update reads (`planner.formulas.memory.model_states`). Fused optimizers (torch `fused=True`, DeepSpeed FusedAdam, the
  torchtitan and torchtune defaults) update in place, so no other temporary is charged; torch.optim's foreach
  step (its CUDA default when no implementation is named) adds one parameter-sized temporary.
The reported pipeline stage is the worse of the first (embedding; min(micro-batches, pp) micro-batches in
flight under 1F1B, more when interleaved: `planner.formulas.step.pipeline`) and the last (head and logits); with
pp = 1 they are the same GPU. On top of the allocated peak: reserved = allocated + slack (`allocator`) and device memory = reserved + overhead.
The device peak is the larger of that training peak and the loading peak (code 3; `planner.formulas.memory.loading`:
the whole model on each GPU before sharding, 0 when it loads sharded); allocated and reserved stay the step's.
"""

from __future__ import annotations

import numpy as np

from planner.formulas.memory.activations import (
    FloatOrArray,
    layer_activation_bytes,
    layer_input_bytes,
    logits_bytes,
    lora_adapter_bytes,
    op_selective_layer_bytes,
    stack_activation_bytes,
)
from planner.formulas.memory.allocator import allocator_slack_bytes
from planner.formulas.memory.device_overhead import overhead_bytes
from planner.formulas.memory.eager import eager_layer_bytes, peft_widest_point_bytes
from planner.formulas.memory.loading import loading_peak_bytes
from planner.formulas.memory.memory_inputs import GIB, MemoryBreakdown, MemoryInputs
from planner.formulas.memory.model_states import (
    layer_parameters,
    model_state_bytes,
    stage_model_states,
    state_factors,
    zero_shard_degree,
)
from planner.formulas.memory.recipes import PHASE_LOADING, Recompute
from planner.formulas.scalars import broadcast_like, select
from planner.formulas.step.pipeline import layers_in_flight

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


def layer_activations(p: MemoryInputs) -> dict[str, FloatOrArray]:
    """Per-layer kept bytes, the working set of a layer being rebuilt, and logits, for one micro-batch.

    Full and op-level recompute keep `layer_input_bytes` or `op_selective_layer_bytes` per layer plus one
    layer's working set while it is rebuilt; none/selective keep `layer_activation_bytes` per layer.
    LoRA and QLoRA add their adapters' saved tensors (`lora_adapter_bytes`) to what every layer keeps
    without recompute and to the working set of a rebuilt layer; op-level recompute rebuilds them.
    """
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
    code = np.asarray(p.recompute)
    adapters = _adapter_bytes(p) + eager_layer_bytes(p)  # eager code's extras are kept like the adapters'
    working = layer_activation_bytes(p.seq_len, p.micro_batch, *shape, *split, Recompute.NONE, p.dropout)
    working = working + adapters
    stored = select(
        code == Recompute.SELECTIVE,
        layer_activation_bytes(p.seq_len, p.micro_batch, *shape, *split, Recompute.SELECTIVE, p.dropout)
        + adapters,
        working,
    )
    layer_input = layer_input_bytes(
        p.seq_len, p.micro_batch, p.hidden, p.activation_bytes, p.tp, p.cp, p.sequence_parallel
    )
    op_kept = op_selective_layer_bytes(p.seq_len, p.micro_batch, *shape, *split)
    kept = select(
        code == Recompute.FULL, layer_input, select(code == Recompute.SELECTIVE_OP, op_kept, stored)
    )
    rebuilds = (code == Recompute.FULL) | (code == Recompute.SELECTIVE_OP)
    logits = logits_bytes(
        p.seq_len, p.micro_batch, p.vocab, p.hidden, p.activation_bytes, p.tp, p.cp, p.fused_cross_entropy
    )
    widest = peft_widest_point_bytes(p)  # PEFT's widest forward point: a rebuilt or the last layer's
    return {"kept": kept, "working": select(rebuilds, working, 0.0) + widest, "logits": logits}


def _adapter_bytes(p: MemoryInputs) -> FloatOrArray:
    """The LoRA adapters' saved tensors of one layer for one micro-batch; 0 for full training."""
    adapted = np.asarray(p.method) > 0
    if np.ndim(adapted) == 0 and not adapted:  # full training: skip the per-row work
        return 0.0
    saved = lora_adapter_bytes(
        p.seq_len, p.micro_batch, p.hidden, p.n_heads, p.head_dim, p.ffn_hidden, p.n_mlp_matrices,
        p.activation_bytes, p.lora_rank, p.lora_all_linear, p.lora_dropout, p.tp, p.cp, p.sequence_parallel,
    )  # fmt: skip
    return select(adapted, saved, 0.0)


def stage_activations(p: MemoryInputs, first_stage: bool, has_head, layer=None) -> dict[str, FloatOrArray]:
    """Activations (on the GPU and offloaded to the host) and logits on one GPU of a pipeline stage.

    Each stage holds `layers_in_flight` layers' worth: the first n_layers under 1F1B (min(micro-batches, pp)
    micro-batches of its n_layers/pp layers) and n_layers·(1 + (pp−1)/(pp·v)) interleaved; the last one
    micro-batch of its layers under 1F1B, ((v−1)·pp + 1) chunks interleaved.
    `layer` is `layer_activations(p)`, computed once for all stages.
    """
    layer = layer_activations(p) if layer is None else layer
    layers = layers_in_flight(p.n_layers, p.pp, p.n_virtual_stages, p.grad_accum, first_stage)
    on_gpu, on_host = stack_activation_bytes(layers, layer["kept"], layer["working"], p.offload_activations)
    return {
        "activations": on_gpu,
        "activations_host": on_host,
        "logits": has_head * layer["logits"],
        "rebuilt": layer["working"] + 0.0 * on_gpu,
    }


def _stage_terms(p: MemoryInputs, first_stage: bool, shared: dict) -> dict[str, FloatOrArray]:
    """Every component on one GPU of the first or the last pipeline stage.

    Offloading moves the optimizer states and master copy (optimizer offload) or the weights and gradients
    (parameter offload, as FSDP's CPUOffload and DeepSpeed's offload_param do) to host memory; ZeRO-3's
    gathered working copies stay on the GPU.
    """
    single = np.asarray(p.pp) == 1
    has_embedding = select(single, 1.0, float(first_stage))
    has_head = select(single, 1.0, float(not first_stage))
    states = stage_model_states(p, has_embedding, has_head, shared["layer"], shared["factors"])
    acts = stage_activations(p, first_stage, has_head, shared["activations"])
    offload_opt, offload_par = np.asarray(p.offload_optimizer) > 0, np.asarray(p.offload_params) > 0
    # the share of a paged optimizer's states (never the master copy) evicted to the host
    paged = select(offload_opt, 0.0, p.page_optimizer)
    parts = {
        "host_optimizer": select(offload_opt, states["optimizer"] + states["master"], 0.0),
        "host_weights": select(offload_par, states["weights"], 0.0),
        "host_grads": select(offload_par, states["grads"], 0.0),
        "host_activations": acts["activations_host"],
        "host_paged": paged * states["optimizer"],
    }
    return {
        "weights": select(offload_par, 0.0, states["weights"]),
        "grads": select(offload_par, 0.0, states["grads"]),
        "optimizer": select(offload_opt, 0.0, (1.0 - paged) * states["optimizer"]),
        "master": select(offload_opt, 0.0, states["master"]),
        "prefetch": states["prefetch"],
        "step_temp": select(offload_opt, 0.0, states["step_temp"]),
        "activations": acts["activations"],
        "logits": acts["logits"],
        "rebuilt": acts["rebuilt"],
        "host": sum(parts.values()),
        **parts,
    }


_STAGES_ATTRIBUTE = "_stage_terms"  # where `_both_stages` keeps its answer on the (frozen) inputs


def _both_stages(p: MemoryInputs):
    """(first, last) stage terms, sharing the stage-independent work.

    Kept on `p` once computed: the device peak and the largest micro-batch of one plan read the same terms,
    and a frozen MemoryInputs cannot change under them (`replace` makes a new object, without them)."""
    kept = p.__dict__.get(_STAGES_ATTRIBUTE)
    if kept is not None:
        return kept
    shared = {"layer": layer_parameters(p), "factors": state_factors(p), "activations": layer_activations(p)}
    first = _stage_terms(p, True, shared)
    one_stage = np.ndim(p.pp) == 0 and float(p.pp) == 1  # one stage holds everything: skip the identical twin
    stages = (first, first) if one_stage else (first, _stage_terms(p, False, shared))
    object.__setattr__(p, _STAGES_ATTRIBUTE, stages)
    return stages


def _keeps_gradients(p: MemoryInputs):
    """Gradients outlive a micro-batch: accumulation over micro-batches, optimizer-in-backward, or fp32
    gradient buffers allocated once for the whole run (Megatron-LM's main_grad, `state_factors`)."""
    keeps = (np.asarray(p.grad_accum) > 1) | (np.asarray(p.optimizer_in_backward) > 0)
    return keeps | (np.asarray(p.fp32_grad_buffers) > 0)


def _transient(t: dict[str, FloatOrArray]) -> FloatOrArray:
    """Activations and loss buffers alive together at the worst moment of forward/backward.

    The working set of a layer rebuilt by recompute exists only during that layer's backward
    (torch.utils.checkpoint reruns the forward when backward reaches the region), and the last layer's
    backward starts only after the output layer's and the loss's backward have run, which frees their saved
    tensors and the logits' gradient (autograd frees a node's saved tensors once its backward has run,
    unless retain_graph). So the rebuilt layer and the logits are never held together:
    kept activations + max(rebuilt layer, logits).
    """
    kept = t["activations"] - t["rebuilt"]
    return kept + np.maximum(t["rebuilt"], t["logits"])


def _phases(p: MemoryInputs, t: dict[str, FloatOrArray]):
    """(forward/backward, optimizer step) allocated bytes of one stage (module docstring)."""
    states = t["weights"] + t["optimizer"] + t["master"]
    transient = _transient(t)
    live = select(_keeps_gradients(p), t["grads"] + transient, np.maximum(transient, t["grads"]))
    return states + t["prefetch"] + live, states + t["grads"] + t["step_temp"]


def memory_per_gpu(p: MemoryInputs) -> MemoryBreakdown:
    """Peak memory of one GPU for a training step, by component (formulas in the module docstrings)."""
    first, last = _both_stages(p)
    (first_fb, first_step), (last_fb, last_step) = _phases(p, first), _phases(p, last)
    first_peak, last_peak = np.maximum(first_fb, first_step), np.maximum(last_fb, last_step)
    is_last = last_peak > first_peak
    terms = {
        key: select(is_last, last[key], first[key]) if last is not first else first[key] for key in first
    }
    allocated = np.maximum(first_peak, last_peak)
    phase = select(is_last, last_step > last_fb, first_step > first_fb)
    fragmentation = allocator_slack_bytes(p, allocated, _transient(terms))
    reserved = allocated + fragmentation
    overhead = overhead_bytes(p) + 0.0 * allocated  # device_overhead: stated, or modelled from the layout
    peak, training_phase = reserved + overhead, phase
    loading = loading_peak_bytes(p)
    if np.ndim(loading) or loading > 0:  # loaded sharded (a scalar 0): the plan search skips this work
        phase = select(loading > peak, PHASE_LOADING, phase)
        peak = np.maximum(peak, loading)
    shape = np.shape(peak)
    terms = {key: broadcast_like(value, shape) for key, value in terms.items()}
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
        peak_bytes=peak,
        peak_phase=np.broadcast_to(phase, shape).astype(float),
        pp_stage=np.broadcast_to(is_last, shape).astype(float),
        host_offload_bytes=terms["host"],
        host_optimizer_bytes=terms["host_optimizer"],
        host_weights_bytes=terms["host_weights"],
        host_grads_bytes=terms["host_grads"],
        host_activations_bytes=terms["host_activations"],
        host_paged_bytes=terms["host_paged"],
        loading_peak_bytes=loading,
        training_peak_phase=np.broadcast_to(training_phase, shape).astype(float),
    )


def max_micro_batch(p: MemoryInputs, vram_bytes) -> FloatOrArray:
    """Largest micro-batch whose device peak fits in `vram_bytes`; 0 when even one sequence does not fit.

    Activations and logits are proportional to the micro-batch b and nothing else depends on it, so each
    stage's peak is a maximum of affine functions of b: C + G_kept + b·A (forward/backward; G_kept are the
    gradients that outlive a micro-batch), C + G (gradients outgrowing the activations) and the optimizer
    step. b = floor((budget − C − G_kept)/A), provided the b-free terms fit; the minimum over both stages.
    A loading peak (`planner.formulas.memory.loading`) does not depend on b: when it does not fit, nothing does.
    """
    budget = (vram_bytes - overhead_bytes(p)) / (1.0 + p.fragmentation_frac)
    growth = 1.0 + p.allocator_growth_frac / (1.0 + p.fragmentation_frac)
    best: FloatOrArray = np.inf
    for t in _both_stages(p):  # the plan's own terms: its transient bytes ÷ b are one sequence's
        states = t["weights"] + t["optimizer"] + t["master"]
        fixed = states + t["prefetch"] + select(_keeps_gradients(p), t["grads"], 0.0)
        per_sequence = _transient(t) / p.micro_batch * growth
        largest = np.floor((budget - fixed) / per_sequence)
        fits_without_b = states + t["grads"] + np.maximum(t["prefetch"], t["step_temp"]) <= budget
        best = np.minimum(best, select(fits_without_b, np.maximum(largest, 0.0), 0.0))
    return select(loading_peak_bytes(p) <= vram_bytes, best, 0.0)
