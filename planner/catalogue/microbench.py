"""Per-GPU constants of the operator step model, read from microbenchmark tables in `data/microbench/`.

Every CSV there has the columns gpu, op, dtype, m, n, k, tflops_per_s, gb_per_s, us, count, measured_on, date,
source: `published.csv` holds figures from papers and public benchmark tables, and a table measured on a lent GPU
by `bench/gpu_micro.py` (e.g. `h200.csv`) can sit beside it with the same columns; a measured row wins over a
published one for its GPU. The step model reads four things per GPU (`GpuConstants`):

* `gemm_peak_frac`: the best matmul rate measured over many shapes (maximum achievable matmul FLOP/s) over the
  datasheet dense rate; op `gemm_max`, or the best of a shape sweep's `gemm` rows;
* `attention_frac`: FlashAttention-2 forward + backward rate (causal, head dim 128, long sequences) over the
  datasheet BF16 rate; op `attention_flash2_fwd_bwd`;
* `memory_frac`: device-to-device copy bandwidth over the datasheet memory bandwidth; op `copy`;
* `n_sms`: streaming multiprocessors (compute units on AMD), which the wave quantisation counts; op `sm_count`.

A GPU without its own row takes its generation's reference GPU's *fraction* (so the figure scales with its own
datasheet peak), then the defaults below.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from planner.catalogue.microbench_measured import is_measured_table, measured_row
from planner.catalogue.paths import bundled_data_dir
from planner.catalogue.power_limits import rate_frac

MICROBENCH_DIR = bundled_data_dir() / "microbench"
# The GPU whose measured fractions stand in for another GPU of the same generation without rows of its own.
GENERATION_REFERENCE = {
    "hopper": "H100 SXM",
    "ampere": "A100 80GB SXM",
    "blackwell": "B200",
    "cdna3": "MI300X",
    "cdna4": "MI355X",
    "gaudi": "Gaudi 3",
}
# Fallbacks where a generation has no measurement: the matmul ceiling is the median of the MAMF table's
# efficiencies (stas00/ml-engineering @744d01e: 51-97 %, median about 78 %); FlashAttention-2 reaches
# 50-73 % of an A100's peak (Dao 2023, abstract) but a third of an H100's: 0.45 sits between; a STREAM-like copy
# reaches about 90 % of the datasheet bandwidth (data/microbench/published.csv, H100 copy row). n_sms 0 turns
# the wave quantisation off (TPUs and Gaudi have no SM grid of that kind).
DEFAULT_GEMM_PEAK_FRAC = 0.78
DEFAULT_ATTENTION_FRAC = 0.45
DEFAULT_MEMORY_FRAC = 0.90
NOT_MICROBENCH = ("residual.csv",)  # the folder's derived table (`residual_table`), not a benchmark
NUMERIC = ("m", "n", "k", "tflops_per_s", "gb_per_s", "us", "count")


@dataclass(frozen=True)
class GpuConstants:
    gemm_peak_frac: float
    attention_frac: float
    memory_frac: float
    n_sms: float


def _number(text: str, path: Path, line: int, column: str) -> float | None:
    if text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{path.name} row {line}, column {column}: {text!r} is not a number") from None
    if not value >= 0:
        raise ValueError(f"{path.name} row {line}, column {column}: {value:g} must be 0 or more")
    return value


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of one microbenchmark CSV, numbers parsed; a bad cell names the file, row and column."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if is_measured_table(list(reader.fieldnames or ())):  # bench/gpu_micro.py's own format
            return [row for row in map(measured_row, reader) if row is not None]
        if "gpu_name" in (reader.fieldnames or ()):  # the lent GPU's training runs: not microbenchmarks
            return []
        missing = {"gpu", "op", "dtype", *NUMERIC, "source"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path.name}: missing column(s) {', '.join(sorted(missing))}")
        rows = []
        for line, raw in enumerate(reader, start=2):
            row: dict[str, Any] = {key: (raw[key] or "").strip() for key in ("gpu", "op", "dtype", "source")}
            row.update({key: _number(raw[key] or "", path, line, key) for key in NUMERIC})
            row["measured"] = path.name != "published.csv"
            rows.append(row)
    return rows


@lru_cache(maxsize=4)
def microbench_rows(folder: Path = MICROBENCH_DIR) -> tuple[dict[str, Any], ...]:
    """Every row of every CSV in the folder; measured tables first so their figures win."""
    tables = [p for p in folder.glob("*.csv") if p.name not in NOT_MICROBENCH]
    paths = sorted(tables, key=lambda p: (p.name == "published.csv", p.name))
    return tuple(row for path in paths for row in read_table(path))


_ALIASES: dict[str, set[str]] = {}  # catalogue name -> its plain name and aliases (filled by gpu_constants)


def _plain(name: str) -> str:
    """A GPU name as tables spell it, compared plainly: "NVIDIA H200" and "h200" are the same."""
    plain = name.strip().lower()
    return plain[len("nvidia ") :] if plain.startswith("nvidia ") else plain


def _names(gpu: str) -> set[str]:
    return _ALIASES.get(gpu, {_plain(gpu)})


# The last table set read and its rows grouped by plain GPU name (the app reads one set; a test may swap in its own)
_BY_GPU: list[tuple[tuple[dict[str, Any], ...], dict[str, list[tuple[int, dict[str, Any]]]]]] = []


def _rows_by_plain_gpu(rows: tuple[dict[str, Any], ...]) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """The rows grouped by plain GPU name, each with its position: built once per table set, since a comparison
    asks for ~30 GPUs x 7 figures and scanning every row each time cost 0.2 s of the Compare page's first run."""
    if not _BY_GPU or _BY_GPU[0][0] is not rows:
        index: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for position, row in enumerate(rows):
            index.setdefault(_plain(row["gpu"]), []).append((position, row))
        _BY_GPU[:] = [(rows, index)]
    return _BY_GPU[0][1]


