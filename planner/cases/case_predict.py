"""A case's Scenario through resolve -> evaluate (what `planner.estimate` runs), read out in the row's unit.

Two directions over the same evaluation: `predict_case` reads the evaluated plan in the measured unit (tokens/s
per GPU, samples/s, TFLOP/s, s per iteration, days, GPU-hours, or the memory statistic the row names);
`case_efficiency` finds the compute-only utilisation at which the evaluated step reproduces the measured one
(what the efficiency presets hold, `scripts/derive_efficiency.py`). Only unit conversion lives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.cases.case_row import MEMORY_UNITS, CaseFacts
from planner.catalogue.catalog import Catalogs
from planner.columns import Columns
from planner.evaluate import evaluate, flops_per_token
from planner.formulas.units import SECONDS_PER_HOUR
from planner.inputs.scenario import Scenario
from planner.resolve import resolve

SECONDS_PER_DAY = 86_400.0
MEMORY_KEYS = {"allocated": "allocated_peak_bytes", "reserved": "reserved_peak_bytes", "device": "peak_bytes"}
STEP_PROPORTIONAL_UNITS = ("s_per_iteration", "days", "gpu_hours")  # the rest are inverse to the step time
# Utilisations searched for a measured step (compute-only efficiency): wide enough to report a row that needs
# more than the dense peak (it is then left out of the presets), fine enough for 4 significant digits.
SEARCH_UTILISATION = np.geomspace(1e-3, 2.0, 1201)


def evaluated(scenario: Scenario, cats: Catalogs) -> tuple[Columns, dict[str, Any]]:
    """(resolved input columns, evaluate's outputs) of a case's Scenario."""
    columns = resolve(scenario, cats).columns
    return columns, evaluate(columns)


def predict_case(scenario: Scenario, facts: CaseFacts, cats: Catalogs) -> tuple[float, float]:
    """(predicted value in the row's unit, the compute efficiency the prediction used)."""
    value, efficiency, _, _ = predict_case_basis(scenario, facts, cats)
    return value, efficiency


def predict_case_basis(
    scenario: Scenario, facts: CaseFacts, cats: Catalogs
) -> tuple[float, float, str, bool]:
    """`predict_case`, what the prediction rests on in words (the operator model and its residual, or the
    bare count's efficiency preset, and a flag when the memory model says the plan does not fit), and whether
    the memory model says the plan fits."""
    columns, out = evaluated(scenario, cats)
    value, efficiency = read_out(columns, out, facts), float(columns.gpu.utilisation_frac)
    operator = bool(np.all(columns.model.has_shape > 0)) and not bool(columns.gpu.utilisation_is_end_to_end)
    words = (
        f"operator model, residual {float(columns.gpu.residual_frac):.3f}"
        if operator
        else f"efficiency {efficiency:.3f}"
    )
    fits = float(out["fits_vram"]) != 0.0
    if not fits:
        words += "; flagged: the memory model says this plan does not fit"
    return value, efficiency, words, fits


def read_out(c: Columns, out: Mapping[str, Any], facts: CaseFacts) -> float:
    """Evaluate's outputs in the row's measured unit."""
    unit = interpreted_unit(c, out, facts)
    if unit in MEMORY_UNITS:
        return float(out[MEMORY_KEYS[facts.statistic]]) / facts.unit_bytes
    per_gpu = out["tokens_per_s_per_gpu"]
    n_gpus = c.layout.n_gpus
    readers = {
        "tokens_per_s_per_gpu": lambda: per_gpu,
        "tokens_per_s_total": lambda: per_gpu * n_gpus,
        "samples_per_s_total": lambda: per_gpu * n_gpus / c.workload.seq_len_tokens,
        "tflops_per_gpu_model": lambda: per_gpu * source_flops_per_token(c, facts)[0] / 1e12,
        "tflops_per_gpu_hardware": lambda: per_gpu * source_flops_per_token(c, facts)[1] / 1e12,
        # One optimizer step; for PPO/GRPO one rollout step (generate, score, train), every part included
        # (planner.post.step; for supervised fine-tuning post_step_time_s is step_time_s itself).
        "s_per_iteration": lambda: out["post_step_time_s"],
        # Published run lengths are whole runs: their failures, restarts and redone work included.
        "days": lambda: out["wall_clock_with_failures_s"] / SECONDS_PER_DAY,
        # device hours: the GPUs that only generate count too (0 without post-training)
        "gpu_hours": lambda: (
            out["wall_clock_with_failures_s"] * (n_gpus + c.post.n_generation_gpus) / SECONDS_PER_HOUR
        ),
    }
    return float(np.asarray(readers[unit]()))


def interpreted_unit(c: Columns, out: Mapping[str, Any], facts: CaseFacts) -> str:
    """The unit a value is read in. A tokens/s that its source does not state as per GPU or total is per GPU
    on one GPU (both readings agree); on more GPUs the row cannot be scored without looking at the measured
    value to pick a reading, which would read the answer back into the prediction: it is skipped."""
    if facts.measured_unit != "tokens_per_s_ambiguous":
        return facts.measured_unit
    if float(np.max(c.layout.n_gpus)) == 1.0:
        return "tokens_per_s_per_gpu"
    raise ValueError("tokens/s not stated as per GPU or total on several GPUs: skipped rather than guessed")


def source_flops_per_token(c: Columns, facts: CaseFacts) -> tuple[Any, Any]:
    """(model, hardware) FLOPs per token as the source counts them: Megatron's TFLOP/s counter counts the
    full attention matrix (causal = 0), the planner the causal half (evaluate's own `flops_per_token`)."""
    return flops_per_token(c, causal=0 if facts.full_attention_counted else 1)


def case_efficiency(scenario: Scenario, facts: CaseFacts, cats: Catalogs) -> float | str:
    """The compute-only utilisation at which resolve -> evaluate reproduces the measured value, or why none.

    Every throughput and time unit is proportional or inverse to the step time, so the measured value gives
    a target step; evaluate's step falls strictly as the utilisation rises (timing.step_time_s), so the
    target is found on a grid of utilisations evaluated at once and interpolated in 1 / utilisation (exact
    where the step is linear in it), then refined once on a narrow grid.
    """
    # The presets now serve only bare parameter counts: the FLOP model at a utilisation, which a NaN residual
    # selects for every row (planner.formulas.operators.step.operator_compute)
    columns = evaluated(scenario, cats)[0].replace(residual_frac=np.nan)
    out = evaluate(columns)
    try:
        at_preset = read_out(columns, out, facts)
    except ValueError as err:  # a row that cannot be read without its measured value (ambiguous unit)
        return str(err)
    ratio = facts.measured_value / at_preset
    target_step_s = float(out["step_time_s"]) * (
        ratio if facts.measured_unit in STEP_PROPORTIONAL_UNITS else 1 / ratio
    )
    utilisation = _solve(columns, target_step_s, SEARCH_UTILISATION)
    if isinstance(utilisation, str):
        return utilisation
    refined = _solve(columns, target_step_s, utilisation * np.linspace(0.995, 1.005, 201))
    return utilisation if isinstance(refined, str) else refined


def _solve(columns: Columns, target_step_s: float, grid: np.ndarray) -> float | str:
    probe = np.append(grid, 1e12)  # the last point: compute takes no time, only communication is left
    probed = columns.replace(utilisation_frac=probe, utilisation_frac_low=probe, utilisation_frac_high=probe)
    steps = np.asarray(evaluate(probed, everything=False)["step_time_s"])
    if target_step_s <= steps[-1]:
        return "modelled communication alone exceeds the measured step"
    steps, inverse = steps[:-1][::-1], (1.0 / grid)[::-1]  # ascending in 1 / utilisation
    if target_step_s > steps[-1]:
        return f"implies under {grid[0]:.1%} of the dense peak"
    if target_step_s < steps[0]:
        return f"implies over {grid[-1]:.0%} of the dense peak: inconsistent with the datasheet"
    return float(1.0 / np.interp(target_step_s, steps, inverse))
