"""Websocket load on a real server: N sessions edit the sidebar on Overview; rerun times and server memory as JSON.

    python bench/load_bench.py [--sessions 25] [--think-s 1] [--duration-s 60] [--settle-s 60]

It starts its own `streamlit run app.py` on 127.0.0.1 at a free port (tests/e2e/server.py, as the browser tests
do) and talks to it only there, in Streamlit's own protocol (the BackMsg/ForwardMsg protobufs the streamlit
package ships), as the browser's frontend does: a `rerun_script` BackMsg carrying the page, the query string and
the changed widget's state; a run's end is the `script_finished` ForwardMsg.

- One warm-up session opens Overview and closes first (imports, catalogues), then server_rss_start_mb is read.
- Then `sessions` sessions connect together; each runs Overview once (first_run_*), and until `duration_s` has
  passed sets "Number of GPUs" (`w.n_gpus`) to a value it has not had before, times the send -> script_finished
  (rerun_p50_s / rerun_p95_s), and waits `think_s`.
- errors: an exception element in a run, a run not finished within RUN_TIMEOUT_S, a run after which the plan's
  query string does not carry the count sent (the plan did not take it), a lost connection.
- server_rss_peak_mb: the largest resident size sampled every RSS_SAMPLE_S while sessions are open;
  server_rss_after_60s_mb: `settle_s` after every session closed (60 s by default, whatever the key's name).
- server_cpu_ms_per_rerun: the server's CPU time (user + system) over the load phase per run it answered: what
  one rerun costs the one Python process that serves every session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner import Scenario  # noqa: E402
from tests.e2e.server import launch, stop  # noqa: E402  (the browser tests start their servers the same way)

DEFAULT_N_GPUS = Scenario.model_fields["n_gpus"].default

WIDGET_KEY = "w.n_gpus"
# A generous bound: a rerun slower than this is a failure, not a figure (the target is 2 s at p95).
RUN_TIMEOUT_S = 60.0
RSS_SAMPLE_S = 0.25
# Forward messages carry whole chart specs and tables; websockets' 1 MiB default is below a page's largest.
MAX_MESSAGE_BYTES = 64 * 2**20
# Each session's GPU counts start far apart, so no two sessions ask for the same scenario at the same time.
VALUES_PER_SESSION = 1000
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


class RunFailed(RuntimeError):
    """A run showed an exception, timed out, or the connection closed."""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024  # the kernel reports kB
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_s(pid: int) -> float:
    # /proc/PID/stat: fields 14 and 15 (utime, stime) in clock ticks, counted after the ")" that ends the name.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S


class Session:
    """One browser tab's worth of protocol: the page it is on, its query string, the widget id it edits."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.page_script_hash = ""
        self.query_string = ""
        self.widget_id: str | None = None

    async def run(self, widget_value: int | None) -> float:
        """Send one rerun (with `widget_value` for the GPU count, or none: the first run); seconds to its end."""
        message = BackMsg()
        state = message.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_script_hash
        if widget_value is not None:
            if self.widget_id is None:
                raise RunFailed(f"no widget keyed {WIDGET_KEY} on the page")
            widget = state.widget_states.widgets.add()
            widget.id = self.widget_id
            widget.string_value = str(widget_value)  # a text box: numbers are typed (ui/number_entry.py)
        start = time.perf_counter()
        await self.socket.send(message.SerializeToString())
        await asyncio.wait_for(self._until_finished(), RUN_TIMEOUT_S)
        elapsed_s = time.perf_counter() - start
        # The app writes the committed plan into the address bar (ui/state.py `sync_query_params`): the sent
        # count in the query string means the plan took it. (The box itself is not re-sent with its value:
        # the app writes a box's value only when it differs from what was typed, ui/state.py `bound`.)
        if widget_value is not None:
            # A count equal to the default is left out of the link, as every default is.
            taken = parse_qs(self.query_string).get("n_gpus", [str(DEFAULT_N_GPUS)])[0]
            if taken != str(widget_value):
                raise RunFailed(f"sent {WIDGET_KEY}={widget_value}, the plan's link says n_gpus={taken}")
        return elapsed_s

    async def _until_finished(self) -> None:
        async for raw in self.socket:
            message = ForwardMsg()
            message.ParseFromString(raw)
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.page_script_hash = message.new_session.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = message.page_info_changed.query_string
            elif kind == "delta":
                self._read_element(message)
            elif kind == "script_finished":
                if message.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RunFailed("the script did not compile")
                if message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                    return
        raise RunFailed("the server closed the connection")

    def _read_element(self, message: ForwardMsg) -> None:
        delta = message.delta
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind == "exception":
            raise RunFailed(f"exception in the run: {element.exception.message[:200]}")
        if kind == "text_input" and element.text_input.id.endswith("-" + WIDGET_KEY):
            self.widget_id = element.text_input.id


