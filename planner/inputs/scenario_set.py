"""A named set of saved scenarios: name rules, order-keeping edits and the side-by-side comparison.

Pure (no streamlit): the Scenarios page keeps the dict in its session and calls these; the CSV reader shares the
name rules so a file can never hold a name the page would refuse.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel

from planner.inputs.scenario import Scenario

MAX_NAME_CHARS = 80  # fits a table column and a file name; long enough for "8B LoRA r=64, 4xH100, spot"
# A saved list is a working set of alternatives, not a sweep (the sweep has its own export). Re-estimating
# 1,000 scenarios takes ~4 s at ~4 ms each (measured on the bundled catalogues), about the most a page can do.
MAX_SAVED = 1_000


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a saved scenario, or None. Callers strip surrounding spaces first."""
    if not name:
        return "a name is needed"
    if len(name) > MAX_NAME_CHARS:
        return f"a name has at most {MAX_NAME_CHARS} characters (this one has {len(name)})"
    if name != name.strip():
        return "a name cannot start or end with spaces"
    if any(unicodedata.category(char) == "Cc" for char in name):
        return "a name cannot contain tabs, line breaks or other control characters"
    return None


def copy_name(name: str, taken: Sequence[str] | set[str]) -> str:
    """ "<name> (copy)", then "(copy 2)", ...: the first one free, shortened to fit the length limit."""
    for number in range(1, MAX_SAVED + 2):
        suffix = " (copy)" if number == 1 else f" (copy {number})"
        candidate = name[: MAX_NAME_CHARS - len(suffix)].rstrip() + suffix
        if candidate not in taken:
            return candidate
    raise ValueError("no free copy name")  # unreachable while the set holds at most MAX_SAVED names


def renamed(saved: Mapping[str, Scenario], old: str, new: str) -> dict[str, Scenario]:
    """The set with `old` renamed to `new`, in the same position (a rename should not reorder the table)."""
    return {new if name == old else name: scenario for name, scenario in saved.items()}


def summary_rows(
    saved: Mapping[str, Scenario], results: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The saved-scenarios table: key inputs and headline results (`scenario_io.headline_results`) by name."""
    rows = []
    for name, item in saved.items():
        found = results[name]
        rows.append(
            {
                "Name": name,
                "Model": item.model
                or (item.model_shape.name if item.model_shape else f"{item.params_b:g} B"),
                "Method": item.method,
                "GPU": f"{item.n_gpus} × {item.gpu}",
                "Tokens (B)": item.training_tokens / 1e9,
                "Wall clock (h)": found["wall_clock_h"],
                "GPU-hours": found["device_hours"],
                "Cost (USD)": found["cost_usd"],
                "Peak GiB/GPU": found["peak_gib_per_device"],
                "Fits": {True: "yes", False: "no", None: "?"}[found["fits_vram"]],
                "Energy (kWh)": found["energy_kwh"],
                "CO2e (kg)": found["co2e_kg"],
                "Problem": found["estimate_problem"] or "",
            }
        )
    return rows


class ComparisonRow(NamedTuple):
    field: str
    values: list[str]
    differs: bool


def comparison_rows(chosen: Sequence[Scenario], only_differing: bool = False) -> list[ComparisonRow]:
    """One row per input: its value in each chosen scenario as text, and whether they differ."""
    rows = []
    for field in Scenario.model_fields:
        raw = [getattr(scenario, field) for scenario in chosen]
        differs = any(value != raw[0] for value in raw[1:])
        if differs or not only_differing:
            rows.append(ComparisonRow(field, [input_label(value) for value in raw], differs))
    return rows


def input_label(value: Any) -> str:
    """An input as a person reads it in a table: empty overrides say so, an imported shape gives its size."""
    if value is None:
        return "— (default)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, BaseModel):
        shape = value.model_dump()
        return f"{shape['name']}: {shape['n_layers']} layers × {shape['hidden_size']} wide"
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value) if value != "" else "— (empty)"
