"""Memoised catalogue lookups for the per-rerun path (`planner.resolve`, the sidebar).

Each lookup in `planner.catalogue.catalog_lookup`, `planner.catalogue.models` and `planner.catalogue.efficiency` filters a polars frame
(0.1–0.6 ms each); a page rerun made several of them for results that only change with the catalogue. Here
each is memoised with `functools.lru_cache` on the frame's identity and the other (hashable) arguments:

- catalogue frames are never mutated (planner.catalogue.catalog; tests/test_isolation.py), so one frame object always
  gives the same answer, and the cache key holds the frame itself, so its id cannot be reused while cached;
- results are stored frozen (tuples of items, frozen models, floats) and every call returns a fresh dict,
  so no caller can change what another session gets back;
- a failed lookup is not cached: the original function raises its own error (with its suggestions).

A session only reaches a frame it was handed (ui/data.py), so a cache entry never shows one session's
uploaded data to another.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from planner.catalogue.catalog import find_gpu, find_region, gpu_price, pricing_discount, snapshot_ids
from planner.catalogue.efficiency import efficiency_preset
from planner.catalogue.models import find_model
from planner.model.shape import ModelShape

# Distinct (frame, argument) pairs kept. A session with its own uploads brings new frames, so the bound keeps
# frames of sessions long gone from being held forever (each is a few hundred kB at most).
MAX_ENTRIES = 256

Items = tuple[tuple[str, Any], ...]


class FrameKey:
    """A catalogue frame as a cache key: hashed and compared by identity (polars frames are unhashable)."""

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __hash__(self) -> int:
        return id(self.frame)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameKey) and other.frame is self.frame


def lookup_gpu(gpus: pl.DataFrame, name: str) -> dict[str, Any]:
    """`catalog.find_gpu`, memoised."""
    return dict(_gpu(FrameKey(gpus), name))


def lookup_gpu_price(
    prices: pl.DataFrame, gpu_name: str, snapshot_id: str | None = None
) -> dict[str, Any] | None:
    """`catalog.gpu_price`, memoised."""
    items = _gpu_price(FrameKey(prices), gpu_name, snapshot_id)
    return None if items is None else dict(items)


def lookup_pricing_discount(modes: pl.DataFrame, mode: str) -> dict[str, Any]:
    """`catalog.pricing_discount`, memoised."""
    return dict(_pricing_discount(FrameKey(modes), mode))


def lookup_region(grid: pl.DataFrame, region: str) -> dict[str, Any]:
    """`catalog.find_region`, memoised."""
    return dict(_region(FrameKey(grid), region))


def lookup_snapshot_ids(prices: pl.DataFrame) -> list[str]:
    """`catalog.snapshot_ids`, memoised."""
    return list(_snapshot_ids(FrameKey(prices)))


def lookup_model(presets: pl.DataFrame, name: str) -> ModelShape:
    """`models.find_model`, memoised (a ModelShape is frozen and holds only scalars)."""
    return _model(FrameKey(presets), name)


def lookup_efficiency(
    table: pl.DataFrame, generation: str, n_params: Any, method: str, precision: str
) -> tuple[Any, Any, Any]:
    """`efficiency.efficiency_preset`, memoised for one parameter count (an array of counts is not cached)."""
    if np.ndim(n_params):
        return efficiency_preset(table, generation, n_params, method, precision)
    return _efficiency(FrameKey(table), generation, float(n_params), method, precision)


@lru_cache(maxsize=MAX_ENTRIES)
def _gpu(key: FrameKey, name: str) -> Items:
    return tuple(find_gpu(key.frame, name).items())


@lru_cache(maxsize=MAX_ENTRIES)
def _gpu_price(key: FrameKey, gpu_name: str, snapshot_id: str | None) -> Items | None:
    row = gpu_price(key.frame, gpu_name, snapshot_id)
    return None if row is None else tuple(row.items())


@lru_cache(maxsize=MAX_ENTRIES)
def _pricing_discount(key: FrameKey, mode: str) -> Items:
    return tuple(pricing_discount(key.frame, mode).items())


@lru_cache(maxsize=MAX_ENTRIES)
def _region(key: FrameKey, region: str) -> Items:
    return tuple(find_region(key.frame, region).items())


@lru_cache(maxsize=MAX_ENTRIES)
def _snapshot_ids(key: FrameKey) -> tuple[str, ...]:
    return tuple(snapshot_ids(key.frame))


@lru_cache(maxsize=MAX_ENTRIES)
def _model(key: FrameKey, name: str) -> ModelShape:
    return find_model(key.frame, name)


@lru_cache(maxsize=MAX_ENTRIES)
def _efficiency(
    key: FrameKey, generation: str, n_params: float, method: str, precision: str
) -> tuple[float, float, float]:
    low, typical, high = efficiency_preset(key.frame, generation, n_params, method, precision)
    return float(low), float(typical), float(high)
