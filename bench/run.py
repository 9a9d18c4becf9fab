"""Benchmarks: prints ONE JSON object with the figures the targets are set on (`make bench`).

- estimate_ms: median of one warm `estimate(Scenario())` (300 repeats).
- compare_ms: median of one whole-catalogue `compare_gpus(Scenario())` (60 repeats). There is no memo: every
  call builds each GPU's columns from the catalogues' name indexes, as a page rerun does.
- page_rerun_ms: for every page registered in app.py, an AppTest of the whole app switched to that page, then
  the median time of a full rerun after setting the sidebar's epochs input to a value it has not had before in
  that session (4, 5, 6, ...: 24 reruns after 3 warm-up ones), so no per-scenario memo can answer a rerun
  from an earlier one; page_rerun_max_ms is the slowest page.
- floor_rerun_ms: bench/floor_app.py (one number input) measured the same way in the same process, so the page
  figures can be read against what AppTest itself costs on this machine.
- script_compile_ms: part of every AppTest rerun above that a server does not pay per rerun: AppTest gives
  each run a fresh script cache, so app.py and the page are parsed, rewritten for Streamlit's "magic" and
  compiled again on every rerun, while a server compiles each file once (median CPU time of one such compile
  of app.py + the page, and of the floor script). Reported beside the rerun figures, not subtracted.
- cli_refusal_dev_zero_s, cli_refusal_fifo_s: wall clock of the whole `python -m planner estimate --params-b 8
  --model-config X` process refusing /dev/zero or a FIFO with exit status 2 ("within a second"),
  median of N_REFUSALS runs; the tests hold the CPU seconds of the same command to that second.
- If bench/sweep_bench.py exists, its `measure()` dict is merged in, and so is bench/browser_bench.py's
  (browser_input_to_figure_ms, browser_floor_ms and their ratio; see that file).
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_ESTIMATE = 300
N_COMPARE = 60
N_RERUNS = 24
N_WARMUP_RERUNS = 3
SIDEBAR_INPUT, FLOOR_INPUT = "w.epochs", "epochs"
FIRST_EPOCHS = 4.0  # rerun i sets epochs to FIRST_EPOCHS + i: always a new scenario
N_COMPILE = 15
N_REFUSALS = 5


def median_ms(call: Callable[[], Any], repeats: int, before_each: Callable[[], Any] | None = None) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        if before_each is not None:
            before_each()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def library_figures() -> dict[str, float]:
    from planner.catalogue.catalog import default_catalogs
    from planner.decide.compare import compare_gpus
    from planner.decide.sheet import evaluate_rows
    from planner.estimate import estimate
    from planner.inputs.scenario import Scenario

    scenario, cats = Scenario(), default_catalogs()
    # A plan sheet of 100 different rows (GPU count, micro-batch and method vary), recomputed in one pass.
    sheet = [
        scenario.updated(
            n_gpus=8 * (1 + i % 8), micro_batch=1 + i % 4, method=("full", "lora", "qlora")[i % 3]
        )
        for i in range(100)
    ]
    return {
        "estimate_ms": median_ms(lambda: estimate(scenario, cats), N_ESTIMATE),
        "compare_ms": median_ms(lambda: compare_gpus(scenario, cats), N_COMPARE),
        "sheet_100_rows_ms": median_ms(lambda: evaluate_rows(sheet, cats), N_COMPARE),
    }


def registered_pages(app: Path = ROOT / "app.py") -> list[str]:
    """The page files app.py registers (st.Page("path", ...)), in its order."""
    return re.findall(r"st\.Page\(\s*[\"']([^\"']+\.py)[\"']", app.read_text(encoding="utf-8"))


def rerun_ms(script: Path, widget_key: str, page: str | None = None, in_sidebar: bool = True) -> float:
    """Median time of a full AppTest rerun after a number input changes to a new value, in ms."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    at = AppTest.from_file(str(script), default_timeout=120).run()
    if page is not None:
        at.switch_page(page).run()
    root = at.sidebar if in_sidebar else at
    times = []
    for i in range(N_WARMUP_RERUNS + N_RERUNS):
        _set_number(root, widget_key, FIRST_EPOCHS + i)
        start = time.perf_counter()
        at.run()
        if i >= N_WARMUP_RERUNS:
            times.append(time.perf_counter() - start)
    if at.exception:
        raise RuntimeError(f"{page or script.name}: {at.exception[0].value}")
    return statistics.median(times) * 1e3


