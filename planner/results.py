"""The typed result of one estimate: a flat set of unit-suffixed figures (the CLI's JSON keys)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

PEAK_PHASES = ("forward/backward", "optimizer step")


class Estimate(BaseModel):
    """Every figure of one plan. `None` means "cannot be computed from these inputs" (see `unavailable`)."""

    model_config = ConfigDict(frozen=True)

    # model
    n_params: float
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
    step_time_s: float
    comm_time_s: float
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
    overhead_gib: float
    fragmentation_gib: float | None
    peak_gib_per_device: float | None
    peak_phase: str | None
    headroom_gib: float | None
    max_micro_batch: int | None
    host_offload_gib: float
    vram_gib: float
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
    # provenance
    gpu: str
    price_basis: str
    price_snapshot: str | None
    unavailable: dict[str, str]

    def to_flat(self) -> dict[str, Any]:
        """JSON-ready: NaN never leaves the library (it becomes None)."""
        out: dict[str, Any] = {}
        for key, value in self.model_dump().items():
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            out[key] = value
        return out
