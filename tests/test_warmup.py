"""The app's warm-up imports only what `make run` installs: a fresh clone has no torch, transformers or peft.

The warm-up runs in a subprocess whose import system refuses those three packages (a `sys.meta_path` finder
that raises ModuleNotFoundError for them, as a runtime-only environment would), so the test fails exactly where
a fresh clone's first page would crash, even though this environment has the trace extra installed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from ui.warmup import NEEDS_TRACE_EXTRA, PACKAGES

ROOT = Path(__file__).resolve().parents[1]
TRACE_EXTRA = ("torch", "transformers", "peft")

WITHOUT_TRACE_EXTRA = f"""
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {TRACE_EXTRA!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from ui.warmup import import_everything
import_everything()
print(sorted(m for m in sys.modules if m.split(".")[0] in {TRACE_EXTRA!r}))
"""


def top_level_imports(path: Path) -> set[str]:
    """The first name of every package a module imports at its top level (not inside functions)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_warm_up_runs_where_the_trace_extra_is_not_installed():
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TRACE_EXTRA], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"  # nothing of the extra was imported


def test_the_skipped_modules_are_exactly_those_that_import_the_trace_extra():
    importing = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if top_level_imports(path) & set(TRACE_EXTRA):
                parts = path.relative_to(ROOT).with_suffix("").parts
                importing.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    assert importing == set(NEEDS_TRACE_EXTRA)
    assert len(importing) == 5  # build, run, sharded, step, tracker
