"""Scenario + catalogues -> the numeric input columns of `planner.evaluate`, with where each value came from.

Everything categorical or looked up happens here, once per scenario: the GPU row, the model shape and its
parameter counts, the recipe's bytes per parameter, the price and the grid. `evaluate` then sees only numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from planner.catalogue.catalog import Catalogs, peak_rate
from planner.catalogue.efficiency import precision_class
from planner.formulas.cost import resolve_rate
from planner.formulas.recipes import METHOD_CODES, RECOMPUTE_CODES, recipe_bytes_per_param
from planner.formulas.units import GIB_BYTES
from planner.inputs.scenario import CUSTOM_MODEL, Scenario
from planner.model.architecture import (
    ParamCounts,
    count_params,
    linear_params_all_layers,
    lora_adapter_params,
)
from planner.model.shape import ModelShape

NAN = math.nan


@dataclass(frozen=True)
class Resolved:
    """A scenario's numeric inputs and the provenance the pages and the CLI show beside the figures."""

    scenario: Scenario
    gpu: dict[str, Any]
    shape: ModelShape | None
    counts: ParamCounts | None
    columns: dict[str, float]
    derived: dict[str, Any]
    model_label: str
    flops_rule: str
    state_rule: str
    batch_rule: str
    price_basis: str
    price_snapshot: str | None
    region_label: str
    unavailable: dict[str, str] = field(default_factory=dict)


def model_shape(scenario: Scenario, cats: Catalogs) -> ModelShape | None:
    if scenario.model_shape is not None:
        return scenario.model_shape
    if scenario.model == CUSTOM_MODEL:
        return None
    return cats.model(scenario.model)


def _model_columns(
    scenario: Scenario, shape: ModelShape | None
) -> tuple[dict[str, float], ParamCounts | None]:
    if shape is None:
        assert scenario.params_b is not None  # the Scenario validator guarantees a count or a model
        n = scenario.params_b * 1e9
        # No shape: states from the bare count; every shape-dependent figure is masked by has_shape = 0.
        dummy = {
            "n_layers": 1.0,
            "hidden": 1.0,
            "n_heads": 1.0,
            "n_kv_heads": 1.0,
            "head_dim": 1.0,
            "ffn_hidden": 1.0,
            "n_mlp_matrices": 2.0,
            "vocab": 1.0,
        }
        return {
            **dummy,
            "has_shape": 0.0,
            "n_params": n,
            "n_active_params": n,
            "n_embedding_params": 0.0,
            "n_head_params": 0.0,
            "n_matmul_params": n,
            "n_layer_matmul_params": n,
            # Adapter size needs the shape; LoRA adapters are well under 1 % of the base (Hu et al. 2021,
            # Table 4: rank 8 on GPT-3 = 0.01 %), so they count as 0 here and `unavailable` says so.
            "n_adapter_params": 0.0,
        }, None
    counts = count_params(shape)
    layer_matmul = float(linear_params_all_layers(shape))
    expert_ffn = shape.moe_ffn_hidden or shape.ffn_hidden
    ffn_active = (
        (shape.n_experts_active + shape.n_shared_experts) * expert_ffn if shape.is_moe else shape.ffn_hidden
    )
    return {
        "has_shape": 1.0,
        "n_params": float(counts.total),
        "n_active_params": float(counts.active),
        "n_embedding_params": float(counts.embedding + counts.position),
        "n_head_params": float(counts.head),
        "n_matmul_params": layer_matmul + shape.vocab_size * shape.hidden_size,
        "n_layer_matmul_params": layer_matmul,
        "n_adapter_params": float(lora_adapter_params(shape, scenario.lora_rank, scenario.lora_targets)),
        "n_layers": float(shape.n_layers),
        "hidden": float(shape.hidden_size),
        "n_heads": float(shape.n_heads),
        "n_kv_heads": float(shape.n_kv_heads),
        "head_dim": float(shape.head_dim),
        "ffn_hidden": float(ffn_active),
        "n_mlp_matrices": 3.0 if shape.mlp_kind == "swiglu" else 2.0,
        "vocab": float(shape.vocab_size),
    }, counts


