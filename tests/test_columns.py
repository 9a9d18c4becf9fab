"""The typed columns resolve hands evaluate, the choice enums, and the one table of reported outputs."""

from __future__ import annotations

import dataclasses
from typing import get_args

import numpy as np
import pytest

from planner.catalogue.catalog import default_catalogs
from planner.columns import GROUP_OF, GROUPS, Columns, GpuColumns, map_columns, stack
from planner.decide import compare, sweep_rank
from planner.estimate import estimate, row
from planner.evaluate import evaluate
from planner.formulas.memory.recipes import Method, Recompute
from planner.inputs import scenario as scenario_module
from planner.inputs.scenario import Scenario
from planner.resolve import GpuProvenance, resolve
from planner.results import ESTIMATE_FIGURES, OUTPUT_BY_KEY, OUTPUTS, SCALE, Estimate, shown

# Column names that carry no unit suffix, each for its reason (planner/columns.py docstring).
FLAGS = {
    "has_shape",
    "lora_all_linear",  # memory tails
    "lora_dropout",
    "fp32_grad_buffers",
    "optimizer_foreach",
    "gemma_block",  # Gemma 2's layer keeps more under eager code (formulas/memory/eager.py)
    "qk_norm",  # Qwen3's query/key norms keep fp32 copies under eager code (formulas/memory/eager.py)
    "hf_eager_code",  # Hugging Face eager code's extra saved tensors (formulas/memory/eager.py)
    "full_model_load",  # model loading: model_loading "full_on_gpu"
    "overlap_windows",  # communication: overlap_model "windows"
    "hybrid_shard",
    "fp8_compute",  # the operator step model: matmuls in FP8
    "flash1_attention",  # the operator step model: attention_kernel "flash1"
    "tp_comm_overlap",  # tensor-parallel collectives overlap the GEMMs (Megatron's option)
    "sequence_parallel",
    "flash_attention",
    "fused_cross_entropy",
    "offload_optimizer",
    "offload_params",
    "offload_activations",
    "optimizer_in_backward",
    "dropout",
    "paged_optimizer",  # paged optimizers
    "packing",
    "utilisation_is_end_to_end",
    "paired",  # post-training
    "online",
    "generation_sleeps",
    "bidirectional",  # diffusion transformers attend over the whole sequence
}
CODES = {"method", "recompute", "zero_stage", "objective", "multimodal_kind"}
DEGREES = {"tp", "pp", "cp", "dp", "ep", "etp", "generation_tp"}
WIDTHS = {
    "hidden_size", "head_dim", "ffn_hidden_size", "vocab_size", "lora_rank",
    "value_hidden_size", "value_head_dim", "value_ffn_hidden_size", "expert_ffn_hidden_size",
}  # fmt: skip
# forward tokens of a model per token the policy trains on: ratios of two token counts
TOKEN_RATIOS = {
    "policy_forward_tokens_per_token", "reference_tokens_per_token", "reward_tokens_per_token",
    "value_tokens_per_token",
}  # fmt: skip
DIMENSIONLESS = {
    "pue",
    "experiments_multiplier",
    "moe_capacity_factor",
    "flops_per_param_token",
    "tokens_per_example",
    *TOKEN_RATIOS,
}
UNIT_SUFFIXES = (
    "_bytes",
    "_bytes_per_param",
    "_bytes_per_element",
    "_flops_per_s",
    "_gb_per_s",
    "_w",
    "_frac",
    "_frac_low",
    "_frac_high",
    "_tokens",
    "_seqs",
    "_per_kwh",
    "_usd",
    "_s",  # seconds (the goodput inputs: checkpoint interval, write, restart)
    "_per_gpu_hour",  # a rate: failures per GPU-hour
)

CATS = default_catalogs()


def test_column_names_are_unique_across_groups_and_carry_their_unit() -> None:
    n_fields = sum(len(dataclasses.fields(kind)) for kind in GROUPS.values())
    assert len(GROUP_OF) == n_fields  # no name in two groups: `Columns.replace` routes by name
    plain = FLAGS | CODES | DEGREES | WIDTHS | DIMENSIONLESS
    unnamed = [
        name
        for name in GROUP_OF
        if name not in plain and not name.startswith(("n_", "usd_per_")) and not name.endswith(UNIT_SUFFIXES)
    ]
    assert unnamed == []


def test_replace_changes_only_the_named_columns() -> None:
    columns = resolve(Scenario(), CATS).columns
    counts = np.array([8.0, 16.0])
    changed = columns.replace(n_gpus=counts, dp=counts, recompute=float(Recompute.FULL))
    assert changed.layout.n_gpus is counts and changed.layout.recompute == Recompute.FULL
    assert changed.layout.tp == columns.layout.tp and changed.model is columns.model
    assert columns.layout.n_gpus == 8.0  # the original is untouched (frozen)
    with pytest.raises(TypeError, match="unknown column 'grad_accum'"):
        columns.replace(grad_accum=2.0)


def test_replace_takes_a_whole_group_and_columns_on_top() -> None:
    columns = resolve(Scenario(), CATS).columns
    other = resolve(Scenario(gpu="A100 80GB SXM"), CATS).columns.gpu
    changed = columns.replace(gpu=other, tdp_w=123.0)
    assert changed.gpu.vram_bytes == other.vram_bytes and changed.gpu.tdp_w == 123.0
    assert other.tdp_w != 123.0


