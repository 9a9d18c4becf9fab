"""planner/ is a pure library: no streamlit or altair import, and no print outside the CLI modules."""

from __future__ import annotations

import ast
from pathlib import Path

PLANNER = Path(__file__).resolve().parents[1] / "planner"
CLI_MODULES = {"__main__.py"}  # and every cli*.py: the command-line front end prints by design


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_planner_never_imports_streamlit_or_altair():
    offenders = {p.name for p in PLANNER.glob("*.py") if _imports(p) & {"streamlit", "altair"}}
    assert offenders == set()


def test_planner_never_prints_outside_the_cli():
    offenders = set()
    for path in PLANNER.glob("*.py"):
        if path.name in CLI_MODULES or path.name.startswith("cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.add(path.name)
    assert offenders == set()
