"""The Compare GPUs table: its columns, the "would need" note and the grey rows of GPUs that do not fit.

`planner.sort_rows` already puts the GPUs that fit first under every sort; here the others are greyed and say how
many GPUs of their type the run would need (`min_gpus_to_fit`, searched up to `planner.COMPARE_MAX_GPUS`).
"""

from __future__ import annotations

from typing import Any

import polars as pl
import streamlit as st

from planner import COMPARE_MAX_GPUS, plural
from ui import format as fmt

# Streamlit 1.67's grid applies a Styler's text colour to the pinned column only; the grey background reaches
# every cell (checked in chromium), so rows that do not fit get both.
GREY = "color: #9e9e9e; background-color: rgba(128, 128, 128, 0.12)"
TABLE_COLUMNS: dict[str, Any] = {
    "gpu": st.column_config.TextColumn("GPU", pinned=True),
    "vendor": st.column_config.TextColumn("Vendor"),
    "is_scenario_gpu": st.column_config.CheckboxColumn("Your GPU"),
    "fits_vram": None,  # kept in the data (greying, filters); shown in words as `fit` or `fit_verdict`
    "fit": st.column_config.TextColumn(
        "Fits?", help="fits; tight: the estimate fits, the high end of its error band does not; does not fit"
    ),
    "would_need": st.column_config.TextColumn(
        "Would need", help="For a GPU that does not fit at this count: the fewest GPUs of its type that fit."
    ),
    "min_gpus_to_fit": st.column_config.NumberColumn("Fewest GPUs that fit", format="%d"),
    "memory_gib": st.column_config.NumberColumn("Memory (GiB)", format="%.1f"),
    "peak_gib_per_device": st.column_config.NumberColumn("Peak use (GiB)", format="%.1f"),
    "fit_verdict": st.column_config.TextColumn(
        "Memory verdict",
        help="tight: the estimate fits, the high end of the memory model's error band does not",
    ),
    "peak_gib_high": st.column_config.NumberColumn("Peak, high end (GiB)", format="%.1f"),
    "wall_clock": st.column_config.TextColumn("Wall clock"),
    "bound_by": st.column_config.TextColumn(
        "Bound by", help="What the step waits on most at this GPU count."
    ),
    "bound": st.column_config.TextColumn(
        "Bound by", help="What the step waits on most at this GPU count (All columns says what in detail)."
    ),
    "wall_clock_h": None,  # kept in the data (tests, sorting); shown as the text column above
    "device_hours": st.column_config.NumberColumn("GPU-hours", format="%.1f"),
    "cost_usd": st.column_config.NumberColumn("Cost (USD)", format="$%.2f"),
    "cost_usd_low": st.column_config.NumberColumn("Cost low", format="$%.2f"),
    "cost_usd_high": st.column_config.NumberColumn("Cost high", format="$%.2f"),
    "usd_per_million_tokens": st.column_config.NumberColumn("$ per M tokens", format="$%.3f"),
    "energy_kwh": st.column_config.NumberColumn("Energy (kWh)", format="%.1f"),
    "co2e_kg": st.column_config.NumberColumn("CO2e (kg)", format="%.1f"),
    "on_frontier": st.column_config.CheckboxColumn("Pareto"),
    "usd_per_gpu_hour": st.column_config.NumberColumn("$/GPU-h", format="$%.2f"),
    "price_snapshot": st.column_config.TextColumn("Price snapshot"),
    "price_basis": st.column_config.TextColumn("Price source"),
    # post-training: only a post-training comparison carries these (planner.decide.compare)
    "reference_model_gib": st.column_config.NumberColumn("Reference (GiB)", format="%.1f"),
    "reward_model_gib": st.column_config.NumberColumn("Reward model (GiB)", format="%.1f"),
    "value_model_gib": st.column_config.NumberColumn("Value model (GiB)", format="%.1f"),
    "kv_cache_gib": st.column_config.NumberColumn("KV cache (GiB)", format="%.2f"),
    "generation_time_h": st.column_config.NumberColumn("Generation (h)", format="%.2f"),
    "training_time_h": st.column_config.NumberColumn("Training (h)", format="%.2f"),
    "generation_frac": st.column_config.NumberColumn(
        "Generating", format="percent", help="Share of the compute wall clock spent generating rollouts."
    ),
    "peak_phase": st.column_config.TextColumn("Peak phase"),
    # vision-language and diffusion plans: only a multimodal comparison carries these (planner.decide.compare)
    "vision_encoder_gib": st.column_config.NumberColumn("Vision encoder (GiB)", format="%.2f"),
    "text_encoders_gib": st.column_config.NumberColumn("Text encoders (GiB)", format="%.2f"),
    "vae_gib": st.column_config.NumberColumn("VAE (GiB)", format="%.2f"),
    "image_tokens_per_example": st.column_config.NumberColumn("Image tokens per example", format="%,.0f"),
    "images_per_s": st.column_config.NumberColumn("Images/s", format="%.3g"),
    "epoch_wall_clock_h": st.column_config.NumberColumn("Epoch (h)", format="%.2f"),
    "epoch_cost_usd": st.column_config.NumberColumn("Epoch cost (USD)", format="$%.2f"),
    "status": st.column_config.TextColumn("Notes"),
    "origin": st.column_config.TextColumn("Data"),
}