def _best(
    rows: tuple[dict[str, Any], ...], gpu: str, ops: tuple[str, ...], dtype: str, key: str
) -> float | None:
    """The first table's best figure for the GPU (measured tables come first)."""
    by_gpu = _rows_by_plain_gpu(rows)
    own = sorted(entry for name in _names(gpu) for entry in by_gpu.get(name, ()))  # in the tables' order
    found = [r for _, r in own if r["op"] in ops and r["dtype"] in (dtype, "") and r[key]]
    if not found:
        return None
    first_is_measured = found[0]["measured"]
    return max(float(r[key]) for r in found if r["measured"] == first_is_measured)


def _frac(
    rows: tuple[dict[str, Any], ...], gpus: dict[str, dict[str, Any]], name: str, what: tuple[str, ...]
) -> float | None:
    """A measured figure of GPU `name` over its datasheet value (`what`: ops, dtype, figure key, datasheet key)."""
    *ops, dtype, key, sheet = what
    value = _best(rows, name, tuple(ops), dtype, key)
    datasheet = gpus.get(name, {}).get(sheet)
    if value is None or not datasheet:
        return None
    scale = 1e3 if sheet == "memory_bw_tb_per_s" else 1.0  # TB/s datasheet against GB/s measured
    return value / (float(datasheet) * scale)


def gpu_constants(
    gpu_row: dict[str, Any], precision_class: str, gpus: dict[str, dict[str, Any]]
) -> GpuConstants:
    """The operator model's constants for a catalogue GPU row at a precision class ("bf16" or "fp8").

    `gpus`: catalogue rows by name (the datasheet figures the fractions are taken against)."""
    rows = microbench_rows()
    for row in (gpu_row, *gpus.values()):  # a measured table names the GPU as nvidia-smi does
        aliases = str(row.get("aliases") or "").split(";")
        _ALIASES[str(row["name"])] = {_plain(str(row["name"])), *(_plain(a) for a in aliases if a.strip())}
    name, reference = str(gpu_row["name"]), GENERATION_REFERENCE.get(str(gpu_row.get("generation")), "")
    dtype = "fp8" if precision_class == "fp8" else "bf16"
    sheets = {**gpus, name: gpu_row}
    wanted = {
        "gemm": ("gemm_max", "gemm", dtype, "tflops_per_s", f"tflops_{dtype}"),
        "attention": ("attention_flash2_fwd_bwd", "bf16", "tflops_per_s", "tflops_bf16"),
        "memory": ("copy", "bf16", "gb_per_s", "memory_bw_tb_per_s"),
    }
    found = {}
    for label, what in wanted.items():
        own = _frac(rows, sheets, name, what)
        found[label] = own if own is not None else _frac(rows, sheets, reference, what)
    if found["gemm"] is None and dtype == "fp8":  # no fp8 sweep: the bf16 ceiling is the closest evidence
        found["gemm"] = gpu_constants(gpu_row, "bf16", gpus).gemm_peak_frac
    sms = _best(rows, name, ("sm_count",), "", "count") or _best(rows, reference, ("sm_count",), "", "count")
    return GpuConstants(
        gemm_peak_frac=min(1.0, found["gemm"] or DEFAULT_GEMM_PEAK_FRAC),
        attention_frac=min(1.0, found["attention"] or DEFAULT_ATTENTION_FRAC),
        memory_frac=min(1.0, found["memory"] or DEFAULT_MEMORY_FRAC),
        n_sms=float(sms or 0.0),
    )


