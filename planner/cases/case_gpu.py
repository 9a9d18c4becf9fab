"""A case row's GPU cell -> a catalogue GPU, through the catalogue's own names and aliases.

Published tables name GPUs with comments ("A100 80GB (Selene)", "H100 80GB SXM (DGX-H100)", "RTX 4090 24GB").
The rule: drop parenthesised comments, then the longest run of leading words that the catalogue knows as a
name or alias (`Catalogs.gpu`) names the GPU ("H100 80GB SXM" -> "h100 80gb" -> H100
SXM). A cell whose leading words name no catalogue GPU is unknown, with the closest catalogue names.
"""

from __future__ import annotations

import re
from typing import Any

from planner.catalogue.catalog import Catalogs
from planner.catalogue.catalog_read import CatalogError

_COMMENT = re.compile(r"\([^)]*\)")


class GpuMatcher:
    """GPU lookups for one catalogue, remembered per cell text (a case file repeats a few GPU names)."""

    def __init__(self, cats: Catalogs) -> None:
        self.cats = cats
        self._seen: dict[str, dict[str, Any] | str] = {}

    def match(self, cell: str) -> dict[str, Any] | str:
        """The catalogue row for a GPU cell, or why there is none (with the closest names)."""
        if cell not in self._seen:
            self._seen[cell] = self._lookup(cell)
        return self._seen[cell]

    def stand_in(self) -> dict[str, Any]:
        """A catalogue GPU for predictions that no GPU figure enters (memory): the catalogue's first row."""
        return self.cats.gpu(self.cats.gpu_names()[0])

    def _lookup(self, cell: str) -> dict[str, Any] | str:
        tokens = _COMMENT.sub(" ", cell).split()
        if not tokens:
            return "GPU not stated"
        first_error = ""
        for n in range(len(tokens), 0, -1):
            try:
                return self.cats.gpu(" ".join(tokens[:n]))
            except CatalogError as err:
                first_error = first_error or str(err)
        return f"GPU '{cell}' is not in the GPU catalogue ({first_error.replace('unknown GPU ', '')})"
