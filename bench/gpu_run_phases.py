"""Where a small real training step spends its time: forward, backward and optimizer step timed apart, and one
profiled step's count of operations the host dispatched and of GPU activities (kernels, copies), with the time
the GPU was busy — so a step bound by the host's dispatch shows as a GPU busy far less than the step lasts.

    PYTHONUNBUFFERED=1 python bench/gpu_run_phases.py --out data/microbench/h200_run_phases.csv --budget-s 120

Same models, precision and optimizer as bench/gpu_runs.py (its `build_model`); host-bound configurations first.
Without CUDA a tiny model runs on the CPU (run_kind=cpu_tiny_smoke, no GPU columns); those rows are never data.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_runs import _config_cells, _release, build_model
from micro_common import MEASURED_DATE, Budget, RowWriter, machine_description, sync
from run_configs import RunConfig, run_configs

CONFIG_COLUMNS = ["model", "n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "ffn_hidden", "vocab",
                  "tied_embeddings", "attention_bias", "seq_len", "micro_batch", "method", "lora_rank",
                  "lora_targets", "optimizer", "precision", "recompute", "attn_implementation"]  # fmt: skip
COLUMNS = ["gpu_name", *CONFIG_COLUMNS, "n_timed_steps", "step_s", "forward_s", "backward_s", "optimizer_s",
           "tokens_per_s", "n_host_ops_per_step", "n_gpu_activities_per_step", "gpu_busy_s", "gpu_busy_frac",
           "status", "run_kind", "measured_on", "date"]  # fmt: skip
# Host-bound configurations first (micro-batch 1, short sequences, small models), then the rest of the runs.
FIRST = (14, 13, 20, 22, 0, 1, 2, 3, 6, 7, 10, 11)


def ordered_configs(tiny: bool) -> list[RunConfig]:
    configs = run_configs(tiny)
    if tiny:
        return configs
    return [configs[i] for i in FIRST] + [c for i, c in enumerate(configs) if i not in FIRST]


def _phase_times(model: torch.nn.Module, optimizer: torch.optim.Optimizer, ids: torch.Tensor) -> list[float]:
    """Seconds of forward, backward and optimizer step (zeroing the gradients included), each synchronized."""
    device = ids.device.type
    marks = [time.perf_counter()]
    with torch.autocast(device_type=device, dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    sync()
    marks.append(time.perf_counter())
    loss.backward()
    sync()
    marks.append(time.perf_counter())
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    sync()
    marks.append(time.perf_counter())
    return [b - a for a, b in itertools.pairwise(marks)]


def union_s(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals: time covered by at least one of them, none counted twice."""
    total, end_so_far = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > end_so_far:
            total += end - max(start, end_so_far)
            end_so_far = end
    return total


def profiled_step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, ids: torch.Tensor
) -> dict[str, Any]:
    """One step under torch.profiler: aten operations the host dispatched at top level (not those an operation
    calls inside itself), and on a GPU the device activities and the time at least one of them ran."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=activities) as prof:
        _phase_times(model, optimizer, ids)
    events = prof.events()
    host_ops = [e for e in events if e.name.startswith("aten::") and e.device_type == DeviceType.CPU
                and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::"))]  # fmt: skip
    figures: dict[str, Any] = {"n_host_ops_per_step": len(host_ops)}
    if torch.cuda.is_available():
        # kernels, copies and sets; not the GPU-side spans of record_function annotations (the optimizer's
        # step, for one), which cover kernels already counted and the gaps between them: such a span carries
        # its host range's name, which no kernel has
        host_names = {e.name for e in events if e.device_type == DeviceType.CPU}
        device = [e for e in events if e.device_type == DeviceType.CUDA and e.name not in host_names
                  and not getattr(e, "is_user_annotation", False)]  # fmt: skip
        figures["n_gpu_activities_per_step"] = len(device)
        figures["gpu_busy_s"] = union_s([(e.time_range.start, e.time_range.end) for e in device]) / 1e6
    return figures


def measure(cfg: RunConfig, n_warmup: int, n_timed: int) -> dict[str, Any]:
    model = build_model(cfg)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ids = torch.randint(0, cfg.vocab, (cfg.micro_batch, cfg.seq_len), device=device)
    for _ in range(n_warmup):
        _phase_times(model, optimizer, ids)
    phases = [_phase_times(model, optimizer, ids) for _ in range(n_timed)]
    forward_s, backward_s, optimizer_s = (statistics.median(p[i] for p in phases) for i in range(3))
    step_s = statistics.median(sum(p) for p in phases)
    figures: dict[str, Any] = dict(n_timed_steps=n_timed, step_s=step_s, forward_s=forward_s,
                                   backward_s=backward_s, optimizer_s=optimizer_s,
                                   tokens_per_s=cfg.micro_batch * cfg.seq_len / step_s, status="ok")  # fmt: skip
    try:
        figures.update(profiled_step(model, optimizer, ids))
        if "gpu_busy_s" in figures:
            figures["gpu_busy_frac"] = figures["gpu_busy_s"] / step_s
    except Exception as exc:  # the timings stand without the profile
        figures["status"] = f"ok; profile failed: {exc!r}"[:200]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="CSV file to write")
    parser.add_argument("--budget-s", type=float, default=120.0, help="stop starting runs after this")
    parser.add_argument("--tiny", action="store_true", help="tiny model (always on without CUDA)")
    parser.add_argument("--limit", type=int, default=0, help="run at most this many configurations (0: all)")
    args = parser.parse_args(argv)
    tiny = args.tiny or not torch.cuda.is_available()
    gpu_name, measured_on = machine_description()
    fixed = {"gpu_name": gpu_name, "date": MEASURED_DATE, "measured_on": measured_on,
             "run_kind": "cpu_tiny_smoke" if tiny else "gpu_full"}  # fmt: skip
    out = RowWriter(args.out, COLUMNS, fixed)
    budget = Budget(args.budget_s)
    configs = ordered_configs(tiny)
    for cfg in configs[: args.limit] if args.limit else configs:
        if budget.left_s() <= 0:
            break
        try:
            figures = measure(cfg, n_warmup=1 if tiny else 2, n_timed=2 if tiny else 3)
        except torch.cuda.OutOfMemoryError:
            figures = {"status": "out of memory"}
        except Exception as exc:
            traceback.print_exc()
            figures = {"status": f"failed: {exc!r}"[:200]}
        _release()
        cells = {k: v for k, v in _config_cells(cfg).items() if k in CONFIG_COLUMNS}
        out.write(**cells, **figures)
        print(f"{cfg.model[:28]} {cfg.method} mb{cfg.micro_batch} s{cfg.seq_len}: {figures.get('status')} "
              f"step {figures.get('step_s')} busy {figures.get('gpu_busy_frac')}", flush=True)  # fmt: skip
    out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
