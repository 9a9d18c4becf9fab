"""Rows of a table measured by `bench/gpu_micro.py` on a lent GPU, in the operator model's row format.

That script writes one row per measurement with the columns gpu_name, op, variant, dtype, m, n, k, seq,
head_dim, causal, size_bytes, achieved_tflop_per_s, achieved_gb_per_s, us_per_op, run_kind, measured_on, date
(data/microbench/README.md). The operator model reads three of its ops:

* `gemm` (bf16, fp8_e4m3): achieved TFLOP/s; the best over the sweep is the GPU's matmul ceiling, as the
  published MAMF figures are;
* `attention_fwd_bwd` with the flash backend, causal, head dim 128: FlashAttention-2's forward + backward rate;
* `copy` of at least COPY_MIN_BYTES: the achievable memory bandwidth (smaller copies fit in the L2 cache and
  read faster than memory: a 16 MiB copy on the H200 measured 5.6 TB/s against a 4.8 TB/s datasheet).

Only rows measured on a GPU (`run_kind` gpu_full) count; the script's CPU smoke-test rows never do.
"""

from __future__ import annotations

from typing import Any

COPY_MIN_BYTES = 2.0**28  # 256 MiB, several times any GPU's L2 cache (H100/H200: 50 MB)
MEASURED_COLUMNS = ("gpu_name", "op", "dtype", "achieved_tflop_per_s", "achieved_gb_per_s", "run_kind")


def is_measured_table(columns: list[str]) -> bool:
    return set(MEASURED_COLUMNS) <= set(columns)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def measured_row(raw: dict[str, str]) -> dict[str, Any] | None:
    """The row in the operator model's format, or None when the model does not read it."""
    if raw.get("run_kind") != "gpu_full":
        return None
    op, dtype = raw.get("op", ""), raw.get("dtype", "")
    tflops, gb = _float(raw.get("achieved_tflop_per_s")), _float(raw.get("achieved_gb_per_s"))
    flash = raw.get("variant") == "flash" and raw.get("causal") == "True" and raw.get("head_dim") == "128"
    if op == "gemm" and dtype in ("bf16", "fp8_e4m3") and tflops:
        return _row(raw, "gemm", "fp8" if dtype.startswith("fp8") else "bf16", tflops=tflops)
    if op == "attention_fwd_bwd" and flash and tflops:
        return _row(raw, "attention_flash2_fwd_bwd", "bf16", tflops=tflops)
    if op == "copy" and gb and (_float(raw.get("size_bytes")) or 0.0) >= COPY_MIN_BYTES:
        return _row(raw, "copy", "bf16", gb=gb)
    return None


def _row(
    raw: dict[str, str], op: str, dtype: str, tflops: float | None = None, gb: float | None = None
) -> dict:
    return {
        "gpu": raw["gpu_name"].strip(),
        "op": op,
        "dtype": dtype,
        **dict.fromkeys(("m", "n", "k", "us", "count")),
        "tflops_per_s": tflops,
        "gb_per_s": gb,
        "source": f"bench/gpu_micro.py on {raw.get('measured_on', '')}, {raw.get('date', '')}",
        "measured": True,
    }
