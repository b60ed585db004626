"""The layout holds: no import cycle among the modules of `py/firsttoken` or `gateway`,
counting imports made only for type checking (a cycle there is still two modules that
each need the other to be read), and imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules(package: Path, name: str) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([name, *parts])] = path
    return found


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that `module` imports, anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                out.add(name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def graph_of(package: Path, name: str) -> dict[str, set[str]]:
    known = modules(package, name)
    # A package's __init__ re-exporting its modules is not a cycle with them: only edges
    # between modules count (a module importing its own package's __init__ is one).
    return {m: {d for d in imports(m, p, known) if not (p.name == "__init__.py" and d.startswith(m + "."))}
            for m, p in known.items()}


def test_the_python_core_has_no_import_cycle() -> None:
    assert cycles(graph_of(ROOT / "py" / "firsttoken", "firsttoken")) == []


def test_the_gateway_has_no_import_cycle() -> None:
    assert cycles(graph_of(ROOT / "gateway", "gateway")) == []


def test_the_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
