"""Shared helpers of the GPU microbenchmarks (bench/gpu_micro.py) and the small real runs (bench/gpu_runs.py).

Both scripts write one CSV row per measurement, flushed as soon as it is measured, so a run cut short by its
time budget (or by the device machine's call limit) still leaves every figure it reached. Each row carries the
machine it was measured on and whether it is a full GPU run or the tiny CPU smoke run that tests exercise (the
CPU rows are never data).
"""

from __future__ import annotations

import csv
import platform
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

MEASURED_DATE = "2026-12-04"  # the day of the lent H200 session these tables come from


def machine_description() -> tuple[str, str]:
    """(gpu name, measured_on) — the nvidia-smi name and driver, torch and CUDA versions, or the CPU."""
    torch_part = f"torch {torch.__version__}"
    if not torch.cuda.is_available():
        return "CPU (smoke run)", f"{platform.machine()} CPU; {torch_part}"
    name = torch.cuda.get_device_name(0)
    driver = ""
    if shutil.which("nvidia-smi"):
        try:
            query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
            line = (
                subprocess.run(query, capture_output=True, text=True, timeout=20)
                .stdout.strip()
                .splitlines()[0]
            )
            smi_name, driver, total = (part.strip() for part in line.split(","))
            name, driver = smi_name, f"driver {driver}; {total}"
        except (OSError, subprocess.SubprocessError, IndexError, ValueError):
            driver = "nvidia-smi unreadable"
    props = torch.cuda.get_device_properties(0)
    sm_part = f"{props.multi_processor_count} SMs; CUDA {torch.version.cuda}"
    return name, f"{name}; {driver}; {sm_part}; {torch_part}"


class RowWriter:
    """A CSV file whose header is fixed up front; every row is written and flushed at once."""

    def __init__(self, path: Path, columns: list[str], fixed: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.columns, self.fixed = columns, fixed
        self._file = path.open("w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=columns, extrasaction="raise")
        self._writer.writeheader()
        self.n_rows = 0

    def write(self, **values: Any) -> None:
        row = {column: "" for column in self.columns}
        row.update(self.fixed)
        row.update({key: _cell(value) for key, value in values.items()})
        self._writer.writerow(row)
        self._file.flush()
        self.n_rows += 1

    def close(self) -> None:
        self._file.close()


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.6g}"
    return value


class Budget:
    """A wall-clock budget: sections stop starting new measurements once their own or the global one is spent."""

    def __init__(self, total_s: float) -> None:
        self.start_s = time.monotonic()
        self.total_s = total_s

    def left_s(self) -> float:
        return self.total_s - (time.monotonic() - self.start_s)

    def section(self, share_s: float) -> SectionClock:
        """A predicate that says whether this section may still start a measurement."""
        return SectionClock(self, share_s)


class SectionClock:
    """Called: whether a section may start another measurement (its own share and the global budget left)."""

    def __init__(self, budget: Budget, share_s: float) -> None:
        self.budget, self.share_s = budget, share_s
        self.end_s = time.monotonic() + share_s

    def __call__(self) -> bool:
        return time.monotonic() < self.end_s and self.budget.left_s() > 0


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_time_s(fn: Callable[[], Any], n_warmup: int, n_repeats: int, inner: int = 1) -> float:
    """Median seconds of one call of `fn`: CUDA events around `inner` back-to-back calls on a GPU (host clock
    after a synchronize on the CPU), `n_warmup` untimed calls first so module load and handle creation stay out."""
    for _ in range(n_warmup):
        fn()
    sync()
    samples = []
    for _ in range(n_repeats):
        if torch.cuda.is_available():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3 / inner)
        else:
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


def graph_time_s(fn: Callable[[], Any], n_repeats: int, inner: int) -> float | None:
    """Median seconds of one call of `fn` replayed from a CUDA graph of `inner` captured calls: the GPU's own
    time without the host's launch gaps. None when there is no GPU or the capture fails (then time eagerly)."""
    if not torch.cuda.is_available():
        return None
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm-up on a side stream, as torch.cuda.graphs documents before a capture
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(inner):
                fn()
        graph.replay()
        sync()
        return median_time_s(graph.replay, n_warmup=1, n_repeats=n_repeats) / inner
    except RuntimeError:
        sync()
        return None
