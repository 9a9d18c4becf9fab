"""What a run costs: which $/GPU-hour applies (pricing resolution), then the arithmetic on it.

Resolution and arithmetic are kept apart on purpose: `resolve_rate` decides *which* number applies and says
why (the UI shows that sentence next to the figure); `cost_figures` only multiplies. Every numeric argument
accepts a float or a numpy array (one value per GPU of a catalogue comparison or per row of a sweep) and
broadcasts.

Sources: the discount bands come from `data/pricing_modes.csv` (reference/hardware-and-prices.md §2.5), the
price median/low/high from the dated snapshots in `data/prices/` (§2.3-2.4). This module takes numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from planner.errors import PlannerError

FloatOrArray = float | npt.NDArray[np.float64]

TOKENS_PER_MILLION = 1e6

# Guidance for `Scenario.experiments_multiplier`, shown beside the input. Sources: OPT-175B authors (Zhang et
# al. 2022, Sec. 6 footnote: ablations, baselines and downtime roughly double the 75 t estimate); BigScience
# (Luccioni et al. 2023: all experiments 66.3 t against 24.7 t for the final BLOOM run, about 2.7x); Morrison
# et al. 2025 (OLMo 2 development runs about 50 % of final training, 1.5x). reference/energy.md A5, B7, B9.
EXPERIMENTS_MULTIPLIER_GUIDANCE = (
    "The planner prices one clean run. Real projects pay for more: hyperparameter sweeps, short trial "
    "runs, crashes and restarts, evaluation jobs and the runs you throw away. This multiplier scales cost, "
    "energy and carbon to cover them. Use 1 to repeat a recipe that already works. Use about 1.5 when you "
    "tune a known recipe (AI2 reported development runs costing about half of final training for OLMo 2). "
    "For a first fine-tune of a new model or dataset, expect the searching and the failed attempts to cost "
    "more than the final run itself, so 2 to 3 is realistic (the OPT-175B authors say experimentation "
    "roughly doubled their footprint; BigScience's experiments for BLOOM came to about 2.7 times the final "
    "run)."
)

# Suggested values for a select box; each is argued in EXPERIMENTS_MULTIPLIER_GUIDANCE.
EXPERIMENTS_MULTIPLIER_PRESETS: dict[str, float] = {
    "repeat a working recipe": 1.0,
    "tune a known recipe": 1.5,
    "first fine-tune of a new setup": 2.5,
}


@dataclass(frozen=True)
class RateBand:
    """The $/GPU-hour that applies, its low/high band, and a sentence saying where it came from."""

    usd_per_gpu_hour: FloatOrArray
    usd_per_gpu_hour_low: FloatOrArray
    usd_per_gpu_hour_high: FloatOrArray
    basis: str


@dataclass(frozen=True)
class CostFigures:
    """Cost of the planned work (one run times the experiments multiplier) with its band."""

    usd_per_gpu_hour: FloatOrArray
    single_run_cost_usd: FloatOrArray
    cost_usd: FloatOrArray
    cost_usd_low: FloatOrArray
    cost_usd_high: FloatOrArray
    usd_per_million_tokens: FloatOrArray
    basis: str


def resolve_rate(
    quote_usd_per_gpu_hour: float | None,
    usd_per_gpu_hour_median: FloatOrArray | None,
    usd_per_gpu_hour_low: FloatOrArray | None = None,
    usd_per_gpu_hour_high: FloatOrArray | None = None,
    discount_frac: FloatOrArray = 0.0,
    discount_frac_low: FloatOrArray | None = None,
    discount_frac_high: FloatOrArray | None = None,
    *,
    pricing: str = "on_demand",
    price_source: str = "price snapshot median",
) -> RateBand:
    """Pick the $/GPU-hour: the user's quote if given, else the snapshot median less the pricing discount.

    A quote is a firm number, so its band collapses to it. Otherwise the band pairs the cheap end with the
    cheap end: low = provider low x (1 - largest discount), high = provider high x (1 - smallest discount).
    An unknown provider low/high (None or NaN) falls back to the median. The band is clipped so that
    low <= rate <= high even if a provider bound sits on the wrong side of the median. Missing discount bounds
    default to `discount_frac`. A NaN median (a GPU the snapshot does not price) gives NaN figures.
    """
    if quote_usd_per_gpu_hour is not None:
        rate = float(quote_usd_per_gpu_hour)
        basis = f"your quote, ${rate:,.2f}/GPU-h (overrides the catalogue and the pricing mode)"
        return RateBand(rate, rate, rate, basis)
    if usd_per_gpu_hour_median is None:
        raise PlannerError(
            "usd_per_gpu_hour",
            "no catalogue price for this GPU; enter your quote",
            allowed=">= 0",
            related=("gpu",),
        )
    median = usd_per_gpu_hour_median
    d_low = discount_frac if discount_frac_low is None else discount_frac_low
    d_high = discount_frac if discount_frac_high is None else discount_frac_high
    central = median * (1.0 - np.asarray(discount_frac))
    low = _known_or(usd_per_gpu_hour_low, median) * (1.0 - np.asarray(d_high))
    high = _known_or(usd_per_gpu_hour_high, median) * (1.0 - np.asarray(d_low))
    return RateBand(
        _plain(central),
        _plain(np.minimum(low, central)),
        _plain(np.maximum(high, central)),
        _describe_catalogue_rate(median, discount_frac, d_low, d_high, pricing, price_source),
    )


def run_cost_usd(
    gpu_hours: FloatOrArray, usd_per_gpu_hour: FloatOrArray, experiments_multiplier: FloatOrArray = 1.0
) -> FloatOrArray:
    """Cost = GPU-hours x $/GPU-hour x experiments multiplier (seed: 10 device-hours at $2 = $20.00)."""
    return gpu_hours * usd_per_gpu_hour * experiments_multiplier


def usd_per_million_tokens(
    gpu_hours: FloatOrArray, usd_per_gpu_hour: FloatOrArray, n_training_tokens: FloatOrArray
) -> FloatOrArray:
    """Dollars per million training tokens of one run (no experiments multiplier: a unit price for comparing).

    Tokens are examples x tokens per example x epochs, so a second epoch counts its tokens again.
    """
    return run_cost_usd(gpu_hours, usd_per_gpu_hour) / (n_training_tokens / TOKENS_PER_MILLION)


def cost_figures(
    gpu_hours: FloatOrArray,
    rate: RateBand,
    n_training_tokens: FloatOrArray,
    experiments_multiplier: FloatOrArray = 1.0,
    gpu_hours_low: FloatOrArray | None = None,
    gpu_hours_high: FloatOrArray | None = None,
) -> CostFigures:
    """Cost, its band and the unit price, all from `run_cost_usd`.

    The band combines both uncertainties: the cheapest case is the fewest GPU-hours at the lowest rate, the
    dearest the most GPU-hours at the highest rate. Without a GPU-hours band only the rate band applies.
    """
    hours_low = gpu_hours if gpu_hours_low is None else gpu_hours_low
    hours_high = gpu_hours if gpu_hours_high is None else gpu_hours_high
    return CostFigures(
        usd_per_gpu_hour=rate.usd_per_gpu_hour,
        single_run_cost_usd=run_cost_usd(gpu_hours, rate.usd_per_gpu_hour),
        cost_usd=run_cost_usd(gpu_hours, rate.usd_per_gpu_hour, experiments_multiplier),
        cost_usd_low=run_cost_usd(hours_low, rate.usd_per_gpu_hour_low, experiments_multiplier),
        cost_usd_high=run_cost_usd(hours_high, rate.usd_per_gpu_hour_high, experiments_multiplier),
        usd_per_million_tokens=usd_per_million_tokens(gpu_hours, rate.usd_per_gpu_hour, n_training_tokens),
        basis=rate.basis,
    )


def _known_or(bound: FloatOrArray | None, fallback: FloatOrArray) -> npt.NDArray[np.float64]:
    """The bound where it is known, the fallback where it is None or NaN (element-wise)."""
    if bound is None:
        return np.asarray(fallback, dtype=float)
    bound_array = np.asarray(bound, dtype=float)
    return np.where(np.isnan(bound_array), fallback, bound_array)


def _plain(value: FloatOrArray) -> FloatOrArray:
    """A 0-d array back to a float, so scalar callers get scalars."""
    array = np.asarray(value, dtype=float)
    return float(array) if array.ndim == 0 else array


def _describe_catalogue_rate(
    median: FloatOrArray,
    discount: FloatOrArray,
    d_low: FloatOrArray,
    d_high: FloatOrArray,
    pricing: str,
    price_source: str,
) -> str:
    mode = pricing.replace("_", "-")
    if not all(np.ndim(value) == 0 for value in (median, discount, d_low, d_high)):
        return f"{price_source} per GPU, less the typical {mode} discount; band from provider low/high"
    if np.isnan(float(median)):
        return "no catalogue price for this GPU: enter your quote to get a cost"
    if float(discount) == 0.0 and float(d_low) == 0.0 and float(d_high) == 0.0:
        return (
            f"{price_source}, ${float(median):,.2f}/GPU-h, {mode} (no discount); band from provider low/high"
        )
    return (
        f"{price_source}, ${float(median):,.2f}/GPU-h, less the typical {mode} discount of "
        f"{float(discount):.0%} (observed {float(d_low):.0%}-{float(d_high):.0%}); "
        "band from provider low/high"
    )
