"""Headline figures of a bench/gpu_micro.py table (and a bench/gpu_runs.py table), printed as JSON.

python bench/micro_summary.py data/microbench/h200.csv [data/microbench/h200_runs.csv]
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return [row for row in csv.DictReader(handle) if not row.get("timing", "").startswith("failed")]


def _best(rows: list[dict[str, str]], key: str, **match: str) -> dict[str, str] | None:
    chosen = [r for r in rows if all(r.get(k) == v for k, v in match.items()) and r.get(key)]
    return max(chosen, key=lambda r: float(r[key]), default=None)


def micro_headlines(rows: list[dict[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n_rows": len(rows)}
    for dtype in ("bf16", "fp8_e4m3"):
        best = _best(rows, "achieved_tflop_per_s", op="gemm", dtype=dtype)
        if best:
            out[f"gemm_{dtype}_peak_tflop_per_s"] = (float(best["achieved_tflop_per_s"]), best["shape"])
        m_sweep = [
            r for r in rows if r["op"] == "gemm" and r["dtype"] == dtype and r["variant"].startswith("m_")
        ]
        out[f"gemm_{dtype}_m_sweep_tflop_per_s"] = {
            r["m"]: round(float(r["achieved_tflop_per_s"])) for r in m_sweep
        }
    for op in ("attention_fwd", "attention_fwd_bwd"):
        for backend in ("flash", "efficient"):
            best = _best(rows, "achieved_tflop_per_s", op=op, variant=backend, head_dim="128")
            if best:
                out[f"{op}_{backend}_d128_best_tflop_per_s"] = (
                    float(best["achieved_tflop_per_s"]),
                    best["shape"],
                )
    for op in (
        "copy",
        "add",
        "rms_norm_eager_llama",
        "layer_norm_fused",
        "cross_entropy_vocab128k_fp32_upcast",
    ):
        best = _best(rows, "achieved_gb_per_s", op=op)
        if best:
            out[f"{op}_best_gb_per_s"] = (float(best["achieved_gb_per_s"]), best["shape"])
    for row in rows:
        if row["op"].startswith("launch_"):
            out[f"{row['op']}_{row['variant']}_us"] = float(row["us_per_op"])
        if row["op"] == "adamw_step":
            out[f"adamw_{row['variant']}_{row['dtype']}_{row['n_params']}_ns_per_param"] = float(
                row["ns_per_param"]
            )
    return out


def runs_headlines(rows: list[dict[str, str]]) -> list[str]:
    lines = []
    for r in rows:
        lines.append(
            f"{r['model'][:28]:28} {r['method']:4} mb{r['micro_batch']:>2} s{r['seq_len']:>5} rc={r['recompute'][:4]:4} "
            f"{r['status'][:14]:14} tok/s={r['tokens_per_s'][:8]:8} alloc={r['peak_allocated_gib'][:6]:6} "
            f"resv={r['peak_reserved_gib'][:6]:6} dev={r['device_used_peak_gib'][:6]}"
        )
    return lines


def main(argv: list[str]) -> int:
    print(json.dumps(micro_headlines(_rows(Path(argv[0]))), indent=1))
    if len(argv) > 1:
        print("\n".join(runs_headlines(_rows(Path(argv[1])))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