def _recipe_columns(s: Scenario) -> dict[str, float]:
    recipe = recipe_bytes_per_param(s.method, s.optimizer, s.precision, s.qlora_double_quant)
    return {
        "method": float(METHOD_CODES[s.method]),
        "weight_bytes": recipe["weights"],
        "grad_bytes": recipe["grads"],
        "master_bytes": recipe["master"],
        "optimizer_bytes": recipe["optimizer"],
        "frozen_weight_bytes": recipe["frozen_weights"],
        "frozen_other_weight_bytes": recipe["frozen_other_weights"],
        "activation_bytes": recipe["activation_element"],
        "bytes_per_param": NAN if s.bytes_per_param is None else s.bytes_per_param,
    }


def _layout_columns(s: Scenario) -> dict[str, float]:
    return {
        "n_gpus": float(s.n_gpus),
        "gpus_per_node": float(s.gpus_per_node),
        "tp": float(s.tp),
        "pp": float(s.pp),
        "cp": float(s.cp),
        "dp": float(s.dp),
        "micro_batch": float(s.micro_batch),
        "grad_accum": float(s.grad_accum),
        "zero_stage": float(s.zero_stage),
        "hybrid_shard": float(s.hybrid_shard),
        "sequence_parallel": float(s.sequence_parallel),
        "flash_attention": float(s.flash_attention),
        "recompute": float(RECOMPUTE_CODES[s.recompute]),
        "fused_cross_entropy": float(s.fused_cross_entropy),
        "offload_optimizer": float(s.offload_optimizer),
        "offload_params": float(s.offload_params),
        "offload_activations": float(s.offload_activations),
        "optimizer_in_backward": float(s.optimizer_in_backward),
        "dropout": float(s.dropout),
        "overhead_bytes": s.overhead_gib * GIB_BYTES,
        "fragmentation_frac": s.fragmentation_frac,
    }


def _data_columns(s: Scenario) -> dict[str, float]:
    return {
        "training_tokens": s.training_tokens,
        "tokens_per_example": s.tokens_per_example,
        "seq_len": float(s.seq_len),
        "packing": float(s.packing),
        "flops_per_param_token": s.flops_per_param_token or 0.0,
        "inter_node_gb_per_s": s.inter_node_gb_per_s,
        "overlap_frac": s.overlap_frac,
        "storage_gb_per_s": NAN if s.storage_gb_per_s is None else s.storage_gb_per_s,
        "n_checkpoints": float(s.n_checkpoints),
        "experiments_multiplier": s.experiments_multiplier,
        "gpu_util_frac": s.gpu_util_frac,
        "idle_power_frac": s.idle_power_frac,
        "host_overhead_frac": s.host_overhead_frac,
        "pue": s.pue,
        "usd_per_kwh": s.usd_per_kwh,
    }


def gpu_columns(s: Scenario, gpu: dict[str, Any], cats: Catalogs, n_active_params: float) -> dict[str, Any]:
    """Columns that depend on the GPU: rates, memory, links, utilisation band and price band.

    Returns numbers plus `_`-prefixed provenance strings that `evaluate` ignores.
    """
    rate = peak_rate(gpu, s.precision)
    catalog_peak = rate.tflops
    peak_tflops = s.peak_tflops if s.peak_tflops is not None else catalog_peak
    low, typical, high = cats.efficiency_band(
        str(gpu["generation"]), n_active_params, s.method, precision_class(s.precision)
    )
    chosen = {"low": low, "typical": typical, "high": high}[s.efficiency_band]
    own = s.mfu is not None
    price = _price_band(s, gpu, cats)
    return {
        "peak_flops_per_s": NAN if peak_tflops is None else peak_tflops * 1e12,
        "vram_bytes": (s.vram_gib if s.vram_gib is not None else float(gpu["memory_gib"])) * GIB_BYTES,
        "tdp_w": float(gpu["tdp_w"]),
        "intra_node_gb_per_s": float(gpu["intra_node_gb_per_s"] or 0.0),
        "pcie_gb_per_s": float(gpu["pcie_gb_per_s"] or 16.0),
        "end_to_end": float(own),
        "utilisation": s.mfu if own else chosen,
        "utilisation_low": s.mfu if own else low,
        "utilisation_high": s.mfu if own else high,
        **price,
        "_catalog_peak_tflops": catalog_peak,
        "_peak_note": rate.note,
        "_preset": (low, typical, high),
    }


