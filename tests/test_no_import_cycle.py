"""No import cycle inside `planner/`: every `import`/`from ... import` counts, lazy (inside a function) and
TYPE_CHECKING imports included, since each is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from pathlib import Path

PLANNER = Path(__file__).resolve().parents[1] / "planner"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PLANNER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """module -> the planner modules it imports (a `from package import submodule` names the submodule)."""
    modules = {_module_name(path): path for path in PLANNER.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module in modules:
                edges[name].add(node.module)
                edges[name] |= {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
            elif isinstance(node, ast.Import):
                edges[name] |= {alias.name for alias in node.names} & modules.keys()
        edges[name].discard(name)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found


def test_the_checker_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


def test_planner_has_no_import_cycle() -> None:
    assert _cycles(_imports()) == []