def operator_gpu_fields(
    gpu_row: dict[str, Any], precision: str, typed_w: float | None, peak_tflops: float | None, cats: Any
) -> dict[str, float]:
    """The `GpuColumns` fields of the operator model for one catalogue GPU at the scenario's precision.

    `typed_w`: the scenario's power limit (None: the catalogue's); `peak_tflops`: the training precision's
    rate the scenario runs at; `cats`: the catalogues (the generation's reference GPU row, the residual).
    Attention runs at the BF16 rate, capped like the training precision's, never above that precision's peak."""
    reference = GENERATION_REFERENCE.get(str(gpu_row.get("generation")))
    gpus = {} if reference is None or reference == gpu_row["name"] else {reference: cats.gpu(reference)}
    # keyed by the rows' contents (a team overlay may change a datasheet figure): the comparison and every
    # rerun ask for the same few GPUs
    key = (tuple(gpu_row.items()), tuple(r for row in gpus.values() for r in row.items()), precision, typed_w)
    if (key, peak_tflops) not in _FIELDS_CACHE:
        if len(_FIELDS_CACHE) > 4096:
            _FIELDS_CACHE.clear()
        _FIELDS_CACHE[(key, peak_tflops)] = _fields(gpu_row, precision, typed_w, peak_tflops, gpus)
    residual = cats.residual_frac(str(gpu_row.get("generation")))
    return {**_FIELDS_CACHE[(key, peak_tflops)], "residual_frac": residual}


_FIELDS_CACHE: dict[tuple[Any, ...], dict[str, float]] = {}


def _fields(
    gpu_row: dict[str, Any], precision: str, typed_w: float | None, peak_tflops: float | None, gpus: Any
) -> dict[str, float]:
    klass = "fp8" if precision.startswith("fp8") else "bf16"
    constants = gpu_constants(gpu_row, klass, gpus)
    peak_flops_per_s = math.nan if peak_tflops is None else peak_tflops * 1e12
    bf16 = gpu_row.get("tflops_bf16")
    bf16_flops_per_s = float(bf16) * 1e12 * rate_frac(gpu_row, typed_w) if bf16 else peak_flops_per_s
    return {
        "gemm_peak_frac": constants.gemm_peak_frac,
        "attention_frac": constants.attention_frac,
        "memory_frac": constants.memory_frac,
        "n_sms": constants.n_sms,
        "bf16_flops_per_s": min(bf16_flops_per_s, peak_flops_per_s),
        "fp8_compute": float(klass == "fp8"),
    }


RESIDUAL_CSV = MICROBENCH_DIR / "residual.csv"


@lru_cache(maxsize=1)
def residual_table(path: Path = RESIDUAL_CSV) -> dict[str, float]:
    """generation -> residual_frac from `scripts/derive_residual.py`'s table ({} without the file: 1 everywhere).

    The residual is what the operator model leaves unexplained on published end-to-end runs of a GPU
    generation: measured speed / the operator model's speed, one figure per generation (not per model size),
    derived by `planner.cases.residual` and rebuilt without the scored source under `validate --refit source`."""
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    table = {}
    for line, row in enumerate(rows, start=2):
        value = _number(row.get("residual_frac") or "", path, line, "residual_frac")
        if value is None or not 0.2 <= value <= 2.0:
            raise ValueError(f"{path.name} row {line}, column residual_frac: must be between 0.2 and 2")
        table[row["generation"]] = value
    return table
