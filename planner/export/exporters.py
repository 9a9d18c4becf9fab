"""`export_plan`: one plan as the configuration file of the target asked for."""

from __future__ import annotations

from planner.catalogue.catalog import Catalogs
from planner.errors import PlannerError
from planner.export import to_accelerate, to_deepspeed, to_megatron, to_torchtitan, to_torchtune
from planner.export.export_types import TARGET_VERSIONS, Export
from planner.inputs.scenario import Scenario
from planner.resolve import with_sequence_length

# The order the CLI's help and the app list them in.
EXPORT_TARGETS: tuple[str, ...] = ("deepspeed", "accelerate", "torchtune", "torchtitan", "megatron")


def export_plan(scenario: Scenario, cats: Catalogs, target: str) -> Export:
    """The plan as `target`'s configuration; `cats` gives the model's shape (Megatron writes it out).

    An unknown target raises `PlannerError` on field `target`, naming the allowed values.
    """
    name = target.strip().lower()
    scenario = with_sequence_length(scenario, cats)  # every target writes the length the estimate uses
    if name == "megatron":
        return to_megatron.export(scenario, cats)
    if name == "deepspeed":
        return to_deepspeed.export(scenario)
    if name == "accelerate":
        return to_accelerate.export(scenario)
    if name == "torchtune":
        return to_torchtune.export(scenario)
    if name == "torchtitan":
        return to_torchtitan.export(scenario)
    raise PlannerError("target", "unknown export target", value=target, allowed=", ".join(EXPORT_TARGETS))


def target_version(target: str) -> str:
    """The release a target's file is written for, e.g. "DeepSpeed v0.16.4"."""
    return TARGET_VERSIONS[target]
