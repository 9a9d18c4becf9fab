"""What the planner reports: the table of every output (name, unit, label, the figure it is shown from) and
the typed result of one estimate, a flat set of unit-suffixed figures (the CLI's JSON keys).

`planner.evaluate` computes in bytes, seconds and FLOP/s; `OUTPUTS` says how each reported figure is shown, and
`shown` is the one place that converts (bytes -> GiB, seconds -> hours, FLOP/s -> TFLOP/s). `Estimate`, the GPU
comparison (`planner.decide.compare`) and the plan search frames (`planner.decide.sweep_rank`) all read it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import NoneType
from typing import Any, Final, get_args

from pydantic import ConfigDict

from planner.formulas.memory.verdict import MEMORY_STATISTIC_ROWS, MemoryStatisticFigures
from planner.formulas.operators.outputs import STEP_PART_ROWS, StepPartsFigures
from planner.formulas.units import GIB_BYTES, SECONDS_PER_HOUR, SECONDS_PER_MINUTE
from planner.multimodal.outputs import MULTIMODAL_ROWS, MultimodalFigures
from planner.post.outputs import POST_TRAINING_ROWS, PostTrainingFigures


class Estimate(PostTrainingFigures, MemoryStatisticFigures, MultimodalFigures, StepPartsFigures):
    """Every figure of one plan (`None`: not computable from these inputs, `unavailable` says why); bases' figures."""

    model_config = ConfigDict(frozen=True)

    n_params: float  # the model's
    n_active_params: float
    # the seed's figures (DESIGN.md §4 core keys)
    training_tokens: float
    total_flops: float
    per_device_flops_per_s: float
    cluster_flops_per_s: float
    wall_clock_h: float
    device_hours: float
    cost_usd: float | None
    tokens_per_s: float
    model_state_gib_total: float
    model_state_gib_per_device: float
    fits_vram: bool | None
    # compute and time
    n_steps: float
    global_batch_tokens: float
    processed_tokens: float
    model_flops: float
    hardware_flops: float
    mfu: float
    hfu: float
    mfu_low: float
    mfu_high: float
    peak_tflops: float
    power_limit_w: float  # the limit each GPU runs at: its TDP unless capped
    step_time_s: float
    comm_time_s: float
    offload_time_s: float  # exposed host transfers + CPU optimizer step per step
    adapter_memory_time_s: float
    bubble_frac: float
    tokens_per_s_per_gpu: float
    wall_clock_h_low: float
    wall_clock_h_high: float
    checkpoint_io_h: float
    # memory per GPU
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    master_gib: float
    activations_gib: float | None
    logits_gib: float | None
    prefetch_gib: float
    optimizer_step_temp_gib: float
    overhead_gib: float
    fragmentation_gib: float | None
    peak_gib_per_device: float | None
    peak_phase: str | None
    headroom_gib: float | None
    max_micro_batch: int | None
    host_offload_gib: float
    vram_gib: float
    loading_peak_gib: float | None  # whole model on each GPU before sharding; 0 = sharded
    # cost
    usd_per_gpu_hour: float | None
    cost_usd_low: float | None
    cost_usd_high: float | None
    usd_per_million_tokens: float | None
    # energy
    energy_kwh: float
    energy_kwh_low: float
    energy_kwh_high: float
    gpu_energy_kwh: float
    host_energy_kwh: float
    facility_overhead_kwh: float
    co2e_kg: float
    co2e_kg_low: float
    co2e_kg_high: float
    grid_g_co2e_per_kwh: float
    electricity_cost_usd: float
    # goodput: the run with failures, checkpoints and restarts (planner/formulas/step/goodput.py)
    wall_clock_with_failures_h: float | None
    gpu_hours_with_failures: float | None
    cost_with_failures_usd: float | None
    energy_with_failures_kwh: float | None
    expected_failures: float | None
    checkpoint_interval_min: float | None
    checkpoint_write_s: float
    job_mtbf_h: float | None
    lost_work_h: float | None
    restarts_h: float | None
    goodput_frac: float | None
    # provenance
    gpu: str
    price_basis: str
    price_snapshot: str | None
    seq_len: int  # tokens per training sequence: the user's, or derived from tokens per example
    seq_len_rule: str  # which rule gave the sequence length, in words
    unavailable: dict[str, str]

    def to_flat(self) -> dict[str, Any]:
        """JSON-ready: NaN never leaves the library (it becomes None). The plain figures come first, the
        post-training and multimodal ones after them."""
        out: dict[str, Any] = {}
        dumped = self.model_dump()
        post = [*PostTrainingFigures.model_fields, *MultimodalFigures.model_fields]
        for key, value in [(k, v) for k, v in dumped.items() if k not in post] + [
            (k, dumped[k]) for k in post
        ]:
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            out[key] = value
        return out


