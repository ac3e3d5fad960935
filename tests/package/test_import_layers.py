"""The package's layers: imports only point down, and no module takes another subpackage's private name.

Ranks, bottom to top (``README.md``, "Where things are"):

0. private helpers and the scale switch: ``paththeory._*`` (validation, atomic I/O, label packing,
   the in-loop L-BFGS, the compilation cache, the aliases of the 0.1 module paths) and ``paththeory.profiles``;
1. the theory: the other top-level modules (model, kernels, action, solve, hessian, predict, one_path, laplace, pruning);
2. ``paththeory.sampling`` and ``paththeory.tasks``;
3. ``paththeory.training``;
4. the public face, ``paththeory`` itself (``import paththeory as pt``);
5. ``paththeory.display``;
6. ``paththeory.experiments``;
7. ``paththeory.reports`` (the words that format the experiments' findings);
8. ``paththeory.exercises``;
9. the command line (``paththeory.cli``, ``paththeory.__main__``).

A module may import its own rank and those below. Imports inside functions count too (a lazy import
hides an upward dependency, it does not remove it), and so do circles, which the depth-first search
below finds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "paththeory"

#: The rank of each subpackage (and of the named top-level modules); other top-level modules are the theory.
RANKS = {"profiles": 0, "sampling": 2, "tasks": 2, "training": 3, "display": 5, "experiments": 6, "reports": 7,
         "exercises": 8, "cli": 9, "__main__": 9}
THEORY_RANK, FACE_RANK, PRIVATE_RANK = 1, 4, 0


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def rank(module: str) -> int:
    """The layer of a module of the package (see the module docstring)."""
    parts = module.split(".")
    if len(parts) == 1:
        return FACE_RANK
    first = parts[1]
    if first in RANKS:
        return RANKS[first]
    return PRIVATE_RANK if first.startswith("_") else THEORY_RANK


def group(module: str) -> str:
    """The subpackage a module belongs to (the top level for the theory and the private helpers)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (len(parts) == 2 and parts[1] in RANKS) else parts[0]


def imports(package: Path = PACKAGE) -> dict[str, list[tuple[str, tuple[str, ...], int]]]:
    """``{module: [(imported module, names taken from it, line)]}`` from every ``import`` statement at
    any depth. ``from paththeory import x`` points at the submodule ``x`` when there is one."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    found: dict[str, list] = {}
    for name, path in modules.items():
        edges = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges += [(a.name, (), node.lineno) for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                subs = [a.name for a in node.names if f"{node.module}.{a.name}" in modules]
                edges += [(f"{node.module}.{s}", (), node.lineno) for s in subs]
                names = tuple(a.name for a in node.names if a.name not in subs)
                if names:
                    edges.append((node.module, names, node.lineno))
        found[name] = [e for e in edges if e[0] != name]
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    return {m: {e[0] for e in edges} for m, edges in imports(package).items()}


def upward_imports(package: Path = PACKAGE) -> list[str]:
    return [f"{m}:{line} imports {target} (rank {rank(m)} -> {rank(target)})"
            for m, edges in imports(package).items() for target, _, line in edges if rank(target) > rank(m)]


def _private(name: str) -> bool:
    """``_name``, not ``__dunder__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_names_taken(package: Path = PACKAGE) -> list[str]:
    return [f"{m}:{line} takes {', '.join(n for n in names if _private(n))} from {target}"
            for m, edges in imports(package).items() for target, names, line in edges
            if group(target) != group(m) and any(_private(n) for n in names)]


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


def test_every_module_has_a_rank_and_the_layers_are_all_there():
    graph = import_graph()
    assert {"paththeory.cli", "paththeory.experiments.omniglot", "paththeory.sampling.nuts",
            "paththeory.training.checkpoints", "paththeory.display.plots", "paththeory._io"} <= graph.keys()
    assert {rank(m) for m in graph} == set(range(10))


def test_imports_only_point_down():
    assert upward_imports() == []


def test_no_module_takes_another_subpackages_private_name():
    assert private_names_taken() == []


def test_the_package_has_no_import_circles():
    assert cycles(import_graph()) == []


def _package(tmp_path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "paththeory"
    for name, text in {"__init__.py": "", **files}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    return pkg


@pytest.mark.parametrize("files, expected", [
    ({"a.py": "from paththeory import b\n", "b.py": "def f():\n    from paththeory.a import g\n"},
     [["paththeory.a", "paththeory.b", "paththeory.a"]]),
    ({"a.py": "import paththeory.b\n", "b.py": "x = 1\n"}, []),
])
def test_the_circle_finder_sees_lazy_imports(tmp_path, files, expected):
    assert cycles(import_graph(_package(tmp_path, files))) == expected


def test_an_upward_import_added_on_purpose_fails(tmp_path):
    """A theory module that reaches, lazily, into the experiments is caught; the reverse is allowed."""
    pkg = _package(tmp_path, {"model.py": "def f():\n    from paththeory.experiments import markov\n",
                              "experiments/__init__.py": "", "experiments/markov.py": "from paththeory import model\n",
                              "_io.py": "import paththeory\n"})
    assert upward_imports(pkg) == ["paththeory.model:2 imports paththeory.experiments.markov (rank 1 -> 6)",
                                   "paththeory._io:1 imports paththeory (rank 0 -> 4)"]


def test_a_private_name_from_another_subpackage_fails(tmp_path):
    pkg = _package(tmp_path, {"model.py": "_helper = 1\n", "kernels.py": "from paththeory.model import _helper\n",
                              "training/__init__.py": "", "training/net.py": "from paththeory.model import _helper\n"})
    assert private_names_taken(pkg) == ["paththeory.training.net:1 takes _helper from paththeory.model"]


#: What the repository tooling (tools/, outside the wheel) may take of the package's private parts, and why:
#: ``paththeory._io`` writes files atomically and reads on/off switches for both; ``_truth`` is the answer
#: key, which the student edition checks for leaks and the grading release freezes into hidden tests.
TOOLS_MAY_TAKE = {"paththeory._io", "paththeory.exercises.checking._truth"}


def private_parts_taken_by(folder: Path) -> list[str]:
    """``module:line name`` for every private module or name of ``paththeory`` that files under ``folder`` import."""
    taken = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                    node.module.split(".")[0] == "paththeory":
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == "paththeory"]
            else:
                continue
            taken += [f"{path.name}:{node.lineno} {t}" for t in targets
                      if any(_private(part) for part in t.split(".")) and t not in TOOLS_MAY_TAKE
                      and not any(t.startswith(ok + ".") for ok in TOOLS_MAY_TAKE)]
    return taken


def test_the_tools_take_only_the_private_parts_they_are_allowed():
    tools = PACKAGE.parent / "tools" / "paththeory_tools"
    assert tools.is_dir()
    assert private_parts_taken_by(tools) == []


def test_a_private_name_taken_by_the_tools_fails(tmp_path):
    (tmp_path / "a.py").write_text("from paththeory.model import _helper\nfrom paththeory import _io\n"
                                   "from paththeory.exercises.checking import _truth\n")
    assert private_parts_taken_by(tmp_path) == ["a.py:1 paththeory.model._helper"]
