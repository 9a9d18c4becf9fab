"""Goodput: expected failures, the checkpoint interval, and the wall clock of a run that fails and restarts.

A failure stops the whole synchronous job: every GPU rolls back to the last checkpoint, waits for the job to be
restarted and reloads it. With failures arriving at random (a Poisson process, the assumption of Young 1974 and
Daly 2006) at a rate per GPU-hour, the job's mean time between failures is M = 1 / (GPUs × rate). Per failure
the run loses the work since the last checkpoint, on average half a segment (τ + C) / 2 for an interval τ of
work between checkpoints that take C to write, plus the restart R and the reload of the checkpoint. Checkpoint
writes cost C every τ of work even without failures. All functions take floats or numpy arrays.

Rate 0 (or below `MIN_FAILURES_PER_GPU_HOUR`) turns goodput off: every "with failures" figure is then exactly the plain one. The default rate and
restart time, with their sources, are beside their fields in `planner.inputs.scenario`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.formulas.energy.footprint import FloatOrArray
from planner.formulas.step.comm import BYTES_PER_GB
from planner.formulas.units import SECONDS_PER_HOUR

# Checkpoint write bandwidth when none is given: 2 GB/s per node, the network file system figure of
# reference/hardware-and-prices.md §3.2 (sharded checkpoints: every node writes its own shard at once), capped
# at 57 GB/s for the whole job, a parallel file system's aggregate (GPFS at IDRIS Jean Zay wrote BLOOM's 2.3 TB
# checkpoint in 40 s; stas00/ml-engineering storage/README.md, the same table's S4).
WRITE_GB_PER_S_PER_NODE = 2.0
WRITE_GB_PER_S_JOB_CAP = 57.0


# Below one failure per 10^12 GPU-hours (100 million GPU-years) the expected failures of any run are nil; such
# a rate counts as 0, which also keeps √(2CM) and (lost + R) / M clear of float overflow (inf / inf).
MIN_FAILURES_PER_GPU_HOUR = 1e-12


def job_mtbf_s(n_gpus: FloatOrArray, failures_per_gpu_hour: FloatOrArray) -> FloatOrArray:
    """Mean time between failures of the whole job: M = 1 / (GPUs × rate), in seconds (inf at rate 0)."""
    with np.errstate(divide="ignore", over="ignore"):
        return SECONDS_PER_HOUR / (np.asarray(n_gpus, dtype=float) * failures_per_gpu_hour)


def expected_failures(
    wall_clock_s: FloatOrArray, n_gpus: FloatOrArray, failures_per_gpu_hour: FloatOrArray
) -> FloatOrArray:
    """Failures expected over a wall clock: hours × GPUs × rate per GPU-hour (a Poisson process's mean)."""
    return wall_clock_s / SECONDS_PER_HOUR * n_gpus * failures_per_gpu_hour


def default_write_gb_per_s(n_nodes: FloatOrArray) -> FloatOrArray:
    """Checkpoint write bandwidth of the job: 2 GB/s per node, at most the file system's 57 GB/s."""
    return np.minimum(WRITE_GB_PER_S_PER_NODE * n_nodes, WRITE_GB_PER_S_JOB_CAP)


def checkpoint_write_s(checkpoint_bytes: FloatOrArray, write_gb_per_s: FloatOrArray) -> FloatOrArray:
    """Seconds to write one checkpoint: C = bytes / write bandwidth (training waits for it)."""
    return checkpoint_bytes / (write_gb_per_s * BYTES_PER_GB)


def young_interval_s(write_s: FloatOrArray, mtbf_s: FloatOrArray) -> FloatOrArray:
    """Young (1974), "A first order approximation to the optimum checkpoint interval", CACM 17(9): τ = √(2CM)."""
    return np.sqrt(2.0 * write_s * mtbf_s)


def daly_interval_s(write_s: FloatOrArray, mtbf_s: FloatOrArray) -> FloatOrArray:
    """Daly (2006), "A higher order estimate of the optimum checkpoint interval for restart dumps", Future
    Generation Computer Systems 22(3): τ = √(2CM) · (1 + ⅓ √(C / 2M) + ⅑ (C / 2M)) − C for C < 2M, and τ = M otherwise.

    Work between checkpoints, in seconds; it tends to Young's √(2CM) as C / M falls.
    """
    ratio = write_s / (2.0 * np.asarray(mtbf_s, dtype=float))
    higher = young_interval_s(write_s, mtbf_s) * (1.0 + np.sqrt(ratio) / 3.0 + ratio / 9.0) - write_s
    return np.where(ratio < 1.0, higher, mtbf_s)


def lost_work_per_failure_s(interval_s: FloatOrArray, write_s: FloatOrArray) -> FloatOrArray:
    """Work redone after one failure: a failure falls uniformly in a segment of τ of work plus C of writing,
    so on average half of it, (τ + C) / 2, is lost."""
    return (interval_s + write_s) / 2.0


@dataclass(frozen=True)
class Goodput:
    """The run with failures (seconds; NaN interval and MTBF where the rate is 0)."""

    checkpoint_interval_s: FloatOrArray  # work between checkpoints: the user's, or Daly's optimum
    job_mtbf_s: FloatOrArray
    expected_failures: FloatOrArray
    checkpoint_writes_s: FloatOrArray  # all checkpoint writes beyond those already in the plain wall clock
    lost_work_s: FloatOrArray  # all recomputed work
    restarts_s: FloatOrArray  # all restarts and checkpoint reloads
    wall_clock_s: FloatOrArray  # inf when failures come faster than the run can progress
    goodput_frac: FloatOrArray  # plain wall clock / wall clock with failures


def goodput(
    plain_wall_clock_s: FloatOrArray,
    n_gpus: FloatOrArray,
    failures_per_gpu_hour: FloatOrArray,
    write_s: FloatOrArray,
    restart_s: FloatOrArray,
    interval_s: FloatOrArray = np.nan,
    n_saves_counted: FloatOrArray = 0.0,
) -> Goodput:
    """The wall clock with failures T of a run whose failure-free wall clock is W.

    T = W + writes + N × (lost per failure + restart + reload), with N = T / M failures, so
    T = (W + writes) / (1 − (lost + R + C) / M). `interval_s` NaN takes Daly's optimum; `n_saves_counted`
    checkpoints are already in W (the plain figure's saves) and count towards the W / τ needed.
    """
    mtbf = job_mtbf_s(n_gpus, failures_per_gpu_hour)
    on = np.asarray(failures_per_gpu_hour) >= MIN_FAILURES_PER_GPU_HOUR
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # the rows that are off are replaced
        tau = np.where(np.isnan(interval_s), daly_interval_s(write_s, mtbf), interval_s)
        # A checkpoint that takes no time (LoRA adapters of a shapeless model: 0 bytes) costs no writes at τ = 0.
        needed = np.where(write_s > 0, plain_wall_clock_s / tau - n_saves_counted, 0.0)
        writes = np.maximum(needed, 0.0) * write_s
        per_failure = lost_work_per_failure_s(tau, write_s) + restart_s + write_s  # reload as fast as write
        progress = 1.0 - per_failure / mtbf
        wall = np.where(progress > 0, (plain_wall_clock_s + writes) / progress, np.inf)
        failures = expected_failures(wall, n_gpus, failures_per_gpu_hour)
        frac = plain_wall_clock_s / wall
        lost = failures * lost_work_per_failure_s(tau, write_s)
        restarts = failures * (restart_s + write_s)
    return Goodput(
        checkpoint_interval_s=np.where(on, tau, np.nan),
        job_mtbf_s=np.where(on, mtbf, np.nan),
        expected_failures=np.where(on, failures, 0.0),
        checkpoint_writes_s=np.where(on, writes, 0.0),
        lost_work_s=np.where(on, lost, 0.0),
        restarts_s=np.where(on, restarts, 0.0),
        wall_clock_s=np.where(on, wall, plain_wall_clock_s),
        goodput_frac=np.where(on, frac, 1.0),
    )
