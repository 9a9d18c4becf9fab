"""Unit conversions used across the planner: memory is shown in GiB (2^30 bytes), time in hours."""

from __future__ import annotations

GIB_BYTES = 2.0**30
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_MINUTE = 60.0
