"""Turn the small real runs measured on the lent H200 (data/microbench/h200_runs*.csv, bench/gpu_runs.py) into
case rows in the calibration file's format: per run one throughput row (tokens_per_s_per_gpu) and three memory
rows (gib_peak_allocated_per_gpu, gib_peak_reserved_per_gpu, gib_device_used_per_gpu).

Usage: python scripts/microbench_to_cases.py [--write]
Without --write the rows are printed as CSV; with it, data/calibration.csv keeps every other source's line as
it is and gets this source's rows at its end (replacing any it had), so running it twice changes nothing. A configuration
measured in both device calls (the second call repeats the first call's first eight) is taken from the first
call; the second call's figure is stated in its notes as the run-to-run spread.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = [ROOT / "data" / "microbench" / "h200_runs.csv", ROOT / "data" / "microbench" / "h200_runs_extra.csv"]
CALIBRATION = ROOT / "data" / "calibration.csv"
SOURCE = "measured on a lent NVIDIA H200, 2026-12-04, bench/gpu_runs.py"
URL = "data/microbench/h200_runs.csv (this repository)"
GPU = "H200 SXM"  # nvidia-smi: 'NVIDIA H200', 143771 MiB, 700 W limit: the SXM part of data/gpus.csv
# (statistic suffix of the case id, measured_unit, column of the runs table)
STATISTICS = [
    ("tps", "tokens_per_s_per_gpu", "tokens_per_s"),
    ("alloc", "gib_peak_allocated_per_gpu", "peak_allocated_gib"),
    ("resv", "gib_peak_reserved_per_gpu", "peak_reserved_gib"),
    ("dev", "gib_device_used_per_gpu", "device_used_peak_gib"),
]
CONFIG_KEYS = ("model", "method", "lora_rank", "seq_len", "micro_batch", "recompute", "precision")


def measured_runs() -> tuple[list[dict[str, str]], dict[tuple[str, ...], dict[str, str]]]:
    """(the distinct runs that finished, first call first; the repeated measurement of a run by its key)."""
    runs: list[dict[str, str]] = []
    repeats: dict[tuple[str, ...], dict[str, str]] = {}
    seen: set[tuple[str, ...]] = set()
    for path in RUNS:
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row["status"] != "ok" or row["run_kind"] != "gpu_full":
                    continue
                key = tuple(row[k] for k in CONFIG_KEYS)
                if key in seen:
                    repeats.setdefault(key, row)
                else:
                    seen.add(key)
                    runs.append(row)
    return runs, repeats


def _notes(run: dict[str, str], repeat: dict[str, str] | None) -> str:
    base_params = int(run["n_params"]) - (int(run["trainable_params"]) if run["method"] == "lora" else 0)
    text = (
        f"Random weights, model built from its LlamaConfig (no download): {run['n_layers']} layers, "
        f"{base_params:,} base parameters, attention bias {run['attention_bias']}, tied embeddings "
        f"{run['tied_embeddings']}; attn_implementation sdpa. One GPU, no sharding. Step = median of "
        f"{run['n_timed_steps']} steps after {run['n_warmup_steps']} warm-up steps, host clock around a "
        f"synchronized step; tokens/s = micro-batch x sequence / step. Memory: torch.cuda max_memory_allocated "
        f"and max_memory_reserved over the run from its first step; device = reserved peak + memory outside "
        f"PyTorch's allocator read from cudaMemGetInfo ({float(run['non_pytorch_gib']):.2f} GiB: CUDA context, "
        f"cuBLAS workspaces). Allocated peak by phase of one more step (GiB): forward "
        f"{float(run['fwd_peak_allocated_gib']):.2f}, backward {float(run['bwd_peak_allocated_gib']):.2f}, "
        f"optimizer {float(run['optimizer_peak_allocated_gib']):.2f}."
    )
    if run["method"] == "lora":
        text += f" LoRA r={run['lora_rank']} on q_proj, k_proj, v_proj, o_proj + MLP (gate_proj, up_proj, down_proj)."
    if repeat is not None:
        text += (
            f" Measured again in a second device call: {float(repeat['tokens_per_s']):.0f} tokens/s, "
            f"reserved {float(repeat['peak_reserved_gib']):.2f} GiB."
        )
    return text + f" {run['measured_on']}."


def case_rows(header: list[str]) -> list[dict[str, str]]:
    runs, repeats = measured_runs()
    rows = []
    for number, run in enumerate(runs, start=1):
        repeat = repeats.get(tuple(run[k] for k in CONFIG_KEYS))
        base_params = int(run["n_params"]) - (int(run["trainable_params"]) if run["method"] == "lora" else 0)
        common = {
            "source": SOURCE, "url": URL, "model": f"{run['model']} (random weights)",
            "params_b": f"{base_params / 1e9:.6f}", "n_layers": run["n_layers"], "hidden": run["hidden"],
            "n_heads": run["n_heads"], "n_kv_heads": run["n_kv_heads"], "ffn_hidden": run["ffn_hidden"],
            "vocab": run["vocab"], "seq_len": run["seq_len"], "micro_batch": run["micro_batch"],
            "global_batch": run["micro_batch"], "grad_accum": "1", "method": run["method"],
            "lora_rank": run["lora_rank"], "optimizer": run["optimizer"], "precision": run["precision"],
            "zero_stage_or_fsdp": "none (single GPU)", "tp": "1", "pp": "1", "dp": "1", "cp": "1",
            "activation_ckpt": run["recompute"], "flash_attn": "yes (PyTorch SDPA)", "gpu": GPU, "n_gpus": "1",
            "notes": _notes(run, repeat),
        }  # fmt: skip
        for suffix, unit, column in STATISTICS:
            row = dict.fromkeys(header, "")
            row.update(common)
            category = "throughput" if suffix == "tps" else "memory"
            value = float(run[column])
            row.update(case_id=f"H200R-{number:02d}-{suffix}", category=category, measured_unit=unit,
                       measured_value=f"{value:.1f}" if suffix == "tps" else f"{value:.3f}")  # fmt: skip
            rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    """Print the rows, or with --write put them at the end of the calibration file: the other sources' lines
    stay byte for byte (this source's rows, written last, are cut off and written again)."""
    with CALIBRATION.open(newline="") as handle:  # newline="": keep each line's own ending (CRLF or LF)
        lines = handle.read().splitlines(keepends=True)
    header = next(csv.reader(lines[:1]))
    own = [i for i, line in enumerate(lines) if line.startswith("H200R-")]
    kept = lines[: own[0]] if own else lines
    target = io.StringIO()
    writer = csv.DictWriter(target, fieldnames=header, lineterminator="\n")
    new = case_rows(header)
    if "--write" not in argv:
        writer.writeheader()
        writer.writerows(new)
        sys.stdout.write(target.getvalue())
        return 0
    writer.writerows(new)
    with CALIBRATION.open("w", newline="") as handle:
        handle.write("".join(kept) + target.getvalue())
    print(
        f"{CALIBRATION}: {len(kept) - 1} rows of other sources kept, {len(new)} rows of this source written"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
