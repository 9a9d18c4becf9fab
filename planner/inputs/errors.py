"""Turn validation errors into one line that names the field and its allowed range."""

from __future__ import annotations

from pydantic import ValidationError

from planner.inputs.scenario import Scenario, field_range


def describe_validation_error(err: ValidationError) -> str:
    """First problem only, as "field: what is wrong (allowed: range; got value)"."""
    first = err.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    if not loc:  # cross-field rules already start with the field they concern
        return message
    top = str(first["loc"][0])
    got = first.get("input")
    allowed = _allowed(top) if len(first["loc"]) == 1 else ""
    parts = [f"{loc}: {message}"]
    if allowed:
        parts.append(f"allowed: {allowed}")
    if got is not None and not isinstance(got, dict):
        parts.append(f"got {str(got)[:60]!r}")
    return parts[0] + (f" ({'; '.join(parts[1:])})" if len(parts) > 1 else "")


def _allowed(field: str) -> str:
    if field not in Scenario.model_fields:
        return ""
    annotation = Scenario.model_fields[field].annotation
    if annotation is bool:
        return "true or false"
    choices = getattr(annotation, "__args__", None)
    if choices and all(isinstance(choice, str) for choice in choices):
        return ", ".join(choices)
    return field_range(field)
