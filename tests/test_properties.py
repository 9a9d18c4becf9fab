"""Properties of `planner.estimate` over random valid scenarios, and of validation over random invalid ones.

Strategies stay within realistic ranges (catalogue GPUs and presets, layouts built as tp·pp·cp·dp) so each of the
200+ examples per property takes milliseconds; the extreme values are the hostile-input tests' business.
"""

from __future__ import annotations

import json
import math
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.catalogue.catalog import default_catalogs, supported_precisions
from planner.catalogue.models import load_model_presets, preset_names
from planner.estimate import estimate
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import CUSTOM_MODEL, Scenario
from planner.multimodal.outputs import MultimodalFigures
from planner.results import Estimate
from tests.ci import n_examples

PROPERTY = settings(max_examples=n_examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])

CATS = default_catalogs()
GPUS = CATS.gpus["name"].to_list()
# The precisions each GPU can run: a drawn scenario pairs its GPU with one of them, since any other pair is
# refused (tests/test_precision_support.py checks every refused pair).
RUNS = {name: supported_precisions(CATS.gpu(name)) for name in GPUS}
REGIONS = CATS.grid["region"].to_list()
SNAPSHOTS = ["", *CATS.snapshot_ids()]
PRESETS = preset_names(load_model_presets())

# Figures that may be None (or NaN) and the `unavailable` key that must then explain why.
NEEDS_SHAPE = {
    "peak_phase",
    "activations_gib",
    "logits_gib",
    "fragmentation_gib",
    "peak_gib_per_device",
    "peak_allocated_gib",  # the three named memory statistics
    "peak_reserved_gib",
    "device_total_gib",
    "headroom_gib",
    "max_micro_batch",
    "loading_peak_gib",  # the model-loading peak needs the layer count
}
NEEDS_PRICE = {
    "cost_usd",
    "cost_usd_low",
    "cost_usd_high",
    "usd_per_gpu_hour",
    "usd_per_million_tokens",
    "cost_with_failures_usd",
}
WITH_FAILURES = {  # unknown when the run never finishes (failures outpace it), like everything timed
    "wall_clock_with_failures_h",
    "gpu_hours_with_failures",
    "cost_with_failures_usd",
    "energy_with_failures_kwh",
    "expected_failures",
    "lost_work_h",
    "restarts_h",
}
GOODPUT_OFF = {"checkpoint_interval_min", "job_mtbf_h"}  # failure rate 0: no interval, no MTBF
NEEDS_PEAK_RATE = {  # no peak rate for this GPU at this precision: nothing that depends on time is known
    "per_device_flops_per_s",
    "cluster_flops_per_s",
    "wall_clock_h",
    "wall_clock_h_low",
    "wall_clock_h_high",
    "device_hours",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "step_time_s",
    "comm_time_s",
    "bubble_frac",
    "mfu",
    "hfu",
    "peak_tflops",
    "energy_kwh",
    "energy_kwh_low",
    "energy_kwh_high",
    "gpu_energy_kwh",
    "host_energy_kwh",
    "facility_overhead_kwh",
    "co2e_kg",
    "co2e_kg_low",
    "co2e_kg_high",
    "electricity_cost_usd",
    *NEEDS_PRICE,
}
MAY_BE_NEGATIVE = {"headroom_gib"}  # negative headroom is the "does not fit" answer


def _explained_missing(unavailable: dict[str, str]) -> set[str]:
    allowed: set[str] = set()
    if {"activations_gib", "peak_gib_per_device"} & set(unavailable):
        allowed |= NEEDS_SHAPE
    if "cost_usd" in unavailable:
        allowed |= NEEDS_PRICE
    if "peak_tflops" in unavailable:
        allowed |= NEEDS_PEAK_RATE | WITH_FAILURES | {"goodput_frac"}
    if "wall_clock_with_failures_h" in unavailable:
        allowed |= WITH_FAILURES
    if "checkpoint_interval_min" in unavailable:
        allowed |= GOODPUT_OFF
    return allowed


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


def real(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


@st.composite
def layouts(draw: st.DrawFn) -> dict[str, int]:
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([1, 2, 4]))
    cp = draw(st.sampled_from([1, 2]))
    dp = draw(st.integers(1, 64))
    return {"tp": tp, "pp": pp, "cp": cp, "n_gpus": tp * pp * cp * dp}


@st.composite
def models(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 5)) == 0:  # one in six: a bare parameter count (no shape)
        return {"model": CUSTOM_MODEL, "params_b": draw(real(0.05, 2000))}
    return {"model": draw(st.sampled_from(PRESETS))}


