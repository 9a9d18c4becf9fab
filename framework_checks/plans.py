"""The fixed set of plans whose exports the frameworks' own code loads (`make test-exports`).

Run with the planner's environment: `python -m framework_checks.plans OUTDIR` writes every export of every plan
to OUTDIR/<plan>/<file> and OUTDIR/manifest.json (per plan and target: the file, or the refusal's reason, and
the plan's figures the loaders compare against). The frameworks' environment (.venv-exports) never imports the
planner: it reads only these files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from planner import EXPORT_TARGETS, PlannerError, Scenario, default_catalogs, export_plan

# One plan per layout or option a framework treats differently: full, LoRA, QLoRA, DPO, GRPO, PPO, TP/PP/CP/EP,
# offload, hybrid shard, SGD / Adafactor / 8-bit optimizers, one GPU, an uneven pipeline split.
PLANS: dict[str, dict[str, Any]] = {
    "full_8b_zero3_8gpu": dict(model="Llama 3.1 8B", n_gpus=8, zero_stage=3, micro_batch=2, grad_accum=4),
    "full_8b_1gpu": dict(model="Llama 3.2 1B", n_gpus=1, micro_batch=4, grad_accum=8, seq_len=2048),
    "lora_8b_zero3_8gpu": dict(
        model="Llama 3.1 8B", method="lora", lora_rank=16, n_gpus=8, zero_stage=3, micro_batch=2, grad_accum=4
    ),
    "qlora_8b_1gpu_adamw8bit": dict(
        model="Llama 3.1 8B",
        method="qlora",
        lora_rank=8,
        gpu="RTX 4090",
        n_gpus=1,
        optimizer="adamw_8bit",
        recompute="full",
        micro_batch=1,
        grad_accum=8,
        seq_len=2048,
    ),
    "dpo_lora_8b_8gpu": dict(
        model="Llama 3.1 8B", post_training="dpo", method="lora", n_gpus=8, zero_stage=3, micro_batch=1
    ),
    "grpo_full_8b_8gpu": dict(
        model="Qwen2.5 7B", post_training="grpo", n_gpus=8, zero_stage=3, micro_batch=1
    ),
    "ppo_full_8b_8gpu": dict(
        model="Llama 3.1 8B", post_training="ppo", n_gpus=8, zero_stage=3, micro_batch=1
    ),
    "tp4_pp2_70b_64gpu": dict(
        model="Llama 3.1 70B",
        n_gpus=64,
        tp=4,
        pp=2,
        sequence_parallel=True,
        zero_stage=1,
        recompute="full",
        micro_batch=1,
        grad_accum=16,
        seq_len=8192,
    ),
    "pp2_zero3_8b_16gpu": dict(
        model="Llama 3.1 8B", n_gpus=16, pp=2, zero_stage=3, micro_batch=1, grad_accum=8
    ),
    # 28 layers on 8 stages: Megatron needs the first and last stages' layers given
    "uneven_pp8_qwen7b_16gpu": dict(model="Qwen2.5 7B", n_gpus=16, pp=8, zero_stage=1, grad_accum=8),
    "cp2_8b_16gpu": dict(model="Llama 3.1 8B", n_gpus=16, cp=2, zero_stage=3, micro_batch=1, seq_len=32768),
    "ep8_tp2_moe_64gpu": dict(
        model="Qwen3 30B A3B", n_gpus=64, tp=2, ep=8, sequence_parallel=True, zero_stage=1, micro_batch=1
    ),
    "ep8_tp2_moe_no_sp": dict(model="Qwen3 30B A3B", n_gpus=64, tp=2, ep=8, zero_stage=1, micro_batch=1),
    "offload_8b_zero3_8gpu": dict(
        model="Llama 3.1 8B", n_gpus=8, zero_stage=3, offload_optimizer=True, offload_params=True
    ),
    "hybrid_shard_8b_32gpu": dict(model="Llama 3.1 8B", n_gpus=32, zero_stage=3, hybrid_shard=True),
    "sgd_8b_zero2_8gpu": dict(model="Llama 3.1 8B", n_gpus=8, zero_stage=2, optimizer="sgd_momentum"),
    "adafactor_8b_zero2_8gpu": dict(model="Llama 3.1 8B", n_gpus=8, zero_stage=2, optimizer="adafactor"),
    "adamw8bit_full_8b_8gpu": dict(
        model="Llama 3.1 8B", n_gpus=8, zero_stage=3, optimizer="paged_adamw_8bit"
    ),
    "custom_shape_1gpu": dict(
        model="",
        model_shape=dict(
            name="my model",
            vocab_size=32000,
            hidden_size=512,
            n_layers=4,
            n_heads=8,
            n_kv_heads=8,
            head_dim=64,
            ffn_hidden=1376,
        ),
        n_gpus=1,
        seq_len=1024,
    ),
}


def write(out: Path) -> dict[str, Any]:
    cats = default_catalogs()
    manifest: dict[str, Any] = {}
    for name, fields in PLANS.items():
        plan = Scenario.model_validate(fields)
        entry: dict[str, Any] = {"plan": plan.model_dump(mode="json"), "dp": plan.dp, "targets": {}}
        for target in EXPORT_TARGETS:
            try:
                found = export_plan(plan, cats, target)
            except PlannerError as err:
                entry["targets"][target] = {"refused": str(err)}
                continue
            path = out / name / found.file_name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(found.text, encoding="utf-8")
            entry["targets"][target] = {
                "file": str(path.relative_to(out)),
                "notes": list(found.not_expressed),
                "advice": list(found.notes),
            }
        manifest[name] = entry
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return manifest


if __name__ == "__main__":
    written = write(Path(sys.argv[1]))
    n_files = sum("file" in t for e in written.values() for t in e["targets"].values())
    n_refused = sum("refused" in t for e in written.values() for t in e["targets"].values())
    print(f"{len(written)} plans: {n_files} files written, {n_refused} refused with a reason")
