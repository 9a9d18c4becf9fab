"""Command-line flags for every scenario field, generated from the Scenario so the two never drift apart.

The parser also remembers how the user gave each field (the flag as typed, `--set FIELD`, or a key of the
scenario file), under `INPUT_NAMES` on the parsed arguments, so an error names what the user typed.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path
from typing import Any

from planner.errors import PlannerError
from planner.inputs.bounded_read import SCENARIO_FILE, ReadLimitError, read_limited
from planner.inputs.scenario import CUSTOM_MODEL, Scenario
from planner.model.hf_json import parse_json_text

# The seed's flag names (DESIGN.md §4) for fields whose Scenario names differ.
SEED_ALIASES: dict[str, str] = {
    "devices": "n_gpus",
    "usd_per_device_hour": "usd_per_gpu_hour",
}
EXTRA_ALIASES: dict[str, str] = {"zero": "zero_stage", "gpus": "n_gpus", "resolution": "image_size"}
SKIPPED_FIELDS = {"model_shape"}  # set through --model-config FILE
JSON_FIELDS = {
    "model_shape"
}  # `--set model_shape={"name": ..., "hidden_size": ...}`: JSON, as in a scenario file


INPUT_NAMES = "input_names"  # on the parsed arguments: field -> what the user typed to give it
_TYPED_FLAGS = "typed_flags"  # field -> the flag as typed (an alias such as --devices included)


class InputError(PlannerError):
    """Bad command-line input; `field` is the flag itself (or empty when the message names it)."""


def flag_name(field: str) -> str:
    """The generated flag of a field (`n_gpus` -> `--n-gpus`)."""
    return "--" + field.replace("_", "-")


def _remember(namespace: argparse.Namespace, dest: str, option_string: str | None) -> None:
    typed = getattr(namespace, _TYPED_FLAGS, None)
    if typed is None:
        typed = {}
        setattr(namespace, _TYPED_FLAGS, typed)
    typed[dest] = option_string or flag_name(dest)


class _Remembered(argparse.Action):
    """Store the value as given (pydantic validates it) and remember the flag the user typed."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        _remember(namespace, self.dest, option_string)


class _RememberedBool(argparse.BooleanOptionalAction):
    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        _remember(namespace, self.dest, option_string)


def add_scenario_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario_file", nargs="?", help="a scenario JSON file (see `schema`)")
    parser.add_argument("--model-config", help="a Hugging Face config.json to take the model shape from")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE", help="set any field")
    aliases = {**SEED_ALIASES, **EXTRA_ALIASES}
    for name, info in Scenario.model_fields.items():
        if name in SKIPPED_FIELDS:
            continue
        flags = [flag_name(name)] + [flag_name(alias) for alias, target in aliases.items() if target == name]
        helptext = info.description or name.replace("_", " ")
        if info.annotation is bool:
            parser.add_argument(*flags, dest=name, action=_RememberedBool, help=helptext)
        else:
            # Values stay strings here: pydantic validates them (and rejects nan/inf) with one message.
            parser.add_argument(*flags, dest=name, action=_Remembered, metavar="VALUE", help=helptext)


def scenario_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Merge the scenario file, --set pairs and explicit flags (later wins) into raw scenario fields.

    Records on `args` (under `INPUT_NAMES`) how each field was given, with the same precedence.
    """
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    setattr(args, INPUT_NAMES, names)
    if args.scenario_file:
        path = Path(args.scenario_file)
        fields.update(_read_json_object(path))
        names.update({key: f"{path.name} key {key!r}" for key in fields})
    for pair in args.set:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in Scenario.model_fields:
            close = difflib.get_close_matches(key, list(Scenario.model_fields), n=3)
            raise InputError("--set", "expected FIELD=VALUE with a scenario field", value=pair, closest=close)
        fields[key] = _structured(key, value) if key in JSON_FIELDS else value
        names[key] = f"--set {key}"
    explicit = {
        name: getattr(args, name)
        for name in Scenario.model_fields
        if name not in SKIPPED_FIELDS and getattr(args, name, None) is not None
    }
    names.update(getattr(args, _TYPED_FLAGS, None) or {})
    if "params_b" in explicit and "model" not in explicit and "model" not in fields:
        explicit["model"] = CUSTOM_MODEL  # a bare count, as in the seed, means no preset
    fields.update(explicit)
    if args.model_config:
        names["model_shape"] = "--model-config"
        fields["model_shape"] = _shape_from_file(Path(args.model_config))
        fields.setdefault("model", CUSTOM_MODEL)
    return fields


def _structured(key: str, value: str) -> Any:
    """A structured field's --set value: JSON text (then validated by the Scenario like any other value)."""
    try:
        return parse_json_text(value)  # the same limits as a scenario file: no RecursionError, no NaN
    except ValueError as err:
        raise InputError("--set", f"{key} takes a JSON object ({err})", value=value) from None


def _read_json_object(path: Path) -> dict[str, Any]:
    try:
        text = read_limited(path, SCENARIO_FILE, f"scenario file {path}").decode("utf-8-sig")
    except ReadLimitError as err:
        raise InputError("", str(err)) from None
    except UnicodeDecodeError as err:
        raise InputError("", f"scenario file {path}: is not UTF-8 text (byte {err.start})") from None
    try:
        data = parse_json_text(text)  # nesting, NaN and digit limits checked: no RecursionError
    except ValueError as err:
        raise InputError("", f"scenario file {path}: {err}") from None
    if not isinstance(data, dict):
        raise InputError("", f"scenario file: {path} must hold a JSON object")
    return data


def _shape_from_file(path: Path) -> dict[str, Any]:
    from planner.inputs.bounded_read import MODEL_CONFIG
    from planner.model.hf_config import shape_from_hf_config

    try:
        raw = read_limited(path, MODEL_CONFIG, str(path))
    except ReadLimitError as err:
        raise InputError("--model-config", f"{path} {err.problem}") from None
    return shape_from_hf_config(raw, name=path.stem).model_dump()  # ConfigImportError names the config key
