"""What a graded notebook's test cells call: :func:`graded`, :func:`graded_function` and the
honesty check :func:`assert_honest`; the instructor's side (release, collect, grade, mark) is the
repository tool ``paththeory-tools course`` (``tools/paththeory_tools/grading.py``).
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any, Callable

import numpy as np

from paththeory.exercises.answers import _REVEALED, GradingError


__all__ = ["HOW_GRADED", "answer_cells", "assert_honest", "dishonest_code", "graded", "graded_function"]

#: How the exercises work, in a graded notebook.
HOW_GRADED = ("In this notebook each exercise has an answer cell for your solution, followed by its test cells: "
              "run them to see whether your answer passes the public test (a hidden test, with more points, runs "
              "when the notebook is graded). Do not edit the test cells; solution(), check(..., reveal=True) and "
              "trying several answers against check() earn no points.")

#: What a name means where nothing in the scanned code binds it: what a graded notebook's setup imports.
_UNBOUND = {"pt": "paththeory", "paththeory": "paththeory", "check": "paththeory.exercises.check",
            "solution": "paththeory.exercises.solution", "_truth": "paththeory.exercises.checking._truth",
            "_TRUTHS": "paththeory.exercises.keys._TRUTHS"}
_EXERCISES = "paththeory.exercises"
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# --------------------------------------------------------------------------- in the notebook


def _history() -> list[str]:
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    return list(shell.user_ns.get("In", [])) if shell is not None else []


def answer_cells(history: list[str], exercise_id: str) -> list[str]:
    """The cells run since the previous exercise's tests: those that answer ``exercise_id``.

    ``history`` is IPython's ``In`` (the cells in the order they ran, the running one last).

    Example:
      >>> answer_cells(["", "x = 1", 'graded("a.b", x)', "answer = 24", 'graded("c.d", answer)'], "c.d")
      ['answer = 24']
    """
    cells = history[:-1]
    start = 0
    for i in range(len(cells) - 1, -1, -1):
        called = re.findall(r"""graded(?:_function)?\(\s*["']([\w.]+)["']""", cells[i])
        if called and exercise_id not in called:
            start = i + 1
            break
    return [c for c in cells[start:] if not re.search(r"""graded(?:_function)?\(\s*["']""" + re.escape(exercise_id), c)]


class _Scan:
    """What a sequence of cells did with the package's checks, read from their syntax trees (never run).

    Names are resolved as the code binds them, statement by statement: a name imported from
    ``paththeory.exercises`` means the package's function; one the code assigns, defines or imports from
    elsewhere means the student's own (``check = np.allclose(U, U.T)``, a helper ``def solution(...)``); one
    nothing binds means what a graded notebook's setup imports (:data:`_UNBOUND`).
    """

    def __init__(self) -> None:
        self.names: dict[str, str | None] = {}
        self.found: list[str] = []
        self.checks = 0

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` means (``paththeory.exercises.check``), or None for the student's own."""
        if isinstance(node, ast.Name):
            return self.names[node.id] if node.id in self.names else _UNBOUND.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _ours(self, node: ast.AST) -> bool:
        name = self.resolve(node)
        return bool(name) and (name == _EXERCISES or name.startswith(_EXERCISES + "."))

    def bind(self, stmt: ast.stmt) -> None:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    self.names[a.asname or a.name] = f"{node.module}.{a.name}" if node.module and not node.level else None
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.names[node.name] = None
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.names[node.id] = None

    def scan(self, stmt: ast.stmt) -> None:
        in_loop = {id(n) for loop in ast.walk(stmt) if isinstance(loop, _LOOPS) for n in ast.walk(loop)
                   if n is not loop or isinstance(loop, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))}
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                self._call(node, id(node) in in_loop)
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                name = self.resolve(node)
                if self._ours(node) and any(part.startswith("_") for part in name.split(".")):
                    self.found.append("used the package's answer key")
            elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                if self._ours(node.value) or self.resolve(node.value) == "paththeory":
                    self.found.append("changed the package's checking code")

    def _call(self, node: ast.Call, in_loop: bool) -> None:
        name = self.resolve(node.func) or ""
        if self._ours(node.func) and name.endswith(".solution"):
            self.found.append("called solution()")
        if self._ours(node.func) and name.endswith(".check"):
            self.checks += 1
            if any(k.arg == "reveal" for k in node.keywords):
                self.found.append("asked check() to reveal the answer")
            if in_loop or self.checks > 1:
                self.found.append("tried several answers against check()")
        if name in ("setattr", "builtins.setattr", "delattr") or (
                isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") and node.func.id not in self.names):
            if node.args and (self._ours(node.args[0]) or self.resolve(node.args[0]) == "paththeory"):
                self.found.append("changed the package's checking code")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("reference", "expected_outputs") and any(
                self._ours(n) for n in ast.walk(node.func.value) if isinstance(n, (ast.Name, ast.Attribute))):
            self.found.append("used the package's answer key")


def _statements(source: str) -> list[ast.stmt]:
    """The top-level statements of a cell (IPython's ``%`` and ``!`` lines left out); none if it does not parse."""
    code = "\n".join("" if re.match(r"\s*[%!]", line) else line for line in source.splitlines())
    try:
        return ast.parse(code).body
    except (SyntaxError, ValueError):
        return []


def dishonest_code(cells: list[str], context: str = "") -> list[str]:
    r"""What the code of ``cells`` did that earns no points, read from its syntax tree alone (a grader that never
    ran the code uses it too): called the package's ``solution()``, asked ``check`` to reveal, called ``check``
    more than once or in a loop, used a private name of the package's keys, or changed
    ``paththeory.exercises``; empty for honest code, whatever its names (``check = np.allclose(U, U.T)``, a
    helper ``def solution(...)``, ``setattr`` on its own objects). ``context``: the notebook's code before
    the cells, whose imports say what a name means.

    Example:
      >>> dishonest_code(["answer = 24"]), dishonest_code(["answer = solution('model.n_paths')"])
      ([], ['called solution()'])
      >>> dishonest_code(["def solution(n):\n    return 2 * n\nanswer = solution(12)"])
      []
    """
    scan = _Scan()
    for stmt in _statements(context):
        scan.bind(stmt)
    for cell in cells:
        for stmt in _statements(cell):
            scan.scan(stmt)
            scan.bind(stmt)
    return list(dict.fromkeys(scan.found))


def assert_honest(exercise_id: str, cells: list[str] | None = None) -> None:
    """Raise :class:`GradingError` if the answer to ``exercise_id`` looked at the key or changed a check.

    ``cells`` default to :func:`answer_cells` of the running IPython session.

    Example:
      >>> assert_honest("demo.q1", ["answer = 24"])
      >>> assert_honest("demo.q1", ["answer = solution('demo.q1')"])
      Traceback (most recent call last):
      ...
      paththeory.exercises.GradingError: demo.q1 earns no points: the answer called solution().
    """
    history = _history()
    found = dishonest_code(answer_cells(history, exercise_id), "\n".join(history[:-1])) if cells is None else \
        dishonest_code(cells)
    if exercise_id in _REVEALED:
        found.insert(0, "asked for the expected answer")
    if found:
        raise GradingError(f"{exercise_id} earns no points: the answer {', '.join(dict.fromkeys(found))}.")


# The checks as imported now: a later assignment to the modules' names changes nothing here.
def _checks():
    from paththeory.exercises.answers import WrongAnswer, diagnose, validate
    from paththeory.exercises.checking import _exercise, _is_accuracy, check

    return check, _exercise, validate, lambda g, w, ex: diagnose(g, w, ex.rtol, ex.atol, _is_accuracy(ex)), WrongAnswer


_CHECK, _EXERCISE, _VALIDATE, _DIAGNOSE, _WRONG = _checks()


def graded(exercise_id: str, answer: Any, key: list | None = None) -> None:
    """A test cell of a check-style exercise: without ``key``, :func:`~paththeory.exercises.check`
    (the public test, with its diagnoses); with ``key`` (the expected arrays, frozen at release),
    the hidden test. Both first :func:`assert_honest`.
    """
    assert_honest(exercise_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if key is None:
            _CHECK(exercise_id, answer)
            return
        ex = _EXERCISE(exercise_id)
        got = _VALIDATE(exercise_id, answer, ex.expects)
        want = [np.asarray(k, dtype=float) for k in key]
        wrong = [i for i, (g, w) in enumerate(zip(got, want)) if not np.allclose(g, w, rtol=ex.rtol, atol=ex.atol)]
    if wrong or len(got) != len(want):
        notes = [note for i in wrong for note in _DIAGNOSE(got[i], want[i], ex)]
        raise _WRONG(f"{exercise_id}: the hidden test fails.\n" + "\n".join(f"  - {n}" for n in notes))
    print(f"{exercise_id}: the hidden test passes.")


def graded_function(exercise_id: str, fn: Callable, key: list | None = None, points: float | None = None):
    """A test cell of an implement-it-yourself exercise (:mod:`paththeory.exercises.problems`): without ``key``,
    the public check on the reference's cases; with ``key`` (the reference's outputs on the hidden
    cases, frozen at release) the hidden test, whose value is the points earned: ``points`` times the
    fraction of cases passed (nbgrader's partial credit). Both first :func:`assert_honest`.
    """
    from paththeory.exercises.problems import check_implementation

    assert_honest(exercise_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if key is None:
            check_implementation(exercise_id, fn)
            return None
        fraction = check_implementation(exercise_id, fn, expected=key, partial=True)
    return round(float(points if points is not None else 1.0) * float(fraction), 6)
