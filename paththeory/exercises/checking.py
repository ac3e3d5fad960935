"""Checking answers: :func:`check`, :func:`hint` and :func:`solution` for the exercises of :data:`~paththeory.exercises.keys.EXERCISES`."""

from __future__ import annotations

import difflib

import numpy as np

from paththeory.exercises.answers import Exercise, WrongAnswer, diagnose, note_revealed, validate
from paththeory.exercises.keys import EXERCISES

_TRUTHS: dict[str, list[np.ndarray]] = {}


def _exercise(exercise_id: str) -> Exercise:
    if not isinstance(exercise_id, str):
        raise TypeError(f"the exercise id is a string such as 'model.n_paths'; got {type(exercise_id).__name__} "
                        f"{exercise_id!r}. Call check('<id>', answer) once per exercise.")
    if exercise_id not in EXERCISES:
        near = difflib.get_close_matches(str(exercise_id), list(EXERCISES), n=1)
        guess = f" Did you mean {near[0]!r}?" if near else ""
        raise KeyError(f"unknown exercise {exercise_id!r}.{guess} Known: {', '.join(EXERCISES)}.")
    return EXERCISES[exercise_id]


def _truth(exercise_id: str) -> list[np.ndarray]:
    """The expected answer as a list of read-only float arrays (computed once)."""
    if exercise_id not in _TRUTHS:
        ex = _exercise(exercise_id)
        value = ex.truth()
        items = list(value) if ex.expects.kind == "arrays" else [value]
        arrays = [np.array(v, dtype=float) for v in items]
        for a in arrays:
            a.flags.writeable = False
        _TRUTHS[exercise_id] = arrays
    return _TRUTHS[exercise_id]


def _value(exercise_id: str):
    """The expected answer as :func:`solution` returns it, without recording that it was shown."""
    ex = _exercise(exercise_id)
    arrays = [a.copy() for a in _truth(exercise_id)]
    if ex.expects.kind == "integer":
        return int(arrays[0])
    if ex.expects.kind == "number":
        return float(arrays[0])
    return arrays if ex.expects.kind == "arrays" else arrays[0]


def solution(exercise_id: str):
    """The expected answer of an exercise (an int, a float, an array or a list of arrays).

    This reveals the answer: a course may prefer :func:`hint` first. A graded run refuses it.

    Example:
      >>> solution("model.n_paths")
      24
    """
    _exercise(exercise_id)
    note_revealed(exercise_id)
    return _value(exercise_id)


def hint(exercise_id: str) -> None:
    """Print the task of an exercise, the kind of answer it expects and which step to revisit.

    Example:
      >>> hint("model.n_paths")  # doctest: +ELLIPSIS
      model.n_paths: the number of paths of a network with heads (3, 2, 4).
        Answer: an integer (a number of paths).
        Revisit the definition of an attention path in this chapter: ...
    """
    ex = _exercise(exercise_id)
    print(f"{exercise_id}: {ex.task}.\n  Answer: {ex.expects.describe()}.\n  {ex.hint}")


def _is_accuracy(ex: Exercise) -> bool:
    return "accuracy" in ex.expects.meaning


def _format(arrays: list[np.ndarray], kind: str) -> str:
    if kind == "integer":
        return str(int(arrays[0]))
    text = [np.array2string(a, precision=8, separator=", ", threshold=200) for a in arrays]
    return ("[" + ",\n   ".join(text) + "]") if kind == "arrays" else text[0]


def check(exercise_id: str, answer, reveal: bool = False) -> None:
    """Check ``answer`` for exercise ``exercise_id``: print ``Correct (...)`` if right, else raise with a hint.

    A wrong answer raises :class:`WrongAnswer` with hints (sign, order of magnitude, which step
    to revisit) but not the expected value, unless ``reveal=True``. An answer of the wrong kind
    (``None``, a string such as ``"24"``, NaN, a dict, a wrong shape) raises :class:`InvalidAnswer`.
    Both are ``AssertionError`` s, and print without a traceback in Jupyter.

    Raises:
      KeyError: for an unknown exercise id.
      WrongAnswer: when the answer is wrong.
      InvalidAnswer: when the answer is not of the kind expected.

    Example:
      >>> check("model.n_paths", 24)
      Correct (model.n_paths): 24 paths: one head per layer, 3 x 2 x 4 choices.
      >>> check("model.n_paths", 12)
      Traceback (most recent call last):
      ...
      paththeory.exercises.WrongAnswer: model.n_paths: not quite.
        - the order of magnitude is right, but it is too small in magnitude
        Revisit the definition of an attention path in this chapter: ...
      >>> check("model.n_paths", "24")
      Traceback (most recent call last):
      ...
      paththeory.exercises.InvalidAnswer: model.n_paths: got a string, '24' (text, not a number).
        Expected an integer (a number of paths).
        Store the number itself, not its text: e.g. answer = 3, not answer = '3'.
    """
    ex = _exercise(exercise_id)
    got = validate(exercise_id, answer, ex.expects)
    want = _truth(exercise_id)
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if not np.allclose(g, w, rtol=ex.rtol, atol=ex.atol)]
    if not wrong:
        print(f"Correct ({exercise_id}): {ex.explain(_value(exercise_id))}")
        return
    lines = [f"{exercise_id}: not quite."]
    for i in wrong:
        where = f"item {i}: " if ex.expects.kind == "arrays" else ""
        lines += [f"  - {where}{note}" for note in diagnose(got[i], want[i], ex.rtol, ex.atol, _is_accuracy(ex))]
    lines.append(f"  {ex.hint}")
    tol = "exactly" if ex.rtol == 0 and ex.atol == 0 else f"within relative tolerance {ex.rtol:g}, absolute {ex.atol:g}"
    lines.append(f"  The check compares {ex.expects.describe()} {tol}.")
    if reveal:
        note_revealed(exercise_id)
        lines.append("  Expected value:\n  " + _format(want, ex.expects.kind).replace("\n", "\n  "))
    else:
        lines.append(f'  To see the expected value: check("{exercise_id}", answer, reveal=True) or '
                     f'paththeory.exercises.solution("{exercise_id}").')
    raise WrongAnswer("\n".join(lines))
