"""What a graded notebook's test cells call: :func:`graded`, :func:`graded_function` and the
honesty check :func:`assert_honest`; the instructor's side (release, collect, grade, mark) is the
repository tool ``paththeory-tools course`` (``tools/paththeory_tools/grading.py``).
"""

from __future__ import annotations

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

#: What an answer cell must not do: ``(pattern, what it did)``; comments are ignored.
_DISHONEST = [
    (r"\bsolution\s*\(", "called solution()"),
    (r"\breveal\s*=", "asked check() to reveal the answer"),
    (r"\b(def|class)\s+(check|check_implementation|graded|graded_function|assert_honest)\b",
     "redefined a checking function"),
    (r"^[ \t]*(?:[\w ]*,[ \t]*)?(check|check_implementation|graded|graded_function|assert_honest)\s*=(?!=)",
     "redefined a checking function"),
    (r"\b(globals|vars|locals)\s*\(\s*\)\s*\[", "redefined a checking function"),
    (r"\bas\s+(check|check_implementation|graded|graded_function)\b", "redefined a checking function"),
    (r"^[ \t]*(exercises|checking|keys|answers|grading|problems|paththeory|pt)(\.\w+)*\.\w+\s*=(?!=)",
     "changed the package's checking code"),
    (r"\bsetattr\s*\(|\b_truth\b|\b_TRUTHS\b|\bexpected_outputs\s*\(|\.reference\s*\(",
     "used the package's answer key"),
]


# --------------------------------------------------------------------------- in the notebook


def _code(source: str) -> str:
    """``source`` without its comments (a ``#`` outside a string starts one; good enough for a scan)."""
    return "\n".join(re.sub(r"#.*$", "", line) for line in source.splitlines())


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


def _check_in_a_loop(code: str) -> bool:
    """Whether a ``check(`` call sits in the body of a ``for`` or ``while`` loop (by indentation)."""
    loops: list[int] = []  # the indentation of the loops the current line is in
    for line in code.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        while loops and indent <= loops[-1]:
            loops.pop()
        if loops and re.search(r"\bcheck\s*\(", line):
            return True
        if re.match(r"[ \t]*(for|while)\b.*:.*\bcheck\s*\(", line) or re.search(r"\bcheck\s*\(.*\bfor\b", line):
            return True  # a one-line loop, a comprehension
        if re.match(r"[ \t]*(for|while)\b.*:\s*$", line):
            loops.append(indent)
    return False


def _assigns_through_an_alias(code: str) -> bool:
    r"""Whether ``code`` assigns to an attribute of the package through a name it bound to it
    (``import paththeory as pt``, ``import paththeory.exercises.checking as c``,
    ``from paththeory.exercises import checking``), e.g. ``pt.exercises.check = ...``.

    Example:
      >>> _assigns_through_an_alias("import paththeory as pt\npt.exercises.checking.check = print")
      True
      >>> _assigns_through_an_alias("import paththeory as pt\nU = pt.Theory(arch, f, y).solve(10, 0.1).U")
      False
    """
    aliases = set(re.findall(r"^[ \t]*import[ \t]+paththeory(?:\.\w+)*[ \t]+as[ \t]+(\w+)", code, re.M))
    for imported in re.findall(r"^[ \t]*from[ \t]+paththeory(?:\.\w+)*[ \t]+import[ \t]+([\w ,]+)", code, re.M):
        aliases |= {name.split(" as ")[-1].strip() for name in imported.split(",")}
    aliases |= {"paththeory"} if re.search(r"^[ \t]*import[ \t]+paththeory\b(?![\w.]*[ \t]+as)", code, re.M) else set()
    return any(re.search(rf"^[ \t]*{re.escape(a)}(\.\w+)+\s*=(?!=)", code, re.M) for a in aliases if a)


def dishonest_code(cells: list[str]) -> list[str]:
    """What the code of ``cells`` did that earns no points (``"called solution()"``, ...), read from
    the source alone (a grader that never ran the code uses it too); empty for honest code.

    Example:
      >>> dishonest_code(["answer = 24"]), dishonest_code(["answer = solution('model.n_paths')"])
      ([], ['called solution()'])
    """
    found = [what for cell in cells for pattern, what in _DISHONEST if re.search(pattern, _code(cell), re.MULTILINE)]
    code = "\n".join(_code(cell) for cell in cells)
    if _assigns_through_an_alias(code):
        found.append("changed the package's checking code")
    if len(re.findall(r"\bcheck\s*\(", code)) > 1 or _check_in_a_loop(code):
        found.append("tried several answers against check()")
    return list(dict.fromkeys(found))


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
    found = dishonest_code(answer_cells(_history(), exercise_id) if cells is None else cells)
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
