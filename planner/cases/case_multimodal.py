"""A vision-language or diffusion case row (category `multimodal`) -> the Scenario a user would type.

Such a row names a multimodal preset in `model` and takes the image inputs from columns of its own (blank =
the Scenario's default, noted in the prediction's basis): `image_size`, `images_per_example`, `text_tokens`
(per example, beside the image tokens), `examples`, `epochs`, `vision_encoder`, `text_encoders`, `vae`,
`lora_base_fp8`. Layout, method, precision and memory-saving cells read as in `planner.cases.case_row`.
A case file without these columns reads them as blank, like every newer column.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from planner.cases import case_words as words
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_row import MEMORY_UNITS, CaseFacts
from planner.inputs.scenario import Scenario
from planner.model import multimodal_presets as presets

MULTIMODAL_CATEGORY = "multimodal"
MULTIMODAL_COLUMNS = (
    "image_size", "images_per_example", "text_tokens", "examples", "epochs", "vision_encoder", "text_encoders",
    "vae", "lora_base_fp8",
)  # fmt: skip
# Blank cells: what the Scenario would use, stated so the basis names it.
BLANK = {
    "images_per_example": 1.0,
    "text_tokens": 256.0,  # a short instruction and answer; vision-language rows rarely publish it
    "examples": 10_000.0,  # rate rows (memory, s/it) do not depend on it
    "epochs": 1.0,
}


def is_multimodal(row: dict[str, str]) -> bool:
    return row["category"] == MULTIMODAL_CATEGORY or presets.find(row.get("model", "")) is not None


def multimodal_fields(row: dict[str, str], gpus: GpuMatcher, memory_row: bool) -> dict[str, Any] | str:
    """The Scenario fields of one multimodal row (`_notes`: the blank cells' defaults), or why there are none."""
    if presets.find(row.get("model", "")) is None:
        return f"model {row.get('model', '')!r} is not a vision-language or diffusion preset"
    notes: list[str] = []
    gpu = gpus.match(row["gpu"])
    if isinstance(gpu, str):
        if not memory_row:
            return gpu
        gpu = gpus.stand_in()
        notes.append(f"GPU '{row['gpu']}' not used by the memory model: {gpu['name']} stands in")

    def cell(column: str) -> float:
        value = words.number(row, column)
        if value is None and column in BLANK:
            notes.append(f"{column} not stated: {BLANK[column]:g}")
            return BLANK[column]
        return value or 0.0

    stage, hybrid, _ = words.read_sharding(row["zero_stage_or_fsdp"])
    recompute, offload_activations = words.read_recompute(row["activation_ckpt"])
    n_gpus = int(words.number(row, "n_gpus") or 1)
    method = row["method"].lower() or "lora"
    fields: dict[str, Any] = {
        "model": presets.find(row["model"]).name,  # type: ignore[union-attr]
        "gpu": gpu["name"],
        "n_gpus": n_gpus,
        "micro_batch": int(words.number(row, "micro_batch") or 1),
        "grad_accum": int(words.number(row, "grad_accum") or 1),
        "method": method,
        "lora_rank": int(words.number(row, "lora_rank") or 16),
        "lora_targets": words.lora_targets(row.get("notes", "")) or "all_linear",
        "optimizer": words.read_optimizer(row["optimizer"]),
        "precision": words.read_precision(row["precision"]) or "bf16_mixed",
        "zero_stage": stage if stage is not None else (1 if n_gpus > 1 else 0),
        "hybrid_shard": hybrid,
        "recompute": recompute,
        "offload_activations": offload_activations,
        "flash_attention": words.read_flash(row["flash_attn"]) is not False,
        "hf_eager_code": words.hf_eager_code(row),  # as for a text row: its source or notes name the code
        "image_size": row.get("image_size", ""),
        "images_per_example": cell("images_per_example"),
        "tokens_per_example": cell("text_tokens"),
        "examples": int(cell("examples")),
        "epochs": cell("epochs"),
        "packing": False,  # vision-language trainers pad each example; diffusion samples are never packed
        **{k: row[k].lower() for k in ("vision_encoder", "text_encoders", "vae") if row.get(k)},
        "lora_base_fp8": row.get("lora_base_fp8", "").lower() in ("true", "yes", "1"),
        "_notes": notes,
    }
    if row["seq_len"]:
        fields["seq_len"] = int(float(row["seq_len"]))
    return fields


def multimodal_case(row: dict[str, str], gpus: GpuMatcher) -> tuple[Scenario, CaseFacts] | str:
    """The Scenario and case facts of one multimodal row, or why it cannot be predicted."""
    unit = row["measured_unit"]
    fields = multimodal_fields(row, gpus, unit in MEMORY_UNITS or unit.startswith("gb_"))
    if isinstance(fields, str):
        return fields
    notes = fields.pop("_notes")
    try:
        scenario = Scenario.model_validate(fields)
    except (ValidationError, ValueError) as err:
        return f"inconsistent configuration: {str(err).splitlines()[0]}"
    statistic, unit_bytes = MEMORY_UNITS.get(unit, ("device", 1e9) if unit.startswith("gb_") else ("", 1.0))
    return scenario, CaseFacts(
        case_id=row["case_id"],
        category=row["category"],
        measured_value=float(row["measured_value"]),
        measured_unit=unit,
        statistic=statistic,
        unit_bytes=unit_bytes,
        n_gpus_published=words.number(row, "n_gpus"),
        full_attention_counted=False,
        assumptions=tuple(notes),
    )
