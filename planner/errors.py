"""The planner's error type: bad input described by field, value given, allowed range and closest names.

This module imports nothing else from planner, so every layer can raise `PlannerError`. The parts are kept
apart (never only as text) so each surface names the input in its own words with `describe(name)`: the CLI
the flag the user typed, the app the widget's label, a CSV import the row and column. Nothing reads a field
name back out of a message.

`from_validation_error` is the one translation of a pydantic `ValidationError` into a `PlannerError`; the
inputs package applies it to the Scenario (`planner.inputs.errors.scenario_error`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

# A pasted blob or a 4,000-digit number is cut to this many characters (then "…") in a message; the full value
# stays in `value`. 40 keeps a one-line message readable and still shows enough to recognise what was typed.
MAX_VALUE_CHARS = 40
N_CLOSEST = 3  # names suggested for an unknown one
# A name that identifies a catalogue row (a GPU, a price row's GPU, a region, a model preset): the key that
# share links, saved plans and lookups carry. Letters and digits of any script, spaces and the separators the
# bundled names use ("A100 80GB SXM", "Llama 3.1 8B", "us-east-1"). None of these characters is active in
# markdown, so a name can never turn into a link, image, icon or formula wherever it is shown (
# item 2). Labels (a model shape's name, plan names, tags, notes) stay free text, escaped where they are shown.
NAME_CHAR_CLASS = r"\w .+()/-"  # inside [...] in Python's and polars' (Rust) regex alike
NAME_PATTERN = re.compile(f"[{NAME_CHAR_CLASS}]*")
NAME_CHARS = "letters, digits, spaces and . - _ + ( ) /"


class PlannerError(ValueError):
    """Bad input: which field, what is wrong, the value given, what is allowed, the closest known names.

    `related` names other fields of a cross-field rule (n_gpus must be a multiple of tp x pp x cp), so a
    surface can name the one the user touched. `path` locates the problem inside a structured field
    (model_shape -> hidden_size). `more` holds the further problems found in the same input.
    """

    def __init__(
        self,
        field: str,
        problem: str,
        *,
        value: Any = None,
        allowed: str = "",
        closest: Sequence[str] = (),
        related: Sequence[str] = (),
        path: Sequence[str] = (),
        more: Sequence[PlannerError] = (),
    ) -> None:
        self.field = field
        self.problem = problem
        self.value = value
        self.allowed = allowed
        self.closest = tuple(closest)
        self.related = tuple(related)
        self.path = tuple(path)
        self.more = tuple(more)
        super().__init__(self.describe())

    @property
    def fields(self) -> tuple[str, ...]:
        """The field, then the other fields its rule involves."""
        return (self.field, *self.related)

    def describe(self, name: str | None = None, subject: str = "") -> str:
        """One line: "NAME: problem (allowed: ...; got ...; closest: a, b)"; NAME defaults to the field.

        `subject` names the field in the sentence when NAME is another input of its rule ("--tp: --n-gpus must
        be a multiple of ...").
        """
        label = self.field if name is None else name
        problem = f"{'.'.join(self.path)}: {self.problem}" if self.path else self.problem
        if subject:
            problem = f"{subject} {problem}"
        details = []
        if self.allowed:
            details.append(f"allowed: {self.allowed}")
        if self.value is not None and not isinstance(self.value, dict | list):
            shown = shortened(str(self.value))
            details.append(f"got {shown!r}" if isinstance(self.value, str) else f"got {shown}")
        if self.closest:
            details.append(f"closest: {', '.join(self.closest)}")
        text = f"{label}: {problem}" if label else problem
        return text + (f" ({'; '.join(details)})" if details else "")

    def __str__(self) -> str:
        return self.describe()


def check_name(value: str, field: str = "") -> str:
    """`value` when it is a name of NAME_CHARS only; else a PlannerError naming the allowed characters.

    Inside a pydantic field validator leave `field` empty: the error's location names the field."""
    if NAME_PATTERN.fullmatch(value) is None:
        bad = "".join(dict.fromkeys(ch for ch in value if NAME_PATTERN.fullmatch(ch) is None))
        raise PlannerError(
            field, f"has characters a name cannot use: {bad[:20]}", value=value, allowed=NAME_CHARS
        )
    return value


def shortened(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    """`text` cut to `limit` characters, with "…" when something was cut, for echoing user input."""
    return text if len(text) <= limit else text[:limit] + "…"


def from_validation_error(err: ValidationError, model: type[BaseModel]) -> PlannerError:
    """Every problem pydantic found in input for `model`: the first one, the rest in `more`."""
    found = [_one(detail, model) for detail in err.errors()]
    first = found[0]
    return PlannerError(
        first.field,
        first.problem,
        value=first.value,
        allowed=first.allowed,
        closest=first.closest,
        related=first.related,
        path=first.path,
        more=found[1:],
    )


def _one(detail: Any, model: type[BaseModel]) -> PlannerError:
    loc = tuple(str(part) for part in detail["loc"])
    raised = (detail.get("ctx") or {}).get("error")
    if isinstance(raised, PlannerError):  # a rule of ours (a model validator) that already says which field
        if not loc:
            return raised
        inner = (raised.field, *raised.path) if raised.field else raised.path
        return PlannerError(
            loc[0], raised.problem, value=raised.value, allowed=raised.allowed, path=(*loc[1:], *inner)
        )
    problem = str(raised) if isinstance(raised, Exception) else str(detail["msg"])
    field = loc[0] if loc else ""
    value = detail.get("input")
    if detail["type"] == "extra_forbidden":
        close = difflib.get_close_matches(field, list(model.model_fields), n=N_CLOSEST)
        return PlannerError(field, "not a known input", closest=close)
    if field in model.model_fields and len(loc) == 1:
        return PlannerError(field, problem, value=value, allowed=allowed_values(model, field))
    return PlannerError(field, problem, value=value, path=loc[1:])


def allowed_values(model: type[BaseModel], field: str) -> str:
    """What a field accepts, in words: true or false, the choices, or the numeric range."""
    annotation = model.model_fields[field].annotation
    if annotation is bool:
        return "true or false"
    choices = getattr(annotation, "__args__", None)
    if choices and all(isinstance(choice, str) for choice in choices):
        return ", ".join(choices)
    return numeric_range(model, field)


def numeric_range(model: type[BaseModel], field: str) -> str:
    """The bounds of a numeric field in words (">= 1 and <= 1000"); empty when it has none."""
    low, high = "", ""
    for meta in model.model_fields[field].metadata:
        for attr, sign in (("gt", ">"), ("ge", ">=")):
            if getattr(meta, attr, None) is not None:
                low = f"{sign} {getattr(meta, attr):g}"
        for attr, sign in (("lt", "<"), ("le", "<=")):
            if getattr(meta, attr, None) is not None:
                high = f"{sign} {getattr(meta, attr):g}"
    return " and ".join(part for part in (low, high) if part)
