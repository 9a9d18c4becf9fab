"""Keeps the garbage collection Streamlit runs after every script run cheap, without switching it off.

Streamlit runs a full `gc.collect(2)` after each script run of each session (its `runner.postScriptGC`, on by
default), so memory a run leaves in reference cycles (uploads, frames) goes back at once. A full collection walks
every object the collector tracks, and the imports alone (streamlit, polars, pandas, altair, pydantic, the
catalogues) leave about 190,000: that walk was about 90 ms of a rerun's 120-140 ms of server CPU on the 2-core
machine, under the one GIL that every session's script thread shares (bench/load_bench.py, README "Speed").

`gc.freeze()` moves every object tracked now into a permanent generation that later collections skip. Called at
the end of a run whenever modules were imported since the last freeze (the first run, then a page's first visit),
it keeps modules, classes and cached catalogues out of every later walk, while what sessions create afterwards is
still collected after each of their runs. What a freeze also catches (the live sessions' own objects at that
moment) is no longer freed if it ends in a cycle; freezes happen a handful of times per process, not per run.
"""

from __future__ import annotations

import gc
import sys
import threading

_lock = threading.Lock()
_modules_at_last_freeze = 0


def freeze_long_lived_objects() -> None:
    """At the end of a run: freeze what exists when modules were imported since the last freeze, else nothing."""
    global _modules_at_last_freeze
    if len(sys.modules) == _modules_at_last_freeze:
        return
    with _lock:
        n_modules = len(sys.modules)
        if n_modules == _modules_at_last_freeze:
            return
        gc.collect()  # garbage first: what is frozen is never collected
        gc.freeze()
        _modules_at_last_freeze = n_modules
