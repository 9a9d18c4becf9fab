"""Skip a trace test when the optional extra is missing, except under CI, which installs it (`make test`)."""

from __future__ import annotations

import pytest

from planner.trace.scope import missing_packages
from tests.ci import in_ci


def require_trace_extra() -> None:
    missing = missing_packages()
    if missing and not in_ci():
        pytest.skip(f"the trace extra is not installed ({', '.join(missing)}): pip install '.[trace]'")
    assert not missing, f"CI installs the trace extra (make test), yet {missing} are missing"
