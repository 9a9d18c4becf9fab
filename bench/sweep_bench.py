"""Plan search benchmark: configurations evaluated per second on one core, the default search, its memory.

`measure()` returns (bench/run.py merges it; `python bench/sweep_bench.py` prints it as JSON):
- sweep_configs_per_s: configurations evaluated per second of wall clock over a whole large search (Llama 3.1
  70B full fine-tuning, every priced GPU, up to 1,024 GPUs, a 1,024-sequence global batch: about 2.1 M rows),
  enumeration, filtering and ranking included; best of N_LARGE runs (the least disturbed by other processes).
  sweep_configs_per_cpu_s divides by the process's CPU time instead, which other processes do not inflate.
- sweep_default_s: the default search (Llama 3.1 70B full fine-tuning with the Scenario's other defaults,
  every GPU with a catalogue price, default space and constraints), median of N_DEFAULT warm runs.
- sweep_peak_memory_mib: tracemalloc's peak (Python and numpy allocations; numpy reports its buffers to
  tracemalloc) during one default search, above what was allocated before it. sweep_large_peak_memory_mib:
  the same for the large search.
- sweep_moe_configs_per_cpu_s: the large search for Mixtral 8x7B full fine-tuning, whose grid also tries
  expert-parallel degrees (6.7 M rows, most of which fit, so the time model runs on most of them and the
  Pareto frontier sorts millions): configurations per CPU-second, best of N_MOE runs.
The process is pinned to one core (os.sched_setaffinity) and BLAS/OpenMP pools to one thread; the previous
affinity is restored afterwards so a caller's own figures are not affected.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # effective only if numpy is not imported yet (run standalone)

import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

N_LARGE = 3
N_DEFAULT = 5
N_MOE = 2
LARGE_TARGET_SEQUENCES = 1024  # 4 M tokens per step at 4k: a common pre-training-scale batch


def _scenario(model: str = "Llama 3.1 70B"):
    from planner.inputs.scenario import Scenario

    return Scenario(model=model, method="full")


def _timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def _peak_mib(call) -> float:
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (peak - base) / 2**20


def _figures() -> dict[str, float]:
    from planner.catalogue.catalog import default_catalogs
    from planner.decide.sweep import search
    from planner.decide.sweep_grid import SearchSpace

    scenario = _scenario()
    cats = default_catalogs()
    large_space = SearchSpace(target_batch_sequences=LARGE_TARGET_SEQUENCES)
    search(scenario, catalogs=cats)  # warm: catalogue and preset caches, numpy's first-call costs
    default_runs = [_timed(lambda: search(scenario, catalogs=cats)) for _ in range(N_DEFAULT)]
    large_runs = [_timed(lambda: search(scenario, space=large_space, catalogs=cats)) for _ in range(N_LARGE)]
    n_large = large_runs[0][0].n_evaluated
    moe = _scenario("Mixtral 8x7B")
    moe_runs = [_timed(lambda: search(moe, space=large_space, catalogs=cats)) for _ in range(N_MOE)]
    return {
        "sweep_configs_per_s": max(n_large / wall for _, wall, _ in large_runs),
        "sweep_configs_per_cpu_s": max(n_large / cpu for _, _, cpu in large_runs),
        "sweep_large_configs": n_large,
        "sweep_moe_configs_per_cpu_s": max(run.n_evaluated / cpu for run, _, cpu in moe_runs),
        "sweep_moe_configs": moe_runs[0][0].n_evaluated,
        "sweep_large_s": min(wall for _, wall, _ in large_runs),
        "sweep_default_s": statistics.median(wall for _, wall, _ in default_runs),
        "sweep_default_cpu_s": statistics.median(cpu for _, _, cpu in default_runs),
        "sweep_default_configs": default_runs[0][0].n_evaluated,
        "sweep_peak_memory_mib": _peak_mib(lambda: search(scenario, catalogs=cats)),
        "sweep_large_peak_memory_mib": _peak_mib(lambda: search(scenario, space=large_space, catalogs=cats)),
    }


def measure() -> dict[str, float]:
    """The plan search figures (module docstring), measured on one core."""
    previous = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(previous)})
    try:
        return _figures()
    finally:
        os.sched_setaffinity(0, previous)


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