@st.composite
def scenarios(draw: st.DrawFn, **fixed: Any) -> Scenario:
    """Any valid scenario in realistic ranges; `fixed` pins fields (or strategies) for one property."""
    gpu = draw(st.sampled_from(GPUS))
    fields: dict[str, Any] = {
        **draw(models()),
        **draw(layouts()),
        "examples": draw(st.integers(1, 10_000_000)),
        "tokens_per_example": draw(real(1, 32_768)),
        "epochs": draw(real(0.01, 10)),
        "total_tokens_b": draw(optional(real(0.001, 20_000))),
        "seq_len": draw(st.sampled_from([512, 1024, 2048, 4096, 8192, 32_768, 131_072])),
        "packing": draw(st.booleans()),
        "gpu": gpu,
        "gpus_per_node": draw(st.sampled_from([1, 2, 4, 8, 16])),
        "peak_tflops": draw(optional(real(1, 5000))),
        "vram_gib": draw(optional(real(1, 300))),
        "mfu": draw(optional(real(0.01, 1))),
        "efficiency_band": draw(st.sampled_from(["low", "typical", "high"])),
        "flops_per_param_token": draw(optional(real(1, 20))),
        "inter_node_gb_per_s": draw(real(1, 1000)),
        "overlap_frac": draw(real(0, 1)),
        "storage_gb_per_s": draw(optional(real(0.1, 100))),
        "n_checkpoints": draw(st.integers(0, 100)),
        "method": draw(st.sampled_from(["full", "lora", "qlora"])),
        "lora_rank": draw(st.sampled_from([1, 4, 8, 16, 64, 256])),
        "lora_targets": draw(st.sampled_from(["attention", "all_linear"])),
        "qlora_double_quant": draw(st.booleans()),
        "optimizer": draw(st.sampled_from(["adamw", "adamw_8bit", "sgd", "sgd_momentum", "adafactor"])),
        "precision": draw(st.sampled_from(RUNS[gpu])),
        "bytes_per_param": draw(optional(real(0.5, 32))),
        "zero_stage": draw(st.integers(0, 3)),
        "hybrid_shard": draw(st.booleans()),
        "recompute": draw(st.sampled_from(["none", "selective", "full"])),
        "micro_batch": draw(st.integers(1, 64)),
        "grad_accum": draw(st.integers(1, 128)),
        "sequence_parallel": draw(st.booleans()),
        "flash_attention": draw(st.booleans()),
        "fused_cross_entropy": draw(st.booleans()),
        "offload_optimizer": draw(st.booleans()),
        "offload_params": draw(st.booleans()),
        "offload_activations": draw(st.booleans()),
        "optimizer_in_backward": draw(st.booleans()),
        "dropout": draw(st.booleans()),
        "overhead_gib": draw(real(0, 10)),
        "fragmentation_frac": draw(real(0, 0.5)),
        "usd_per_gpu_hour": draw(optional(real(0, 100))),
        "pricing": draw(st.sampled_from(["on_demand", "spot", "commit_1y", "commit_3y"])),
        "snapshot": draw(st.sampled_from(SNAPSHOTS)),
        "experiments_multiplier": draw(real(1, 10)),
        "region": draw(st.sampled_from(REGIONS)),
        "pue": draw(real(1, 3)),
        "gpu_util_frac": draw(real(0, 1)),
        "idle_power_frac": draw(real(0, 1)),
        "host_overhead_frac": draw(real(0, 1)),
        "usd_per_kwh": draw(real(0, 1)),
        # goodput: off, or up to 30 times the default rate; auto or a fixed interval
        "failures_per_gpu_hour": draw(st.sampled_from([0.0, 3.4e-5]) | real(1e-6, 1e-3)),
        "checkpoint_interval_min": draw(optional(real(1, 10_000))),
        "checkpoint_write_s": draw(optional(real(0.01, 10_000))),
        "restart_min": draw(real(0, 120)),
    }
    for key, value in fixed.items():
        fields[key] = draw(value) if isinstance(value, st.SearchStrategy) else value
    return Scenario.model_validate(fields)


NUMERIC_RESULTS = [
    name
    for name, info in Estimate.model_fields.items()
    if {float, int} & {info.annotation, *get_args(info.annotation)}
]


def _numbers(est: Estimate) -> dict[str, float | None]:
    """Every numeric figure; NaN counts as missing, like None."""
    values = {name: getattr(est, name) for name in NUMERIC_RESULTS}
    return {k: None if v is None or math.isnan(v) else float(v) for k, v in values.items()}


