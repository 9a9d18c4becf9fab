"""Scenario + catalogues -> the typed `Columns` of `planner.evaluate`, and where each value came from.

Everything categorical or looked up happens here, once per scenario: the GPU row, the model shape and counts,
the efficiency preset, the price and the grid (catalogue lookups sit in `_lookups` and `_gpu_lookups`).
`evaluate` then sees only numbers; the provenance shown beside the figures stays here, in typed fields.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner.scenario_columns as sc
from planner.catalogue.catalog import Catalogs, check_precision, precision_problem
from planner.catalogue.efficiency import precision_class
from planner.catalogue.microbench import operator_gpu_fields
from planner.catalogue.power_limits import (
    capped_peak_rate,
    catalogue_power_limit_w,
    power_limit_problem,
    power_limit_w,
)
from planner.columns import Columns, GpuColumns
from planner.errors import PlannerError
from planner.formulas.money.cost import RateBand, resolve_rate
from planner.formulas.step.sequence import SequenceLength, chosen_seq_len
from planner.formulas.units import GIB_BYTES
from planner.inputs.scenario import CUSTOM_MODEL, Scenario
from planner.model.architecture import ParamCounts
from planner.model.expert_split import check_expert_split
from planner.model.layer_split import check_layer_split
from planner.model.shape import ModelShape
from planner.multimodal.plan import main_shape, plan
from planner.post.columns import post_training_columns

BANDS = ("low", "typical", "high")
# A GPU row without a host-link figure: 16 GB/s, about PCIe 3.0 x16 (15.75 GB/s per direction, data/README.md).
DEFAULT_PCIE_GB_PER_S = 16.0


@dataclass(frozen=True)
class GpuProvenance:
    """Where one GPU's columns came from: the catalogue figures behind any override, and the price basis."""

    catalog_peak_tflops: float | None  # dense rate at the training precision (None: not in the catalogue)
    peak_note: str  # which catalogue rate was used, or why there is none
    preset_band: tuple[float, float, float]  # efficiency preset MFU (low, typical, high)
    price_basis: str
    price_snapshot: str | None
    catalog_usd_per_gpu_hour: float | None  # snapshot median before the pricing discount


@dataclass(frozen=True)
class Resolved:
    """A scenario's numeric columns and the provenance the pages and the CLI show beside the figures."""

    scenario: Scenario
    columns: Columns
    gpu: dict[str, Any]  # the catalogue row
    gpu_provenance: GpuProvenance
    shape: ModelShape | None
    counts: ParamCounts | None
    model_label: str
    flops_rule: str
    state_rule: str
    batch_rule: str
    region_label: str
    seq_len: int  # tokens: the user's sequence length or the one derived from the data
    seq_len_rule: str  # which rule gave it, in words
    unavailable: dict[str, str] = field(default_factory=dict)
    token_rule: str = ""  # vision-language and diffusion models: image -> tokens, in words

    @property
    def price_basis(self) -> str:
        return self.gpu_provenance.price_basis

    @property
    def price_snapshot(self) -> str | None:
        return self.gpu_provenance.price_snapshot

    @property
    def derived(self) -> dict[str, Any]:
        """The catalogue and preset values an override replaces (the sidebar shows them as hints)."""
        band = self.gpu_provenance.preset_band
        return {
            "catalog_peak_tflops": self.gpu_provenance.catalog_peak_tflops,
            "catalog_vram_gib": self.gpu["memory_gib"],
            "catalog_power_limit_w": catalogue_power_limit_w(self.gpu),
            "catalog_usd_per_gpu_hour": self.gpu_provenance.catalog_usd_per_gpu_hour,
            "preset_mfu": band[BANDS.index(self.scenario.efficiency_band)],
            "preset_band": band,
            "peak_note": self.gpu_provenance.peak_note,
        }


def model_shape(scenario: Scenario, cats: Catalogs) -> ModelShape | None:
    if scenario.model_shape is not None:
        return scenario.model_shape
    if scenario.model == CUSTOM_MODEL:
        return None
    return main_shape(scenario.model) or cats.model(scenario.model)  # vision-language, diffusion: their own


