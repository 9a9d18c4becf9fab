"""Whether the tests run under CI (`CI=true`, as .ci/run sets it): there, a missing browser or database fails
instead of skipping, and randomised tests draw fixed examples."""

from __future__ import annotations

import os


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
