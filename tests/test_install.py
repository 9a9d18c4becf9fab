"""`pip install .` (not editable) gives working `planner` and `planner-app` commands, wherever they are run.

The repository is copied to a temporary folder first (without .venv, .git and build leftovers), so the install
sees only what the project really ships, and every command runs from another folder, so nothing can be
imported from a checkout by accident.

Why this environment: a plain `python -m venv` (no --system-site-packages) into which `pip install
--no-deps` puts only this project, while the pinned dependencies (streamlit, polars, ... about 800 MB) are
reused from the environment running the tests through a `.pth` file, instead of downloaded again. A `.pth`
entry is appended after the new venv's own site-packages, so `planner` and `planner_app` resolve to the fresh
install, which `test_the_install_is_what_runs` checks. pip still builds the wheel in an isolated build environment, exactly
as a user's `pip install .` does (setuptools comes from the package index or pip's cache).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from planner.catalogue.paths import app_script
from planner.cli.launcher import DEFAULT_ADDRESS, streamlit_command

ROOT = Path(__file__).resolve().parents[1]
# What a fresh clone does not have, or what must not leak into the build.
NOT_COPIED = (".venv", ".git", "*.egg-info", "build", "dist", "__pycache__", ".*_cache", ".hypothesis")
ESTIMATE_ARGS = ["estimate", "--params-b", "8", "--model", "", "--format", "json"]
HEALTH_TIMEOUT_S = 60
# Streamlit prints this at start-up unless browser.gatherUsageStats is false (in streamlit/runtime/
# credentials.py): its absence shows that the bundled .streamlit/config.toml was read.
USAGE_STATS_NOTICE = "Collecting usage statistics"
# Runs the app once in AppTest and prints what a packaging fault would change: exceptions and metrics.
APP_SUMMARY = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=60).run()
metrics = [[m.label, m.value] for m in at.metric]
print(json.dumps({"exceptions": [e.message for e in at.exception], "metrics": metrics}))
"""


@dataclass(frozen=True)
class Install:
    bin_dir: Path
    site_packages: Path
    workdir: Path  # an empty folder to run commands from

    @property
    def python(self) -> Path:
        return self.bin_dir / "python"