@PROPERTY
@given(scenarios())
# found: a LoRA run without a shape writes 0-byte checkpoints; Daly's interval is then 0 and writes were NaN
@example(s=Scenario(model="", params_b=1.0, method="lora", n_gpus=1, restart_min=0.0))
def test_every_figure_is_finite_non_negative_or_explained(s: Scenario) -> None:
    est = estimate(s, default_catalogs())
    explained = _explained_missing(est.unavailable)
    if not est.token_rule:  # a text model: the image figures (planner.multimodal.outputs) do not apply
        explained |= set(MultimodalFigures.model_fields)
    for key, value in _numbers(est).items():
        if value is None:
            assert key in explained, f"{key} is missing but `unavailable` says nothing: {est.unavailable}"
            continue
        assert math.isfinite(value), f"{key} = {value}"
        if key not in MAY_BE_NEGATIVE:
            assert value >= 0, f"{key} = {value}"
    assert all(reason.strip() for reason in est.unavailable.values())
    if est.peak_gib_per_device is None:
        assert est.peak_phase is None or "peak_gib_per_device" in explained
    # Whether it fits is always answered: from the peak, or from model state + overhead without a shape.
    assert est.fits_vram is not None
    json.dumps(est.to_flat(), allow_nan=False)  # the CLI's JSON: NaN never leaves the library


# Found by this test (a merge of the expert-parallel work): with parameter offload and overlap 1, host transfers and the gradient
# sync both hid behind the same compute, so the fast end of the band took longer than the slow end.
OFFLOAD_AND_SYNC_EXCEED_COMPUTE = Scenario(
    params_b=1.0, examples=1, tokens_per_example=1.0, epochs=1.0, seq_len=512, packing=False, gpu="H100 SXM",
    n_gpus=2, gpus_per_node=1, efficiency_band="low", inter_node_gb_per_s=1.0, overlap_frac=1.0, n_checkpoints=0,
    lora_rank=1, lora_targets="attention", qlora_double_quant=False, flash_attention=False, offload_params=True,
    overhead_gib=0.0, fragmentation_frac=0.0, pue=1.0, gpu_util_frac=0.0, idle_power_frac=0.0,
    host_overhead_frac=0.0, usd_per_kwh=0.0,
)  # fmt: skip


@PROPERTY
@given(scenarios())
@example(s=OFFLOAD_AND_SYNC_EXCEED_COMPUTE)
def test_bands_bracket_the_typical_figure(s: Scenario) -> None:
    est = estimate(s, default_catalogs())
    for name in ("wall_clock_h", "cost_usd", "energy_kwh", "co2e_kg"):
        typical, low, high = (getattr(est, name + suffix) for suffix in ("", "_low", "_high"))
        if typical is None or math.isnan(typical):
            continue
        assert low <= typical * (1 + 1e-12) and typical <= high * (1 + 1e-12), (name, low, typical, high)


@PROPERTY
@given(scenarios())
def test_device_hours_and_cost_follow_from_wall_clock(s: Scenario) -> None:
    est = estimate(s, default_catalogs())
    assume(not math.isnan(est.wall_clock_h))
    # DESIGN.md §4 / the seed: GPU-hours = wall clock × GPUs; cost = GPU-hours × rate × experiments.
    assert est.device_hours == pytest.approx(est.wall_clock_h * s.n_gpus, rel=1e-9)
    if est.cost_usd is not None:
        assert est.usd_per_gpu_hour is not None
        expected = est.device_hours * est.usd_per_gpu_hour * s.experiments_multiplier
        assert est.cost_usd == pytest.approx(expected, rel=1e-9, abs=1e-12)
    if s.usd_per_gpu_hour is not None:  # your quote overrides every catalogue price
        assert est.usd_per_gpu_hour == pytest.approx(s.usd_per_gpu_hour, rel=1e-12, abs=1e-12)


def _doubled(s: Scenario) -> Scenario:
    if s.total_tokens_b is not None:
        return s.updated(total_tokens_b=2 * s.total_tokens_b)
    return s.updated(epochs=2 * s.epochs)


LINEAR_IN_TOKENS = ("wall_clock_h", "device_hours", "cost_usd", "energy_kwh", "co2e_kg", "total_flops")


@PROPERTY
@given(scenarios(storage_gb_per_s=None, mfu=real(0.01, 1), epochs=real(0.01, 5)))
def test_doubling_tokens_doubles_time_cost_energy_exactly_seed_style(s: Scenario) -> None:
    """With an end-to-end MFU (the seed's figure) and no checkpoint I/O, time is FLOPs ÷ rate: linear."""
    one, two = estimate(s, default_catalogs()), estimate(_doubled(s), default_catalogs())
    assume(not math.isnan(one.wall_clock_h))
    for name in LINEAR_IN_TOKENS:
        a, b = getattr(one, name), getattr(two, name)
        if a is not None:
            assert b == pytest.approx(2 * a, rel=1e-9), name
    assert two.tokens_per_s == pytest.approx(one.tokens_per_s, rel=1e-9)
    assert two.peak_gib_per_device == one.peak_gib_per_device  # memory does not depend on run length


