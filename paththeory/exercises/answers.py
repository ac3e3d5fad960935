"""Answers and their diagnoses: what an exercise expects, how an answer is validated, and what is said when it is wrong.

:class:`Answer` describes the kind of answer (an integer, a number, an array of a shape, a list
of arrays); :func:`validate` turns a student's value into arrays or raises
:class:`InvalidAnswer` naming what was wrong; :func:`diagnose` says how a wrong answer differs
from the expected one (shape, sign, order of magnitude, which entries) without giving it away.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from paththeory._io import GRADING_ENV, grading  # noqa: F401 (GRADING_ENV: re-exported)


@dataclass(frozen=True)
class Answer:
    """The kind of answer an exercise expects.

    ``kind`` is ``"integer"``, ``"number"`` (one real number), ``"array"`` (of ``shape``) or
    ``"arrays"`` (a list of arrays, ``shape`` holding their shapes); ``meaning`` says what it is.

    Example:
      >>> Answer("array", (4, 4), "the GP kernel on the 4 inputs").describe()
      'an array of shape (4, 4) (the GP kernel on the 4 inputs)'
    """

    kind: str
    shape: tuple = ()
    meaning: str = ""

    def describe(self) -> str:
        text = {
            "integer": "an integer",
            "number": "a single real number (a float)",
            "array": f"an array of shape {self.shape}",
            "arrays": f"a list of {len(self.shape)} arrays of shapes " + ", ".join(str(s) for s in self.shape),
        }[self.kind]
        return f"{text} ({self.meaning})" if self.meaning else text


@dataclass(frozen=True)
class Exercise:
    """One exercise: its task, the answer it expects, how to compute and explain the truth, a hint."""

    task: str
    expects: Answer
    truth: Callable[[], Any]
    explain: Callable[[Any], str]
    hint: str
    rtol: float = 1e-6
    atol: float = 1e-9


class ExerciseError(AssertionError):
    """A check that did not pass. In IPython/Jupyter it prints as its message, without a traceback."""

    def _render_traceback_(self) -> list[str]:
        lines = str(self).splitlines() or [""]
        return [f"\x1b[1;31m{type(self).__name__}\x1b[0m: {lines[0]}", *lines[1:]]


class WrongAnswer(ExerciseError):
    """The answer has the right kind but not the right value; the message gives a hint."""


class InvalidAnswer(ExerciseError):
    """The answer is not of the kind the exercise expects (``None``, text, NaN, wrong type or shape)."""


def _what(value) -> str:
    """A short description of what the reader gave."""
    if value is None:
        return "None"
    if isinstance(value, (str, bytes)):
        text = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        return f"a string, {text}"
    if isinstance(value, (bool, np.bool_)):
        return f"a boolean ({value})"
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"an array of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, dict):
        return f"a dict (keys {', '.join(map(repr, list(value)[:4]))})"
    if isinstance(value, (list, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, numbers.Number):
        return f"a {type(value).__name__} ({value!r})"
    if callable(value):
        return f"a function ({getattr(value, '__name__', type(value).__name__)}): did you forget to call it?"
    return f"an object of type {type(value).__name__}"


def _invalid(exercise_id: str, spec: Answer, problem: str, advice: str = "") -> InvalidAnswer:
    text = f"{exercise_id}: {problem}.\n  Expected {spec.describe()}."
    return InvalidAnswer(text + (f"\n  {advice}" if advice else ""))


def _as_numbers(exercise_id: str, value, spec: Answer, shape: tuple, item: str = "") -> np.ndarray:
    """``value`` as a float array of ``shape``, or raise :class:`InvalidAnswer` saying what is wrong."""
    what = (item + " is " if item else "got ") + _what(value)
    _refuse_non_numbers(exercise_id, value, spec, item, what)
    try:
        arr = np.asarray(value)
        if arr.dtype.kind == "O" and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in arr.flat):
            arr = arr.astype(float)  # a Fraction, a Decimal or an int too large for int64 is a number
    except OverflowError:
        raise _invalid(exercise_id, spec, f"{what}, too large for a floating-point number",
                       "Check a power or a product that grew without bound.") from None
    except (TypeError, ValueError) as exc:
        raise _invalid(exercise_id, spec, f"{what}, which cannot be read as numbers ({exc})") from None
    if arr.dtype.kind == "c":
        raise _invalid(exercise_id, spec, f"{what} (complex numbers)",
                       "Take the real part (np.real) if the imaginary part is zero.")
    if arr.dtype.kind not in "iuf":
        raise _invalid(exercise_id, spec, what + (" (not numbers)" if arr.dtype.kind in "OUSbMm" else ""))
    if arr.shape != tuple(shape):
        if shape == ():
            advice = "Reduce it to one number, e.g. float(x) or x.item(), or pick the entry asked for."
            raise _invalid(exercise_id, spec, f"{what}, not a single number", advice)
        raise _invalid(exercise_id, spec, f"{what.replace(' and dtype ' + str(arr.dtype), '')}, not shape {tuple(shape)}",
                       "Check which axes your result keeps and their order.")
    arr = arr.astype(float)
    _refuse_non_finite(exercise_id, arr, spec, item)
    if spec.kind == "integer" and arr.ndim == 0 and float(arr) != round(float(arr)):
        raise _invalid(exercise_id, spec, f"{what}, not a whole number")
    return arr


def _refuse_non_numbers(exercise_id: str, value, spec: Answer, item: str, what: str) -> None:
    """Raise :class:`InvalidAnswer` for no answer, text, a boolean, a container of no numbers or a function."""
    if value is None:
        raise _invalid(exercise_id, spec, "no answer given" + (f" ({item} is None)" if item else " (`answer` is None)"),
                       "Store your result in `answer` before calling check.")
    if isinstance(value, (str, bytes)):
        raise _invalid(exercise_id, spec, what + " (text, not a number)",
                       "Store the number itself, not its text: e.g. answer = 3, not answer = '3'.")
    if isinstance(value, (bool, np.bool_, dict, set)) or callable(value):
        raise _invalid(exercise_id, spec, what)


def _refuse_non_finite(exercise_id: str, arr: np.ndarray, spec: Answer, item: str) -> None:
    """Raise :class:`InvalidAnswer` when the float array ``arr`` holds a NaN or an infinite value."""
    bad = ~np.isfinite(arr)
    if bad.any():
        kind = "NaN" if np.isnan(arr).any() else "an infinite value"
        where = "" if arr.ndim == 0 else f" ({int(bad.sum())} of {arr.size} entries)"
        raise _invalid(exercise_id, spec, f"{item + ' ' if item else 'the answer '}contains {kind}{where}",
                       "A NaN or inf usually comes from 0/0, a division by zero, the log or square root of a "
                       "negative number, or the mean of an empty selection: print the intermediate quantities.")


def validate(exercise_id: str, value, spec: Answer) -> list[np.ndarray]:
    """The answer as a list of float arrays (one per item), or raise :class:`InvalidAnswer`."""
    if spec.kind != "arrays":
        return [_as_numbers(exercise_id, value, spec, spec.shape if spec.kind == "array" else ())]
    if value is None:
        return [_as_numbers(exercise_id, value, spec, ())]
    if not isinstance(value, (list, tuple)) or len(value) != len(spec.shape):
        raise _invalid(exercise_id, spec, "got " + _what(value))
    return [_as_numbers(exercise_id, v, spec, s, item=f"item {i}") for i, (v, s) in enumerate(zip(value, spec.shape))]


#: Relative differences this small but above the tolerance are what float32 arithmetic leaves.
FLOAT32_LEVEL = 1e-5
_FLOAT32 = ("it agrees to about {rel:.0e} relative, short of the tolerance: typical of float32 arithmetic; "
            "compute in float64 (jax.config.update('jax_enable_x64', True), or no cast to float32)")


def diagnose(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, accuracy: bool = False) -> list[str]:
    """Hints on how ``got`` differs from ``want`` that do not give ``want`` away.

    ``accuracy``: the answer is an accuracy (a fraction), so an error rate or the accuracy on another
    set are the likely slips.

    Example:
      >>> diagnose(np.array(-24.0), np.array(24.0), 0, 0)
      ['only the sign is wrong']
      >>> diagnose(np.array(0.03), np.array(0.97), 1e-9, 0, accuracy=True)
      ['it is 1 minus the expected value: an error rate instead of an accuracy?']
    """
    if got.ndim == 0:
        return _diagnose_number(float(got), float(want), rtol, atol, accuracy)
    return _diagnose_array(got, want, rtol, atol)


def _diagnose_number(g: float, w: float, rtol: float, atol: float, accuracy: bool) -> list[str]:
    """:func:`diagnose` of a single number ``g`` against ``w``."""
    notes = []
    if g == 0:
        return ["your answer is 0 and the expected one is not"]
    if w == 0:
        return ["the expected answer is much smaller in magnitude than yours"]
    if 0 < w < 1 and math.isclose(g, 1 - w, rel_tol=max(rtol, 1e-9), abs_tol=max(atol, 1e-12)):
        return ["it is 1 minus the expected value: " + ("an error rate instead of an accuracy?" if accuracy
                                                        else "a complement (1 - x) of what is asked?")]
    if math.isclose(abs(g), abs(w), rel_tol=max(rtol, 1e-12), abs_tol=atol):
        return ["only the sign is wrong"]
    if np.sign(g) != np.sign(w):
        notes.append("the sign is wrong")
    ratio = abs(g / w)
    if ratio >= 10 or ratio <= 0.1:
        k = round(math.log10(ratio))
        notes.append(f"it is about 10^{abs(k)} times too {'large' if k > 0 else 'small'} in magnitude: "
                     "check a prefactor, a power or a normalisation")
        return notes
    rel = abs(abs(g) - abs(w)) / abs(w)
    if rel < FLOAT32_LEVEL:
        return notes + [_FLOAT32.format(rel=rel)]
    size = "too large" if abs(g) > abs(w) else "too small"
    if accuracy:
        close = (" (close: is it the accuracy on the set asked for, e.g. the test set rather than the "
                 "training or validation set, at the stated temperature and sizes?)")
    else:
        close = " (within 1%: check a small term, a sample size or a solver tolerance)" if rel < 0.01 else ""
    notes.append(f"the order of magnitude is right, but it is {size} in magnitude{close}")
    return notes


def _diagnose_array(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> list[str]:
    """:func:`diagnose` of an array ``got`` against ``want`` of the same shape."""
    notes = []
    ok = np.isclose(got, want, rtol=rtol, atol=atol)
    flat_w, flat_g = want.ravel(), got.ravel()
    scale = float(flat_w @ flat_w)
    if np.allclose(got, -want, rtol=rtol, atol=atol):
        return ["every entry has the wrong sign"]
    if want.ndim == 2 and want.shape[0] == want.shape[1] and np.allclose(got, want.T, rtol=rtol, atol=atol):
        return ["it is the transpose of the expected array: check the order of the axes"]
    norm_w = float(np.linalg.norm(flat_w))
    rel = float(np.linalg.norm(flat_g - flat_w)) / norm_w if norm_w > 0 else float("inf")
    if rel < FLOAT32_LEVEL:
        return [_FLOAT32.format(rel=rel)]
    if scale > 0:
        c = float(flat_g @ flat_w) / scale
        if c != 0 and np.allclose(got, c * want, rtol=max(rtol, 1e-6), atol=atol):
            return [(f"it is proportional to the expected array, off by a constant factor (about {c:.3g}): "
                     "check a prefactor such as a variance, a width or a square root")]
    if np.allclose(np.sort(flat_g), np.sort(flat_w), rtol=rtol, atol=atol):
        return ["it has the right entries in the wrong places: check the order of the axes or of the paths"]
    notes.append(f"{int(ok.sum())} of {ok.size} entries are right")
    return notes + _size_notes(flat_g, flat_w)


def _size_notes(flat_g: np.ndarray, flat_w: np.ndarray) -> list[str]:
    """How the size (norm) and direction of a wrong array compare with the expected one's."""
    ng, nw = float(np.linalg.norm(flat_g)), float(np.linalg.norm(flat_w))
    if ng == 0:
        return ["your array is all zeros"]
    if nw == 0:
        return []
    ratio = ng / nw
    if ratio >= 10 or ratio <= 0.1:
        k = round(math.log10(ratio))
        notes = [f"its size (norm) is about 10^{abs(k)} times too {'large' if k > 0 else 'small'}"]
    else:
        notes = ["its size (norm) has the right order of magnitude"]
    if float(flat_g @ flat_g) > 0 and float(flat_w @ flat_w) > 0 and float(flat_g @ flat_w) < 0:
        notes.append("it points the opposite way to the expected array (check a sign)")
    return notes


# --------------------------------------------------------------------------- graded runs


_REVEALED: set[str] = set()


class GradingError(AssertionError):
    """An answer that cannot earn points (it looked at the key or changed the checks), or a broken graded run."""

    def _render_traceback_(self) -> list[str]:
        return [f"GradingError: {self}"]


def note_revealed(exercise_id: str) -> None:
    """Record that ``exercise_id``'s answer was shown; in a graded run, refuse to show it."""
    _REVEALED.add(exercise_id)
    if grading():
        raise GradingError(f"{exercise_id}: the expected answer is not available in a graded run "
                           "(solution() and check(..., reveal=True) earn no points).")