def _price_band(s: Scenario, gpu: dict[str, Any], cats: Catalogs) -> dict[str, Any]:
    row = cats.price(str(gpu["name"]), s.snapshot or None)
    discount = cats.pricing_mode(s.pricing)
    median = None if row is None else row["usd_per_gpu_hour_median"]
    if s.usd_per_gpu_hour is None and median is None:
        band = resolve_rate(None, NAN)
    else:
        band = resolve_rate(
            s.usd_per_gpu_hour,
            median,
            None if row is None else row["usd_per_gpu_hour_low"],
            None if row is None else row["usd_per_gpu_hour_high"],
            discount["discount_frac"],
            discount["discount_frac_low"],
            discount["discount_frac_high"],
            pricing=s.pricing,
            price_source=f"{row['snapshot']} snapshot median" if row else "catalogue",
        )
    return {
        "usd_per_gpu_hour": float(band.usd_per_gpu_hour),
        "usd_per_gpu_hour_low": float(band.usd_per_gpu_hour_low),
        "usd_per_gpu_hour_high": float(band.usd_per_gpu_hour_high),
        "_price_basis": band.basis,
        "_price_snapshot": None if row is None else str(row["snapshot"]),
        "_catalog_usd_per_gpu_hour": median,
    }


def resolve(s: Scenario, cats: Catalogs) -> Resolved:
    """Look everything up once; raises ValueError (naming the field) for unknown names."""
    shape = model_shape(s, cats)
    model_cols, counts = _model_columns(s, shape)
    gpu = cats.gpu(s.gpu)
    region = cats.region(s.region)
    hw = gpu_columns(s, gpu, cats, model_cols["n_active_params"])
    columns = {
        **model_cols,
        **_recipe_columns(s),
        **_layout_columns(s),
        **_data_columns(s),
        **{k: v for k, v in hw.items() if not k.startswith("_")},
        "g_co2e_per_kwh": float(region["g_co2e_per_kwh"]),
    }
    return Resolved(
        scenario=s,
        gpu=gpu,
        shape=shape,
        counts=counts,
        columns=columns,
        derived={
            "catalog_peak_tflops": hw["_catalog_peak_tflops"],
            "catalog_vram_gib": gpu["memory_gib"],
            "catalog_usd_per_gpu_hour": hw["_catalog_usd_per_gpu_hour"],
            "preset_mfu": hw["_preset"][("low", "typical", "high").index(s.efficiency_band)],
            "preset_band": hw["_preset"],
            "peak_note": hw["_peak_note"],
        },
        model_label=_model_label(s, shape),
        flops_rule=_flops_rule(s, shape),
        state_rule=_state_rule(s),
        batch_rule="micro-batch × accumulation × data-parallel replicas × sequence length",
        price_basis=hw["_price_basis"],
        price_snapshot=hw["_price_snapshot"],
        region_label=str(region["label"]),
        unavailable=_unavailable(s, shape, hw),
    )


def _model_label(s: Scenario, shape: ModelShape | None) -> str:
    if shape is not None and s.model == CUSTOM_MODEL:
        return f"{shape.name} (imported shape)"
    return s.model if s.model else f"{s.params_b:g} B parameters (bare count)"


def _flops_rule(s: Scenario, shape: ModelShape | None) -> str:
    if s.flops_per_param_token is not None:
        return f"{s.flops_per_param_token:g} × parameters × tokens (your factor)"
    base = "4 × base + 6 × adapter parameters" if s.method != "full" else "6 × active parameters"
    return (
        f"({base} + causal attention) × tokens"
        if shape
        else f"{base} × tokens (no shape: attention left out)"
    )


def _state_rule(s: Scenario) -> str:
    if s.bytes_per_param is not None:
        return f"parameters × {s.bytes_per_param:g} bytes (your figure)"
    return f"parameters × bytes per parameter of {s.method}, {s.optimizer}, {s.precision}"


def _unavailable(s: Scenario, shape: ModelShape | None, hw: dict[str, Any]) -> dict[str, str]:
    missing: dict[str, str] = {}
    if shape is None:
        reason = "needs the model's shape; choose a preset or import a config.json"
        for key in ("activations_gib", "logits_gib", "peak_gib_per_device", "max_micro_batch"):
            missing[key] = reason
        if s.method != "full":
            missing["lora adapters"] = "counted as 0 parameters without a shape"
    if math.isnan(hw["peak_flops_per_s"]):
        missing["peak_tflops"] = f"{hw['_peak_note']}"
    if math.isnan(hw["usd_per_gpu_hour"]):
        missing["cost_usd"] = "no catalogue price for this GPU; enter your quote per GPU-hour"
    return missing
