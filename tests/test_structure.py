"""The package layout DESIGN.md §2 describes, checked as a newcomer would meet it.

- no import cycle inside planner/ (every import counts: lazy ones inside functions and TYPE_CHECKING ones too);
- at most 12 top-level modules in planner/ and at least 5 subpackages, each opening with a docstring;
- no file over 300 lines in planner/, ui/, app_pages/ or app.py;
- dependencies point one way between the subpackages (LAYERS below);
- ui/ and app_pages/ use the library only through its public API (`from planner import ...`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANNER = ROOT / "planner"
MAX_TOP_LEVEL_MODULES = 12
MIN_SUBPACKAGES = 5
MAX_LINES = 300
# Lowest first: a module may import its own layer and the layers before it, never one after it. The
# top-level pipeline modules (resolve -> evaluate -> estimate and their types) sit between the parts they
# compose (inputs, catalogue, formulas) and the parts that use them (decide, cases, export, cli). The plan
# library stores validated scenarios, so it needs the inputs and nothing computed. `decide` and `export` share a
# layer but stay apart; `cases` sits above `decide` (it may run the plan search), and neither imports `cases`.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors"}),
    frozenset({"model"}),
    frozenset({"formulas"}),
    frozenset({"inputs"}),
    frozenset({"library"}),
    frozenset({"catalogue"}),
    # post-training composes Columns like the pipeline modules, which read its column group
    frozenset({"pipeline", "post", "multimodal"}),  # vision-language and diffusion parts, like post
    frozenset({"decide", "export"}),
    # validation predicts a row whose source states no layout at the plan search's pick (cases.case_layout)
    frozenset({"cases"}),
    # the traced second opinion (optional extra) reads the resolved plan and the formulas' peak
    frozenset({"trace"}),
    # imported training runs: read into case rows, stored in the library, compared with the estimate
    frozenset({"runs"}),
    frozenset({"cli", "__main__", "api"}),
)
LAYER_MATES = frozenset({"decide", "export"})  # one layer, kept apart from each other
SUBPACKAGES = frozenset().union(*LAYERS) - {"errors", "pipeline", "__main__", "api"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PLANNER.rglob("*.py")}


def _imported(module: str, tree: ast.AST) -> Iterator[str]:
    """Every planner module `module` imports, anywhere in its body."""
    is_package = MODULES[module].name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = module.split(".")
            if node.level:
                base = base[: len(base) - node.level + int(is_package)]
                prefix = ".".join([*base, *([node.module] if node.module else [])])
            else:
                prefix = node.module or ""
            targets = [prefix, *(f"{prefix}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target not in (module, "planner"):
                yield target


GRAPH = {name: set(_imported(name, ast.parse(path.read_text()))) for name, path in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in GRAPH:
        if root in index:
            continue
        work = [(root, iter(sorted(GRAPH[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(GRAPH[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _part(module: str) -> str:
    """The layer name of a planner module: its subpackage, `errors`, `api` (planner/__init__.py), or `pipeline`
    for the other top-level modules."""
    parts = module.split(".")
    if len(parts) == 1:
        return "api"  # planner/__init__.py: the public API, above everything it re-exports
    if (PLANNER / parts[1]).is_dir():
        return parts[1]
    return parts[1] if parts[1] in ("errors", "__main__") else "pipeline"


def _layer(part: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if part in names)


def test_no_import_cycle():
    assert _cycles() == []


def test_top_level_modules_and_subpackages():
    top = [p.name for p in PLANNER.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    subpackages = sorted(p.name for p in PLANNER.iterdir() if (p / "__init__.py").is_file())
    assert len(top) <= MAX_TOP_LEVEL_MODULES, sorted(top)
    assert len(subpackages) >= MIN_SUBPACKAGES, subpackages
    assert set(subpackages) == SUBPACKAGES, "every subpackage has its place in LAYERS"


@pytest.mark.parametrize("name", sorted(SUBPACKAGES))
def test_each_subpackage_says_what_lives_there(name):
    docstring = ast.get_docstring(ast.parse((PLANNER / name / "__init__.py").read_text()))
    assert docstring and len(docstring.split()) >= 8


def test_no_file_over_the_line_budget():
    files = [*(ROOT / d for d in ("planner", "ui", "app_pages")), ROOT / "app.py"]
    paths = [p for f in files for p in ([f] if f.is_file() else f.rglob("*.py"))]
    long = {str(p.relative_to(ROOT)): n for p in paths if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_dependencies_point_one_way():
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _layer(_part(target)) > _layer(_part(module))
        or (_part(module) != _part(target) and {_part(module), _part(target)} <= LAYER_MATES)
    )
    assert wrong == []


def _front_end_files() -> list[Path]:
    return [
        ROOT / "app.py",
        *sorted((ROOT / "ui").rglob("*.py")),
        *sorted((ROOT / "app_pages").rglob("*.py")),
    ]


@pytest.mark.parametrize("path", _front_end_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_front_end_uses_only_the_public_api(path):
    deep = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("planner."):
            deep.append(node.module)
        elif isinstance(node, ast.Import):
            deep += [a.name for a in node.names if a.name.startswith("planner.")]
    assert deep == []


def test_public_api_names_exist():
    import planner

    missing = [name for name in planner.__all__ if not hasattr(planner, name)]
    assert missing == []


def test_public_api_lists_agree():
    """planner/__init__.py names each public name twice: in the lazy map used at run time and in the imports
    type checkers read. The two must list the same names, each from the same module."""
    import planner

    checked_imports = {}
    for node in ast.walk(ast.parse((ROOT / "planner" / "__init__.py").read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("planner."):
            for alias in node.names:
                checked_imports[alias.asname or alias.name] = (node.module, alias.name)
    assert checked_imports == planner._PUBLIC_NAMES


def test_public_functions_named_like_their_module_stay_functions():
    """`resolve` and `estimate` are functions in modules of the same name: importing the module (which any
    page does) must not replace the function the public API names."""
    code = (
        "import planner.resolve, planner.estimate\n"
        "from planner import estimate, resolve\n"
        "print(callable(resolve) and callable(estimate), type(resolve).__name__, type(estimate).__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "True function function"


def test_importing_the_package_imports_no_part_of_it():
    """`import planner` is free; each name loads its module on first use (so the CLI starts fast)."""
    code = "import sys, planner; print(sorted(m for m in sys.modules if m.startswith('planner.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_library_modules_never_import_the_public_api():
    """Inside planner/, imports name the module they need; `from planner import X` is for the app and users
    (the package's __init__ imports every part, so a part importing it would depend on all the others)."""
    offenders = []
    for name, path in MODULES.items():
        if name == "planner":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "planner" and node.level == 0:
                offenders.append(name)
    assert offenders == []