def _gpu_lookups(
    s: Scenario, gpu: dict[str, Any], cats: Catalogs, n_active_params: float
) -> tuple[tuple[float, float, float], dict[str, Any] | None, dict[str, Any]]:
    """The catalogue rows behind one GPU's columns: efficiency preset, price row, pricing discount."""
    generation, precision = str(gpu["generation"]), precision_class(s.precision)
    band = cats.efficiency_band(generation, n_active_params, s.method, precision)
    price = cats.price(str(gpu["name"]), s.snapshot or None)
    discount = cats.pricing_mode(s.pricing)
    return band, price, discount


def gpu_columns(
    s: Scenario, gpu: dict[str, Any], cats: Catalogs, n_active_params: float
) -> tuple[GpuColumns, GpuProvenance]:
    """The columns that depend on the GPU (rates, memory, links, utilisation and price band), with provenance.

    A GPU that cannot run the precision gets no peak rate (NaN), even with a peak TFLOP/s typed: the rate
    of a datatype the chip lacks describes no run (`resolve` refuses such a scenario; the comparison marks it).
    """
    rate = capped_peak_rate(gpu, s.precision, s.power_limit_w)
    peak_tflops = rate.tflops if rate.tflops is None or s.peak_tflops is None else s.peak_tflops
    band, price, discount = _gpu_lookups(s, gpu, cats, n_active_params)
    low, typical, high = band
    chosen = dict(zip(BANDS, band, strict=True))[s.efficiency_band]
    # The user's own MFU replaces the whole band (it is one measured figure, not a range).
    mfu_low, mfu, mfu_high = (low, chosen, high) if s.mfu is None else (s.mfu, s.mfu, s.mfu)
    money = _price_band(s, price, discount)
    columns = GpuColumns(
        peak_flops_per_s=math.nan if peak_tflops is None else peak_tflops * 1e12,
        vram_bytes=(s.vram_gib if s.vram_gib is not None else float(gpu["memory_gib"])) * GIB_BYTES,
        tdp_w=float(gpu["tdp_w"]),
        intra_node_gb_per_s=float(gpu["intra_node_gb_per_s"] or 0.0),
        pcie_gb_per_s=float(gpu["pcie_gb_per_s"] or DEFAULT_PCIE_GB_PER_S),
        memory_gb_per_s=float(gpu["memory_bw_tb_per_s"]) * 1e3,  # TB/s -> GB/s
        utilisation_is_end_to_end=float(s.mfu is not None),
        utilisation_frac=mfu,
        utilisation_frac_low=mfu_low,
        utilisation_frac_high=mfu_high,
        usd_per_gpu_hour=float(money.usd_per_gpu_hour),
        usd_per_gpu_hour_low=float(money.usd_per_gpu_hour_low),
        usd_per_gpu_hour_high=float(money.usd_per_gpu_hour_high),
        power_limit_w=power_limit_w(gpu, s.power_limit_w),
        **operator_gpu_fields(gpu, s.precision, s.power_limit_w, peak_tflops, cats),
    )
    provenance = GpuProvenance(
        catalog_peak_tflops=rate.tflops,
        peak_note=rate.note,
        preset_band=(low, typical, high),
        price_basis=money.basis,
        price_snapshot=None if price is None else str(price["snapshot"]),
        catalog_usd_per_gpu_hour=None if price is None else price["usd_per_gpu_hour_median"],
    )
    return columns, provenance


