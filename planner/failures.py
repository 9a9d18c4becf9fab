"""The plan with failures: the goodput formulas (`planner.formulas.step.goodput`) over evaluated rows.

`planner.evaluate` calls `with_failures` after the plain figures; the plan search leaves it out of its hot path
and gets it for the plans it shows, which are evaluated again in full. Checkpoint bytes are computed here once,
for the plain wall clock's checkpoint I/O and for the write time that sets the interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.columns import Columns
from planner.formulas.energy import footprint as energy
from planner.formulas.memory.recipes import Method
from planner.formulas.money.cost import run_cost_usd
from planner.formulas.step import goodput, timing
from planner.formulas.units import SECONDS_PER_HOUR


def checkpoint_bytes_each(c: Columns) -> Any:
    """One resumable checkpoint: every weight and its optimizer state for full training, the adapters for LoRA."""
    m, r = c.model, c.recipe
    frozen = r.method != Method.FULL
    trainable = np.where(frozen, m.n_adapter_params, m.n_params)
    return timing.checkpoint_bytes(
        trainable, r.weight_bytes_per_param, trainable, r.master_bytes_per_param + r.optimizer_bytes_per_param
    )


def with_failures(c: Columns, out: dict[str, Any]) -> dict[str, Any]:
    """Failures, checkpoint interval, and the wall clock, GPU-hours, cost and energy with failures."""
    lay, w, g, e = c.layout, c.workload, c.gpu, c.energy
    n_gpus = lay.n_gpus + c.post.n_generation_gpus  # the GPUs that only generate fail and wait like the rest
    storage_given = np.isfinite(w.storage_gb_per_s)
    n_nodes = np.ceil(lay.n_gpus / lay.n_gpus_per_node)
    write_gb_per_s = np.where(storage_given, w.storage_gb_per_s, goodput.default_write_gb_per_s(n_nodes))
    derived_write_s = goodput.checkpoint_write_s(checkpoint_bytes_each(c), write_gb_per_s)
    write_s = np.where(np.isnan(w.checkpoint_write_s), derived_write_s, w.checkpoint_write_s)
    run = goodput.goodput(
        out["wall_clock_s"],
        n_gpus,
        w.failures_per_gpu_hour,
        write_s,
        w.restart_s,
        w.checkpoint_interval_s,
        n_saves_counted=np.where(storage_given, w.n_checkpoints, 0.0),
    )
    # A run whose failures outpace its progress never finishes: its figures are unknown (NaN), not infinite.
    never = ~np.isfinite(run.wall_clock_s) & np.isfinite(out["wall_clock_s"])

    def known(value: Any) -> Any:
        return np.where(never, np.nan, value)

    gpu_hours = known(run.wall_clock_s / SECONDS_PER_HOUR * n_gpus)

    def extra_kwh(seconds: Any, gpu_util_frac: Any) -> Any:
        return energy.energy_figures(
            n_gpus,
            seconds / SECONDS_PER_HOUR,
            g.power_limit_w,
            e.g_co2e_per_kwh,
            gpu_util_frac=gpu_util_frac,
            idle_power_frac=e.idle_power_frac,
            host_overhead_frac=e.host_overhead_frac,
            pue=e.pue,
            usd_per_kwh=e.usd_per_kwh,
            experiments_multiplier=w.experiments_multiplier,
        ).energy_kwh

    # Redone work draws what training draws; during writes, restarts and reloads the GPUs wait, at idle draw
    # (reference/energy.md: about 100 W, 15 % of TDP, on an H100 while it checkpoints; the idle input is above).
    redone_s = np.where(never, 0.0, run.lost_work_s)  # (masked below; 0 keeps inf × 0 out of the energy sums)
    waiting_s = np.where(never, 0.0, run.checkpoint_writes_s + run.restarts_s)
    return {
        "checkpoint_write_s": write_s,
        "checkpoint_interval_s": run.checkpoint_interval_s,
        "job_mtbf_s": run.job_mtbf_s,
        "expected_failures": known(run.expected_failures),
        "lost_work_s": known(run.lost_work_s),
        "restarts_s": known(run.restarts_s),
        "wall_clock_with_failures_s": known(run.wall_clock_s),
        "gpu_hours_with_failures": gpu_hours,
        "cost_with_failures_usd": run_cost_usd(gpu_hours, g.usd_per_gpu_hour, w.experiments_multiplier),
        "energy_with_failures_kwh": known(
            out["energy_kwh"] + extra_kwh(redone_s, e.gpu_util_frac) + extra_kwh(waiting_s, 0.0)
        ),
        "goodput_frac": run.goodput_frac,
    }