def _clean_env() -> dict[str, str]:
    """The caller's environment minus what could point Python or the app at the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "PLANNER_DATA_DIR"}}
    env.update(PYTHONNOUSERSITE="1", PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _run(args: list[str], cwd: Path, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def install(tmp_path_factory: pytest.TempPathFactory) -> Install:
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_COPIED))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site_probe = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(_run([str(python), "-c", site_probe], base).stdout.strip())
    dependency_dirs = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "_project_dependencies.pth").write_text("\n".join(dependency_dirs) + "\n")
    # pip itself comes from the dependency environment too; --ignore-installed leaves that environment's
    # (editable) copy of this project alone instead of trying to uninstall it.
    pip_install = [str(python), "-m", "pip", "install", "--no-deps", "--ignore-installed", str(source)]
    pip = _run(pip_install, base, timeout_s=300)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    workdir = base / "elsewhere"
    workdir.mkdir()
    return Install(bin_dir=venv / "bin", site_packages=site, workdir=workdir)


def test_the_install_is_what_runs(install: Install):
    probe = "import json, planner, planner.catalogue.paths as p;"
    probe += " print(json.dumps([planner.__file__, str(p.bundle_dir())]))"
    result = _run([str(install.python), "-c", probe], install.workdir)
    assert result.returncode == 0, result.stderr
    planner_file, bundle = map(Path, json.loads(result.stdout))
    assert planner_file.is_relative_to(install.site_packages)
    assert bundle == install.site_packages / "planner_app"
    shipped = ["app.py", "ui/state.py", "app_pages/overview.py", ".streamlit/config.toml", "data/gpus.csv"]
    shipped += ["data/README.md", "data/prices/2026-11-09.csv"]
    assert [name for name in shipped if not (bundle / name).is_file()] == []
    pages = {p.name for p in (ROOT / "pages").glob("*.py")}
    assert {p.name for p in (bundle / "pages").glob("*.py")} == pages
    assert not (bundle / "pyproject.toml").exists(), "only the listed files belong in the bundle"


def test_planner_command_gives_the_same_estimate_as_the_checkout(install: Install):
    installed = _run([str(install.bin_dir / "planner"), *ESTIMATE_ARGS], install.workdir)
    assert installed.returncode == 0, installed.stderr
    figures = json.loads(installed.stdout)
    assert figures["training_tokens"] > 0
    assert isinstance(figures["fits_vram"], bool)
    checkout = _run([sys.executable, "-m", "planner", *ESTIMATE_ARGS], ROOT)
    assert checkout.returncode == 0, checkout.stderr
    assert figures == json.loads(checkout.stdout)


def _app_summary(python: Path | str, script: Path, cwd: Path) -> dict:
    result = _run([str(python), "-c", APP_SUMMARY, str(script)], cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    # Messages may name files; compare them relative to the app's folder.
    summary["exceptions"] = [m.replace(str(script.parent), "<app>") for m in summary["exceptions"]]
    return summary


def test_installed_app_renders_like_the_checkout(install: Install):
    """The installed app finds ui/, app_pages/ and data/ (a missing file or module would show up as an exception).

    Compared with the checkout rather than required to be flawless: the page tests judge the app itself.
    """
    installed_app = install.site_packages / "planner_app" / "app.py"
    installed = _app_summary(install.python, installed_app, install.workdir)
    checkout = _app_summary(sys.executable, ROOT / "app.py", ROOT)
    assert installed == checkout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((DEFAULT_ADDRESS, 0))
        return sock.getsockname()[1]


def _wait_for_health(url: str, server: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read().decode()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.25)
    return ""


@pytest.mark.parametrize("base_url_path", [None, "planner"])
def test_planner_app_serves_with_the_bundled_settings(install: Install, base_url_path: str | None):
    port = _free_port()
    args = [str(install.bin_dir / "planner-app"), "--port", str(port)]
    prefix = ""
    if base_url_path:
        args += ["--base-url-path", base_url_path]
        prefix = f"/{base_url_path}"
    log = install.workdir / f"server-{port}.log"
    with log.open("w") as out:
        server = subprocess.Popen(args, cwd=install.workdir, env=_clean_env(), stdout=out, stderr=out)
        try:
            health = _wait_for_health(f"http://{DEFAULT_ADDRESS}:{port}{prefix}/_stcore/health", server)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    output = log.read_text()
    assert health == "ok", output
    assert USAGE_STATS_NOTICE not in output


# The launcher's command line, without starting anything.


def test_launcher_defaults_to_loopback_and_streamlits_port():
    command = streamlit_command([])
    serve = app_script().parent / "ui" / "serve.py"
    assert command[:3] == [sys.executable, str(serve), str(app_script())]
    assert command[3:] == [f"--server.address={DEFAULT_ADDRESS}"]


def test_launcher_flags_and_passthrough_order():
    command = streamlit_command(
        ["--port", "9000", "--address", "0.0.0.0", "--base-url-path", "tools/planner", "--server.port=9100"]
    )
    assert command[3:] == [
        "--server.address=0.0.0.0",
        "--server.port=9000",
        "--server.baseUrlPath=tools/planner",
        "--server.port=9100",  # after ours: a Streamlit flag given explicitly wins
    ]


def test_launcher_does_not_take_an_abbreviation_for_its_own_flag():
    assert streamlit_command(["--po", "1"])[-2:] == ["--po", "1"]


@pytest.mark.parametrize("port", ["0", "65536", "http", "-1"])
def test_launcher_rejects_a_bad_port(port: str, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        streamlit_command(["--port", port])
    assert exit_info.value.code == 2
    assert "port" in capsys.readouterr().err