# The columns shown unless "All columns" is on: eleven that fit a 1440 px page without a sideways scroll.
COMPACT_COLUMNS = (
    "gpu", "fit", "would_need", "wall_clock", "cost_usd", "bound", "usd_per_gpu_hour", "memory_gib",
    "peak_gib_per_device", "energy_kwh", "status",
)  # fmt: skip


# The memory verdict in a word or three for the compact table (the full words are the "Memory verdict" column).
SHORT_VERDICTS = {"fits": "fits", "tight — may run out of memory": "tight", "does not fit": "does not fit"}


def short_verdict(verdict: str | None) -> str:
    """`fit_verdict` shortened to "fits", "tight" or "does not fit"; "unknown" when it could not be computed."""
    return SHORT_VERDICTS.get(verdict or "", "unknown")


def short_bound(words: str | None) -> str | None:
    """`bound_by` without its detail ("communication-bound: data-parallel gradient sync" → "communication-bound"),
    so the compact table keeps within the page; the detail is in All columns and the GPU's own summary."""
    if words is None:
        return None
    return words.split(":", 1)[0].split(" (", 1)[0]


def would_need(fits: bool | None, fewest: int | None) -> str:
    """What a GPU needs to run the plan: nothing ("") when it fits at this count, else the fewest that fit."""
    if fits:
        return ""
    if fits is None:
        return "unknown"
    if fewest is None:
        return f"more than {COMPARE_MAX_GPUS:,} GPUs"
    return plural(fewest, "GPU")


def with_wall_clock(rows: pl.DataFrame) -> pl.DataFrame:
    """Add `wall_clock`: `wall_clock_h` as text in the unit that reads best ("20 min", "3.2 days")."""
    return rows.with_columns(
        pl.Series("wall_clock", [fmt.hours(h) for h in rows["wall_clock_h"]], dtype=pl.String)
    )


def table_frame(rows: pl.DataFrame) -> pl.DataFrame:
    """The table's columns, in TABLE_COLUMNS order, with the text columns the table adds."""
    added = with_wall_clock(rows).with_columns(
        pl.Series(
            "would_need",
            [would_need(f, n) for f, n in zip(rows["fits_vram"], rows["min_gpus_to_fit"], strict=True)],
            dtype=pl.String,
        ),
        pl.Series("fit", [short_verdict(v) for v in rows["fit_verdict"]], dtype=pl.String),
        pl.Series("bound", [short_bound(b) for b in rows["bound_by"]], dtype=pl.String),
    )
    return added.select([name for name in TABLE_COLUMNS if name in added.columns])


def column_order(table: pl.DataFrame, all_columns: bool) -> list[str]:
    """The columns drawn: COMPACT_COLUMNS, or every column that has a header (not the raw hours); with all columns
    the verdict and what bounds the step are shown once, in full, not also shortened."""
    kept = set(TABLE_COLUMNS) - {"fit", "bound"} if all_columns else set(COMPACT_COLUMNS)
    return [name for name in table.columns if name in kept and TABLE_COLUMNS.get(name) is not None]


def shown_csv_frame(table: pl.DataFrame, order: list[str]) -> pl.DataFrame:
    """The table as shown, for the CSV: the columns drawn, in their order, under their headers."""
    return table.select(order).rename({name: TABLE_COLUMNS[name]["label"] for name in order})


def styled(frame: pl.DataFrame) -> Any:
    """A pandas Styler that greys every cell of the rows that do not fit at this GPU count."""
    return frame.to_pandas().style.apply(_grey_unless_fits, axis=1)


def _grey_unless_fits(row: Any) -> list[str]:
    return [GREY if row["fits_vram"] is not True else ""] * len(row)
