"""The package's modules form layers: no module imports, directly or through others, a module that
imports it back. Imports inside functions count too (a lazy import hides a circle, it does not
remove it), so a library module never depends on the command line or one experiment on another
that depends on it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "paththeory"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: modules of the package it imports}`` from every ``import`` statement at any depth.
    ``from paththeory import x`` points at the submodule ``x`` when there is one, else at the package."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                subs = {f"{node.module}.{a.name}" for a in node.names}
                found = subs & modules.keys()
                edges |= found
                if len(found) < len(subs):
                    edges.add(node.module)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle through each module that lies on one (depth-first search)."""
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_package_has_no_import_circles():
    graph = import_graph()
    assert "paththeory.cli" in graph and "paththeory.experiments.omniglot" in graph
    assert cycles(graph) == []


def test_library_modules_do_not_import_the_command_line():
    graph = import_graph()
    assert not [m for m, edges in graph.items() if "paththeory.cli" in edges and m != "paththeory.__main__"]


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from pkg import b\n", "b.py": "def f():\n    from pkg.a import g\n"}, [["pkg.a", "pkg.b", "pkg.a"]]),
    ({"a.py": "import pkg.b\n", "b.py": "x = 1\n"}, []),
])
def test_the_circle_finder_sees_lazy_imports(tmp_path, files, expected):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(text)
    assert cycles(import_graph(pkg)) == expected
