"""Import everything a page imports, once per server process, before any session's page runs.

Why: on a fresh server, sessions opened at the same moment each run their first page in their own thread, and
those threads imported the same modules concurrently. Nine sessions at once showed `ImportError: cannot import
name 'charts' from 'ui'` and a half-initialised pandas in five of nine first runs. app.py calls
`import_everything()` before anything else: the first session imports every module under one lock, and the
sessions that arrive meanwhile wait for it, so no page ever sees a module half imported. Later calls return
at once.
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
                if module.name != "planner.__main__":  # the CLI entry point runs the CLI when imported
                    importlib.import_module(module.name)
        _done = True
