"""bench/load_bench.py end to end, small: a real server, two websocket sessions for a few seconds.

The figures themselves are not asserted (no timing assertions in tests, DESIGN.md §5): this checks that the
script speaks Streamlit's protocol well enough that every rerun it times really ran the page with the new GPU
count and finished, and that it reports what the README says it does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = {
    "sessions",
    "duration_s",
    "reruns",
    "errors",
    "rerun_p50_s",
    "rerun_p95_s",
    "server_rss_start_mb",
    "server_rss_peak_mb",
    "server_rss_after_60s_mb",
}
# Generous: the server's start (imports, first run) plus 5 s of load plus 1 s of settling, on a busy 2-core box.
TIMEOUT_S = 180


def test_two_sessions_for_five_seconds_rerun_without_errors() -> None:
    command = [sys.executable, str(ROOT / "bench" / "load_bench.py"), "--sessions", "2", "--duration-s", "5",
               "--settle-s", "1"]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout)
    assert figures.keys() >= KEYS
    assert figures["errors"] == 0, figures["error_messages"]
    assert figures["sessions"] == 2
    # Each session reruns at least once a second-plus (1 s think time) for 5 s; 2 would mean the loop is broken.
    assert figures["reruns"] >= 4
    assert 0 < figures["rerun_p50_s"] <= figures["rerun_p95_s"]
    # A Streamlit server with the app loaded is well above 50 MB; RSS read from /proc, not made up.
    assert 50 < figures["server_rss_start_mb"] <= figures["server_rss_peak_mb"]
    assert figures["server_rss_after_60s_mb"] > 50


def test_refuses_unbounded_load() -> None:
    """The script is a bounded benchmark: a session count beyond its limit is refused, naming the flag."""
    command = [sys.executable, str(ROOT / "bench" / "load_bench.py"), "--sessions", "5000"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "--sessions must be 1..200" in done.stderr
