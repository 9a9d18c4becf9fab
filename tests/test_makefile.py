"""The Makefile: `make run` installs the runtime dependencies only, `make test` adds the test extras, and
neither installs again what the other already did.

The real Makefile runs in a temporary folder beside a copy of pyproject.toml, with `.venv/bin/python`, `ruff` and
`mypy` replaced by a stub that logs its arguments and succeeds, so the test sees every command make runs without
installing or serving anything.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUB = '#!/bin/sh\necho "$(basename "$0") $*" >> "$(dirname "$0")/../../calls.log"\n'
RUNTIME_INSTALL = "uv pip install --quiet --python .venv/bin/python -e ."
PIP_RUNTIME_INSTALL = "python -m pip install --quiet -e ."
PIP_UPGRADE = "python -m pip install --quiet --upgrade pip"
TEST_INSTALL = "python -m pip install --quiet -e .[test,trace]"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "ruff", "mypy", "uv"):
        (bin_dir / tool).write_text(STUB)
        (bin_dir / tool).chmod(0o755)
    return tmp_path


def make(project: Path, *args: str) -> list[str]:
    """Run make; the commands the stubs saw during this run."""
    log = project / "calls.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(["make", *args], cwd=project, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_run_installs_the_runtime_only_and_serves_on_the_chosen_port(project: Path) -> None:
    calls = make(project, "run", "PORT=8600")
    assert calls[0] == RUNTIME_INSTALL
    assert not any("[test]" in call for call in calls)
    assert calls[-1] == "python -m ui.serve app.py --server.address=127.0.0.1 --server.port=8600"


def test_test_after_run_adds_only_the_test_extras(project: Path) -> None:
    make(project, "run")
    calls = make(project, "test")
    assert RUNTIME_INSTALL not in calls and calls[:2] == [PIP_UPGRADE, TEST_INSTALL]
    assert calls[2:] == ["ruff check .", "ruff format --check .", "mypy planner", "python -m pytest"]


def test_run_after_test_installs_nothing(project: Path) -> None:
    first = make(project, "test")
    assert first[:3] == [RUNTIME_INSTALL, PIP_UPGRADE, TEST_INSTALL]
    assert [call for call in make(project, "run") if "pip" in call] == []
    assert [call for call in make(project, "test") if "pip" in call] == []


def test_fuzz_runs_the_hypothesis_tests_under_the_fuzz_profile(project: Path) -> None:
    calls = make(project, "fuzz")
    assert calls[:3] == [RUNTIME_INSTALL, PIP_UPGRADE, TEST_INSTALL]
    assert calls[3:] == ["python -m pytest -m hypothesis tests"]
    makefile = (project / "Makefile").read_text()
    assert "HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest -m hypothesis tests" in makefile


def test_a_changed_pyproject_installs_again(project: Path) -> None:
    make(project, "test")
    with (project / "pyproject.toml").open("a") as toml:
        toml.write("\n# a new pin\n")
    assert make(project, "run")[0] == RUNTIME_INSTALL
    stamps = sorted(p.name for p in (project / ".venv").glob(".installed-*"))
    assert len(stamps) == 1 and stamps[0].startswith(".installed-run-"), "old stamps are removed"
    assert make(project, "test")[:2] == [PIP_UPGRADE, TEST_INSTALL]


def test_uv_0_installs_the_runtime_with_pip(project: Path) -> None:
    calls = make(project, "run", "UV=0")
    assert calls[0] == PIP_RUNTIME_INSTALL and not any(call.startswith("uv") for call in calls)


def test_a_venv_without_uv_gets_it_from_pip_first_and_upgrades_no_pip(project: Path) -> None:
    bin_dir = project / ".venv" / "bin"
    (bin_dir / "uv").unlink()
    # the python stub puts a uv stub in place when asked to install uv, as pip would
    (bin_dir / "python").write_text(
        STUB + 'if [ "$*" = "-m pip install --quiet uv" ]; then cp "$0" "$(dirname "$0")/uv"; fi\n'
    )
    calls = make(project, "run")
    assert calls[:2] == ["python -m pip install --quiet uv", RUNTIME_INSTALL]
    assert PIP_UPGRADE not in calls


def test_a_venv_where_pip_cannot_install_uv_installs_with_pip(project: Path) -> None:
    bin_dir = project / ".venv" / "bin"
    (bin_dir / "uv").unlink()
    # the python stub fails to install uv, as pip does against an index that lacks it
    (bin_dir / "python").write_text(STUB + 'if [ "$*" = "-m pip install --quiet uv" ]; then exit 1; fi\n')
    calls = make(project, "run")
    assert calls[:2] == ["python -m pip install --quiet uv", PIP_RUNTIME_INSTALL]
    assert calls[-1].startswith("python -m ui.serve app.py")


@pytest.mark.parametrize(
    ("env", "expected"), [({"CI": "true"}, 300), ({"HYPOTHESIS_PROFILE": "fuzz", "FUZZ_FACTOR": "2"}, 600)]
)
def test_the_fuzz_profile_multiplies_the_examples_and_ci_keeps_its_count(
    env: dict[str, str], expected: int
) -> None:
    """The real profiles of tests/conftest.py on a real property (300 examples as written)."""
    import os
    import sys

    test = "tests/test_number_entry.py::test_what_a_box_shows_reads_back_to_the_same_value"
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "HYPOTHESIS_PROFILE", "FUZZ_FACTOR"}}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", test, "--hypothesis-show-statistics", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**clean, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert f"{expected} passing" in done.stdout, done.stdout[-2000:]
