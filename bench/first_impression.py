"""A new user's first minute, in a real browser: prints one JSON object.

- fresh_clone_served_s (with --fresh-clone): `git clone` of this checkout's HEAD into a temporary folder, then
  `make run` there (it builds .venv and installs the pinned dependencies), timed until the server's health check
  answers. The clone's first page is then timed as below (cold_first_page_s comes from that server).
- server_start_s: `streamlit run app.py` with the current environment until the health check answers.
- cold_first_page_s: a fresh browser opens "/" on the just-started server, until the Overview's heading is drawn
  and the run has finished painting (no skeleton or stale element): what the first visitor waits for.
- warm_page_s: every page opened by its URL in a new browser context (a new session) once the server is warm,
  timed the same way; the median of REPEATS visits per page, and warm_page_max_s the slowest page.
- returning_page_s: the same visits in one browser context kept open, a new tab per visit (a new Streamlit
  session each time): a returning user's browser, whose HTTP cache already holds Streamlit's hashed, immutable
  scripts (2.8 MB, the data grid's 1.2 MB, a chart's 0.8 MB), which a new context downloads and compiles afresh;
  returning_page_max_s the slowest page.
- methods_page_s: the Methods & data page's figure from warm_page_s.
- --baseline DIR: the same figures for another checkout (baseline_*), its server started beside this one and the
  warm visits alternating between the two, so both see the same load; load_average_1min is printed too.

Aims (issue text): served <= 45 s from a fresh clone, first page <= 3 s, any page by URL <= 1.5 s warm, Methods
<= 2 s. No timing assertions: the tests never read these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.app_page import IDLE_SCRIPT  # noqa: E402  (the browser tests' notion of "painted")
from tests.e2e.server import free_port, healthy, launch, stop  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
PAGES = {  # URL path -> the heading the page draws
    "/": "Overview",
    "/plan_sheet": "Plan sheet",
    "/compute": "Compute",
    "/memory": "Memory",
    "/cost": "Cost",
    "/energy": "Energy",
    "/compare": "Compare GPUs",
    "/plan_search": "Plan search",
    "/scenarios": "Scenarios",
    "/methods": "Methods & data",
}
REPEATS = 3
TIMEOUT_MS = 120_000


def painted_s(browser: Any, url: str, heading: str, context: Any = None) -> float:
    """Seconds from navigating a new tab to `url` until `heading` is drawn and the run has painted: in a fresh
    context (an empty cache) unless `context` is given (a returning browser)."""
    fresh = context is None
    context = browser.new_context(viewport={"width": 1440, "height": 900}) if fresh else context
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url)
    page.get_by_role("heading", name=heading).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function(IDLE_SCRIPT, timeout=TIMEOUT_MS, polling="raf")
    elapsed = time.perf_counter() - start
    page.close()
    if fresh:
        context.close()
    return elapsed


def returning_visits(browser: Any, url: str) -> dict[str, list[float]]:
    """Every page REPEATS times in one context kept open, after one unmeasured round fills its cache."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    times: dict[str, list[float]] = {path: [] for path in PAGES}
    for round_index in range(REPEATS + 1):
        for path, heading in PAGES.items():
            elapsed = painted_s(browser, url + path, heading, context)
            if round_index:
                times[path].append(elapsed)
    context.close()
    return times


def fresh_clone_served(folder: Path) -> tuple[subprocess.Popen, str, float]:
    """Clone HEAD into `folder`, start `make run` there; (process, URL, seconds until the server answered)."""
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder)], check=True)
    port = free_port()
    log = (folder.parent / "make-run.log").open("wb")
    start = time.perf_counter()
    make = subprocess.Popen(
        ["make", "run", f"PORT={port}"],
        cwd=folder,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    while not healthy(url):
        if make.poll() is not None:
            raise RuntimeError(f"make run exited {make.returncode}: see {log.name}")
        time.sleep(0.1)
    return make, url, time.perf_counter() - start


def measure(fresh_clone: bool, baseline: Path | None = None) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with sync_playwright() as driver, tempfile.TemporaryDirectory() as work:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        if fresh_clone:
            make, url, out["fresh_clone_served_s"] = fresh_clone_served(Path(work) / "clone")
            try:
                out["fresh_clone_first_page_s"] = painted_s(browser, url + "/", "Overview")
            finally:
                os.killpg(make.pid, signal.SIGTERM)  # make and the server it started
                make.wait()
        trees = {"": ROOT, **({"baseline_": baseline} if baseline else {})}
        servers, urls = {}, {}
        try:
            for prefix, tree in trees.items():
                start = time.perf_counter()
                servers[prefix], urls[prefix] = launch(tree / "app.py", Path(work) / f"server{prefix}.log")
                out[f"{prefix}server_start_s"] = time.perf_counter() - start
                out[f"{prefix}cold_first_page_s"] = painted_s(browser, urls[prefix] + "/", "Overview")
            # visits alternate between the trees, so a busy moment of the machine falls on both alike
            warm: dict[str, dict[str, list[float]]] = {
                prefix: {path: [] for path in PAGES} for prefix in trees
            }
            for _ in range(REPEATS):
                for path, heading in PAGES.items():
                    for prefix in trees:
                        warm[prefix][path].append(painted_s(browser, urls[prefix] + path, heading))
            returning = {prefix: returning_visits(browser, urls[prefix]) for prefix in trees}
        finally:
            for server in servers.values():
                stop(server)
        browser.close()
    for prefix in trees:
        medians = {path: statistics.median(times) for path, times in warm[prefix].items()}
        names = {path: path.strip("/") or "overview" for path in medians}
        out |= {f"{prefix}warm_page_s_{names[path]}": t for path, t in medians.items()}
        out[f"{prefix}warm_page_max_s"] = max(medians.values())
        out[f"{prefix}methods_page_s"] = medians["/methods"]
        again = {names[path]: statistics.median(times) for path, times in returning[prefix].items()}
        out |= {f"{prefix}returning_page_s_{name}": t for name, t in again.items()}
        out[f"{prefix}returning_page_max_s"] = max(again.values())
    out["load_average_1min"] = os.getloadavg()[
        0
    ]  # a 2-core machine shared by others: read the figures with it
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-clone", action="store_true", help="also time `make run` in a fresh clone")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. main's): its server is timed alongside, baseline_*",
    )
    args = parser.parse_args()
    print(json.dumps({k: round(v, 2) for k, v in measure(args.fresh_clone, args.baseline).items()}, indent=2))
