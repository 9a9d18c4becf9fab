"""A case row (the columns of reference/calibration.csv, DESIGN.md §4) -> a `Scenario` plus the case-only facts.

`case_scenario` is the one door from a published measurement into the planner: the row's cells become the
Scenario a user would type (blank cells by `planner.cases.case_defaults`, free text by
`planner.cases.case_words`), and `planner.cases.case_predict` runs it through resolve -> evaluate, the code
`planner.estimate` runs. What a Scenario cannot hold (the measured value, its unit and statistic, the GPU count
as published, how the source counts FLOPs) travels beside it in `CaseFacts`. A row that cannot be predicted
gets a reason (str) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from planner.cases import case_post
from planner.cases import case_words as words
from planner.cases.case_defaults import (
    BLANK_DEFAULTS,
    GPUS_PER_NODE,
    LORA_TARGETS,
    OVERLAP_FRAC,
    default,
    inter_node_gb_per_s,
    note,
)
from planner.cases.case_file import SETTING_COLUMNS
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_shape import case_shape, catalogue_moe_shape
from planner.catalogue.catalog import Catalogs, precision_problem, supported_precisions
from planner.catalogue.power_limits import power_limit_problem
from planner.formulas.units import GIB_BYTES
from planner.inputs.scenario import Scenario
from planner.model.layer_split import interleaving_fits

# measured_unit -> (memory statistic, bytes per unit). "Unspecified" is read as allocated: PEFT's memory
# tracker reads torch.cuda.max_memory_allocated and torchtune's logger leads with the peak active bytes.
MEMORY_UNITS: dict[str, tuple[str, float]] = {
    "gib_peak_allocated_per_gpu": ("allocated", GIB_BYTES),
    "gib_peak_reserved_per_gpu": ("reserved", GIB_BYTES),
    "gib_device_used_per_gpu": ("device", GIB_BYTES),
    "gib_peak_per_gpu_unspecified": ("allocated", GIB_BYTES),
    "gb_peak_per_gpu_unspecified": ("allocated", 1e9),
}
TIME_UNITS = (
    "tokens_per_s_per_gpu", "tokens_per_s_ambiguous", "samples_per_s_total", "tflops_per_gpu_model",
    "tflops_per_gpu_hardware", "s_per_iteration", "days", "gpu_hours",
)  # fmt: skip
RUN_LENGTH_UNITS = ("days", "gpu_hours")  # need the run's token count


@dataclass(frozen=True)
class CaseFacts:
    """What a prediction needs beside the Scenario: the published figure, its unit, and reading rules."""

    case_id: str
    category: str
    measured_value: float
    measured_unit: str  # the unit the prediction is read out in (a GPU-hour view for MWh/tCO2e rows)
    statistic: str  # memory rows: allocated, reserved or device; "" otherwise
    unit_bytes: float  # memory rows: bytes per unit (GiB or GB)
    n_gpus_published: float | None  # the GPU count as the row states it (None: not stated)
    # Megatron's TFLOP/s counter (2021 paper, 2024 README) counts the full attention matrix, not the causal half
    full_attention_counted: bool
    assumptions: tuple[str, ...]


def case_scenario(row: dict[str, str], cats: Catalogs, gpus: GpuMatcher) -> tuple[Scenario, CaseFacts] | str:
    """The Scenario of one case row and its case-only facts, or the reason it cannot be predicted."""
    unit, category = row["measured_unit"], row["category"]
    row, sequence_note = case_post.with_sequence(row)
    reason = _skip_reason(row, unit)
    if reason:
        return reason
    notes: list[str] = [sequence_note] if sequence_note else []
    gpu = gpus.match(row["gpu"])
    limit_w = None if isinstance(gpu, str) else _power_limit(row["gpu"], gpu, notes)
    if isinstance(gpu, str) or isinstance(limit_w, str):
        if category != "memory" or case_post.generation_on_gpu(row):
            return gpu if isinstance(gpu, str) else str(limit_w)
        # No GPU figure enters the memory model, so a memory row is predicted on any catalogue GPU (but a
        # colocated generation engine's share is of the GPU's own memory: such rows need their GPU).
        gpu = gpus.stand_in() if isinstance(gpu, str) else gpu
        notes.append(f"GPU '{row['gpu']}' not used by the memory model: {gpu['name']} stands in")
    shape = catalogue_moe_shape(row, cats, notes) if _is_moe(row) else case_shape(row, notes)
    if isinstance(shape, str):
        return shape
    fields = _scenario_fields(row, notes, supported_precisions(gpu))
    post = case_post.post_fields(row, fields["seq_len"], fields["precision"], cats, notes)
    if isinstance(post, str):
        return post
    fields.update(post)
    refused = precision_problem(gpu, fields["precision"])
    if refused is not None:  # a stated precision the GPU lacks: no run to predict (the GPU comparison's rule)
        return f"precision {row['precision'] or '(not stated)'!r} read as {refused.problem}"
    fields["pp_virtual_stages"] = _virtual_stages(row, fields, shape.n_layers, notes)
    fields["ep"] = words.expert_parallel_degree(row.get("notes", "")) or 1
    fields["etp"] = words.expert_tensor_parallel_degree(row.get("notes", ""))
    fields.update(
        model="",
        model_shape=shape,
        gpu=gpu["name"],
        inter_node_gb_per_s=inter_node_gb_per_s(gpu["generation"]),
        power_limit_w=limit_w if isinstance(limit_w, float) else None,
    )
    try:
        scenario = Scenario.model_validate(fields)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "layout"
        return f"inconsistent configuration: {where}: {first['msg']}"
    statistic, unit_bytes = MEMORY_UNITS.get(unit, ("", 1.0))
    facts = CaseFacts(
        case_id=row["case_id"],
        category=category,
        measured_value=float(row["measured_value"]),
        measured_unit=unit,
        statistic=statistic,
        unit_bytes=unit_bytes,
        n_gpus_published=words.number(row, "n_gpus"),
        full_attention_counted=unit.startswith("tflops"),
        assumptions=tuple(notes),
    )
    return scenario, facts


def _is_moe(row: dict[str, str]) -> bool:
    """A row whose active parameters differ from its total: a mixture of experts."""
    return words.number(row, "active_params_b") not in (None, words.number(row, "params_b"))


def _virtual_stages(row: dict[str, str], fields: dict[str, Any], n_layers: int, notes: list[str]) -> int:
    """The interleaved schedule the notes state, when the layout can run it (else plain 1F1B, noted)."""
    stated = words.virtual_pipeline_stages(row.get("notes", ""))
    if stated is None or stated == 1:
        return 1
    pp, accum = fields["pp"], fields["grad_accum"]
    if bool(interleaving_fits(n_layers, pp, stated)) and accum % pp == 0:
        return stated
    notes.append(
        f"notes state {stated} virtual pipeline stages, which {n_layers} layers on pp {pp} with {accum} "
        "micro-batches cannot run: plain 1F1B"
    )
    return 1


def _lora_targets(row: dict[str, str], method: str, notes: list[str]) -> str:
    """The adapted modules the notes state, else the default (noted for adapter rows)."""
    stated = words.lora_targets(row.get("notes", ""))
    if stated is None and method in ("lora", "qlora"):
        notes.append(f"LoRA target modules not stated: {LORA_TARGETS}")
    return stated or LORA_TARGETS


def _power_limit(gpu_cell: str, gpu: dict[str, Any], notes: list[str]) -> float | str | None:
    """The power limit a power-capped GPU cell states (planner.formulas.energy.power_cap derates its rates), None
    for a GPU at its catalogue limit, or why a capped run cannot be predicted (no limit stated, or one the
    GPU cannot take)."""
    if not words.power_capped(gpu_cell):
        return None
    stated = words.power_limit_w(gpu_cell)
    if stated is None:
        if gpu.get("power_limit_w") is not None:  # a capped catalogue variant: its own limit applies
            return None
        return f"GPU '{gpu_cell}' is power-capped but states no limit in watts, so its clocks are unknown"
    refused = power_limit_problem(gpu, stated)
    if refused is not None:
        return f"GPU '{gpu_cell}': the stated limit {refused.problem}"
    notes.append(f"{gpu['name']} at the {stated:g} W power limit the GPU cell states")
    return stated


def _skip_reason(row: dict[str, str], unit: str) -> str | None:
    """Rows whose measurement the planner cannot reproduce, by rules on the columns (never on the case id)."""
    notes = row.get("notes", "").lower()
    if unit == "gb_upper_bound_per_gpu":
        return "an upper bound (the run fits within it), not a peak reading"
    if unit not in MEMORY_UNITS and unit not in TIME_UNITS:
        return f"measured_unit {unit!r} is not predicted for category {row['category']!r}"
    if "no packing" in notes:
        return "unpacked batches padded to their longest sample: seq_len is only the maximum length"
    if unit in TIME_UNITS and not row["seq_len"]:
        return "sequence length not stated: a throughput or time cannot be predicted without it"
    if unit in RUN_LENGTH_UNITS and not row["n_tokens_b"] and not words.examples_and_epochs(notes):
        return (
            f"a figure in {unit} needs the run's token count (n_tokens_b, or 'N prompts, E epochs' in notes)"
        )
    if unit in TIME_UNITS and case_post.generation_on_gpu(row) and not case_post.batch_stated(row):
        return (
            "rollout batch not stated (micro_batch, global_batch or rollout_prompts): decode is bound by "
            "reading the weights once per token for the whole batch in flight, so generation time scales "
            "inversely with a batch the row does not give"
        )
    return None


def _scenario_fields(row: dict[str, str], notes: list[str], gpu_precisions: list[str]) -> dict[str, Any]:
    """Scenario fields from the row's cells; each blank cell by its default (noted in `notes`)."""

    def given(column: str) -> float:
        value = words.number(row, column)
        if value is None:
            notes.append(note(column))
            return default(column)
        return value

    tp, pp, cp = (int(words.number(row, k) or 1) for k in ("tp", "pp", "cp"))
    stated_gpus = words.number(row, "n_gpus")
    n_gpus = int(stated_gpus or tp * pp * cp * (words.number(row, "dp") or 1))
    if stated_gpus is None:
        notes.append(note("n_gpus"))
    dp = max(n_gpus // (tp * pp * cp), 1)
    stated_accum, stated_global = words.number(row, "grad_accum"), words.number(row, "global_batch")
    if (
        words.number(row, "micro_batch") is None
        and stated_global
        and words.batch_split_per_stage(row["notes"])
    ):
        micro_batch = float(max(round(stated_global / (dp * pp)), 1))
        notes.append(f"micro_batch not stated: the batch per replica split into {pp} pipeline micro-batches")
    else:
        micro_batch = given("micro_batch")
    global_batch = stated_global or micro_batch * (stated_accum or 1.0) * dp
    grad_accum = stated_accum or max(round(global_batch / (micro_batch * dp)), 1)
    method = case_post.policy_method(row)
    if not row["method"]:
        notes.append(note("method"))
    stage, hybrid, _ = words.read_sharding(row["zero_stage_or_fsdp"])
    offload_optimizer, offload_params = words.read_offload(row["zero_stage_or_fsdp"])
    if stage is None:
        stage = 1 if n_gpus > 1 else 0
        notes.append(note("zero_stage_or_fsdp", f"ZeRO-{stage}"))
    precision = words.read_precision(row["precision"])
    if precision is None:
        sixteen_bit = "bf16_mixed" if "bf16_mixed" in gpu_precisions else "fp16_mixed"
        precision = "fp32" if stated_gpus == 1 else sixteen_bit
        notes.append(note("precision", precision))
    recompute, offload_activations = words.read_recompute(row["activation_ckpt"])
    flash = words.read_flash(row["flash_attn"])
    if flash is None:
        notes.append(note("flash_attn"))
    seq_len = int(given("seq_len"))
    stated_tokens_b = words.number(row, "n_tokens_b")
    run_length_row = row["measured_unit"] in RUN_LENGTH_UNITS and not stated_tokens_b
    length = case_post.run_length(row, notes) if run_length_row else None
    return {
        # a rate does not depend on the run's length; a figure in days or GPU-hours has its count (checked)
        "total_tokens_b": stated_tokens_b or 1.0,
        **(length or {}),
        "seq_len": seq_len,
        "tokens_per_example": seq_len,  # one packed sequence per example: no padding
        "packing": True,
        "n_gpus": n_gpus,
        "gpus_per_node": GPUS_PER_NODE,
        "tp": tp,
        "pp": pp,
        "cp": cp,
        "micro_batch": int(micro_batch),
        "grad_accum": int(grad_accum),
        "method": method,
        "lora_rank": int(given("lora_rank") if method != "full" else default("lora_rank")),
        "lora_targets": _lora_targets(row, method, notes),
        "optimizer": words.read_optimizer(row["optimizer"]),
        "precision": precision,
        "zero_stage": stage,
        "hybrid_shard": hybrid,
        "offload_optimizer": offload_optimizer,
        "offload_params": offload_params,
        "offload_activations": offload_activations,
        "optimizer_in_backward": words.optimizer_in_backward(row["optimizer"]),
        "optimizer_foreach": words.optimizer_foreach(row["optimizer"]),
        "hf_eager_code": words.hf_eager_code(row),
        "recompute": recompute,
        # frameworks that offer TP pair it with sequence parallelism (Megatron-LM, torchtitan)
        "sequence_parallel": tp > 1,
        "flash_attention": BLANK_DEFAULTS["flash_attn"].value if flash is None else flash,
        "attention_kernel": words.attention_kernel(row["flash_attn"]),
        "fused_cross_entropy": words.fused_cross_entropy(row),
        "overlap_frac": OVERLAP_FRAC,
        "dropout": bool(words.dropout_on(row.get("notes", ""))),  # off unless the notes state it
        # optional columns (reduce_dtype, overlap_model, model_loading): empty = the default, the first allowed value
        **{column: row.get(column, "").lower() or allowed[0] for column, allowed in SETTING_COLUMNS.items()},
    }