@PROPERTY
@given(scenarios(storage_gb_per_s=None, epochs=real(0.01, 5)))
def test_doubling_tokens_doubles_time_with_preset_utilisation_too(s: Scenario) -> None:
    """Also holds with a preset MFU, communication and pipeline bubbles: all are per step, and the run time
    counts (fractional) steps, so it stays linear in tokens."""
    one, two = estimate(s, default_catalogs()), estimate(_doubled(s), default_catalogs())
    assume(not math.isnan(one.wall_clock_h))
    for name in LINEAR_IN_TOKENS:
        a, b = getattr(one, name), getattr(two, name)
        if a is not None:
            assert b == pytest.approx(2 * a, rel=1e-9), name


@PROPERTY
@given(scenarios(storage_gb_per_s=real(0.1, 100), n_checkpoints=st.integers(1, 100), epochs=real(0.01, 5)))
def test_checkpoint_io_is_a_fixed_cost_so_doubling_tokens_less_than_doubles_time(s: Scenario) -> None:
    """Checkpoint writes depend on their count, not on the tokens: T(2x) = 2·T(x) − I/O time."""
    one, two = estimate(s, default_catalogs()), estimate(_doubled(s), default_catalogs())
    assume(not math.isnan(one.wall_clock_h))
    assert one.checkpoint_io_h > 0
    assert two.checkpoint_io_h == pytest.approx(one.checkpoint_io_h, rel=1e-12)
    assert two.wall_clock_h == pytest.approx(2 * one.wall_clock_h - one.checkpoint_io_h, rel=1e-9)


@st.composite
def data_parallel_pairs(draw: st.DrawFn) -> tuple[Scenario, Scenario]:
    """The same global batch on dp and f·dp replicas: grad_accum shrinks by f as replicas grow by f."""
    factor = draw(st.sampled_from([2, 4, 8]))
    accum_wide = draw(st.integers(1, 16))
    tp, pp, dp = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2])), draw(st.integers(1, 32))
    narrow = draw(
        scenarios(
            model=st.sampled_from(PRESETS),  # per-GPU peak needs a shape
            tp=tp,
            pp=pp,
            cp=1,
            n_gpus=tp * pp * dp,
            grad_accum=factor * accum_wide,
        )
    )
    return narrow, narrow.updated(n_gpus=tp * pp * dp * factor, grad_accum=accum_wide)


# Found by a random run (expert tensor parallelism merge): on one GPU with parameters offloaded, the
# routed experts were not counted as gathered, so 1 GPU peaked below 2 (6.57 vs 11.98 GiB).
_OFFLOADED_MOE = Scenario(
    model="Mixtral 8x7B",
    method="lora",
    zero_stage=3,
    offload_params=True,
    gpus_per_node=1,
    n_gpus=1,
    grad_accum=2,
)

# Found by a random run: with the optimizer stepped in backward and no ZeRO, one GPU held only a layer's dense
# gradients while two held its routed experts' too (0.24 vs 2.70 GiB of Mixtral gradients): the experts' gradients
# of the layer being stepped are on the GPU however the states are sharded.
_IN_BACKWARD_MOE = Scenario(
    model="Mixtral 8x7B",
    zero_stage=0,
    optimizer_in_backward=True,
    flash_attention=False,
    gpus_per_node=1,
    n_gpus=1,
    grad_accum=2,
    seq_len=512,
)


@PROPERTY
@given(data_parallel_pairs())
@example((_OFFLOADED_MOE, _OFFLOADED_MOE.updated(n_gpus=2, grad_accum=1)))
@example((_IN_BACKWARD_MOE, _IN_BACKWARD_MOE.updated(n_gpus=2, grad_accum=1)))
def test_more_data_parallel_gpus_never_raise_per_gpu_memory(pair: tuple[Scenario, Scenario]) -> None:
    narrow, wide = pair
    few, many = estimate(narrow, default_catalogs()), estimate(wide, default_catalogs())
    assert few.global_batch_tokens == pytest.approx(many.global_batch_tokens, rel=1e-12)
    assert many.model_state_gib_per_device <= few.model_state_gib_per_device * (1 + 1e-9)
    assert few.peak_gib_per_device is not None and many.peak_gib_per_device is not None
    # the one term allowed to grow: the NCCL communicator a first data-parallel group opens (256 MiB,
    # planner/formulas/memory/device_overhead.py), outside the tensors
    assert many.overhead_gib - few.overhead_gib <= 0.25 + 1e-9
    assert many.peak_gib_per_device - many.overhead_gib <= (few.peak_gib_per_device - few.overhead_gib) * (
        1 + 1e-9
    )
    if narrow.pp == 1:
        # With pipeline stages the components shown are those of the stage at the peak, and which stage
        # peaks can change with the accumulation steps (1F1B keeps min(grad_accum, pp) micro-batches on the
        # first one), so per-component monotonicity only holds for a single stage.
        for name in ("weights_gib", "gradients_gib", "optimizer_gib", "master_gib", "activations_gib"):
            a, b = getattr(few, name), getattr(many, name)
            assert b <= a * (1 + 1e-9), (name, a, b)


