"""One scenario in, one typed `Estimate` out: resolve the inputs, evaluate the formulas, label the result."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.catalogue.catalog import Catalogs
from planner.evaluate import evaluate
from planner.formulas.recipes import PEAK_PHASE_NAMES
from planner.formulas.units import GIB_BYTES, SECONDS_PER_HOUR
from planner.inputs.scenario import Scenario
from planner.resolve import Resolved, resolve
from planner.results import Estimate

__all__ = ["Estimate", "Resolved", "estimate", "estimate_resolved", "resolve", "row"]


def row(columns: dict[str, Any], index: int) -> dict[str, float]:
    """One row of evaluated columns as plain floats (scalars broadcast to every row)."""
    return {
        key: float(np.asarray(value).reshape(-1)[index] if np.ndim(value) else value)
        for key, value in columns.items()
    }


def estimate(scenario: Scenario, catalogs: Catalogs) -> Estimate:
    return estimate_resolved(resolve(scenario, catalogs))


def estimate_resolved(resolved: Resolved) -> Estimate:
    out = row(evaluate(resolved.columns), 0)
    return to_estimate(resolved, out)


def _gib(value: float) -> float:
    return value / GIB_BYTES


def _maybe(value: float) -> float | None:
    return None if math.isnan(value) else value


def to_estimate(resolved: Resolved, out: dict[str, float]) -> Estimate:
    c, s = resolved.columns, resolved.scenario
    vram = c["vram_bytes"]
    peak = out["peak_bytes"]
    state_total = out["model_state_bytes_total"]
    state_per_device = state_total / s.n_gpus
    fits = None if math.isnan(out["fits_vram"]) else bool(out["fits_vram"])
    return Estimate(
        n_params=c["n_params"],
        n_active_params=c["n_active_params"],
        training_tokens=c["training_tokens"],
        total_flops=out["model_flops"],
        per_device_flops_per_s=out["per_device_flops_per_s"],
        cluster_flops_per_s=out["cluster_flops_per_s"],
        wall_clock_h=out["wall_clock_s"] / SECONDS_PER_HOUR,
        device_hours=out["device_hours"],
        cost_usd=_maybe(out["cost_usd"]),
        tokens_per_s=out["tokens_per_s"],
        model_state_gib_total=_gib(state_total),
        model_state_gib_per_device=_gib(state_per_device),
        fits_vram=fits,
        n_steps=out["n_steps"],
        global_batch_tokens=out["global_batch_tokens"],
        processed_tokens=out["processed_tokens"],
        model_flops=out["model_flops"],
        hardware_flops=out["hardware_flops"],
        mfu=out["mfu"],
        hfu=out["hfu"],
        mfu_low=c["utilisation_low"],
        mfu_high=c["utilisation_high"],
        peak_tflops=c["peak_flops_per_s"] / 1e12,
        step_time_s=out["step_time_s"],
        comm_time_s=out["comm_time_s"],
        bubble_frac=out["bubble_frac"],
        tokens_per_s_per_gpu=out["tokens_per_s_per_gpu"],
        wall_clock_h_low=out["wall_clock_s_low"] / SECONDS_PER_HOUR,
        wall_clock_h_high=out["wall_clock_s_high"] / SECONDS_PER_HOUR,
        checkpoint_io_h=out["checkpoint_io_s"] / SECONDS_PER_HOUR,
        weights_gib=_gib(out["weights_bytes"]),
        gradients_gib=_gib(out["gradients_bytes"]),
        optimizer_gib=_gib(out["optimizer_bytes"]),
        master_gib=_gib(out["master_bytes"]),
        activations_gib=_maybe(_gib(out["activations_bytes"])),
        logits_gib=_maybe(_gib(out["logits_bytes"])),
        prefetch_gib=_gib(out["prefetch_bytes"]),
        overhead_gib=_gib(out["overhead_bytes"]),
        fragmentation_gib=_maybe(_gib(out["fragmentation_bytes"])),
        peak_gib_per_device=_maybe(_gib(peak)),
        peak_phase=None if math.isnan(out["peak_phase"]) else PEAK_PHASE_NAMES[int(out["peak_phase"])],
        headroom_gib=_maybe(_gib(vram - peak)),
        max_micro_batch=None if math.isnan(out["max_micro_batch"]) else int(min(out["max_micro_batch"], 1e9)),
        host_offload_gib=_gib(out["host_offload_bytes"]),
        vram_gib=_gib(vram),
        usd_per_gpu_hour=_maybe(c["usd_per_gpu_hour"]),
        cost_usd_low=_maybe(out["cost_usd_low"]),
        cost_usd_high=_maybe(out["cost_usd_high"]),
        usd_per_million_tokens=_maybe(out["usd_per_million_tokens"]),
        energy_kwh=out["energy_kwh"],
        energy_kwh_low=out["energy_kwh_low"],
        energy_kwh_high=out["energy_kwh_high"],
        gpu_energy_kwh=out["gpu_energy_kwh"],
        host_energy_kwh=out["host_energy_kwh"],
        facility_overhead_kwh=out["facility_overhead_kwh"],
        co2e_kg=out["co2e_kg"],
        co2e_kg_low=out["co2e_kg_low"],
        co2e_kg_high=out["co2e_kg_high"],
        grid_g_co2e_per_kwh=c["g_co2e_per_kwh"],
        electricity_cost_usd=out["electricity_cost_usd"],
        gpu=str(resolved.gpu["name"]),
        price_basis=resolved.price_basis,
        price_snapshot=resolved.price_snapshot,
        unavailable=resolved.unavailable,
    )
