"""`export_plan`: one plan as the configuration file of the target asked for."""

from __future__ import annotations

from dataclasses import replace

from planner.catalogue.catalog import Catalogs
from planner.errors import PlannerError
from planner.export import (
    to_accelerate,
    to_deepspeed,
    to_megatron,
    to_torchtitan,
    to_torchtitan_args,
    to_torchtune,
    to_trl,
)
from planner.export.export_types import TARGET_VERSIONS, Export
from planner.inputs.scenario import Scenario
from planner.resolve import with_sequence_length

# The order the CLI's help and the app list them in.
EXPORT_TARGETS: tuple[str, ...] = (
    "deepspeed",
    "accelerate",
    "torchtune",
    "torchtitan",
    "torchtitan-0.2",
    "megatron",
    "trl",
)


def export_plan(scenario: Scenario, cats: Catalogs, target: str) -> Export:
    """The plan as `target`'s configuration; `cats` gives the model's shape (Megatron writes it out).

    An unknown target raises `PlannerError` on field `target`, naming the allowed values.
    """
    name = target.strip().lower()
    scenario = with_sequence_length(scenario, cats)  # every target writes the length the estimate uses
    if name == "megatron":
        written = to_megatron.export(scenario, cats)
    elif name == "deepspeed":
        written = to_deepspeed.export(scenario)
    elif name == "accelerate":
        written = to_accelerate.export(scenario)
    elif name == "torchtune":
        written = to_torchtune.export(scenario)
    elif name == "torchtitan":
        written = to_torchtitan_args.export(scenario)
    elif name == "torchtitan-0.2":
        written = to_torchtitan.export(scenario)
    elif name == "trl":
        return to_trl.export(scenario)  # a post-training framework: its file carries the objective itself
    else:
        raise PlannerError("target", "unknown export target", value=target, allowed=", ".join(EXPORT_TARGETS))
    return _with_objective_note(written, scenario)


def _with_objective_note(written: Export, scenario: Scenario) -> Export:
    """These targets configure supervised training; a post-training plan says what the file leaves out."""
    if scenario.post_training == "sft" or (scenario.post_training == "dpo" and written.target == "torchtune"):
        return written  # torchtune's DPO recipe and loss are in its file
    missing = (
        f"the {scenario.post_training} objective: this file sets up the policy's training layout only; the "
        "reference, reward and value models, preference pairs and the rollout engine are configured in the "
        "post-training framework (TRL, OpenRLHF, verl, NeMo-RL)"
    )
    return replace(written, not_expressed=(*written.not_expressed, missing))


def target_version(target: str) -> str:
    """The release a target's file is written for, e.g. "DeepSpeed v0.19.8"."""
    return TARGET_VERSIONS[target]