def test_stack_and_map_build_per_gpu_arrays() -> None:
    names = ("H100 SXM", "A100 80GB SXM", "MI300X")
    rows = [resolve(Scenario(gpu=name), CATS).columns.gpu for name in names]
    stacked = stack(rows)
    assert isinstance(stacked, GpuColumns)
    np.testing.assert_array_equal(stacked.vram_bytes, [r.vram_bytes for r in rows])
    repeated = map_columns(stacked, lambda column: np.repeat(column, 2))
    np.testing.assert_array_equal(repeated.tdp_w, np.repeat([r.tdp_w for r in rows], 2))


def test_many_rows_give_each_single_row_exactly() -> None:
    """One formula for one row and many: a three-layout evaluation equals three single evaluations."""
    base = Scenario(model="Llama 3.1 70B", n_gpus=64, zero_stage=3)
    layouts = [
        {"n_gpus": 64, "tp": 1, "micro_batch": 1, "recompute": "none"},
        {"n_gpus": 32, "tp": 4, "micro_batch": 2, "recompute": "full"},
        {"n_gpus": 128, "tp": 8, "micro_batch": 4, "recompute": "selective_op"},
    ]
    singles = [resolve(base.updated(**layout), CATS).columns for layout in layouts]
    many = singles[0].replace(
        **{
            name: np.array([float(getattr(c.layout, name)) for c in singles])
            for name in ("n_gpus", "tp", "dp")
        },
        micro_batch_seqs=np.array([float(c.layout.micro_batch_seqs) for c in singles]),
        recompute=np.array([float(c.layout.recompute) for c in singles]),
    )
    out = evaluate(many)
    for i, single in enumerate(singles):
        assert row(out, i) == row(evaluate(single), 0)


def test_enums_match_the_scenario_choices() -> None:
    assert {m.key for m in Method} == set(get_args(scenario_module.Method))
    assert {r.key for r in Recompute} == set(get_args(scenario_module.Recompute))
    assert Method.of("qlora") is Method.QLORA and Recompute.of("selective_op") == 3
    assert {m.key: int(m) for m in Method} == {"full": 0, "lora": 1, "qlora": 2}
    assert {r.key: int(r) for r in Recompute} == {"none": 0, "selective": 1, "full": 2, "selective_op": 3}
    with pytest.raises(ValueError, match=r"unknown method 'dora'; allowed: \['full', 'lora', 'qlora'\]"):
        Method.of("dora")


def test_resolved_columns_hold_enum_codes_and_typed_provenance() -> None:
    resolved = resolve(Scenario(method="lora", recompute="selective", usd_per_gpu_hour=2.5), CATS)
    assert resolved.columns.recipe.method == Method.LORA
    assert resolved.columns.layout.recompute == Recompute.SELECTIVE
    assert isinstance(resolved.gpu_provenance, GpuProvenance)
    assert resolved.price_basis.startswith("your quote, $2.50/GPU-h")
    assert resolved.derived["catalog_usd_per_gpu_hour"] == resolved.gpu_provenance.catalog_usd_per_gpu_hour
    assert not any(f.name.startswith("_") for f in dataclasses.fields(Columns))


def test_output_table_has_one_row_per_key_and_units_match_names() -> None:
    assert len(OUTPUT_BY_KEY) == len(OUTPUTS)
    for output in OUTPUTS:
        if output.unit == "GiB":
            assert "gib" in output.key and output.source.endswith(("_bytes", "_bytes_total", "_per_device"))
        if output.unit == "h":
            assert "_h" in output.key and "_s" in output.source


def test_every_reported_figure_comes_through_the_table() -> None:
    numeric = {
        name
        for name, info in Estimate.model_fields.items()
        if float in get_args(info.annotation) or info.annotation is float
    }
    assert numeric == set(ESTIMATE_FIGURES)
    assert set(compare.FIGURES) <= set(OUTPUT_BY_KEY)
    assert set(sweep_rank._FLOAT) <= set(OUTPUT_BY_KEY)
    out = evaluate(resolve(Scenario(), CATS).columns)
    assert {output.source for output in OUTPUTS} <= set(out)


def test_shown_converts_bytes_seconds_and_flops_once() -> None:
    out = row(evaluate(resolve(Scenario(), CATS).columns), 0)
    figures = shown(out, ("peak_gib_per_device", "wall_clock_h", "peak_tflops", "cost_usd"))
    assert figures["peak_gib_per_device"] == out["peak_bytes"] / 2**30
    assert figures["wall_clock_h"] == out["wall_clock_s"] / 3600.0
    assert figures["peak_tflops"] == out["peak_flops_per_s"] / 1e12
    assert figures["cost_usd"] == out["cost_usd"]  # reported in the unit it is computed in
    assert SCALE == {"GiB": 2.0**30, "h": 3600.0, "min": 60.0, "TFLOP/s": 1e12}
    interval = shown(out, ("checkpoint_interval_min",))["checkpoint_interval_min"]
    assert interval == out["checkpoint_interval_s"] / 60.0  # goodput's interval, in minutes
    assert estimate(Scenario(), CATS).wall_clock_h == figures["wall_clock_h"]  # Estimate reads the same table