# ---------------------------------------------------------------------------------------------------------
# Invalid input: every out-of-range value is rejected, and the message names the field.


def _bounds(name: str) -> tuple[float | None, bool, float | None]:
    """(low, low_inclusive, high) of a numeric Scenario field."""
    low, inclusive, high = None, True, None
    for meta in Scenario.model_fields[name].metadata:
        if getattr(meta, "ge", None) is not None:
            low, inclusive = float(meta.ge), True
        if getattr(meta, "gt", None) is not None:
            low, inclusive = float(meta.gt), False
        if getattr(meta, "le", None) is not None:
            high = float(meta.le)
    return low, inclusive, high


def _base_type(name: str) -> Any:
    """The annotation without its `| None`."""
    annotation = Scenario.model_fields[name].annotation
    if get_origin(annotation) in (Union, UnionType):
        return next(a for a in get_args(annotation) if a is not type(None))
    return annotation


NUMERIC = sorted(
    name
    for name in Scenario.model_fields
    if _base_type(name) in (int, float) and _bounds(name) != (None, True, None)
)
CHOICES = sorted(name for name in Scenario.model_fields if get_origin(_base_type(name)) is Literal)
BOOLEANS = sorted(name for name in Scenario.model_fields if _base_type(name) is bool)
TEXT_LIMITS = {"model": 120, "gpu": 120, "region": 80, "snapshot": 40}


@st.composite
def invalid_values(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["range", "range", "non_finite", "choice", "boolean", "text"]))
    if kind == "choice":
        name = draw(st.sampled_from(CHOICES))
        allowed = set(get_args(_base_type(name)))
        value = draw(st.text(max_size=12).filter(lambda v: v not in allowed))
        return name, value
    if kind == "boolean":
        name = draw(st.sampled_from(BOOLEANS))
        # pydantic accepts true/false/yes/no/on/off/1/0 (any case); anything else is rejected
        words = {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "y", "n"}
        return name, draw(st.text(min_size=1, max_size=8).filter(lambda v: v.strip().lower() not in words))
    if kind == "text":
        name = draw(st.sampled_from(sorted(TEXT_LIMITS)))
        return name, "x" * (TEXT_LIMITS[name] + draw(st.integers(1, 500)))
    name = draw(st.sampled_from(NUMERIC))
    if kind == "non_finite":
        return name, draw(st.sampled_from([math.nan, math.inf, -math.inf]))
    low, inclusive, high = _bounds(name)
    integer = _base_type(name) is int
    side = draw(
        st.sampled_from([side for side, bound in (("low", low), ("high", high)) if bound is not None])
    )
    if side == "high":
        assert high is not None
        value = high + draw(st.sampled_from([1.0, 10.0, 1e6, 1e15]))
    else:
        assert low is not None
        # ge: anything below the bound; gt: the bound itself is already out
        smallest = 1.0 if integer else (1e-6 if inclusive else 0.0)
        value = low - draw(st.sampled_from([smallest, 1.0, 1e3, 1e12]))
    return name, int(value) if integer else value


@PROPERTY
@given(invalid_values())
def test_invalid_values_are_rejected_naming_the_field(case: tuple[str, Any]) -> None:
    name, value = case
    with pytest.raises(ValidationError) as caught:
        Scenario().updated(**{name: value})
    error = scenario_error(caught.value)
    assert name in error.fields, (error.fields, str(error))
    message = str(error)
    assert "\n" not in message and len(message) < 400, message


@PROPERTY
@given(st.text(min_size=1, max_size=30).filter(lambda k: k not in Scenario.model_fields), st.integers())
def test_unknown_fields_are_rejected_naming_them(key: str, value: int) -> None:
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate({key: value})
    error = scenario_error(caught.value)
    assert error.field == key and str(error).startswith(f"{key}:")
