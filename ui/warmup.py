"""Import everything a page imports, once per server process, before any session's page runs.

Why: on a fresh server, sessions opened at the same moment each run their first page in their own thread, and
those threads imported the same modules concurrently. Nine sessions at once showed `ImportError: cannot import
name 'charts' from 'ui'` and a half-initialised pandas in five of nine first runs. app.py calls
`import_everything()` before anything else: the first session imports every module under one lock, and the
sessions that arrive meanwhile wait for it, so no page ever sees a module half imported. Later calls return
at once.

It imports only what the runtime dependencies satisfy: `make run` installs no torch, and the trace extra's modules
(which import torch at the top) would crash a fresh clone's first page. The app never needs them in its own
process either: the traced second opinion runs in a subprocess (ui/trace_box.py), and importing torch here cost
10.9 s of the server's first answer where the test extras are installed (`python -X importtime`).
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

# Third-party modules the pages and Streamlit's own elements import lazily (st.dataframe imports pandas and
# pyarrow on first use, charts import altair).
LIBRARIES = ("numpy", "pandas", "pyarrow", "polars", "altair", "pydantic")
# Our packages: every module of each is imported, so a page's `from ui import charts` finds it complete.
PACKAGES = ("planner", "ui")
# Modules that import the trace extra (torch, transformers, peft) at the top: never imported here.
# tests/test_warmup.py checks this list against the modules' own imports.
NEEDS_TRACE_EXTRA = frozenset(
    {
        "planner.trace.build",
        "planner.trace.run",
        "planner.trace.sharded",
        "planner.trace.step",
        "planner.trace.tracker",
    }
)
SKIPPED = NEEDS_TRACE_EXTRA | {"planner.__main__"}  # the CLI entry point runs the CLI when imported

_lock = threading.Lock()
_done = False


def import_everything() -> None:
    global _done
    if _done:
        return
    with _lock:
        if _done:  # another session finished it while this one waited
            return
        for name in LIBRARIES:
            importlib.import_module(name)
        for name in PACKAGES:
            package = importlib.import_module(name)
            for module in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
                if module.name not in SKIPPED:
                    importlib.import_module(module.name)
        _done = True
