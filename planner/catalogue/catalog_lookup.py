"""Name indexes over loaded catalogue frames: GPUs by name or alias, regions, prices by snapshot, pricing modes.

Each index is built once from its frame (`planner.catalogue.catalog.Catalogs` builds them on first use), so a
lookup is a dictionary get. Name lookups forgive case, spaces, hyphens and underscores ("h100-sxm5",
"A100 80GB SXM"); an unknown name raises `UnknownNameError` listing the three closest names (difflib), so a
typo gets a useful answer. Every lookup returns a fresh dict, so no caller can change what another one gets.
"""

from __future__ import annotations

import bisect
import difflib
import re
from typing import Any

import polars as pl

from planner.catalogue.catalog_read import UnknownNameError

_SEPARATORS = re.compile(r"[\s\-_]+")


def normalise_name(name: str) -> str:
    """Lower case without spaces, hyphens or underscores: the key every tolerant lookup compares."""
    return _SEPARATORS.sub("", name.strip().lower())


def name_keys(name: str, aliases: str | None) -> list[tuple[str, str]]:
    """(column, text) for a GPU row's name and each of its `;`-separated aliases, blanks left out."""
    pairs = [("name", name), *(("aliases", alias) for alias in (aliases or "").split(";"))]
    return [(column, text.strip()) for column, text in pairs if text.strip()]


def gpu_name_keys(gpus: pl.DataFrame) -> dict[str, str]:
    """Normalised name or alias -> catalogue name. (Clashes are rejected when the catalogue is loaded.)"""
    keys: dict[str, str] = {}
    for name, aliases in gpus.select("name", "aliases").iter_rows():
        for _, text in name_keys(name, aliases):
            keys.setdefault(normalise_name(text), name)
    return keys


def closest(query: str, candidates: dict[str, str], n: int = 3) -> list[str]:
    """The display names of the `n` candidates whose keys are closest to `query`, best first, no repeats."""
    ranked = difflib.get_close_matches(normalise_name(query), list(candidates), n=len(candidates), cutoff=0.0)
    names = list(dict.fromkeys(candidates[key] for key in ranked))
    return names[:n]


# The scenario input each kind of name comes from, carried by the error so a surface names what the user set.
_FIELD_OF_KIND = {"GPU": "gpu", "region": "region", "price snapshot": "snapshot", "pricing mode": "pricing"}


def _unknown(kind: str, query: str, candidates: dict[str, str]) -> UnknownNameError:
    names = closest(query, candidates)
    return UnknownNameError(
        f"unknown {kind} {query!r}; closest matches: {', '.join(names) or 'none'}",
        field=_FIELD_OF_KIND.get(kind, ""),
        problem=f"unknown {kind}",
        value=query,
        closest=names,
    )


class GpuIndex:
    """GPU rows by normalised name and alias; "H100" is the SXM part, "A100" the 80GB SXM."""

    def __init__(self, gpus: pl.DataFrame) -> None:
        self.keys = gpu_name_keys(gpus)
        self.rows = {str(row["name"]): row for row in gpus.iter_rows(named=True)}

    def find(self, name: str) -> dict[str, Any]:
        match = self.keys.get(normalise_name(name))
        if match is None:
            raise _unknown("GPU", name, self.keys)
        return dict(self.rows[match])


class PriceIndex:
    """Price rows by GPU and snapshot; a GPU missing from a snapshot falls back to an earlier one."""

    def __init__(self, prices: pl.DataFrame) -> None:
        self.snapshot_ids = sorted(prices["snapshot"].unique().to_list())  # ids start with their date
        self._known = set(self.snapshot_ids)
        self._by_gpu: dict[str, tuple[list[str], list[dict[str, Any]]]] = {}
        for row in prices.sort("snapshot").iter_rows(named=True):
            snapshots, rows = self._by_gpu.setdefault(str(row["gpu"]).strip().lower(), ([], []))
            snapshots.append(str(row["snapshot"]))
            rows.append(row)

    def latest(self) -> str:
        if not self.snapshot_ids:
            raise UnknownNameError("no price snapshots are loaded")
        return self.snapshot_ids[-1]

    def find(self, gpu_name: str, snapshot_id: str | None = None) -> dict[str, Any] | None:
        """The price row for a GPU in a snapshot, or in the most recent earlier snapshot that lists it.

        An empty `snapshot_id` means the latest. The result names the snapshot it came from (`snapshot`), the
        one asked for (`requested_snapshot`) and whether it fell back (`is_fallback`). None if no snapshot up
        to the requested one lists the GPU.
        """
        requested = snapshot_id or self.latest()
        if requested not in self._known:
            raise _unknown("price snapshot", requested, {normalise_name(i): i for i in self.snapshot_ids})
        snapshots, rows = self._by_gpu.get(gpu_name.strip().lower(), ([], []))
        at = bisect.bisect_right(snapshots, requested)
        if at == 0:
            return None
        row = rows[at - 1]
        return {**row, "requested_snapshot": requested, "is_fallback": row["snapshot"] != requested}


class RegionIndex:
    """Grid rows by region id, label or "provider region" (e.g. "aws us-east-1", "France").

    The exact id wins; a loose spelling that fits two ids (AWS "us-east-1" and GCP "us-east1") is refused with
    both named rather than guessed.
    """

    def __init__(self, grid: pl.DataFrame) -> None:
        self.rows = {str(row["region"]).lower(): row for row in grid.iter_rows(named=True)}
        self.loose: dict[str, list[str]] = {}
        for region_id, label, provider in grid.select("region", "label", "provider").iter_rows():
            for key in (region_id, label, f"{provider or ''} {region_id}"):
                ids = self.loose.setdefault(normalise_name(key), [])
                if region_id not in ids:
                    ids.append(region_id)

    def find(self, region: str) -> dict[str, Any]:
        exact = self.rows.get(region.strip().lower())
        if exact is not None:
            return dict(exact)
        matches = self.loose.get(normalise_name(region), [])
        if len(matches) > 1:
            raise UnknownNameError(
                f"region {region!r} is ambiguous: give the exact id, one of {', '.join(matches)}",
                field="region",
                problem="ambiguous region: give the exact id",
                value=region,
                closest=matches,
            )
        if not matches:
            raise _unknown("region", region, {key: ids[0] for key, ids in self.loose.items()})
        return dict(self.rows[matches[0].lower()])


class ModeIndex:
    """Pricing-mode rows (typical, low, high fractions off on-demand, source, note) by mode."""

    def __init__(self, modes: pl.DataFrame) -> None:
        self.rows = {str(row["mode"]): row for row in modes.iter_rows(named=True)}

    def find(self, mode: str) -> dict[str, Any]:
        row = self.rows.get(mode.strip().lower())
        if row is None:
            raise _unknown("pricing mode", mode, {normalise_name(m): m for m in self.rows})
        return dict(row)
