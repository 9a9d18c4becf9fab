"""The one error measure of `validate`: predicted / measured − 1 (DESIGN.md §4)."""

from __future__ import annotations


def relative_error(predicted: float | None, measured: float | None) -> float | None:
    """predicted / measured − 1; None when either side is missing (a skipped or unpublished row)."""
    if predicted is None or not measured:
        return None
    return predicted / measured - 1.0
