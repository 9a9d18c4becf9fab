"""Published throughput and time measurements (case files) → inputs of the compute and time formulas.

A case file has the columns of `reference/calibration.csv` (DESIGN.md §4). `compute_inputs_from_case` maps one
row to plain numbers, or returns a skip reason; `planner.cases.case_model` runs the formulas on them. Every value a
row leaves empty is filled by a rule written here, and the rule is listed in the result's `assumptions`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TIME_UNITS = (
    "tokens_per_s_per_gpu",
    "tokens_per_s_ambiguous",
    "samples_per_s_total",
    "tflops_per_gpu_model",
    "tflops_per_gpu_hardware",
    "s_per_iteration",
    "days",
    "gpu_hours",
)
GPUS_PER_NODE = 8  # every multi-GPU source here ran on 8-GPU nodes (DGX/HGX A100 and H100, Grand Teton)
# Per-GPU network of the reference systems: DGX A100 (Selene, MosaicML A100) 8× HDR 200 Gb/s = 25 GB/s;
# DGX H100 8× NDR 400 Gb/s = 50 GB/s (NVIDIA DGX A100 / H100 user guides, network section).
INTER_NODE_GB_PER_S = {"ampere": 25.0, "hopper": 50.0}
# GPUs of the case file, matched in order, with their figures where data/gpus.csv lacks them.
GPU_PATTERNS = (
    ("500w", None),  # torchtitan's power-capped 96 GB H100: no datasheet peak applies
    ("h100", "H100 SXM"),
    ("h200", "H200 SXM"),
    ("a100.*40gb", "A100 40GB SXM"),
    ("a100", "A100 80GB SXM"),
    ("rtx 4090", "RTX 4090"),
    ("rtx a6000", "RTX A6000"),
)
FALLBACK_GPUS: dict[str, dict[str, Any]] = {
    # reference/hardware-and-prices.md §1a-1b (dense peaks; NVLink per direction; PCIe theoretical).
    "H100 SXM": {
        "generation": "hopper",
        "tflops_bf16": 989.5,
        "tflops_fp8": 1979.0,
        "intra_node_gb_per_s": 450.0,
        "pcie_gb_per_s": 63.0,
    },
    "H200 SXM": {
        "generation": "hopper",
        "tflops_bf16": 989.5,
        "tflops_fp8": 1979.0,
        "intra_node_gb_per_s": 450.0,
        "pcie_gb_per_s": 63.0,
    },
    "A100 80GB SXM": {
        "generation": "ampere",
        "tflops_bf16": 312.0,
        "tflops_fp8": None,
        "intra_node_gb_per_s": 300.0,
        "pcie_gb_per_s": 31.5,
    },
    "A100 40GB SXM": {
        "generation": "ampere",
        "tflops_bf16": 312.0,
        "tflops_fp8": None,
        "intra_node_gb_per_s": 300.0,
        "pcie_gb_per_s": 31.5,
    },
    "RTX 4090": {
        "generation": "ada",
        "tflops_bf16": 165.2,
        "tflops_fp8": 330.3,
        "intra_node_gb_per_s": 0.0,
        "pcie_gb_per_s": 31.5,
    },
    # NVIDIA Ampere GA102 whitepaper, RTX A6000 column: BF16 tensor 154.8 dense (309.7 with sparsity), FP32
    # accumulate at full rate on this professional card; PCIe Gen4 x16; NVLink bridge joins pairs only.
    "RTX A6000": {
        "generation": "ampere",
        "tflops_bf16": 154.8,
        "tflops_fp8": None,
        "intra_node_gb_per_s": 0.0,
        "pcie_gb_per_s": 31.5,
    },
}
# Overlap assumed when taking a measured step apart. FSDP prefetching and Megatron's --overlap-grad-reduce /
# --overlap-param-gather hide nearly all data-parallel traffic: at 0.5 the llm-foundry rows LF-02 and LF-22
# would need 222 % and 109 % of peak, at 0.7 LF-02 still 133 %; from 0.8 up no multi-GPU row exceeds its
# peak and the leave-one-out error is flat (11.8-12.8 % median for 0.8-1.0; scripts/check_throughput_rows.py).
CALIBRATION_OVERLAP_FRAC = 0.9
DEFAULT_VOCAB = 51_200  # GPT-3's BPE vocabulary padded as Megatron pads it (NeMo's GPT3-175B row gives none)
DEFAULT_LORA_RANK = 16  # torchtune's and PEFT's usual rank when a row does not state one
NF4_BYTES_PER_PARAM = 0.52  # 4-bit NF4 + double-quantised block scales, ~4.13 bits (Dettmers et al. 2023, §3)


def _num(row: Mapping[str, Any], key: str) -> float | None:
    text = str(row.get(key) or "").strip()
    return float(text) if text else None


def _gpu(row: Mapping[str, Any], gpus: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any] | str:
    name = str(row.get("gpu") or "").lower()
    for pattern, canonical in GPU_PATTERNS:
        if re.search(pattern, name):
            if canonical is None:
                return f"GPU '{row.get('gpu')}' runs below its datasheet clocks (power-capped)"
            figures = dict(FALLBACK_GPUS[canonical])
            figures.update({k: v for k, v in (gpus or {}).get(canonical, {}).items() if v not in (None, "")})
            return {"name": canonical, **figures}
    return f"GPU '{row.get('gpu')}' is not in the case mapping"


def _zero_stage(text: str, n_gpus: int) -> tuple[int, str | None]:
    text = text.upper()
    if "SHARD_GRAD_OP" in text:
        return 2, None
    if "FSDP" in text or "FULL_SHARD" in text:
        return 3, None
    if text.strip() or n_gpus == 1:
        return 0, None
    return 1, "sharding not stated: Megatron/NeMo distributed optimizer (ZeRO-1) assumed"


def _recompute(text: str) -> tuple[int, int]:
    text = text.lower()
    return int(text.startswith("full")), int(text.startswith("selective"))


def _virtual_stages(notes: str) -> int:
    found = re.search(
        r"virtual pipeline size (\d+)|interleaved pipeline schedule \((\d+) stages", notes.lower()
    )
    return int(next(group for group in found.groups() if group)) if found else 1


def _params(row: Mapping[str, Any], hidden: float, vocab: float, seq_len: float) -> dict[str, float]:
    """Matmul parameters from the published total: drop the input embedding when untied (Llama) and the
    learned position table of GPT/MPT; the head V·h is a matmul either way."""
    model = str(row.get("model") or "").lower()
    total = (_num(row, "active_params_b") or _num(row, "params_b") or 0.0) * 1e9
    untied_embedding = vocab * hidden if "llama" in model else 0.0
    positions = seq_len * hidden if ("gpt" in model or "mpt" in model) else 0.0
    matmul = total - untied_embedding - positions
    return {"n_params": (_num(row, "params_b") or 0.0) * 1e9, "n_matmul_params": matmul,
            "n_layer_matmul_params": matmul - vocab * hidden}  # fmt: skip


def compute_inputs_from_case(
    row: Mapping[str, Any], gpus: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any] | str:
    """Plain-number inputs for one throughput or time measurement, or the reason it cannot be predicted.

    `gpus`: optional catalogue rows by name (data/gpus.csv columns); otherwise `FALLBACK_GPUS`.
    """
    unit = str(row.get("measured_unit") or "")
    if unit not in TIME_UNITS:
        return f"unit '{unit}' is not a throughput or time measurement"
    notes = str(row.get("notes") or "")
    if "no packing" in notes.lower():
        return "unpacked samples of unpublished lengths: padding cannot be reproduced"
    if "cpu_offload" in str(row.get("zero_stage_or_fsdp") or "").lower():
        return "parameters and optimizer offloaded to the CPU: host transfers bound the step (not modelled)"
    gpu = _gpu(row, gpus)
    if isinstance(gpu, str):
        return gpu
    assumptions: list[str] = []
    n_layers, hidden, n_heads = (_num(row, k) for k in ("n_layers", "hidden", "n_heads"))
    seq_len, value = _num(row, "seq_len"), _num(row, "measured_value")
    if not (n_layers and hidden and n_heads and seq_len and value and _num(row, "params_b")):
        return "shape, sequence length, parameter count or measured value missing"
    n_kv = _num(row, "n_kv_heads") or n_heads
    vocab = _num(row, "vocab") or DEFAULT_VOCAB
    if not _num(row, "vocab"):
        assumptions.append(f"vocab not stated: {DEFAULT_VOCAB}")
    tp, pp, cp = (int(_num(row, k) or 1) for k in ("tp", "pp", "cp"))
    n_gpus_given = _num(row, "n_gpus")
    n_gpus = int(n_gpus_given or tp * pp * cp * (_num(row, "dp") or 1))
    if not n_gpus_given:
        assumptions.append("GPU count not stated: one GPU-equivalent, no communication")
    dp = n_gpus // (tp * pp * cp)
    micro_batch = _num(row, "micro_batch")
    if micro_batch is None:
        micro_batch = 1.0
        assumptions.append("micro-batch not stated: 1")
    global_batch = _num(row, "global_batch") or micro_batch * dp
    grad_accum = _num(row, "grad_accum") or max(1.0, global_batch / (micro_batch * dp))
    zero_stage, zero_note = _zero_stage(str(row.get("zero_stage_or_fsdp") or ""), n_gpus)
    assumptions += [zero_note] if zero_note else []
    full, selective = _recompute(str(row.get("activation_ckpt") or ""))
    flash = int(not str(row.get("flash_attn") or "").lower().startswith("no"))
    method = str(row.get("method") or "full").lower()
    frozen = int(method in ("lora", "qlora"))
    fp8 = "fp8" in str(row.get("precision") or "").lower()
    peak_tflops = gpu["tflops_fp8"] if fp8 else gpu["tflops_bf16"]
    if not peak_tflops:
        return f"no {'FP8' if fp8 else 'BF16'} peak for {gpu['name']}"
    rank = _num(row, "lora_rank") or DEFAULT_LORA_RANK
    # Adapters on the 4 attention projections, r·(h + h) each: under 0.3 % of the FLOPs of the rows here.
    n_adapter = frozen * rank * 2 * hidden * 4 * n_layers
    amp = (
        "amp" in str(row.get("precision") or "").lower() or "megatron" in str(row.get("source") or "").lower()
    )
    return {
        "case_id": row.get("case_id"), "category": row.get("category"), "measured_value": value,
        "measured_unit": unit, "gpu": gpu["name"], "generation": gpu["generation"],
        "peak_flops_per_s": float(peak_tflops) * 1e12, "precision": "fp8" if fp8 else "bf16",
        "method": method, "frozen_base": frozen, "n_adapter_params": n_adapter,
        **_params(row, hidden, vocab, seq_len),
        "n_layers": n_layers, "n_heads": n_heads, "head_dim": hidden / n_heads, "hidden": hidden,
        "kv_dim": n_kv * hidden / n_heads, "seq_len": seq_len, "micro_batch": micro_batch,
        "grad_accum": grad_accum, "global_batch": micro_batch * grad_accum * dp, "dp": dp, "tp": tp, "pp": pp,
        "cp": cp, "n_virtual_stages": _virtual_stages(notes), "n_gpus": n_gpus,
        "gpus_per_node": GPUS_PER_NODE, "zero_stage": zero_stage, "hybrid_shard": 0,
        "full_recompute": full, "selective_recompute": selective, "flash_attention": flash,
        # Mixed precision (Composer amp, Megatron) reduces gradients in fp32; pure bf16 recipes in bf16.
        "grad_comm_bytes": 4.0 if amp else 2.0,
        "weight_comm_bytes": NF4_BYTES_PER_PARAM if method == "qlora" else 2.0,
        "activation_bytes": 2.0,
        "intra_node_gb_per_s": float(gpu["intra_node_gb_per_s"] or 0.0),
        "pcie_gb_per_s": float(gpu["pcie_gb_per_s"]),
        "inter_node_gb_per_s": INTER_NODE_GB_PER_S.get(gpu["generation"], 25.0),
        "overlap_frac": CALIBRATION_OVERLAP_FRAC,
        # Megatron's 2024 TFLOP/s counter (and the 2021 paper) counts the full attention matrix.
        "source_attention_causal": 0 if unit.startswith("tflops") else 1,
        "n_tokens": (_num(row, "n_tokens_b") or 0.0) * 1e9,
        "assumptions": assumptions,
    }  # fmt: skip


def load_case_gpus(path: Path) -> dict[str, dict[str, Any]]:
    """data/gpus.csv rows by name, numbers as floats (empty cells None), for `compute_inputs_from_case`."""
    import csv

    def number(text: str) -> float | None:
        return float(text) if text.strip() else None

    numeric = ("tflops_bf16", "tflops_fp8", "intra_node_gb_per_s", "pcie_gb_per_s")
    with path.open(newline="") as handle:
        return {
            row["name"]: {"generation": row["generation"], **{k: number(row[k]) for k in numeric}}
            for row in csv.DictReader(handle)
        }
