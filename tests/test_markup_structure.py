"""Every message built from variables goes through ui.safe_text.plain before Streamlit renders it as markdown.

Streamlit renders the body of st.markdown, st.caption, st.warning, st.error, st.info, st.success, st.toast, the
headers, and the labels of metrics, expanders and buttons as markdown; a GPU name, file name, cell value or link
parameter inside one of them must be escaped. This reads the source of app.py, app_pages/
and ui/ and accepts a text argument only when it is built of:

- constant strings and module constants (UPPER_CASE names, subscripts of them: the code's own prose);
- calls to `plain(...)` / `plain_lines(...)`, to a `*_markdown(...)` builder in ui/ (each escapes its own
  inputs, and the f-strings inside it are held to these same rules), to `fmt.*` (numbers with units) or `len`;
- f-strings whose every `{...}` is one of those, or carries a numeric format (`:d`, `:,`, `:.1%` ...: a format
  that raises on text, so a number is all it can show);
- `+`, `a if c else b` and `"sep".join(...)` of the above (a comprehension's variable counts as escaped when it
  runs over `plain_lines(...)`);
- a local name whose every assignment (and every `.append(...)` to it) in the same function is one of the above.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The st.* calls whose first argument (body or label) Streamlit renders as markdown.
MARKDOWN_CALLS = frozenset(
    {"markdown", "caption", "warning", "error", "info", "success", "toast", "title", "header", "subheader",
     "metric", "expander", "button", "download_button", "popover", "page_link", "tabs", "badge", "write"}
)  # fmt: skip
ESCAPING_CALLS = frozenset({"plain", "plain_lines", "len"})
# A format spec that raises ValueError for a str: grouping, or a numeric presentation type.
NUMERIC_SPEC = re.compile(r"[,_]|[bcdoxXneEfFgG%]$")
# Markdown the code itself writes from its own tables, by (file, the argument's source), with why it is safe.
TRUSTED = {
    ("ui/blocks.py", "'\\n'.join((f'- {line}' for line in lines))"): "each page's constant prose, bulleted",
    ("ui/team_data.py", "f':{color}-badge[{icon} {label}]'"): "a badge from ORIGINS, a constant table",
    ("app_pages/methods.py", "' · '.join((f'[{TOPICS[key]}](#{key})' for key in order))"): "TOPICS' own keys",
    ("ui/team_data.py", "label"): "origin_badge: a label from ORIGINS",
    ("ui/share.py", "label"): "share_popover's label: a constant at its one caller (app.py)",
    ("app_pages/overview.py", "label"): "figure's label: a constant at each of its five callers",
}


def _front_end_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]


class _Checker(ast.NodeVisitor):
    def __init__(self, rel: str) -> None:
        self.rel = rel
        self.locals: set[str] = set()  # names of the function being read that hold escaped text only
        self.problems: list[str] = []

    def visit_Module(self, node: ast.Module) -> None:
        self.locals = self._safe_locals(node)
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.locals = self.locals, self._safe_locals(node)
        if node.name.endswith("_markdown"):  # a builder: its f-strings are held to the same rules
            for inner in ast.walk(node):
                trusted = (self.rel, ast.unparse(inner)) in TRUSTED
                if (
                    isinstance(inner, ast.JoinedStr)
                    and not trusted
                    and not self.safe(inner, self.locals | _escaped_names_in(node))
                ):
                    self.problems.append(
                        f"{self.rel}:{inner.lineno} in {node.name}: {ast.unparse(inner)[:90]}"
                    )
        self.generic_visit(node)
        self.locals = outer

    def visit_Call(self, node: ast.Call) -> None:
        name = _called_name(node.func)
        if _is_streamlit_call(node.func) and name in MARKDOWN_CALLS and node.args:
            text = node.args[0]
            trusted = (self.rel, ast.unparse(text)) in TRUSTED
            if not trusted and not self.safe(text, self.locals | _escaped_names_in(text)):
                self.problems.append(f"{self.rel}:{node.lineno} st.{name}: {ast.unparse(text)[:90]}")
        self.generic_visit(node)

    def _safe_locals(self, scope: ast.AST) -> set[str]:
        """Names whose every assignment in `scope` (its own body, not nested functions) is safe text."""
        assigned: dict[str, list[ast.expr | None]] = {}
        for node in _own_nodes(scope):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            simple = isinstance(target, ast.Name)
                            assigned.setdefault(name.id, []).append(node.value if simple else None)
            elif isinstance(node, ast.For | ast.comprehension | ast.With | ast.NamedExpr | ast.AugAssign):
                for name in ast.walk(node.target if not isinstance(node, ast.With) else node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        assigned.setdefault(name.id, []).append(None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                owner = node.func.value
                if node.func.attr in {"append", "extend", "insert"} and isinstance(owner, ast.Name):
                    assigned.setdefault(owner.id, []).append(node.args[-1] if node.args else None)
        safe: set[str] = set()
        while True:  # grow to a fixed point: a name is safe once everything assigned to it is
            grown = {
                name
                for name, values in assigned.items()
                if all(value is not None and self.safe(value, safe) for value in values)
            }
            if grown == safe:
                return safe
            safe = grown

    def safe(self, node: ast.expr, escaped: set[str]) -> bool:
        match node:
            case ast.Constant(value=str()):
                return True
            case ast.Name(id=name):
                return name.isupper() or name in escaped
            case ast.Subscript(value=ast.Name(id=name)):
                return name.isupper()
            case ast.Call(func=func):
                return _is_escaping(func) or (_is_join(node) and self._join_safe(node, escaped))
            case ast.JoinedStr(values=values):
                return all(self._part_safe(part, escaped) for part in values)
            case ast.BinOp(op=ast.Add(), left=left, right=right):
                return self.safe(left, escaped) and self.safe(right, escaped)
            case ast.IfExp(body=body, orelse=orelse):
                return self.safe(body, escaped) and self.safe(orelse, escaped)
            case ast.List(elts=elts) | ast.Tuple(elts=elts):
                return all(self.safe(elt, escaped) for elt in elts)
            case ast.ListComp(elt=elt) | ast.GeneratorExp(elt=elt):
                return self.safe(elt, escaped)
        return False

    def _part_safe(self, part: ast.expr, escaped: set[str]) -> bool:
        if isinstance(part, ast.Constant):
            return True
        assert isinstance(part, ast.FormattedValue)
        spec = part.format_spec
        pieces = spec.values if isinstance(spec, ast.JoinedStr) else []
        text = "".join(str(p.value) for p in pieces if isinstance(p, ast.Constant))
        return bool(NUMERIC_SPEC.search(text)) or self.safe(part.value, escaped)

    def _join_safe(self, node: ast.Call, escaped: set[str]) -> bool:
        return len(node.args) == 1 and self.safe(node.args[0], escaped)


def _called_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _is_streamlit_call(func: ast.expr) -> bool:
    """st.x(...), or column.x(...) / container.x(...) on a layout object (anything but a module we know)."""
    return isinstance(func, ast.Attribute) and not (
        isinstance(func.value, ast.Name) and func.value.id in {"fmt", "re", "os", "pl", "json", "np"}
    )


def _is_escaping(func: ast.expr) -> bool:
    name = _called_name(func)
    on_fmt = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "fmt"
    return name in ESCAPING_CALLS or name.endswith("_markdown") or on_fmt


def _is_join(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant)


def _escaped_names_in(node: ast.AST) -> set[str]:
    """Comprehension variables that run over plain_lines(...): each item is already escaped."""
    names: set[str] = set()
    for inner in ast.walk(node):
        over_plain_lines = isinstance(inner, ast.comprehension) and isinstance(inner.iter, ast.Call)
        if (
            over_plain_lines
            and _called_name(inner.iter.func) == "plain_lines"
            and isinstance(inner.target, ast.Name)
        ):
            names.add(inner.target.id)
    return names


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """Every node of `scope` except those inside the functions and classes it defines."""
    found: list[ast.AST] = []
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _problems(path: Path) -> list[str]:
    checker = _Checker(str(path.relative_to(ROOT)))
    checker.visit(ast.parse(path.read_text()))
    return checker.problems


@pytest.mark.parametrize("path", _front_end_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_rendered_text_with_variables_is_escaped(path: Path) -> None:
    problems = _problems(path)
    assert not problems, (
        "text built from variables reaches Streamlit's markdown unescaped; wrap the user or file text in "
        "ui.safe_text.plain (or give a number a numeric format):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ('st.warning(f"GPU {name} is unknown")', True),
        ("st.caption(message)", True),
        ("col.markdown(f\"**{row['gpu']}**\")", True),
        ('st.error("Fixed text.")', False),
        ('st.warning(plain(f"GPU {name} is unknown"))', False),
        ('st.caption(f"{n:,} rows, {share:.0%} shown, {fmt.gib(x)}")', False),
        ('st.info(f"Your {plain(gpu)} only" + (" yes" if ok else ""))', False),
        ('st.markdown("\\n".join(f"- {line}" for line in plain_lines(text)))', False),
        ('st.markdown("\\n".join(f"- {line}" for line in lines))', True),
        ('lines = [f"- {plain(a)}"]\nlines.append(f"- {n:d}")\nst.markdown("\\n".join(lines))', False),
        ('lines = [f"- {plain(a)}"]\nlines.append(f"- {b}")\nst.markdown("\\n".join(lines))', True),
        ('label = "A" if x else "B"\nst.metric(label, 1)', False),
        ("for label in names:\n    st.metric(label, 1)", True),
    ],
)
def test_the_check_itself(source: str, flagged: bool, tmp_path: Path) -> None:
    """The rules above on one line each: a message the check must flag, and ones it must accept."""
    checker = _Checker("snippet.py")
    checker.visit(ast.parse(source))
    assert bool(checker.problems) is flagged, checker.problems
