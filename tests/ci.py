"""Whether the tests run under CI (`CI=true`, as .ci/run sets it): there, a missing browser or database fails
instead of skipping, and randomised tests draw fixed examples."""

from __future__ import annotations

import os


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


# `make fuzz` (HYPOTHESIS_PROFILE=fuzz): the same properties with random seeds and FUZZ_FACTOR times the examples
# (10 by default: about half an hour on a 2-core machine, most of it the AppTest fuzzing of tests/test_hostile.py).
FUZZ_PROFILE = "fuzz"


def fuzzing() -> bool:
    return os.environ.get("HYPOTHESIS_PROFILE", "") == FUZZ_PROFILE


def n_examples(base: int) -> int:
    """A test's example count: `base` in CI and locally, FUZZ_FACTOR times more under `make fuzz`."""
    return base * int(os.environ.get("FUZZ_FACTOR", "10")) if fuzzing() else base