def _set_number(root: Any, widget_key: str, value: float) -> None:
    """The app's number boxes are text inputs (ui/number_entry.py); the floor app keeps a plain number_input."""
    if any(box.key == widget_key for box in root.text_input):
        root.text_input(key=widget_key).input(str(value))
    else:
        root.number_input(key=widget_key).set_value(value)


def compile_ms(*scripts: Path) -> float:
    """Median CPU time of what AppTest redoes for `scripts` on every rerun: read, add magic, compile (ms)."""
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    times = []
    for _ in range(N_COMPILE):
        cache = ScriptCache()  # as AppTest's runner makes one per run
        start = time.thread_time()
        for script in scripts:
            cache.get_bytecode(str(script))
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1e3


def page_figures() -> dict[str, Any]:
    floor = rerun_ms(ROOT / "bench" / "floor_app.py", FLOOR_INPUT, in_sidebar=False)
    pages = {Path(page).stem: rerun_ms(ROOT / "app.py", SIDEBAR_INPUT, page) for page in registered_pages()}
    compiles = {Path(page).stem: compile_ms(ROOT / "app.py", ROOT / page) for page in registered_pages()}
    slowest = max(pages.values())
    return {
        "page_rerun_ms": pages,
        "page_rerun_max_ms": slowest,
        "floor_rerun_ms": floor,
        "page_rerun_max_over_floor": slowest / floor,
        "script_compile_ms": compiles,
        "floor_script_compile_ms": compile_ms(ROOT / "bench" / "floor_app.py"),
    }


def sweep_figures() -> dict[str, Any]:
    path = ROOT / "bench" / "sweep_bench.py"
    if not path.exists():
        return {}
    spec = importlib.util.spec_from_file_location("sweep_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.measure())


def browser_figures() -> dict[str, Any]:
    """bench/browser_bench.py's figures; empty without Debian's chromium (it says why on stderr)."""
    spec = importlib.util.spec_from_file_location("browser_bench", ROOT / "bench" / "browser_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = dict(module.measure())
    if not found:
        print(f"browser figures skipped: no chromium at {module.CHROMIUM}", file=sys.stderr)
    return found


def refusal_figures() -> dict[str, float]:
    import subprocess
    import tempfile

    def one(config: str) -> float:
        command = [sys.executable, "-m", "planner", "estimate", "--params-b", "8", "--model-config", config]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)
        elapsed_s = time.perf_counter() - start
        if done.returncode != 2:
            raise RuntimeError(f"{config} was not refused: exit {done.returncode}, {done.stderr[-300:]}")
        return elapsed_s

    with tempfile.TemporaryDirectory() as folder:
        fifo = os.path.join(folder, "config.json")
        os.mkfifo(fifo)  # nobody writes to it: a blocking read would wait forever
        return {
            "cli_refusal_dev_zero_s": statistics.median(one("/dev/zero") for _ in range(N_REFUSALS)),
            "cli_refusal_fifo_s": statistics.median(one(fifo) for _ in range(N_REFUSALS)),
        }


def main() -> None:
    figures: dict[str, Any] = {"python": platform.python_version(), "n_cpus": os.cpu_count()}
    figures.update(library_figures())
    figures.update(refusal_figures())
    figures.update(page_figures())
    figures.update(sweep_figures())
    figures.update(browser_figures())
    rounded = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
    for name in ("page_rerun_ms", "script_compile_ms"):
        rounded[name] = {k: round(v, 3) for k, v in figures[name].items()}
    print(json.dumps(rounded, indent=2))


if __name__ == "__main__":
    main()
