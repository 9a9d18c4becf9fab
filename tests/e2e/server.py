"""A Streamlit server for real-browser runs: started on 127.0.0.1 at a free port and waited for until healthy.

Plain functions, no pytest: the browser tests (tests/e2e/conftest.py) and the browser benchmark
(bench/browser_bench.py) start their servers the same way.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_TIMEOUT_S = 60.0


class ServerDidNotStart(RuntimeError):
    """The server exited or was not healthy in time; the message ends with the tail of its log."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as response:
            return bool(response.read() == b"ok")
    except OSError:
        return False


def launch(script: Path, log_path: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    """SCRIPT served by Streamlit (app.py as `make run` serves it) with `env` added to this process's environment;
    (process, base URL)."""
    port = free_port()
    # app.py through `make run`'s entry (ui/serve.py: the imports before the server answers), where the checkout
    # has it (bench --baseline may time an older one); other scripts plain
    served = script.name == "app.py" and (script.parent / "ui" / "serve.py").is_file()
    entry = ["ui.serve"] if served else ["streamlit", "run"]
    command = [sys.executable, "-m", *entry, str(script), "--server.headless=true",
               "--server.address=127.0.0.1", f"--server.port={port}", "--browser.gatherUsageStats=false",
               "--server.fileWatcherType=none"]  # fmt: skip
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command,
            cwd=script.parent if served else ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not healthy(url):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise ServerDidNotStart(f"streamlit did not start on {url}:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.1)
    return server, url


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(timeout=10)
