"""The planner version a plan is saved with: the installed package's own version (pyproject.toml)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "training-run-planner"  # [project] name in pyproject.toml

try:
    PLANNER_VERSION = version(DISTRIBUTION)
except PackageNotFoundError:  # running from a source tree that was never installed (pip install -e .)
    PLANNER_VERSION = "unknown"
