"""Untrusted JSON config text: bounded parsing and typed key access whose errors name the key.

Used by `planner.model.hf_config`. Only `json.loads` touches the text, after a size check and a nesting check (the
standard parser recurses, so deep nesting is refused before it is parsed). NaN and Infinity are refused.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from planner.errors import PlannerError, shortened

MAX_CONFIG_BYTES = 1_000_000  # real configs are a few kB; a megabyte leaves room for long rope tables
MAX_NESTING = 20  # real configs nest 3-4 levels (text_config -> rope_scaling -> ...)
MAX_COUNT = (
    10_000_000  # bound on any size-like integer (vocab, widths); ModelShape has tighter per-field bounds
)
MISSING = object()
_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


class ConfigImportError(PlannerError):
    """The config cannot be turned into a shape: a bad `model_shape`; the problem names the key at fault."""

    def __init__(self, problem: str) -> None:
        super().__init__("model_shape", problem)

    def __str__(self) -> str:  # the problem names the config key; a surface adds its own name (describe)
        return self.describe("")


def _decode(text: str | bytes) -> str:
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", errors="replace"))
    if size > MAX_CONFIG_BYTES:
        raise ConfigImportError(f"config is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,}")
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ConfigImportError(f"config is not UTF-8 text (byte {err.start})") from None
    return text.removeprefix("\ufeff")


def _nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside string literals (checked before json.loads recurses)."""
    import numpy as np  # here, not at the top: a CLI input refused before any JSON is parsed never loads numpy

    skeleton = np.frombuffer(_STRING_LITERAL.sub("", text).encode("utf-8"), dtype=np.uint8)
    steps = np.isin(skeleton, (ord("{"), ord("["))).astype(np.int32)
    steps -= np.isin(skeleton, (ord("}"), ord("]"))).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0))


class _Constant(ValueError):
    pass


def _reject_constant(token: str) -> None:
    raise _Constant(f"contains {token}, which is not valid JSON")


def parse_json_text(source: str, max_nesting: int = MAX_NESTING) -> Any:
    """The value of untrusted JSON text, or ValueError with a one-line reason (never RecursionError).

    The one guarded `json.loads` for text a user or a file supplies (config.json, a share link's or a CSV
    cell's model_shape, a CLI scenario file): nesting is checked before the recursive parser runs, NaN and
    Infinity are refused, and an integer beyond Python's digit limit is reported, not raised.
    """
    depth = _nesting_depth(source)
    if depth > max_nesting:
        raise ValueError(f"nests {depth:,} levels deep; the limit is {max_nesting}")
    try:
        return json.loads(source, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except _Constant as err:
        raise ValueError(str(err)) from None
    except ValueError:  # the only other ValueError json raises: an integer beyond Python's digit limit
        limit = sys.get_int_max_str_digits()
        raise ValueError(f"could not be parsed: it holds an integer of more than {limit:,} digits") from None
    except RecursionError:  # not expected below the nesting limit; said plainly rather than raised
        raise ValueError("nests too deeply to be read") from None


def parse_config(text: str | bytes) -> dict[str, Any]:
    """The JSON object in `text`, after the size and nesting limits."""
    try:
        data = parse_json_text(_decode(text))
    except ConfigImportError:
        raise
    except ValueError as err:
        raise ConfigImportError(f"config {err}") from None
    if not isinstance(data, dict):
        raise ConfigImportError(f"config must be a JSON object, got {_kind(data)}")
    return data


def _kind(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }
    return "null" if value is None else names.get(type(value), type(value).__name__)


class ConfigReader:
    """Typed access to one config object; errors name the key and the expected type."""

    def __init__(self, data: dict[str, Any], model_type: str, prefix: str = "") -> None:
        self.data, self.model_type, self.prefix = data, model_type, prefix

    def _get(self, key: str, default: Any) -> Any:
        value = self.data.get(key)
        if value is None:  # absent or null: HF configs write null for "use the default"
            if default is MISSING:
                raise ConfigImportError(
                    f"config key {self.prefix + key!r} is missing (needed for model_type {self.model_type!r})"
                )
            return default
        return value

    def _wrong(self, key: str, expected: str, value: Any) -> ConfigImportError:
        return ConfigImportError(
            f"config key {self.prefix + key!r}: expected {expected}, got {_kind(value)} ({shortened(repr(value))})"
        )

    def get_int(self, key: str, default: Any = MISSING, low: int = 1, high: int = MAX_COUNT) -> int:
        value = self._get(key, default)
        if type(value) is not int:
            raise self._wrong(key, "an integer", value)
        if not low <= value <= high:
            raise ConfigImportError(
                f"config key {self.prefix + key!r}: {shortened(str(value))} is outside [{low}, {high:,}]"
            )
        return value

    def get_number(self, key: str, default: Any = MISSING, low: float = 0.0, high: float = 1000.0) -> float:
        value = self._get(key, default)
        if type(value) not in (int, float):
            raise self._wrong(key, "a number", value)
        if not low < value <= high:
            raise ConfigImportError(f"config key {self.prefix + key!r}: {value} is outside ({low}, {high}]")
        return float(value)

    def get_bool(self, key: str, default: Any = MISSING) -> bool:
        value = self._get(key, default)
        if type(value) is not bool:
            raise self._wrong(key, "true or false", value)
        return value

    def get_str(self, key: str, default: Any = MISSING) -> str:
        value = self._get(key, default)
        if type(value) is not str:
            raise self._wrong(key, "a string", value)
        return value

    def get_choice(self, key: str, choices: dict[str, Any], default: Any = MISSING) -> Any:
        """The value `choices` maps the string at `key` to; unknown strings list the supported ones."""
        value = self.get_str(key, default)
        if value not in choices:
            supported = ", ".join(choices)
            raise ConfigImportError(
                f"config key {self.prefix + key!r}: {value!r} is not supported ({supported})"
            )
        return choices[value]

    def get_int_list(self, key: str) -> list[int]:
        value = self._get(key, [])
        if type(value) is not list or any(type(item) is not int for item in value):
            raise self._wrong(key, "a list of integers", value)
        return value

    def get_object(self, key: str) -> ConfigReader:
        value = self._get(key, {})
        if type(value) is not dict:
            raise self._wrong(key, "an object", value)
        return ConfigReader(value, self.model_type, f"{self.prefix}{key}.")

    def head_dim(self, hidden_size: int, n_heads: int, key: str = "head_dim") -> int:
        """Explicit `head_dim` when given (Gemma, Qwen3), else hidden_size / n_heads, which must divide."""
        if self.data.get(key) is not None:
            return self.get_int(key)
        if hidden_size % n_heads:
            raise ConfigImportError(f"config: hidden size {hidden_size} is not divisible by {n_heads} heads")
        return hidden_size // n_heads

    def present(self, *keys: str) -> str:
        """The first of `keys` that the config sets (older configs use other names), else the first key."""
        return next((key for key in keys if self.data.get(key) is not None), keys[0])