@dataclass(frozen=True)
class Output:
    key: str  # the reported name: Estimate field, comparison or search frame column, CLI JSON key
    unit: str  # the unit it is reported in
    label: str  # words for a table header or a chart axis
    source: str  # the `evaluate` output it is shown from


# reported unit -> divisor from evaluate's unit (bytes, seconds, FLOP/s); any other unit is reported as computed
SCALE: Final = {"GiB": GIB_BYTES, "h": SECONDS_PER_HOUR, "min": SECONDS_PER_MINUTE, "TFLOP/s": 1e12}


def _rows(unit: str, *rows: tuple[str, str, str]) -> tuple[Output, ...]:
    return tuple(Output(key, unit, label, source) for key, label, source in rows)


OUTPUTS: Final = (
    *_rows(
        "parameters",
        ("n_params", "Parameters", "n_params"),
        ("n_active_params", "Active parameters", "n_active_params"),
    ),
    *_rows(
        "tokens",
        ("training_tokens", "Training tokens", "training_tokens"),
        ("processed_tokens", "Processed tokens (with padding)", "processed_tokens"),
        ("global_batch_tokens", "Global batch (tokens)", "global_batch_tokens"),
    ),
    *_rows("steps", ("n_steps", "Optimizer steps", "n_steps")),
    *_rows(
        "FLOP",
        ("total_flops", "Total FLOPs", "model_flops"),
        ("model_flops", "Model FLOPs", "model_flops"),
        ("hardware_flops", "Hardware FLOPs (with recompute)", "hardware_flops"),
    ),
    *_rows(
        "FLOP/s",
        ("per_device_flops_per_s", "Achieved FLOP/s per GPU", "per_device_flops_per_s"),
        ("cluster_flops_per_s", "Achieved FLOP/s, cluster", "cluster_flops_per_s"),
    ),
    *_rows("TFLOP/s", ("peak_tflops", "Peak TFLOP/s", "peak_flops_per_s")),
    *_rows("W", ("power_limit_w", "Power limit per GPU (W)", "power_limit_w")),
    *_rows(
        "fraction",
        ("mfu", "MFU", "mfu"),
        ("hfu", "HFU", "hfu"),
        ("mfu_low", "MFU, slow end", "mfu_low"),
        ("mfu_high", "MFU, fast end", "mfu_high"),
        ("bubble_frac", "Pipeline bubble", "bubble_frac"),
    ),
    *_rows(
        "s",
        ("step_time_s", "Step time (s)", "step_time_s"),
        ("comm_time_s", "Communication per step (s)", "comm_time_s"),
        ("offload_time_s", "Offload per step (s)", "offload_time_s"),
        ("adapter_memory_time_s", "LoRA/QLoRA memory-bound time per step (s)", "adapter_memory_time_s"),
    ),
    *_rows(
        "h",
        ("wall_clock_h", "Wall clock (h)", "wall_clock_s"),
        ("wall_clock_h_low", "Wall clock, fast end (h)", "wall_clock_s_low"),
        ("wall_clock_h_high", "Wall clock, slow end (h)", "wall_clock_s_high"),
        ("checkpoint_io_h", "Checkpoint I/O (h)", "checkpoint_io_s"),
    ),
    *_rows(
        "GPU-h", ("device_hours", "GPU-hours", "device_hours"), ("gpu_hours", "GPU-hours", "device_hours")
    ),
    *_rows(
        "tokens/s",
        ("tokens_per_s", "Throughput (tokens/s)", "tokens_per_s"),
        ("tokens_per_s_per_gpu", "Throughput per GPU (tokens/s)", "tokens_per_s_per_gpu"),
    ),
    *_rows(
        "GiB",
        ("model_state_gib_total", "Model states, whole model (GiB)", "model_state_bytes_total"),
        (
            "model_state_gib_per_device",
            "Model states per GPU, split evenly (GiB)",
            "model_state_bytes_per_device",
        ),
        ("weights_gib", "Weights (GiB)", "weights_bytes"),
        ("gradients_gib", "Gradients (GiB)", "gradients_bytes"),
        ("optimizer_gib", "Optimizer states (GiB)", "optimizer_bytes"),
        ("master_gib", "fp32 master copy (GiB)", "master_bytes"),
        ("activations_gib", "Activations (GiB)", "activations_bytes"),
        ("logits_gib", "Logits and loss (GiB)", "logits_bytes"),
        ("prefetch_gib", "ZeRO-3 gathered layers (GiB)", "prefetch_bytes"),
        (
            "optimizer_step_temp_gib",
            "fp32 gradient copy at the optimizer step (GiB)",
            "optimizer_step_temp_bytes",
        ),
        ("overhead_gib", "Framework overhead (GiB)", "overhead_bytes"),
        ("fragmentation_gib", "Allocator fragmentation (GiB)", "fragmentation_bytes"),
        ("peak_gib_per_device", "Peak memory per GPU (GiB)", "peak_bytes"),
        ("peak_gib", "Peak memory per GPU (GiB)", "peak_bytes"),
        ("headroom_gib", "Headroom per GPU (GiB)", "headroom_bytes"),
        ("host_offload_gib", "Offloaded to host memory (GiB)", "host_offload_bytes"),
        ("loading_peak_gib", "Peak while loading the model (GiB)", "loading_peak_bytes"),
        ("vram_gib", "GPU memory (GiB)", "vram_bytes"),
        ("memory_gib", "GPU memory (GiB)", "vram_bytes"),
    ),
    *_rows(
        "USD",
        ("cost_usd", "Cost (USD)", "cost_usd"),
        ("cost_usd_low", "Cost, low end (USD)", "cost_usd_low"),
        ("cost_usd_high", "Cost, high end (USD)", "cost_usd_high"),
        ("electricity_cost_usd", "Electricity cost (USD)", "electricity_cost_usd"),
    ),
    *_rows("USD/GPU-h", ("usd_per_gpu_hour", "Price per GPU-hour (USD)", "usd_per_gpu_hour")),
    *_rows("USD/M tokens", ("usd_per_million_tokens", "USD per million tokens", "usd_per_million_tokens")),
    *_rows(
        "kWh",
        ("energy_kwh", "Energy (kWh)", "energy_kwh"),
        ("energy_kwh_low", "Energy, low end (kWh)", "energy_kwh_low"),
        ("energy_kwh_high", "Energy, high end (kWh)", "energy_kwh_high"),
        ("gpu_energy_kwh", "GPU energy (kWh)", "gpu_energy_kwh"),
        ("host_energy_kwh", "Host energy (kWh)", "host_energy_kwh"),
        ("facility_overhead_kwh", "Facility overhead (kWh)", "facility_overhead_kwh"),
    ),
    *_rows(
        "kg CO2e",
        ("co2e_kg", "CO2e (kg)", "co2e_kg"),
        ("co2e_kg_low", "CO2e, low end (kg)", "co2e_kg_low"),
        ("co2e_kg_high", "CO2e, high end (kg)", "co2e_kg_high"),
    ),
    *_rows("g CO2e/kWh", ("grid_g_co2e_per_kwh", "Grid intensity (g CO2e/kWh)", "g_co2e_per_kwh")),
    *_rows(
        "h",
        ("wall_clock_with_failures_h", "Wall clock with failures (h)", "wall_clock_with_failures_s"),
        ("job_mtbf_h", "Mean time between failures of the job (h)", "job_mtbf_s"),
        ("lost_work_h", "Work redone after failures (h)", "lost_work_s"),
        ("restarts_h", "Restarts and checkpoint reloads (h)", "restarts_s"),
    ),
    *_rows("GPU-h", ("gpu_hours_with_failures", "GPU-hours with failures", "gpu_hours_with_failures")),
    *_rows("USD", ("cost_with_failures_usd", "Cost with failures (USD)", "cost_with_failures_usd")),
    *_rows("kWh", ("energy_with_failures_kwh", "Energy with failures (kWh)", "energy_with_failures_kwh")),
    *_rows("failures", ("expected_failures", "Expected failures", "expected_failures")),
    *_rows("min", ("checkpoint_interval_min", "Checkpoint interval (min)", "checkpoint_interval_s")),
    *_rows("s", ("checkpoint_write_s", "Checkpoint write (s)", "checkpoint_write_s")),
    *_rows("fraction", ("goodput_frac", "Goodput (plain ÷ with failures)", "goodput_frac")),
    *(Output(*row) for row in POST_TRAINING_ROWS + MEMORY_STATISTIC_ROWS + MULTIMODAL_ROWS + STEP_PART_ROWS),
)
OUTPUT_BY_KEY: Final = {output.key: output for output in OUTPUTS}
# Estimate's figures that come from the table, and those that are None (not NaN) when they cannot be computed
ESTIMATE_FIGURES: Final = tuple(name for name in Estimate.model_fields if name in OUTPUT_BY_KEY)
_OPTIONAL: Final = frozenset(
    name for name, info in Estimate.model_fields.items() if NoneType in get_args(info.annotation)
)


def shown(out: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The named outputs in their reported units, from `evaluate`'s output (floats or arrays alike)."""
    figures = {}
    for key in keys:
        output = OUTPUT_BY_KEY[key]
        scale = SCALE.get(output.unit)
        figures[key] = out[output.source] if scale is None else out[output.source] / scale
    return figures


def estimate_figures(out: Mapping[str, float]) -> dict[str, float | None]:
    """Every Estimate figure of the table from one evaluated row; NaN becomes None where the field allows it."""
    figures = shown(out, ESTIMATE_FIGURES)
    return {key: None if key in _OPTIONAL and math.isnan(value) else value for key, value in figures.items()}