def _price_band(s: Scenario, row: dict[str, Any] | None, discount: dict[str, Any]) -> RateBand:
    median = None if row is None else row["usd_per_gpu_hour_median"]
    if s.usd_per_gpu_hour is None and median is None:
        return resolve_rate(None, math.nan)
    return resolve_rate(
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


def sequence_length(s: Scenario, shape: ModelShape | None) -> SequenceLength:
    """The one place a plan's sequence length is read: the user's, else derived from tokens per example."""
    return chosen_seq_len(s.seq_len, s.tokens_per_example, s.packing, shape.context_len if shape else None)


def with_sequence_length(s: Scenario, cats: Catalogs) -> Scenario:
    """The scenario with its sequence length written in (for readers that take a bare Scenario: the exports)."""
    if s.seq_len is not None:
        return s
    try:
        shape = model_shape(s, cats)
    except ValueError:  # a model the catalogues do not know: no context length to cap at
        shape = None
    return s.updated(seq_len=sequence_length(s, shape).tokens)


def precision_refusal(s: Scenario, cats: Catalogs) -> PlannerError | None:
    """Why the scenario's GPU cannot run its precision (planner.catalogue.precisions), or None; for surfaces
    that check a change before keeping it. Raises `UnknownNameError` for an unknown GPU."""
    return precision_problem(cats.gpu(s.gpu), s.precision)


def power_limit_refusal(s: Scenario, cats: Catalogs) -> PlannerError | None:
    """Why the scenario's typed power limit is outside its GPU's range (planner.catalogue.power_limits), or
    None; for surfaces that check a change before keeping it. Raises `UnknownNameError` for an unknown GPU."""
    return power_limit_problem(cats.gpu(s.gpu), s.power_limit_w)


def _lookups(s: Scenario, cats: Catalogs) -> tuple[ModelShape | None, dict[str, Any], dict[str, Any]]:
    """The scenario's catalogue rows: model shape, GPU, grid region (each raises ValueError naming the field).

    A GPU that cannot run the scenario's precision is refused here, so every path that resolves refuses it.
    """
    shape = model_shape(s, cats)
    gpu = cats.gpu(s.gpu)
    check_precision(gpu, s.precision)
    refused = power_limit_problem(gpu, s.power_limit_w)
    if refused is not None:
        raise refused
    region = cats.region(s.region)
    return shape, gpu, region


def resolve(s: Scenario, cats: Catalogs) -> Resolved:
    """Look everything up once; raises ValueError (naming the field) for unknown names."""
    shape, gpu, region = _lookups(s, cats)
    if shape is not None:  # the Scenario checks an imported shape itself; a catalogue model only here
        check_layer_split(shape.n_layers, s.pp, s.pp_virtual_stages, _model_label(s, shape))
    check_expert_split(shape, s.ep, _model_label(s, shape), s.etp if s.etp != s.tp else None)
    parts = plan(s, shape)  # vision-language, diffusion: the main transformer's tokens, the other parts
    seq = sequence_length(parts.scenario, shape)
    model, counts = sc.model_columns(s, shape)
    hw, provenance = gpu_columns(s, gpu, cats, float(model.n_active_params))
    columns = Columns(
        model=model,
        recipe=sc.recipe_columns(s),
        layout=sc.layout_columns(s),
        workload=sc.workload_columns(parts.scenario, seq.tokens),
        gpu=hw,
        energy=sc.energy_columns(s, float(region["g_co2e_per_kwh"])),
        post=post_training_columns(s, shape, float(model.n_params), float(model.n_active_params), cats),
        mm=parts.columns,
    ).replace(**parts.overrides)
    return Resolved(
        scenario=s,
        columns=columns,
        gpu=gpu,
        gpu_provenance=provenance,
        shape=shape,
        counts=counts,
        model_label=_model_label(s, shape),
        flops_rule=_flops_rule(s, shape),
        state_rule=_state_rule(s),
        batch_rule="micro-batch × accumulation × data-parallel replicas × sequence length",
        region_label=str(region["label"]),
        seq_len=seq.tokens,
        seq_len_rule=parts.seq_len_rule or seq.rule,
        unavailable=_unavailable(s, shape, hw, provenance),
        token_rule=parts.token_rule,
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
    return f"parameters × bytes per parameter of {s.method}, {s.optimizer}, {s.precision}".replace("_", " ")


def _unavailable(
    s: Scenario, shape: ModelShape | None, hw: GpuColumns, provenance: GpuProvenance
) -> dict[str, str]:
    missing: dict[str, str] = {}
    if shape is None:
        reason = "needs the model's shape; choose a preset or import a config.json"
        needs_layers = ("activations_gib", "logits_gib", "peak_gib_per_device", "max_micro_batch")
        named_statistics = ("peak_allocated_gib", "peak_reserved_gib", "device_total_gib")
        missing.update(dict.fromkeys(named_statistics, reason))
        missing.update(dict.fromkeys((*needs_layers, "loading_peak_gib"), reason))
        if s.method != "full":
            missing["lora adapters"] = "counted as 0 parameters without a shape"
    if np.isnan(hw.peak_flops_per_s):
        missing["peak_tflops"] = provenance.peak_note
    if np.isnan(hw.usd_per_gpu_hour):
        missing["cost_usd"] = "no catalogue price for this GPU; enter your quote per GPU-hour"
    return missing
