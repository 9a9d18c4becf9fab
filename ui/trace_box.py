"""The Memory page's "Trace this plan" box: the traced allocated peak beside the formulas' (optional extra).

The trace runs in a child process (`python -m planner trace FILE --format json`), not in the server: it is
10-40 s of Python-heavy work that would otherwise hold the interpreter lock and stall every other session's
page, and it loads torch and transformers (several hundred MB) that the server never needs. The result is
kept per plan in the session, so reruns and page switches show it again without tracing twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

import planner
from planner import TRACE_ENABLE_HINT, Resolved, trace_available, trace_refusal
from ui import format as fmt
from ui.blocks import breakdown_table
from ui.safe_text import plain
from ui.state import LABELS_KEY

TRACE_TIMEOUT_S = 180  # an 8B model traces in 10-40 s on 2 busy cores; a 70B one may take minutes
_RESULTS = "trace.results"  # session key: plan hash -> the trace's JSON object or {"error": message}


def run_trace(scenario_json: str, timeout_s: float = TRACE_TIMEOUT_S) -> dict[str, Any]:
    """The trace's JSON object for a scenario (its JSON), or {"error": the CLI's one-line message}."""
    root = str(Path(planner.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.json"
        path.write_text(scenario_json)
        command = [sys.executable, "-m", "planner", "trace", str(path), "--format", "json"]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return {"error": f"the trace took longer than {timeout_s:.0f} s and was stopped"}
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return {"error": lines[-1].removeprefix("error: ") if lines else f"exit status {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def render_trace(resolved: Resolved) -> None:
    """The button (or why there is none) and the last trace of this plan."""
    st.subheader("Traced second opinion")
    if not trace_available():
        st.info(
            f"Trace this plan on fake tensors (one real training step, no GPU): {plain(TRACE_ENABLE_HINT)}."
        )
        return
    refusal = trace_refusal(resolved.scenario, resolved.shape)
    if refusal is not None:  # named by the widget's label, as every input message of the app
        named = refusal.describe(st.session_state.get(LABELS_KEY, {}).get(refusal.field, refusal.field))
        st.caption(f"This plan cannot be traced: {plain(named)}.")
        return
    # the shape travels in the file, so a model from a team or uploaded catalogue traces too
    scenario_json = resolved.scenario.updated(model_shape=resolved.shape).model_dump_json()
    key = hashlib.sha256(scenario_json.encode()).hexdigest()
    results = st.session_state.setdefault(_RESULTS, {})
    if st.button(
        "Trace this plan", key="trace.run", help="one forward, backward and optimizer step, 10-40 s"
    ):
        with st.spinner("Tracing one training step on fake tensors..."):
            results[key] = run_trace(scenario_json)
    if key in results:
        _show(results[key])


def _show(result: dict[str, Any]) -> None:
    if "error" in result:
        st.error(f"The trace failed: {plain(result['error'])}")
        return
    first, second, third = st.columns(3)
    first.metric("Traced allocated peak", fmt.gib(result["traced_allocated_peak_gib"]),
                 f"during {result['traced_peak_phase']}", delta_color="off", delta_arrow="off")  # fmt: skip
    second.metric("Formulas' allocated peak", fmt.gib(result["formula_allocated_peak_gib"]),
                  f"during {result['formula_peak_phase']}", delta_color="off", delta_arrow="off")  # fmt: skip
    third.metric("Formulas against the trace", f"{result['formula_vs_trace_frac']:+.1%}")
    rows = [(f"Traced peak, {phase}", "one step on fake tensors", fmt.gib(result[f"traced_{phase}_peak_gib"]))
            for phase in ("forward", "backward", "optimizer")]  # fmt: skip
    rows += [(f"At the traced peak: {name}", "by module or state", fmt.gib(gib))
             for name, gib in result["by_module_gib"].items()]  # fmt: skip
    rows += [
        ("Reserved (allocator)", "traced x (1 + fragmentation)", fmt.gib(result["traced_reserved_peak_gib"])),
        (
            "Device total",
            "reserved + CUDA context and workspaces",
            fmt.gib(result["traced_device_total_gib"]),
        ),
    ]
    breakdown_table(rows)
    st.caption(" ".join(f"{plain(note[:1].upper() + note[1:])}." for note in result["notes"])
               + f" Traced in {result['trace_s']:.0f} s.")  # fmt: skip