async def one_session(
    url: str, index: int, think_s: float, deadline: float, results: dict[str, list]
) -> None:
    stream = url.replace("http://", "ws://") + "/_stcore/stream"
    try:
        async with websockets.connect(
            stream, subprotocols=["streamlit"], max_size=MAX_MESSAGE_BYTES
        ) as socket:
            session = Session(socket)
            results["first_run_s"].append(await session.run(None))
            value = 1 + index * VALUES_PER_SESSION
            while time.monotonic() < deadline:
                value += 1
                results["rerun_s"].append(await session.run(value))
                await asyncio.sleep(think_s)
    except (RunFailed, TimeoutError, websockets.exceptions.WebSocketException, OSError) as err:
        results["errors"].append(f"session {index}: {type(err).__name__}: {err}")


async def load(url: str, sessions: int, think_s: float, duration_s: float) -> dict[str, list]:
    results: dict[str, list] = {"first_run_s": [], "rerun_s": [], "errors": []}
    deadline = time.monotonic() + duration_s
    await asyncio.gather(*(one_session(url, i, think_s, deadline, results) for i in range(sessions)))
    return results


class RssSampler:
    """Samples the server's resident size in a thread while the load runs; `peak_mb` is the largest seen."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_mb = pid, rss_mb(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(RSS_SAMPLE_S):
            self.peak_mb = max(self.peak_mb, rss_mb(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def quantile(values: list[float], q: float) -> float | None:
    if len(values) < 2:
        return values[0] if values else None
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def measure(sessions: int, think_s: float, duration_s: float, settle_s: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        # The sessions never save plans; a throwaway library keeps the user's own out of reach all the same.
        env = {"PLANNER_DB_URL": f"sqlite:///{scratch}/plans.sqlite3"}
        server, url = launch(ROOT / "app.py", Path(scratch) / "server.log", env)
        try:
            warm = asyncio.run(load(url, 1, 0.0, 0.0))
            rss_start_mb = rss_mb(server.pid)
            cpu_before_s = cpu_s(server.pid)
            with RssSampler(server.pid) as sampler:
                results = asyncio.run(load(url, sessions, think_s, duration_s))
            cpu_used_s = cpu_s(server.pid) - cpu_before_s
            time.sleep(settle_s)
            rss_after_mb = rss_mb(server.pid)
        finally:
            stop(server)
    reruns, errors = results["rerun_s"], warm["errors"] + results["errors"]
    n_runs = len(reruns) + len(results["first_run_s"])
    return {
        "sessions": sessions,
        "think_s": think_s,
        "duration_s": duration_s,
        "settle_s": settle_s,
        "reruns": len(reruns),
        "errors": len(errors),
        "error_messages": errors[:5],
        "rerun_p50_s": quantile(reruns, 0.50),
        "rerun_p95_s": quantile(reruns, 0.95),
        "rerun_max_s": max(reruns, default=None),
        "first_run_p50_s": quantile(results["first_run_s"], 0.50),
        "first_run_max_s": max(results["first_run_s"], default=None),
        "server_cpu_ms_per_rerun": cpu_used_s * 1e3 / n_runs if n_runs else None,
        "server_rss_start_mb": rss_start_mb,
        "server_rss_peak_mb": sampler.peak_mb,
        "server_rss_after_60s_mb": rss_after_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=25, help="websocket sessions at once (default 25)")
    parser.add_argument("--think-s", type=float, default=1.0, help="pause after each rerun (default 1 s)")
    parser.add_argument(
        "--duration-s", type=float, default=60.0, help="how long sessions edit (default 60 s)"
    )
    parser.add_argument(
        "--settle-s", type=float, default=60.0, help="wait before the last RSS (default 60 s)"
    )
    args = parser.parse_args()
    # Bounded on purpose: this is a benchmark against our own local server, not a load generator.
    if not (1 <= args.sessions <= 200 and 0 <= args.think_s <= 60 and 0 < args.duration_s <= 600):
        parser.error("--sessions must be 1..200, --think-s 0..60 and --duration-s above 0 and at most 600")
    if not 0 <= args.settle_s <= 600:
        parser.error("--settle-s must be 0..600")
    figures = measure(args.sessions, args.think_s, args.duration_s, args.settle_s)
    rounded = {k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}
    print(json.dumps(rounded, indent=2))


if __name__ == "__main__":
    main()
