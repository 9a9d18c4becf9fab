"""Step time, wall clock and checkpoint I/O.

Two ways to turn FLOPs into time, chosen per row by the numeric flag `end_to_end`:

* **Your own MFU** (`end_to_end` = 1, the seed's form): the utilisation you measured in your own logs
  already contains communication, pipeline bubbles, data loading and everything else, so
  time = model FLOPs / (GPUs × dense peak × MFU) and nothing is added. The seed's 4.32e18 FLOP on
  4 × 400 TFLOP/s at 0.3 gives exactly 9,000 s = 2.5 h.
* **A preset** (`end_to_end` = 0): the efficiency presets in `data/efficiency.csv` are *compute-only*: the
  share of peak the GPUs reach on the FLOPs they actually execute (hardware FLOPs, recomputation included)
  once exposed communication and the pipeline bubble are taken out. `scripts/derive_efficiency.py` finds,
  for each published measurement, the utilisation at which `planner.evaluate` reproduces it, with the same
  communication model at an overlap of 0.9 (`planner.cases.case_defaults.OVERLAP_FRAC`, what the published
  FSDP and Megatron runs imply); the estimate puts them back with `step_time_s`. Nothing is counted twice as long as the scenario's overlap
  matches that figure, and a slower network or a deeper pipeline makes the estimate slower, which a single
  end-to-end MFU could not show.

Both ways report the achieved end-to-end MFU and HFU (`planner.formulas.step.compute.flops_utilisation`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.scalars import any_row
from planner.formulas.step.collectives import hidden_data_parallel_s
from planner.formulas.step.comm import BYTES_PER_GB, StepComm, effective_pcie_gb_per_s, exposed_comm_s
from planner.formulas.step.compute import Number, as_number, flops_utilisation
from planner.formulas.step.contention import contended_s
from planner.formulas.step.offload import NO_OFFLOAD, OffloadStep, exposed_offload_s


def compute_time_s(
    flops: Number, n_gpus: Number, peak_flops_per_s: Number, utilisation_frac: Number
) -> Number:
    """Seconds to execute `flops` on `n_gpus` GPUs at `utilisation_frac` of their dense peak.

    The seed's form: FLOPs / (devices × peak × utilisation); per device the rate is peak × utilisation
    (1.20e14 FLOP/s for 400 TFLOP/s at 0.3) and 4× that across the seed's cluster (4.80e14).
    """
    return flops / (n_gpus * peak_flops_per_s * utilisation_frac)


def exposed_parts_s(
    compute_s: Number,
    pipelined_comm_s: Number,
    data_parallel_comm_s: Number,
    overlap_frac: Number,
    dp_window_frac: Number = 1.0,
    dp_unhidden_frac: Number = 0.0,
    windows: Number = 0.0,
) -> tuple[Number, Number]:
    """(in-pipeline, data-parallel) communication left exposed once part of it hides under the compute.

    The in-pipeline traffic runs during the micro-batches: overlap × min(compute, traffic) of it hides
    (`planner.formulas.step.comm.exposed_comm_s`). The compute hides traffic only once. Where `windows` is 0 (the
    scenario's overlap_model "constant", the default) overlap × min(compute, all traffic) hides in total, taken
    from the in-pipeline traffic first because it runs during the micro-batches, the sync after them. Where it is
    1 ("windows") the data-parallel traffic hides only behind its window, the `dp_window_frac` share of the
    compute that runs beside it, and never its `dp_unhidden_frac` share
    (`planner.formulas.step.collectives.data_parallel_window`): min(hideable, overlap × window) of it hides, within
    what the compute has left (at most overlap × compute hides in total).
    """
    pipelined = exposed_comm_s(pipelined_comm_s, compute_s, overlap_frac)
    constant = exposed_comm_s(pipelined_comm_s + data_parallel_comm_s, compute_s, overlap_frac) - pipelined
    if not any_row(windows):
        return pipelined, constant
    budget = overlap_frac * compute_s - (pipelined_comm_s - pipelined)
    hidden = hidden_data_parallel_s(
        data_parallel_comm_s, dp_unhidden_frac, dp_window_frac * compute_s, budget, overlap_frac
    )
    return pipelined, as_number(np.where(windows, data_parallel_comm_s - hidden, constant))


def step_time_s(
    compute_s: Number,
    pipelined_comm_s: Number,
    data_parallel_comm_s: Number,
    bubble_frac: Number,
    overlap_frac: Number,
    dp_window_frac: Number = 1.0,
    dp_unhidden_frac: Number = 0.0,
    windows: Number = 0.0,
) -> Number:
    """One optimizer step: (compute + exposed in-pipeline comm) / (1 − bubble) + exposed data-parallel comm.

    Tensor-, context- and pipeline-parallel traffic happens inside each micro-batch, so it stretches with the
    pipeline schedule; the data-parallel gradient sync (and ZeRO gathers) is charged once per step. What
    stays exposed follows `exposed_parts_s`. The bubble form follows from t_pipeline = t_ideal · (m + p − 1)/m
    (Narayanan et al. 2021, §2.2).
    """
    pipelined, data_parallel = exposed_parts_s(
        compute_s,
        pipelined_comm_s,
        data_parallel_comm_s,
        overlap_frac,
        dp_window_frac,
        dp_unhidden_frac,
        windows,
    )
    return scheduled_step_s(compute_s, pipelined, data_parallel, bubble_frac)


def scheduled_step_s(
    compute_s: Number, pipelined_s: Number, data_parallel_s: Number, bubble_frac: Number
) -> Number:
    """The step from its exposed parts: the micro-batches stretch with the bubble, the sync is paid once."""
    return (compute_s + pipelined_s) / (1.0 - bubble_frac) + data_parallel_s


def compute_time_from_step_s(
    step_s: Number,
    pipelined_comm_s: Number,
    data_parallel_comm_s: Number,
    bubble_frac: Number,
    overlap_frac: Number,
    dp_window_frac: Number = 1.0,
    dp_unhidden_frac: Number = 0.0,
    windows: Number = 0.0,
) -> Number:
    """Inverse of `step_time_s`: the compute share of a measured step (for deriving efficiencies).

    `step_time_s` rises strictly with compute while overlap < 1 (all hidden traffic together grows at most
    overlap × as fast as the compute), so bisection finds it; NaN where the communication alone already takes
    longer than the measured step.
    """
    parts = (
        pipelined_comm_s,
        data_parallel_comm_s,
        bubble_frac,
        overlap_frac,
        dp_window_frac,
        dp_unhidden_frac,
        windows,
    )
    step = np.asarray(step_s, dtype=float)
    low, high = np.zeros_like(step), step.copy()
    for _ in range(80):  # halves the bracket 80 times: far below float precision of any step time
        mid = 0.5 * (low + high)
        longer = step_time_s(mid, *parts) > step
        high = np.where(longer, mid, high)
        low = np.where(longer, low, mid)
    compute = 0.5 * (low + high)
    at_zero = step_time_s(0.0, *parts)
    return as_number(np.where(at_zero >= step, np.nan, compute))


def wall_clock_s(step_s: Number, processed_tokens: Number, batch_tokens: Number) -> Number:
    """Training time: step time × processed tokens / tokens per step.

    Fractional steps on purpose: the seed's figures are continuous, and a last partial batch is shorter.
    """
    return step_s * processed_tokens / batch_tokens


@dataclass(frozen=True)
class RunTime:
    """Time figures of a run; every field is a float or an array of the inputs' broadcast shape."""

    step_time_s: Number
    compute_time_s: Number  # per step
    comm_time_s: Number  # per step, all communication before overlap
    exposed_comm_time_s: Number  # per step, what the step time pays (0 with your own end-to-end MFU)
    bubble_frac: Number
    wall_clock_s: Number
    tokens_per_s_per_gpu: Number  # processed tokens (padding included), as throughput benchmarks count
    useful_tokens_per_s: Number  # whole cluster, dataset tokens only (the seed's "training throughput")
    mfu: Number  # achieved, end to end
    hfu: Number
    offload_time_s: Number = 0.0  # per step, exposed host transfers and CPU optimizer step (preset mode only)
    exposed_pipelined_s: Number = 0.0  # the exposed TP/CP/PP traffic inside the micro-batches
    compute_and_pipelined_s: Number = 0.0  # what the pipeline bubble stretches: compute + exposed_pipelined_s


def run_time(
    model_flops_per_token: Number,
    hardware_flops_per_token: Number,
    useful_tokens: Number,
    processed_tokens: Number,
    batch_tokens: Number,
    n_gpus: Number,
    peak_flops_per_s: Number,
    utilisation_frac: Number,
    end_to_end: Number,
    comm: StepComm,
    bubble_frac: Number,
    overlap_frac: Number,
    offload: OffloadStep = NO_OFFLOAD,
    memory_bound_s: Number = 0.0,
    operator_compute_s: Number = np.nan,
    comm_sm_frac: Number = 0.0,
) -> RunTime:
    """Step time, wall clock and throughput for both utilisation modes (see the module docstring).

    FLOPs per token are per processed token; `batch_tokens` is the global batch in tokens. The exposed
    offload time (`planner.formulas.step.offload`) is added to the preset's step, after the pipeline schedule: like
    the data-parallel sync it is paid once per step. `memory_bound_s`: per-step GPU work that runs at memory
    bandwidth rather than the tensor-core rate (LoRA/QLoRA, `planner.formulas.step.adapter_time`); it joins the
    preset's compute. Your own end-to-end MFU already holds both. `operator_compute_s`: the compute per step
    from the operator model (`planner.formulas.operators.step`), which replaces FLOPs / (peak × utilisation)
    where it is a number (NaN: no model shape, the preset's utilisation stays).
    """
    model_step = model_flops_per_token * batch_tokens
    hardware_step = hardware_flops_per_token * batch_tokens
    own_mfu_step = compute_time_s(model_step, n_gpus, peak_flops_per_s, utilisation_frac)
    from_flops = compute_time_s(hardware_step, n_gpus, peak_flops_per_s, utilisation_frac)
    preset_compute = np.where(np.isnan(operator_compute_s), from_flops, operator_compute_s) + memory_bound_s
    windows = (comm.data_parallel_window_frac, comm.data_parallel_unhidden_frac, comm.windows)
    # tensor-parallel collectives without tp_comm_overlap wait on the critical path; the rest may hide
    hideable = comm.pipelined_s - comm.exposed_tensor_s
    pipelined, data_parallel = exposed_parts_s(
        preset_compute, hideable, comm.data_parallel_s, overlap_frac, *windows
    )
    pipelined = pipelined + comm.exposed_tensor_s
    # Compute left beside the traffic, before the contention below (the offload hides behind what remains).
    compute_left = preset_compute - (comm.total_s - pipelined - data_parallel)
    pipelined, data_parallel = contended_s(comm, pipelined, data_parallel, comm_sm_frac)
    preset_step = scheduled_step_s(preset_compute, pipelined, data_parallel, bubble_frac)
    exposed = pipelined + data_parallel
    offloads = offload is not NO_OFFLOAD  # most plans (and most sweeps) put nothing on the host
    # Host transfers hide only behind the compute that communication has not already hidden behind; sharing
    # it twice made a faster GPU slower when both exceeded the compute (tests/test_properties.py example).
    offload_s = exposed_offload_s(offload, compute_left, overlap_frac) if offloads else 0.0
    preset_step = preset_step + offload_s if offloads else preset_step

    step: Number = np.where(end_to_end, own_mfu_step, preset_step)
    wall = wall_clock_s(step, processed_tokens, batch_tokens)
    return RunTime(
        step_time_s=as_number(step),
        compute_time_s=as_number(np.where(end_to_end, own_mfu_step, preset_compute)),
        comm_time_s=as_number(comm.total_s + 0.0 * step),
        exposed_comm_time_s=as_number(np.where(end_to_end, 0.0, exposed)),
        bubble_frac=as_number(bubble_frac + 0.0 * step),
        wall_clock_s=as_number(wall),
        tokens_per_s_per_gpu=as_number(batch_tokens / (step * n_gpus)),
        useful_tokens_per_s=as_number(useful_tokens / wall),
        mfu=as_number(flops_utilisation(model_step, step, n_gpus, peak_flops_per_s)),
        hfu=as_number(flops_utilisation(hardware_step, step, n_gpus, peak_flops_per_s)),
        offload_time_s=as_number(np.where(end_to_end, 0.0, offload_s) + 0.0 * step) if offloads else 0.0,
        exposed_pipelined_s=as_number(np.where(end_to_end, 0.0, pipelined)),
        compute_and_pipelined_s=as_number(np.where(end_to_end, 0.0, preset_compute + pipelined)),
    )


# --- checkpoint I/O -----------------------------------------------------------------------------------


def checkpoint_bytes(
    n_saved_weight_params: Number,
    weight_bytes_per_param: Number,
    n_trainable_params: Number,
    optimizer_state_bytes_per_param: Number,
) -> Number:
    """Bytes of one resumable checkpoint: saved weights + the optimizer state of the trainable parameters.

    Full training saves every weight (e.g. bf16, 2 B) and the fp32 master copy plus Adam's two moments
    (4 + 8 = 12 B per parameter, Rajbhandari et al. 2020, §3.1): 14 B per parameter. LoRA/QLoRA save only
    the adapters and their optimizer state; the frozen base is already on disk.
    """
    return (
        n_saved_weight_params * weight_bytes_per_param + n_trainable_params * optimizer_state_bytes_per_param
    )


def checkpoint_load_time_s(weight_bytes: Number, storage_gb_per_s: Number, pcie_gb_per_s: Number) -> Number:
    """Seconds to load the weights: bytes / min(storage read, usable PCIe to the GPU).

    The load path is storage → host → GPU and runs at its slower link (reference/hardware-and-prices.md §3;
    PCIe at the measured 88 % of its theoretical rate).
    """
    usable_gb_per_s = np.minimum(storage_gb_per_s, effective_pcie_gb_per_s(pcie_gb_per_s))
    return as_number(weight_bytes / (usable_gb_per_s * BYTES_PER_GB))


def checkpoint_save_time_s(
    checkpoint_bytes_each: Number, storage_gb_per_s: Number, n_checkpoints: Number
) -> Number:
    """Seconds spent writing checkpoints: bytes per checkpoint / storage write bandwidth × number of saves.

    Saves are taken as blocking (training waits); asynchronous checkpointing hides most of this.
    """
    return checkpoint_bytes_each / (storage_gb_per_s * BYTES_PER_GB) * n_checkpoints
