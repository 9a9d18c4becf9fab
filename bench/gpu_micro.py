"""GPU microbenchmarks for the operator-level step model: GEMMs, attention kernels, HBM-bound operations,
launch cost and the optimizer step, timed with CUDA events after a warm-up (median of several repeats).

    PYTHONUNBUFFERED=1 python bench/gpu_micro.py --out data/microbench/h200.csv --budget-s 240

On a machine without CUDA it runs the same code paths at tiny sizes (rows marked run_kind=cpu_tiny_smoke) so
a test can exercise it; those rows are never committed as data. Every measurement is its own try/except and
every row is flushed as it is measured; a global time budget stops new measurements, section by section.
Column meanings: data/microbench/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from micro_common import (
    MEASURED_DATE,
    Budget,
    RowWriter,
    SectionClock,
    graph_time_s,
    machine_description,
    median_time_s,
)
from micro_shapes import attention_cases, bandwidth_sizes_bytes, gemm_shapes, optimizer_sizes, wave_shapes

COLUMNS = [
    "gpu_name", "op", "variant", "dtype", "shape", "m", "n", "k", "batch", "heads", "seq", "head_dim", "causal",
    "size_bytes", "n_params", "flops", "bytes_moved", "timing", "median_time_us", "achieved_tflop_per_s",
    "achieved_gb_per_s", "ns_per_param", "us_per_op", "run_kind", "measured_on", "date",
]  # fmt: skip
BF16_SHARE = 0.7  # of the GEMM section's time; fp8 gets the rest (and what bf16 leaves)
# Rotate inputs over at least this many bytes so repeated calls do not read from the 60 MB L2 cache.
L2_ROTATE_BYTES = 256 * 2**20


def _on_gpu() -> bool:
    return torch.cuda.is_available()


def _device() -> str:
    return "cuda" if _on_gpu() else "cpu"


def _timed(fn: Callable[[], Any], work_s_hint: float) -> tuple[float, str]:
    """(median seconds per call, how it was timed): graph replay for short kernels, events otherwise."""
    if _on_gpu() and work_s_hint < 2e-3:
        inner = max(1, min(200, int(5e-3 / max(work_s_hint, 1e-6))))
        replay_s = graph_time_s(fn, n_repeats=7, inner=inner)
        if replay_s is not None:
            return replay_s, "cuda_graph_replay"
    repeats = 7 if work_s_hint < 0.05 else 3
    return median_time_s(fn, n_warmup=2, n_repeats=repeats), "cuda_events" if _on_gpu() else "host_clock"


def _rotating(make: Callable[[], tuple[torch.Tensor, ...]], bytes_each: int) -> Callable[[], tuple[Any, ...]]:
    """A source of input sets that cycles over enough copies to exceed the L2 cache (one copy if large)."""
    n_copies = 1 if not _on_gpu() else max(1, min(32, L2_ROTATE_BYTES // max(bytes_each, 1)))
    sets = [make() for _ in range(n_copies)]
    cycle = itertools.cycle(sets)
    return lambda: next(cycle)


def bench_gemm(out: RowWriter, may_start: SectionClock, tiny: bool) -> None:
    fp8 = hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")
    bf16_end_s = time.monotonic() + BF16_SHARE * may_start.share_s
    for dtype in ["bf16"] + (["fp8_e4m3"] if fp8 else []):
        for family, m, n, k in gemm_shapes(tiny, dtype):
            if not may_start() or (dtype == "bf16" and time.monotonic() > bf16_end_s):
                break
            if dtype == "fp8_e4m3" and (m % 16 or n % 16 or k % 16):
                continue  # torch._scaled_mm needs every dimension divisible by 16
            try:
                _one_gemm(out, dtype, family, m, n, k)
            except Exception as exc:  # one shape's failure (out of memory, unsupported) stops nothing else
                out.write(
                    op="gemm", variant=family, dtype=dtype, m=m, n=n, k=k, timing=f"failed: {exc!r}"[:200]
                )


def bench_gemm_wave(out: RowWriter, may_start: Callable[[], bool], tiny: bool) -> None:
    for family, m, n, k in wave_shapes(tiny):
        if not may_start():
            return
        try:
            _one_gemm(out, "bf16", family, m, n, k)
        except Exception as exc:
            out.write(op="gemm", variant=family, dtype="bf16", m=m, n=n, k=k, timing=f"failed: {exc!r}"[:200])


def _one_gemm(out: RowWriter, dtype: str, family: str, m: int, n: int, k: int) -> None:
    dev = _device()
    flops = 2 * m * n * k
    if dtype == "bf16":
        bytes_each = 2 * (m * k + k * n + m * n)
        src = _rotating(lambda: (torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                                 torch.randn(k, n, device=dev, dtype=torch.bfloat16)), bytes_each)  # fmt: skip

        def call() -> torch.Tensor:
            a, b = src()
            return a @ b
    else:
        bytes_each = m * k + k * n + 2 * m * n
        one = torch.ones((), device=dev, dtype=torch.float32)

        def make() -> tuple[torch.Tensor, torch.Tensor]:
            a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
            w = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
            return a, w.t()  # the second operand column-major, as cuBLASLt's fp8 path requires

        src = _rotating(make, bytes_each)

        def call() -> torch.Tensor:
            a, b = src()
            return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)

    hint_s = flops / 7e14 if _on_gpu() else 1.0
    seconds, timing = _timed(call, hint_s)
    out.write(op="gemm", variant=family, dtype=dtype, shape=f"{m}x{n}x{k}", m=m, n=n, k=k, flops=flops,
              bytes_moved=bytes_each, timing=timing, median_time_us=seconds * 1e6,
              achieved_tflop_per_s=flops / seconds / 1e12, achieved_gb_per_s=bytes_each / seconds / 1e9)  # fmt: skip


def bench_attention(out: RowWriter, may_start: Callable[[], bool], tiny: bool) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "math": SDPBackend.MATH}  # fmt: skip
    for case in attention_cases(tiny):
        for direction in ("fwd", "fwd_bwd"):
            if not may_start():
                return
            try:
                with sdpa_kernel([backends[case["backend"]]]):
                    _one_attention(out, case, direction)
            except Exception as exc:  # e.g. a backend that refuses this head dim or the CPU
                out.write(op=f"attention_{direction}", variant=case["backend"], dtype="bf16",
                          timing=f"failed: {exc!r}"[:200], **_attention_cells(case))  # fmt: skip


def _attention_cells(case: dict[str, Any]) -> dict[str, Any]:
    b, h, s, d = case["batch"], case["heads"], case["seq"], case["head_dim"]
    return {
        "batch": b,
        "heads": h,
        "seq": s,
        "head_dim": d,
        "causal": case["causal"],
        "shape": f"{b}x{h}x{s}x{d}",
    }


def attention_flops(batch: int, heads: int, seq: int, head_dim: int, causal: bool, direction: str) -> int:
    """Forward: two matmuls of 2·s²·d each per head (QKᵀ and PV), halved under a causal mask; the backward
    does 2.5 times the forward's (five such matmuls), the FlashAttention-2 paper's counting (Dao 2023, §4.1)."""
    fwd = 4 * batch * heads * seq * seq * head_dim // (2 if causal else 1)
    return fwd if direction == "fwd" else fwd * 7 // 2


def _one_attention(out: RowWriter, case: dict[str, Any], direction: str) -> None:
    import torch.nn.functional as F

    b, h, s, d, causal = case["batch"], case["heads"], case["seq"], case["head_dim"], case["causal"]
    dev, grad = _device(), direction == "fwd_bwd"
    q, k, v = (
        torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16, requires_grad=grad) for _ in range(3)
    )
    g = torch.randn(b, h, s, d, device=dev, dtype=torch.bfloat16)

    def call() -> None:  # autograd.grad returns the gradients instead of accumulating them into .grad
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        if grad:
            torch.autograd.grad(o, (q, k, v), g)

    flops = attention_flops(b, h, s, d, causal, direction)
    seconds = median_time_s(call, n_warmup=2, n_repeats=5 if _on_gpu() else 1)
    out.write(op=f"attention_{direction}", variant=case["backend"], dtype="bf16", flops=flops,
              timing="cuda_events" if _on_gpu() else "host_clock", median_time_us=seconds * 1e6,
              achieved_tflop_per_s=flops / seconds / 1e12, **_attention_cells(case))  # fmt: skip


def _memory_ops(size_bytes: int) -> Iterable[tuple[str, str, int, Callable[[], Any]]]:
    """(op, dtype, bytes a perfect kernel moves, call) for one buffer size."""
    import torch.nn.functional as F

    dev, n = _device(), size_bytes // 2
    x = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y, dst = torch.randn_like(x), torch.empty_like(x)
    yield "copy", "bf16", 2 * size_bytes, lambda: dst.copy_(x)
    yield "add", "bf16", 3 * size_bytes, lambda: torch.add(x, y, out=dst)
    rows = max(1, n // 4096)
    x2 = x[: rows * 4096].view(rows, 4096)
    weight = torch.ones(4096, device=dev, dtype=torch.bfloat16)

    def rms_norm_eager() -> torch.Tensor:  # the Llama reference RMSNorm: fp32 variance, scale, cast, weight
        xf = x2.float()
        return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16)

    yield "rms_norm_eager_llama", "bf16", 2 * size_bytes, rms_norm_eager
    yield "layer_norm_fused", "bf16", 2 * size_bytes, lambda: F.layer_norm(x2, (4096,), weight, weight)
    vocab = 128256
    tokens = max(1, n // vocab)
    logits = x[: tokens * vocab].view(tokens, vocab)
    targets = torch.randint(0, vocab, (tokens,), device=dev)
    yield "softmax_vocab128k", "bf16", 2 * tokens * vocab * 2, lambda: torch.softmax(logits, -1)
    yield (
        "cross_entropy_vocab128k_fp32_upcast",
        "bf16",
        tokens * vocab * 2,
        lambda: F.cross_entropy(logits.float(), targets),
    )


def bench_bandwidth(out: RowWriter, may_start: Callable[[], bool], tiny: bool) -> None:
    for size in bandwidth_sizes_bytes(tiny):
        try:
            ops = list(_memory_ops(size))
        except Exception as exc:
            out.write(op="bandwidth", size_bytes=size, timing=f"failed: {exc!r}"[:200])
            continue
        for op, dtype, moved, call in ops:
            if not may_start():
                return
            try:
                seconds, timing = _timed(call, moved / 3e12 if _on_gpu() else 1.0)
                out.write(op=op, variant="hbm", dtype=dtype, size_bytes=size, shape=f"{size / 2**20:g} MiB",
                          bytes_moved=moved, timing=timing, median_time_us=seconds * 1e6,
                          achieved_gb_per_s=moved / seconds / 1e9)  # fmt: skip
            except Exception as exc:
                out.write(op=op, dtype=dtype, size_bytes=size, timing=f"failed: {exc!r}"[:200])
        del ops
        if _on_gpu():
            torch.cuda.empty_cache()


def bench_launch(out: RowWriter, may_start: Callable[[], bool], tiny: bool) -> None:
    """Host cost of dispatching one tiny operation: eager (queue kept full, so the host is the bottleneck),
    eager with a synchronize after each (a round trip), and replayed from a CUDA graph."""
    dev = _device()
    x = torch.zeros(1, device=dev)
    a = torch.randn(16, 16, device=dev, dtype=torch.bfloat16 if _on_gpu() else torch.float32)
    n_ops = 200 if tiny else 5000

    def sync_each() -> None:
        x.add_(1)
        if _on_gpu():
            torch.cuda.synchronize()

    cases = [("add_tiny", "eager", x, lambda: x.add_(1)), ("matmul_16x16", "eager", a, lambda: a @ a),
             ("linear_16x16", "eager", a, lambda: torch.nn.functional.linear(a, a)),
             ("add_tiny", "eager_sync_each", x, sync_each)]  # fmt: skip
    for op, mode, operand, call in cases:
        if not may_start():
            return
        try:
            seconds = median_time_s(call, n_warmup=50, n_repeats=5, inner=n_ops)
            out.write(op=f"launch_{op}", variant=mode, dtype=str(operand.dtype).removeprefix("torch."), timing=mode,
                      median_time_us=seconds * 1e6, us_per_op=seconds * 1e6)  # fmt: skip
        except Exception as exc:
            out.write(op=f"launch_{op}", variant=mode, timing=f"failed: {exc!r}"[:200])
    replay_s = graph_time_s(lambda: x.add_(1), n_repeats=5, inner=n_ops)
    if replay_s is not None:
        out.write(op="launch_add_tiny", variant="cuda_graph_replay", dtype="float32", timing="cuda_graph_replay",
                  median_time_us=replay_s * 1e6, us_per_op=replay_s * 1e6)  # fmt: skip


def bench_optimizer(out: RowWriter, may_start: Callable[[], bool], tiny: bool) -> None:
    for n_params, dtype in optimizer_sizes(tiny):
        for impl in ("foreach", "fused"):
            if not may_start():
                return
            try:
                _one_optimizer(out, n_params, dtype, impl)
            except Exception as exc:
                out.write(op="adamw_step", variant=impl, dtype=dtype, n_params=n_params,
                          timing=f"failed: {exc!r}"[:200])  # fmt: skip
            if _on_gpu():
                torch.cuda.empty_cache()


def optimizer_bytes_per_param(dtype: str) -> int:
    """AdamW reads parameter, gradient and both moments and writes back parameter and moments: 7 tensors'
    elements (fp32: 28 bytes per parameter; bf16 parameters, gradients and moments: 14)."""
    return 7 * (4 if dtype == "fp32" else 2)


def _one_optimizer(out: RowWriter, n_params: int, dtype: str, impl: str) -> None:
    dev, torch_dtype = _device(), torch.float32 if dtype == "fp32" else torch.bfloat16
    chunk = min(n_params, 16 * 2**20)  # tensors of up to 16 Mi elements, about a 4096 x 4096 projection each
    sizes = [chunk] * (n_params // chunk) + ([n_params % chunk] if n_params % chunk else [])
    params = [torch.nn.Parameter(torch.randn(size, device=dev, dtype=torch_dtype)) for size in sizes]
    for p in params:
        p.grad = torch.randn_like(p)
    fused = impl == "fused"
    if fused and not _on_gpu() and torch_dtype == torch.bfloat16:
        fused = False
    opt = torch.optim.AdamW(params, lr=1e-4, foreach=not fused, fused=fused or None)
    seconds = median_time_s(opt.step, n_warmup=2, n_repeats=5 if _on_gpu() else 1)
    moved = optimizer_bytes_per_param(dtype) * n_params
    out.write(op="adamw_step", variant=impl if fused == (impl == "fused") else "foreach (fused not on CPU)",
              dtype=dtype, n_params=n_params, shape=f"{len(sizes)} tensors", bytes_moved=moved,
              timing="cuda_events" if _on_gpu() else "host_clock", median_time_us=seconds * 1e6,
              achieved_gb_per_s=moved / seconds / 1e9, ns_per_param=seconds / n_params * 1e9)  # fmt: skip
    del opt, params


SECTIONS = (("gemm", bench_gemm, 0.36), ("attention", bench_attention, 0.24), ("bandwidth", bench_bandwidth, 0.14),
            ("launch", bench_launch, 0.05), ("optimizer", bench_optimizer, 0.11),
            ("gemm_wave", bench_gemm_wave, 0.08))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="CSV file to write")
    parser.add_argument("--budget-s", type=float, default=240.0, help="stop starting measurements after this")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (always on without CUDA)")
    parser.add_argument("--only", default="", help="comma-separated sections to run (default: all)")
    args = parser.parse_args(argv)
    tiny = args.tiny or not _on_gpu()
    gpu_name, measured_on = machine_description()
    fixed = {"gpu_name": gpu_name, "measured_on": measured_on, "date": MEASURED_DATE,
             "run_kind": "cpu_tiny_smoke" if tiny else "gpu_full"}  # fmt: skip
    out = RowWriter(args.out, COLUMNS, fixed)
    budget = Budget(args.budget_s)
    wanted = {name for name in args.only.split(",") if name}
    for name, bench, share in SECTIONS:
        if wanted and name not in wanted:
            continue
        before = out.n_rows
        try:
            bench(out, budget.section(share * args.budget_s if not wanted else args.budget_s), tiny)
        except Exception:  # a whole section's failure is logged; the others still run
            traceback.print_exc()
        print(f"{name}: {out.n_rows - before} rows, {budget.left_s():.0f} s of budget left", flush=True)
    out.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
