"""`planner-app`: serve the dashboard from a checkout or an install, with the project's Streamlit settings.

The settings (headless, upload limit, no usage statistics...) live in one place, `.streamlit/config.toml`,
which the install ships beside app.py. Streamlit reads the `.streamlit/config.toml` next to the main script
wherever it is started from, so the launcher passes only what differs per deployment: port, address and URL
prefix. This module does not import Streamlit (planner/ stays a pure library): it starts the app's own
`ui/serve.py` (every page module imported before the server answers, then `streamlit run`) with the interpreter
it runs under, so the app uses the same environment as the command.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence

from planner.catalogue.paths import app_script

__all__ = ["DEFAULT_ADDRESS", "build_parser", "main", "streamlit_command"]

# Loopback only unless asked: the dashboard has no authentication, so exposing it is a deliberate choice
# (behind a reverse proxy, pass --address 0.0.0.0 or the proxy-facing interface and --base-url-path).
DEFAULT_ADDRESS = "127.0.0.1"
MAX_PORT = 65535  # TCP ports are 16-bit


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a whole number, got {text!r}") from None
    if not 1 <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"port must be between 1 and {MAX_PORT}, got {port}")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planner-app",
        description="Serve the Training Run Planner dashboard.",
        epilog="Any other arguments go unchanged to `streamlit run` (see `python -m streamlit run --help`).",
        allow_abbrev=False,  # an abbreviation of a Streamlit flag must not be taken for one of ours
    )
    parser.add_argument("--port", type=_port, help="TCP port to listen on (default: Streamlit's, 8501)")
    parser.add_argument(
        "--address", default=DEFAULT_ADDRESS, help=f"interface to listen on (default: {DEFAULT_ADDRESS})"
    )
    parser.add_argument(
        "--base-url-path",
        help="URL prefix when served behind a reverse proxy, e.g. 'planner' for https://host/planner/",
    )
    return parser


def streamlit_command(argv: Sequence[str] | None = None) -> list[str]:
    """The full command line for these launcher arguments: `python <app>/ui/serve.py <app>/app.py ...`, which
    takes `streamlit run`'s arguments."""
    parser = build_parser()
    args, passthrough = parser.parse_known_args(argv)
    script = app_script()
    if not script.is_file():
        parser.error(f"the dashboard script is missing: {script} (reinstall the package)")
    serve = script.parent / "ui" / "serve.py"
    command = [sys.executable, str(serve), str(script), f"--server.address={args.address}"]
    if args.port is not None:
        command.append(f"--server.port={args.port}")
    if args.base_url_path is not None:
        command.append(f"--server.baseUrlPath={args.base_url_path}")
    # Last, so that an explicit Streamlit flag overrides ours (click keeps the last value of an option).
    return command + passthrough


def main(argv: Sequence[str] | None = None) -> int:
    command = streamlit_command(argv)
    if os.name != "posix":
        return subprocess.call(command)
    # Become the server process, so that a service manager's signals and the exit status reach it directly.
    os.execv(command[0], command)
    return 0  # not reached: execv only returns by raising
