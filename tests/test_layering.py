"""planner/ is a pure library: no streamlit or altair import, and no print outside the CLI modules."""

from __future__ import annotations

import ast
from pathlib import Path

PLANNER = Path(__file__).resolve().parents[1] / "planner"
CLI_PARTS = {"cli", "__main__.py"}  # the command-line front end (planner/cli/, __main__) prints by design


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
    offenders = {str(p) for p in PLANNER.rglob("*.py") if _imports(p) & {"streamlit", "altair"}}
    assert offenders == set()


def test_planner_never_prints_outside_the_cli():
    offenders = set()
    for path in PLANNER.rglob("*.py"):
        if path.relative_to(PLANNER).parts[0] in CLI_PARTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.add(str(path))
    assert offenders == set()
