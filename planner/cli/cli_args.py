"""Command-line flags for every scenario field, generated from the Scenario so the two never drift apart."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from planner.inputs.scenario import CUSTOM_MODEL, Scenario

# The seed's flag names (DESIGN.md §4) for fields whose Scenario names differ.
SEED_ALIASES: dict[str, str] = {
    "devices": "n_gpus",
    "usd_per_device_hour": "usd_per_gpu_hour",
}
EXTRA_ALIASES: dict[str, str] = {"zero": "zero_stage", "gpus": "n_gpus"}
SKIPPED_FIELDS = {"model_shape"}  # set through --model-config FILE


class InputError(ValueError):
    """Bad command-line input: reported as one line, exit status 2."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario_file", nargs="?", help="a scenario JSON file (see `schema`)")
    parser.add_argument("--model-config", help="a Hugging Face config.json to take the model shape from")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="set any field")
    aliases = {**SEED_ALIASES, **EXTRA_ALIASES}
    for name, info in Scenario.model_fields.items():
        if name in SKIPPED_FIELDS:
            continue
        flags = [_flag(name)] + [_flag(alias) for alias, target in aliases.items() if target == name]
        helptext = info.description or name.replace("_", " ")
        if info.annotation is bool:
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction, help=helptext)
        else:
            # Values stay strings here: pydantic validates them (and rejects nan/inf) with one message.
            parser.add_argument(*flags, dest=name, metavar="VALUE", help=helptext)


def scenario_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Merge the scenario file, --set pairs and explicit flags (later wins) into raw scenario fields."""
    fields: dict[str, Any] = {}
    if args.scenario_file:
        fields.update(_read_json_object(Path(args.scenario_file)))
    for pair in args.set:
        key, sep, value = pair.partition("=")
        if not sep or key.strip() not in Scenario.model_fields:
            raise InputError(f"--set: expected FIELD=VALUE with a scenario field, got {pair!r}")
        fields[key.strip()] = value
    explicit = {
        name: getattr(args, name)
        for name in Scenario.model_fields
        if name not in SKIPPED_FIELDS and getattr(args, name, None) is not None
    }
    if "params_b" in explicit and "model" not in explicit and "model" not in fields:
        explicit["model"] = CUSTOM_MODEL  # a bare count, as in the seed, means no preset
    fields.update(explicit)
    if args.model_config:
        fields["model_shape"] = _shape_from_file(Path(args.model_config))
        fields.setdefault("model", CUSTOM_MODEL)
    return fields


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"scenario file: cannot read {path}: {err}") from err
    except json.JSONDecodeError as err:
        raise InputError(f"scenario file: {path} is not valid JSON ({err.msg} at line {err.lineno})") from err
    if not isinstance(data, dict):
        raise InputError(f"scenario file: {path} must hold a JSON object")
    return data


def _shape_from_file(path: Path) -> dict[str, Any]:
    from planner.model.hf_config import shape_from_hf_config

    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(f"model config: cannot read {path}: {err}") from err
    try:
        return shape_from_hf_config(raw, name=path.stem).model_dump()
    except ValueError as err:
        raise InputError(f"model config: {err}") from err
