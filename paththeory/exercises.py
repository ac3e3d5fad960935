"""Exercises of the book: automatic checks, hints, student notebooks and the exercises page.

An exercise in a chapter is one code cell tagged ``exercise`` and ``hide-cell``, with the cell
metadata ``mystnb: {code_prompt_show: "Show solution", code_prompt_hide: "Hide solution"}``: on
the page, the task (an admonition right before the cell, with a label ``(exercise-<chapter>-<name>)=``)
is visible, and one "Show solution" toggle opens both the solution and the output of its check.
The solution sits between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, stores the result
in ``answer``, and the cell ends with ``check("<chapter>.<name>", answer)``.

Every check recomputes the expected answer with the package and compares it within a stated
tolerance. A right answer prints ``Correct (<id>): ...``. A wrong one raises
:class:`WrongAnswer` with a hint (shape, sign, order of magnitude, which step to revisit) and
without the expected value, which only ``check(id, answer, reveal=True)`` or :func:`solution`
show. An answer of the wrong kind (``None``, a string, NaN, a dict, a wrong shape) raises
:class:`InvalidAnswer`, naming the exercise and the kind of answer expected.

* :func:`check`, :func:`hint`, :func:`solution`; :data:`EXERCISES` lists every exercise.
* :func:`student_version` / :func:`write_student_notebooks`: notebooks for a course, in plain
  Markdown (no MyST markup), with every solution replaced by a stub that raises
  ``NotImplementedError``; :func:`plain_notebook` converts a chapter, with or without its solutions
  (the Colab notebooks of :mod:`paththeory.notebooks` keep them).
* :func:`mark_exercise_cells`: puts a chapter's exercise cells in the form above.
* :func:`exercises_page` / :func:`write_exercises_page`: the book's page listing the exercises.
"""

from __future__ import annotations

import difflib
import functools
import math
import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_CHECK_CALL = re.compile(r"""check\(\s*["']([\w.]+)["']""")
_SOLUTION = re.compile(r"^([ \t]*)" + re.escape(BEGIN) + r"[^\n]*\n.*?^[ \t]*" + re.escape(END) + r"[^\n]*$",
                       re.MULTILINE | re.DOTALL)

#: Tags and ``mystnb`` metadata of an exercise cell: one toggle hides the solution and its check's output.
EXERCISE_TAGS = ("exercise", "hide-cell")
EXERCISE_PROMPTS = {"code_prompt_show": "Show solution", "code_prompt_hide": "Hide solution"}


# --------------------------------------------------------------------------- answers and errors


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
    if value is None:
        raise _invalid(exercise_id, spec, "no answer given" + (f" ({item} is None)" if item else " (`answer` is None)"),
                       "Store your result in `answer` before calling check.")
    if isinstance(value, (str, bytes)):
        raise _invalid(exercise_id, spec, what + " (text, not a number)",
                       "Store the number itself, not its text: e.g. answer = 3, not answer = '3'.")
    if isinstance(value, (bool, np.bool_, dict, set)) or callable(value):
        raise _invalid(exercise_id, spec, what)
    try:
        arr = np.asarray(value)
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
    bad = ~np.isfinite(arr)
    if bad.any():
        kind = "NaN" if np.isnan(arr).any() else "an infinite value"
        where = "" if arr.ndim == 0 else f" ({int(bad.sum())} of {arr.size} entries)"
        raise _invalid(exercise_id, spec, f"{item + ' ' if item else 'the answer '}contains {kind}{where}",
                       "A NaN or inf usually comes from 0/0, a division by zero, the log or square root of a "
                       "negative number, or the mean of an empty selection: print the intermediate quantities.")
    if spec.kind == "integer" and arr.ndim == 0 and float(arr) != round(float(arr)):
        raise _invalid(exercise_id, spec, f"{what}, not a whole number")
    return arr


def _validate(exercise_id: str, value, spec: Answer) -> list[np.ndarray]:
    """The answer as a list of float arrays (one per item), or raise :class:`InvalidAnswer`."""
    if spec.kind != "arrays":
        return [_as_numbers(exercise_id, value, spec, spec.shape if spec.kind == "array" else ())]
    if value is None:
        return [_as_numbers(exercise_id, value, spec, ())]
    if not isinstance(value, (list, tuple)) or len(value) != len(spec.shape):
        raise _invalid(exercise_id, spec, "got " + _what(value))
    return [_as_numbers(exercise_id, v, spec, s, item=f"item {i}") for i, (v, s) in enumerate(zip(value, spec.shape))]


def _diagnose(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> list[str]:
    """Hints on how ``got`` differs from ``want`` that do not give ``want`` away."""
    notes = []
    if got.ndim == 0:
        g, w = float(got), float(want)
        if g == 0:
            return ["your answer is 0 and the expected one is not"]
        if w == 0:
            return ["the expected answer is much smaller in magnitude than yours"]
        if np.sign(g) != np.sign(w):
            notes.append("the sign is wrong")
        ratio = abs(g / w)
        if ratio >= 10 or ratio <= 0.1:
            k = round(math.log10(ratio))
            notes.append(f"it is about 10^{abs(k)} times too {'large' if k > 0 else 'small'} in magnitude: "
                         "check a prefactor, a power or a normalisation")
        else:
            size = "too large" if abs(g) > abs(w) else "too small"
            close = " (within 1%: check float32 vs float64, a tolerance or a small term)" if abs(ratio - 1) < 0.01 else ""
            notes.append(f"the order of magnitude is right, but it is {size} in magnitude{close}")
        return notes
    ok = np.isclose(got, want, rtol=rtol, atol=atol)
    flat_w, flat_g = want.ravel(), got.ravel()
    scale = float(flat_w @ flat_w)
    if np.allclose(got, -want, rtol=rtol, atol=atol):
        return ["every entry has the wrong sign"]
    if want.ndim == 2 and want.shape[0] == want.shape[1] and np.allclose(got, want.T, rtol=rtol, atol=atol):
        return ["it is the transpose of the expected array: check the order of the axes"]
    if scale > 0:
        c = float(flat_g @ flat_w) / scale
        if c != 0 and np.allclose(got, c * want, rtol=max(rtol, 1e-6), atol=atol):
            return [(f"it is proportional to the expected array, off by a constant factor (about {c:.2g}): "
                     "check a prefactor such as a variance, a width or a square root")]
    if np.allclose(np.sort(flat_g), np.sort(flat_w), rtol=rtol, atol=atol):
        return ["it has the right entries in the wrong places: check the order of the axes or of the paths"]
    notes.append(f"{int(ok.sum())} of {ok.size} entries are right")
    ng, nw = float(np.linalg.norm(flat_g)), float(np.linalg.norm(flat_w))
    if ng == 0:
        notes.append("your array is all zeros")
    elif nw > 0:
        ratio = ng / nw
        if ratio >= 10 or ratio <= 0.1:
            k = round(math.log10(ratio))
            notes.append(f"its size (norm) is about 10^{abs(k)} times too {'large' if k > 0 else 'small'}")
        else:
            notes.append("its size (norm) has the right order of magnitude")
        if scale > 0 and float(flat_g @ flat_w) < 0:
            notes.append("it points the opposite way to the expected array (check a sign)")
    return notes

# --------------------------------------------------------------------------- shared exercise data


def model_problem(readout: str = "first"):
    """The small network of the model exercises: ``(arch, params, x)``, L = 2, heads (3, 2).

    Example:
      >>> arch, params, x = model_problem()
      >>> arch.heads, x.shape
      ((3, 2), (4, 5, 6))
    """
    import jax

    import paththeory as pt

    rng = np.random.default_rng(0)
    layers = [pt.QKAttention(rng.normal(size=(h, 3, 6)), rng.normal(size=(h, 3, 6))) for h in (3, 2)]
    arch = pt.Architecture(layers, readout=readout)
    params = pt.sample_prior(arch, 8, 6, jax.random.PRNGKey(1))
    return arch, params, rng.normal(size=(4, 5, 6))


@functools.lru_cache(maxsize=None)
def toy_problem(n_train: int = 100, n_test: int = 1000):
    """The toy needle task of the GP-vs-finite exercises: ``(arch, f_train, y_train, f_test, y_test)``.

    Example:
      >>> arch, f_train, y_train, f_test, y_test = toy_problem(10, 20)
      >>> f_train.shape, f_test.shape
      ((10, 4, 48), (20, 4, 48))
    """
    import paththeory as pt
    from paththeory.tasks import toy

    arch = toy.architecture()
    train = toy.sample_task(n_train, seed=toy.TRAIN_SEED)
    test = toy.sample_task(n_test, seed=toy.TEST_SEED)
    y_train, y_test = np.array(train.y), np.array(test.y)  # cached: one caller's change must not reach the next
    y_train.flags.writeable = y_test.flags.writeable = False
    return arch, pt.path_features(arch, train.x), y_train, pt.path_features(arch, test.x), y_test


@functools.lru_cache(maxsize=None)
def markov_problem(n_train: int = 100, n_test: int = 1000):
    """The four-path Markov task of the Markov exercises: ``(arch, f_train, y_train, f_test, y_test)``.

    Example:
      >>> arch, f_train, y_train, f_test, y_test = markov_problem(10, 20)
      >>> f_train.shape, f_test.shape
      ((10, 4, 231), (20, 4, 231))
    """
    from paththeory.experiments.markov import problem

    prob = problem("four_paths", n_train, n_test)
    return prob.arch, prob.train, prob.y_train, prob.test, prob.y_test


def _gp_accuracy(problem, paths: list[int], temperature: float) -> float:
    from paththeory.predict import accuracy, mean_predictor

    arch, f_train, y_train, f_test, y_test = problem
    U = arch.gp_scale * np.diag(np.isin(np.arange(arch.n_paths), paths).astype(float))
    return accuracy(mean_predictor(U, f_train, y_train, f_test, temperature), y_test)


OMNIGLOT_SPLITS = ("train", "validation", "test")


class OmniglotProblem(NamedTuple):
    """Data of the Omniglot and pruning exercises (:func:`omniglot_problem`).

    ``network``: the shipped :class:`paththeory.training.Checkpoint`; ``x``, ``y`` and ``features``:
    dicts over ``"train"``, ``"validation"`` and ``"test"`` (sequences of training, validation and
    held-out characters) of tokens ``[P, 48, 192]`` (48 tokens of 192 components: 16 patches of 64 pixels plus the
    label vectors), targets ``[P]`` (first half ``+1``) and path features ``[P, 16, 192]`` (one per path). The arrays are read-only.
    """

    network: Any
    x: dict
    y: dict
    features: dict


@functools.lru_cache(maxsize=None)
def omniglot_problem(n: int = 200) -> OmniglotProblem:
    """The trained network and ``n`` balanced sequences per split for the Omniglot and pruning exercises.

    The sequences are those of :func:`paththeory.experiments.omniglot.build_sequences` with ``n``
    sequences per split (seed 0), whatever the profile; needs the Omniglot files (:mod:`paththeory.data`).

    Example:
      >>> network, x, y, features = omniglot_problem(20)
      >>> network.architecture.heads, x["test"].shape, features["train"].shape
      ((4, 4), (20, 48, 192), (20, 16, 192))
    """
    import dataclasses

    from paththeory.experiments import omniglot

    network = omniglot.trained_network()
    cfg = dataclasses.replace(omniglot.settings("smoke"), n_train=n, n_validation=n, n_test=n, sample_n_train=0,
                              score_train_sizes=())
    seqs = omniglot.build_sequences(cfg, network)
    x = {s: seqs.x[s] for s in OMNIGLOT_SPLITS}
    y = {s: seqs.y[s] for s in OMNIGLOT_SPLITS}
    features = omniglot.build_features(network.architecture, dataclasses.replace(seqs, x=x))
    for arrays in (x, y, features):
        for a in arrays.values():
            a.flags.writeable = False
    return OmniglotProblem(network, x, y, features)


# --------------------------------------------------------------------------- the model chapter


def _model_n_paths_truth() -> int:
    import paththeory as pt

    return int(pt.Architecture([pt.ScoreAttention(np.zeros((h, 2, 2))) for h in (3, 2, 4)]).n_paths)


def _model_path_expansion_truth():
    import paththeory as pt

    arch, params, x = model_problem("first")
    return pt.network_output(arch, params, x)


def _model_gp_arch():
    import paththeory as pt

    arch, _, x = model_problem("mean")
    return pt.Architecture(arch.attention, readout="mean", variances=(1.0, 0.5, 2.0, 3.0)), x


def _model_gp_kernel_truth():
    import paththeory as pt
    from paththeory.kernels import gp_kernel

    arch, x = _model_gp_arch()
    return gp_kernel(arch, pt.path_features(arch, x))


# --------------------------------------------------------------------------- the derivation chapters

READOUT_SETUP = {"trace": 2.5, "widths": (10.0, 10.0, 30.0), "heads": (2, 3), "variances": (1.0, 1.0, 0.8, 1.5)}
GP_SETUP = {"heads": (2, 3), "variances": (1.0, 0.6, 1.7, 2.1)}


def _derivation_readout_root_truth() -> float:
    from paththeory.action import readout_order_parameter

    s = READOUT_SETUP
    return float(readout_order_parameter(s["trace"], s["widths"], s["heads"], s["variances"]))


def _depth_gp_point_truth():
    from paththeory.action import gp_order_parameters

    return list(gp_order_parameters(GP_SETUP["heads"], GP_SETUP["variances"]))


def _depth_single_path_truth() -> float:
    from paththeory.action import single_path_entropy_minimum

    return float(single_path_entropy_minimum(2.0, 3))


# --------------------------------------------------------------------------- the GP-vs-finite chapter

TOY_WIDTHS = (3, 10, 30, 100, 300, 1000, 3000)


@functools.lru_cache(maxsize=None)
def _toy_width_within_10_percent() -> int:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    gp = arch.gp_scale * np.eye(arch.n_paths)
    sols = Theory(arch, f_train, y_train).sweep(list(TOY_WIDTHS), 1.0)
    close = [w for w, s in zip(TOY_WIDTHS, sols) if np.linalg.norm(s.U - gp) <= 0.1 * np.linalg.norm(gp)]
    return int(min(close))


@functools.lru_cache(maxsize=None)
def _toy_top_overlaps() -> tuple[float, float]:
    from paththeory.kernels import gp_kernel, kernel_matrix
    from paththeory.predict import pc_label_overlap
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = toy_problem()
    U = Theory(arch, f_train, y_train).solve(5, 1.0).U
    return (float(pc_label_overlap(gp_kernel(arch, f_train), y_train, 1)[0]),
            float(pc_label_overlap(kernel_matrix(U, f_train), y_train, 1)[0]))


# --------------------------------------------------------------------------- the Markov chapter


def _markov_agreement_truth():
    from paththeory.tasks import markov

    data = markov.sample_task(200, seed=1)
    agree = (data.states[:, 1:] == data.states[:, :-1]).mean(axis=1)
    return np.array([agree[data.y > 0].mean(), agree[data.y < 0].mean()])


@functools.lru_cache(maxsize=None)
def _markov_u_gd() -> float:
    from paththeory.solve import Theory

    arch, f_train, y_train, _, _ = markov_problem()
    return float(Theory(arch, f_train, y_train).solve(10, 0.01).U[0, 2])


# --------------------------------------------------------------------------- the Omniglot chapter

OMNIGLOT_GP_TEMPERATURES = (0.05, 0.25, 1.0)


def _omniglot_patches_truth():
    from paththeory.tasks.omniglot import encode_images

    image = np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)
    return encode_images(image[None])[0]


def _omniglot_gd_accuracy_truth() -> float:
    from paththeory.training import evaluate

    network, x, y, _ = omniglot_problem()
    return float(evaluate(network, x["test"], y["test"]))


def _omniglot_gd_explain(truth: float) -> str:
    n = len(omniglot_problem().y["test"])
    return (f"the trained network labels {truth:.3f} of {n} held-out sequences correctly "
            f"(standard error {np.sqrt(truth * (1 - truth) / n):.3f}; chance is 0.5).")


@functools.lru_cache(maxsize=None)
def _omniglot_gp_selection() -> tuple[float, float, float]:
    from paththeory.experiments.omniglot import gp_accuracies, select_temperature

    network, _, y, features = omniglot_problem()
    temps = OMNIGLOT_GP_TEMPERATURES
    acc = gp_accuracies(network.architecture, features, y, temps, splits=("validation", "test"))
    chosen = float(select_temperature(acc["validation"], temps))
    return chosen, float(acc["test"][temps.index(chosen)]), float(acc["test"].max())


def _omniglot_gp_explain(truth: float) -> str:
    chosen, _, best_test = _omniglot_gp_selection()
    return (f"T = {chosen:g} is best on validation and gives test accuracy {truth:.3f}; the best test "
            f"accuracy over T, {best_test:.3f}, would be an optimistic estimate.")


# --------------------------------------------------------------------------- the pruning chapter


def _pruning_head_scores_truth():
    from paththeory.pruning import head_scores

    a = np.random.default_rng(0).normal(size=(16, 16))
    return np.stack(head_scores(a @ a.T / 16, (4, 4)))


def _pruning_head_scores_explain(truth) -> str:
    layer, head = np.unravel_index(np.argmin(truth), truth.shape)
    return f"the lowest score, {truth.min():.3f}, is that of head {head} of layer {layer}."


def _pruning_path_removal_truth():
    import paththeory as pt
    from paththeory.pruning import head_mask

    network, x, _, _ = omniglot_problem()
    arch = network.architecture
    return pt.network_output(arch, network.params, x["test"][:8], head_mask=head_mask(arch.heads, [(0, 1)]))


@functools.lru_cache(maxsize=None)
def _omniglot_lowest_two() -> tuple[list, float, float]:
    from paththeory.experiments.pruning import pruned_accuracy, scores_and_order
    from paththeory.solve import Theory

    network, x, y, features = omniglot_problem()
    arch = network.architecture
    U = Theory(arch, features["train"], y["train"]).solve(10, 0.25).U
    pair = [tuple(lh) for lh in scores_and_order(U, arch.heads)["order"][:2]]
    return (pair, pruned_accuracy(network, x["test"], y["test"], pair),
            pruned_accuracy(network, x["test"], y["test"], []))


def _pruning_lowest_two_explain(truth: float) -> str:
    pair, _, full = _omniglot_lowest_two()
    return (f"without heads {pair[0]} and {pair[1]} (layer, head), the lowest scores, the test accuracy is "
            f"{truth:.3f} (unpruned {full:.3f}).")


_ACCURACY = "a test accuracy, a fraction between 0 and 1"

EXERCISES: dict[str, Exercise] = {
    "model.n_paths": Exercise(
        "the number of paths of a network with heads (3, 2, 4)",
        Answer("integer", meaning="a number of paths"),
        _model_n_paths_truth,
        lambda t: f"{t} paths: one head per layer, 3 x 2 x 4 choices.",
        "Revisit the definition of an attention path in this chapter: a path chooses one head in every "
        "layer (`Architecture.n_paths`, `arch.paths`).",
        rtol=0, atol=0),
    "model.path_expansion": Exercise(
        "f(x) as a sum over paths, readout = first token",
        Answer("array", (4,), "f(x) on the 4 inputs"),
        _model_path_expansion_truth,
        lambda t: "the sum over the 6 paths equals the layer-by-layer forward pass (readout = first token).",
        "Revisit the path expansion f(x) = sum_pi w^pi . V0 xi^pi(x) / (sigma_0 sqrt(n0)): contract the "
        "indices [paths, n0] of w, [n0, N0] of V0 and [B, paths, N0] of xi, and divide by sigma_0 sqrt(n0).",
        rtol=1e-8, atol=1e-10),
    "model.gp_kernel": Exercise(
        "the GP kernel from path features with non-unit variances",
        Answer("array", (4, 4), "the GP kernel on the 4 inputs"),
        _model_gp_kernel_truth,
        lambda t: "K_GP = 3 x sum_pi C^(pi pi) (gp_scale = sigma_a^2 sigma_1^2 sigma_2^2 = 3 x 0.5 x 2).",
        "Revisit the GP kernel in this chapter: only the diagonal blocks C^(pi pi) of the path kernels enter, "
        "times sigma_a^2 sigma_1^2 sigma_2^2 with this exercise's variances (sigma_0^2 does not enter).",
        rtol=1e-8, atol=1e-12),
    "derivation.readout_root": Exercise(
        "U_a from its quadratic equation",
        Answer("number", meaning="the readout order parameter U_a"),
        _derivation_readout_root_truth,
        lambda t: f"U_a = {t:.6f}, the positive root of the quadratic.",
        "Revisit the readout order parameter: n_{L-1} = widths[-2], n_L = widths[-1], H_L = heads[-1], "
        "sigma_L^2 = variances[-2], sigma_a^2 = variances[-1]; U_a is the positive root.",
        rtol=1e-8),
    "depth.gp_point": Exercise(
        "the GP point of every order parameter",
        Answer("arrays", ((6, 6), (3, 3)), "[U^(1), U^(2)]"),
        _depth_gp_point_truth,
        lambda t: f"U^(1) = {t[0][0, 0]:.4g} I (6 x 6) and U^(2) = {t[1][0, 0]:.4g} I (3 x 3).",
        "Revisit the GP limit of the order parameters: U^(l) is a multiple of the identity over the paths "
        "through layers l..L, and the factor is sigma_a^2 times the sigma_m^2 of the layers m >= l.",
        rtol=1e-6),
    "depth.single_path": Exercise(
        "the single-path entropy minimum by numerical minimisation",
        Answer("number", meaning="the minimum of the entropy over the inner order parameters"),
        _depth_single_path_truth,
        lambda t: f"min over the inner order parameters = {t:.6f} = 4 * 2^(1/4) - ln 2.",
        "Revisit the single-path entropy: fix U^(1) = 2, minimise over U^(2) and U^(3) (positive: optimise "
        "their logs), with unit widths and variances, and store the minimum value, not the minimiser.",
        rtol=1e-5),
    "gp_vs_finite.good_path": Exercise(
        "the GP test accuracy of the good path alone",
        Answer("number", meaning=_ACCURACY),
        lambda: _gp_accuracy(toy_problem(), [0], 1.0),
        lambda t: f"test accuracy {t:.3f} with the good path alone "
                  f"(all paths: {_gp_accuracy(toy_problem(), [0, 1, 2, 3], 1.0):.3f}).",
        "Revisit the GP predictor of this chapter: U = gp_scale on the good path (path 0) and 0 elsewhere, "
        "T = 1, accuracy on the 1000 test sequences.",
        rtol=0, atol=1e-9),
    "gp_vs_finite.width_10": Exercise(
        "the smallest width with U* within 10% of the GP point",
        Answer("integer", meaning="one of TOY_WIDTHS"),
        _toy_width_within_10_percent,
        lambda t: f"from N = {t:g} on, ||U* - U_GP||_F is within 10% of ||U_GP||_F.",
        "Revisit the width sweep: U_GP = gp_scale * I, the distance is ||U* - U_GP||_F / ||U_GP||_F at T = 1, "
        "and the answer is the smallest width of TOY_WIDTHS at which it is <= 0.1.",
        rtol=0, atol=0),
    "gp_vs_finite.alignment": Exercise(
        "the top-PC label overlap of K_GP and K_U*",
        Answer("array", (2,), "[overlap_gp, overlap_theory]"),
        lambda: np.array(_toy_top_overlaps()),
        lambda t: f"top-PC overlap: K_GP {t[0]:.3f}, K_U* at N = 5 {t[1]:.3f}.",
        "Revisit kernel-task alignment: the top principal component (k = 1) of the training kernels K_GP and "
        "K_U, with U* solved at N = 5, T = 1; the order is [GP, theory].",
        rtol=1e-4, atol=1e-6),
    "markov.agreement": Exercise(
        "the fraction of agreeing neighbours per class",
        Answer("array", (2,), "[class +1, class -1]"),
        _markov_agreement_truth,
        lambda t: f"agreeing neighbours: {t[0]:.3f} for y = +1 (expected 0.7), {t[1]:.3f} for y = -1 (0.3).",
        "Revisit the Markov task: compare consecutive hidden states (data.states[:, 1:] and [:, :-1]), average "
        "over each sequence, then over the sequences of each class; the order is [y = +1, y = -1].",
        rtol=1e-9),
    "markov.good_path": Exercise(
        "the GP test accuracy of the good path alone",
        Answer("number", meaning=_ACCURACY),
        lambda: _gp_accuracy(markov_problem(), [0], 0.01),
        lambda t: f"GP accuracy of the good path alone: {t:.3f}.",
        "Revisit the GP predictor of this chapter: U = gp_scale e_0 e_0^T (path 0 only), T = 0.01, accuracy "
        "on the 1000 test sequences.",
        rtol=0, atol=1e-9),
    "markov.u_gd": Exercise(
        "the good-denoising entry of U* at N = 10",
        Answer("number", meaning="the entry U*[0, 2]"),
        _markov_u_gd,
        lambda t: f"U*_gd = {t:.4f} at N = 10: the good and denoising paths are anti-correlated.",
        "Revisit the theory's solution: Theory(...).solve(N=10, T=0.01).U, entry [0, 2] (good = 0, "
        "denoising = 2).",
        rtol=1e-3, atol=1e-5),
    "omniglot.patches": Exercise(
        "the 16 LayerNormed 8 x 8 patches of a 32 x 32 image",
        Answer("array", (16, 64), "16 patches of 64 pixels"),
        _omniglot_patches_truth,
        lambda t: "16 patches of 64 pixels, row-major, each LayerNormed: the tokens' image part (encode_images).",
        "Revisit the tokenisation: scale the pixels first, cut row-major 8 x 8 patches (reshape to "
        "[4, 8, 4, 8], then transpose the axes to (0, 2, 1, 3)), and normalise each patch with the biased "
        "variance plus 1e-5.",
        rtol=1e-9, atol=1e-9),
    "omniglot.gd_accuracy": Exercise(
        "the test accuracy of the trained network",
        Answer("number", meaning=_ACCURACY),
        _omniglot_gd_accuracy_truth,
        _omniglot_gd_explain,
        "Revisit the evaluation: the network's output on x['test'], its sign compared with y['test'], "
        "averaged over the sequences.",
        rtol=0, atol=1e-12),
    "omniglot.gp_temperature": Exercise(
        "the GP test accuracy at the validation-selected temperature",
        Answer("number", meaning=_ACCURACY),
        lambda: _omniglot_gp_selection()[1],
        _omniglot_gp_explain,
        "Revisit model selection: choose T by the validation accuracy (ties to the larger T), then report "
        "the test accuracy at that T only.",
        rtol=0, atol=1e-12),
    "pruning.head_scores": Exercise(
        "the normalised head scores from a given order parameter",
        Answer("array", (2, 4), "scores [layer, head]"),
        _pruning_head_scores_truth,
        _pruning_head_scores_explain,
        "Revisit the head scores: sum |U| over the pairs of paths in which either path goes through the head, "
        "each pair once, and divide by the largest score; rows are layers.",
        rtol=1e-12, atol=1e-12),
    "pruning.path_removal": Exercise(
        "pruning a head as removing its paths from the path expansion",
        Answer("array", (8,), "the outputs on the first 8 test sequences"),
        _pruning_path_removal_truth,
        lambda t: "dropping the 4 paths through head 1 of layer 0 and rescaling by sqrt(4/3) is pruning that head.",
        "Revisit pruning as path removal: keep the paths with p[0] != 1 (arch.paths), multiply their sum by "
        "sqrt(4/3), and work in float64.",
        rtol=1e-8, atol=1e-12),
    "pruning.lowest_two": Exercise(
        "the test accuracy without the two lowest-scoring heads",
        Answer("number", meaning=_ACCURACY),
        lambda: _omniglot_lowest_two()[1],
        _pruning_lowest_two_explain,
        "Revisit the pruning experiment: U solved at N = 10, T = 0.25 on the training features, heads scored "
        "from that U, and the two lowest-scoring heads pruned together.",
        rtol=0, atol=1e-12),
}


# --------------------------------------------------------------------------- checking answers

_TRUTHS: dict[str, list[np.ndarray]] = {}


def _exercise(exercise_id: str) -> Exercise:
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


def solution(exercise_id: str):
    """The expected answer of an exercise (an int, a float, an array or a list of arrays).

    This reveals the answer: a course may prefer :func:`hint` first.

    Example:
      >>> solution("model.n_paths")
      24
    """
    ex = _exercise(exercise_id)
    arrays = [a.copy() for a in _truth(exercise_id)]
    if ex.expects.kind == "integer":
        return int(arrays[0])
    if ex.expects.kind == "number":
        return float(arrays[0])
    return arrays if ex.expects.kind == "arrays" else arrays[0]


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
    got = _validate(exercise_id, answer, ex.expects)
    want = _truth(exercise_id)
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if not np.allclose(g, w, rtol=ex.rtol, atol=ex.atol)]
    if not wrong:
        print(f"Correct ({exercise_id}): {ex.explain(solution(exercise_id))}")
        return
    lines = [f"{exercise_id}: not quite."]
    for i in wrong:
        where = f"item {i}: " if ex.expects.kind == "arrays" else ""
        lines += [f"  - {where}{note}" for note in _diagnose(got[i], want[i], ex.rtol, ex.atol)]
    lines.append(f"  {ex.hint}")
    tol = "exactly" if ex.rtol == 0 and ex.atol == 0 else f"within relative tolerance {ex.rtol:g}, absolute {ex.atol:g}"
    lines.append(f"  The check compares {ex.expects.describe()} {tol}.")
    if reveal:
        lines.append("  Expected value:\n  " + _format(want, ex.expects.kind).replace("\n", "\n  "))
    else:
        lines.append(f'  To see the expected value: check("{exercise_id}", answer, reveal=True) or '
                     f'paththeory.exercises.solution("{exercise_id}").')
    raise WrongAnswer("\n".join(lines))


# --------------------------------------------------------------------------- student notebooks


def exercise_id(source: str) -> str | None:
    """The id in the ``check("...", ...)`` call of a cell's source, or ``None``.

    Example:
      >>> exercise_id('answer = 24\\ncheck("model.n_paths", answer)')
      'model.n_paths'
    """
    found = _CHECK_CALL.search(source)
    return found.group(1) if found else None


def exercise_label(exercise_id: str) -> str:
    """The MyST label put right before an exercise's task: ``exercise-<chapter>-<name>``.

    Example:
      >>> exercise_label("model.n_paths")
      'exercise-model-n-paths'
    """
    return "exercise-" + re.sub(r"[^a-z0-9]+", "-", exercise_id.lower()).strip("-")


def strip_solution(source: str) -> str:
    """Replace every ``BEGIN/END SOLUTION`` block of ``source`` by a stub raising ``NotImplementedError``.

    Example:
      >>> src = 'x = 1\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)'
      >>> print(strip_solution(src))
      x = 1
      # Your solution: store the result in `answer`.
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution (the task is above; paththeory.exercises.hint('model.n_paths') gives a hint)")
      check("model.n_paths", answer)
    """
    name = exercise_id(source) or "?"
    stub = (f"# Your solution: store the result in `answer`.\n"
            f'raise NotImplementedError("Exercise {name}: replace this line with your solution (the task is '
            f"above; paththeory.exercises.hint('{name}') gives a hint)\")")
    return _SOLUTION.sub(lambda m: "\n".join(m.group(1) + line for line in stub.splitlines()), source)


_STUDENT_NOTE = (
    "> **Student notebook.** The exercises of this chapter are at its end. In each exercise cell, replace "
    "the line `raise NotImplementedError(...)` with your solution, store the result in `answer` and run "
    "the cell: `check(...)` prints \"Correct\", or says what is off and which step to revisit. "
    "`paththeory.exercises.hint(\"<id>\")` repeats the task and the hint; "
    "`check(\"<id>\", answer, reveal=True)` shows the expected value. Run the cells from the top: the "
    "exercises use the imports and data of the chapter, and the first cell installs `paththeory` on Colab."
)


def student_version(notebook, book_dir: str | Path | None = None, chapters=()):
    """A copy of an ``nbformat`` notebook for students: solutions stubbed, Markdown made plain.

    Every solution is replaced (:func:`strip_solution`) and its outputs removed; the Markdown
    cells are converted from MyST to plain Markdown (:func:`myst_to_markdown`, with the chapter
    titles and references of ``book_dir`` if given; ``{doc}`` links to ``chapters`` point to their
    student notebooks); cell metadata other than the ``exercise`` tag is dropped, and a note on
    how to do the exercises follows the title. :func:`plain_notebook` does the conversion.

    Example:
      >>> import nbformat
      >>> cell = nbformat.v4.new_code_cell('### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)')
      >>> print(student_version(nbformat.v4.new_notebook(cells=[cell])).cells[-1].source)
      # Your solution: store the result in `answer`.
      raise NotImplementedError("Exercise model.n_paths: replace this line with your solution (the task is above; paththeory.exercises.hint('model.n_paths') gives a hint)")
      check("model.n_paths", answer)
    """
    import nbformat

    out = plain_notebook(notebook, _MarkdownContext.from_book(book_dir, chapters), solutions=False)
    cells = out.cells
    if any(BEGIN in c.source for c in notebook.cells):
        at = 1 if cells and cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("#") else 0
        cells.insert(at, nbformat.v4.new_markdown_cell(_STUDENT_NOTE))
    return out


def figure_caption(cell) -> str | None:
    """The caption of a figure cell (its ``mystnb: figure: caption`` metadata), or ``None``."""
    figure = (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}
    caption = figure.get("caption") if isinstance(figure, dict) else None
    return str(caption).strip() if caption else None


def plain_notebook(notebook, context: _MarkdownContext | None = None, *, solutions: bool = False):
    """A copy of an ``nbformat`` notebook in plain Markdown (no MyST markup), as Jupyter and Colab render it.

    The Markdown cells are converted by :func:`myst_to_markdown` with ``context`` (chapter titles,
    citations, labels and, if it has a ``base_url``, links to the published book); a figure's
    caption becomes a Markdown cell under its code cell. Outputs are removed. With
    ``solutions=False`` (the student notebooks) every solution is replaced by a stub
    (:func:`strip_solution`) and cell metadata other than the ``exercise`` tag is dropped; with
    ``solutions=True`` (the full edition) the solutions and the cells' tags are kept.

    Example:
      >>> import nbformat
      >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("(sec)=\\n# Title {cite}`x`")])
      >>> print(plain_notebook(nb).cells[0].source)
      # Title x
    """
    import copy

    import nbformat

    ctx = copy.copy(context) if context is not None else _MarkdownContext({}, {}, {})
    ctx.solutions = solutions
    ctx.equations = _equation_numbers("\n".join(c.source for c in notebook.cells if c.cell_type == "markdown"))
    out = copy.deepcopy(notebook)
    cells = []
    for cell in out.cells:
        tags = list(cell.metadata.get("tags", []))
        caption = None
        if cell.cell_type == "markdown":
            cell.source = myst_to_markdown(cell.source, ctx)
            cell.metadata = {}
            if not cell.source.strip():
                continue
        elif cell.cell_type == "code":
            caption = figure_caption(cell)
            if BEGIN in cell.source and not solutions:
                cell.source = strip_solution(cell.source)
            cell.outputs, cell.execution_count = [], None
            if solutions:
                cell.metadata = {"tags": tags} if tags else {}
            else:
                cell.metadata = {"tags": ["exercise"]} if "exercise" in tags else {}
        cells.append(cell)
        if caption and solutions:
            cells.append(nbformat.v4.new_markdown_cell("**Figure.** " + myst_to_markdown(caption, ctx)))
    out.cells = cells
    out.metadata.pop("jupytext", None)
    return out


def write_student_notebooks(book_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``<out_dir>/<chapter>.ipynb`` for every MyST chapter of ``book_dir`` with exercises.

    The notebooks are plain Jupyter notebooks (:func:`student_version`): they read well in
    Jupyter and on Colab. Needs ``jupytext`` (the ``book`` extra). Returns the paths written, each
    written atomically. ``out_dir`` must be another folder than ``book_dir`` (the book's own files are
    never overwritten), and ``book_dir`` must hold at least one chapter with exercises.

    Example:
      >>> import pathlib, tempfile
      >>> book = pathlib.Path(tempfile.mkdtemp())
      >>> cell = '```{code-cell} ipython3\\n### BEGIN SOLUTION\\nanswer = 24\\n### END SOLUTION\\ncheck("model.n_paths", answer)\\n```\\n'
      >>> _ = (book / "chapter.md").write_text(cell)
      >>> [p.name for p in write_student_notebooks(book, book / "student")]
      ['chapter.ipynb']
    """
    import jupytext
    import nbformat

    from paththeory import _io

    book, out = Path(book_dir), _io.check_output_folder(out_dir)
    if not book.is_dir():
        raise NotADirectoryError(f"the book folder {book} does not exist; give the folder of the chapters' .md files.")
    if out.resolve() == book.resolve():
        raise ValueError(f"the output folder {out} is the book folder itself; give another folder so that "
                         "the book's own files are not overwritten.")
    chapters = {md.stem: md.read_text() for md in sorted(book.glob("*.md")) if BEGIN in md.read_text()}
    if not chapters:
        raise ValueError(f"{book} holds no chapter (.md) with exercises ({BEGIN!r} cells); give the book's folder.")
    written = []
    for name, text in chapters.items():
        nb = student_version(jupytext.reads(text, fmt="md:myst"), book, tuple(chapters))
        written.append(_io.write_text(out / f"{name}.ipynb", nbformat.writes(nb).rstrip("\n") + "\n"))
    return written


# --------------------------------------------------------------------------- MyST to plain Markdown


@dataclass
class _MarkdownContext:
    titles: dict
    citations: dict
    labels: dict
    chapters: tuple = ()
    equations: dict | None = None
    #: The published book's address: with it, ``{doc}``, ``{ref}``, ``{numref}``, ``{prf:ref}``
    #: and other pages' ``{eq}`` become links to its pages (``<base_url>/<book folder>/<page>.html#<anchor>``).
    base_url: str | None = None
    #: ``{label: (page, anchor)}`` of every target of the book (labels, theorems, equations, figures).
    anchors: dict = field(default_factory=dict)
    #: The book folder's path in the published book (``book``).
    folder: str = "book"
    #: Whether the notebook keeps its worked solutions (the full edition) or stubs them (students).
    solutions: bool = False

    @classmethod
    def from_book(cls, book_dir, chapters=(), base_url: str | None = None) -> _MarkdownContext:
        titles, labels, citations, anchors = {}, {}, {}, {}
        folder = "book"
        if book_dir is not None:
            book = Path(book_dir)
            folder = book.name
            for md in book.glob("*.md"):
                text = md.read_text()
                head = re.search(r"^# (.+)$", text, re.MULTILINE)
                titles[md.stem] = head.group(1).strip() if head else md.stem
                for m in re.finditer(r"^\(([^)\s]+)\)=\s*\n+(?:#+ (.+)|```+\{admonition\} (.+)|:::+\{admonition\} (.+))?",
                                     text, re.MULTILINE):
                    labels[m.group(1)] = next((g.strip() for g in m.groups()[1:] if g), None)
                    anchors[m.group(1)] = (md.stem, m.group(1))
                theorems = _theorem_labels(text)
                labels.update(theorems)
                anchors.update({lab: (md.stem, lab) for lab in theorems})
                anchors.update({lab: (md.stem, f"equation-{lab}") for lab in _equation_numbers(text)})
                anchors.update({m.group(1): (md.stem, m.group(1))
                                for m in re.finditer(r"^\s+name:\s*['\"]?(fig-[\w-]+)", text, re.MULTILINE)})
            for bib in book.glob("*.bib"):
                citations.update(_read_bib(bib.read_text()))
        return cls(titles, citations, labels, tuple(chapters), base_url=base_url, anchors=anchors, folder=folder)

    def url(self, page: str, anchor: str = "") -> str:
        """The published book's address of ``page`` (and of ``anchor`` on it, as docutils writes ids)."""
        anchor = re.sub(r"[^a-z0-9]+", "-", anchor.lower()).strip("-")
        return f"{self.base_url.rstrip('/')}/{self.folder}/{page}.html" + (f"#{anchor}" if anchor else "")


def _bib_field(body: str, name: str) -> str | None:
    m = re.search(rf"\b{name}\s*=\s*", body, re.IGNORECASE)
    if not m:
        return None
    i = m.end()
    if i < len(body) and body[i] in "{\"":
        close, depth, j = ("}" if body[i] == "{" else '"'), 0, i
        while j < len(body):
            ch = body[j]
            if body[i] == "{":
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    break
            elif ch == close and j > i:
                break
            j += 1
        return body[i + 1 : j]
    return re.match(r"[^,}\n]*", body[i:]).group(0).strip()


def _read_bib(text: str) -> dict:
    """``{key: "Author et al. (year)"}`` from a BibTeX file."""
    out = {}
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,", text):
        body = text[m.end(): text.find("\n@", m.end()) if "\n@" in text[m.end():] else len(text)]
        authors = [a.strip() for a in re.split(r"\s+and\s+", _bib_field(body, "author") or "") if a.strip()]
        names = [re.sub(r"[{}\\]", "", a.split(",")[0] if "," in a else a.split()[-1]) for a in authors]
        year = _bib_field(body, "year") or "n.d."
        who = names[0] + (" et al." if len(names) > 2 else f" and {names[1]}" if len(names) == 2 else "") if names else m.group(1)
        out[m.group(1)] = f"{who} ({year})"
    return out


_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error", "seealso",
                "admonition", "dropdown", "topic", "sidebar", "margin", "epigraph", "card"}


#: The ``:label:`` option of a directive: ``(name, label)`` of ``{name}`` directives.
_DIRECTIVE_LABEL = r"^[`:]{3,}\{([\w:-]+)\}[ \t]*(.*)\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*(\S+)"


def _equation_numbers(text: str) -> dict:
    """``{label: number}`` of the labelled equations (``$$ ... $$ (label)``, ``{math}`` ``:label:``) in order."""
    found = re.finditer(r"^\s*\$\$[ \t]*\(([^)\s]+)\)[ \t]*$|" + _DIRECTIVE_LABEL, text, re.MULTILINE)
    labels = [m.group(1) or m.group(4) for m in found if m.group(1) or m.group(2) == "math"]
    return {lab: i + 1 for i, lab in enumerate(labels)}


def _theorem_labels(text: str) -> dict:
    """``{label: "Kind (title)"}`` of the sphinx-proof directives (``{prf:lemma} Title``) of a page."""
    out = {}
    for m in re.finditer(_DIRECTIVE_LABEL, text, re.MULTILINE):
        if m.group(1).startswith("prf:"):
            kind, title = m.group(1)[4:].capitalize(), m.group(2).strip()
            out[m.group(3)] = f"{kind} ({title})" if title else kind
    return out


def _role(m: re.Match, ctx: _MarkdownContext) -> str:
    name, content = m.group(1), m.group(2)
    explicit = re.match(r"^(.*?)\s*<([^>]+)>$", content, re.DOTALL)
    text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, content)
    if name in ("math",):
        return f"${content}$"
    if name in ("eq",):
        number = (ctx.equations or {}).get(target)
        if number:
            return f"({number})"
        if ctx.base_url and target in ctx.anchors:
            page, anchor = ctx.anchors[target]
            return f"[the equation of *{ctx.titles.get(page, page)}*]({ctx.url(page, anchor)})"
        return f"the equation '{target}' of the book"
    if name in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "footcite"):
        refs = [ctx.citations.get(k.strip(), k.strip()) for k in target.split(",")]
        if name in ("cite:p", "cite:ps", "footcite"):
            return "(" + "; ".join(r.replace(" (", ", ").rstrip(")") for r in refs) + ")"
        return "; ".join(refs)
    if name == "doc":
        doc = target.split("/")[-1].removesuffix(".md").removesuffix(".ipynb")
        label = text or ctx.titles.get(doc, doc)
        if ctx.base_url:
            return f"[{label}]({ctx.url(doc)})"
        return f"[{label}]({doc}.ipynb)" if doc in ctx.chapters else f"*{label}*"
    if name in ("ref", "numref", "term", "abbr", "prf:ref"):
        shown = text or ctx.labels.get(target) or ("the figure" if target.startswith("fig-") else target)
        if ctx.base_url and target in ctx.anchors and name != "abbr":
            return f"[{shown}]({ctx.url(*ctx.anchors[target])})"
        return shown
    if name in ("sup", "sub"):
        return f"<{name}>{content}</{name}>"
    return text or content


_ROLE = re.compile(r"\{([\w:-]+)\}`([^`]*)`")


def _inline(text: str, ctx: _MarkdownContext) -> str:
    return _ROLE.sub(lambda m: _role(m, ctx), text)


def _quote(lines: list[str]) -> list[str]:
    return [("> " + line).rstrip() for line in lines]


def _directive(name: str, arg: str, options: dict, body: list[str], ctx: _MarkdownContext) -> list[str]:
    """Plain Markdown lines for one MyST directive (its body already converted)."""
    base = name.split(":")[0]
    if name == "math":
        label = options.get("label")
        tag = f" \\tag{{{(ctx.equations or {}).get(label)}}}" if label and (ctx.equations or {}).get(label) else ""
        return ["$$", *body, *( [tag.strip()] if tag else []), "$$"]
    if name in ("code-block", "code", "sourcecode", "code-cell"):
        return [f"```{arg.split()[0] if arg else ''}", *body, "```"]
    if name in ("figure", "image"):
        alt = options.get("alt", "")
        return [f"![{alt}]({arg})", *([""] + body if body else [])]
    if name == "only":
        return [] if "html" in arg or "latex" in arg else body
    if name in ("raw",):
        return body if "html" in arg else []
    if name in ("toctree", "tableofcontents", "bibliography") or base == "glue":
        return []
    if name in ("table", "list-table", "csv-table"):
        return ([f"**{_inline(arg, ctx)}**", ""] if arg else []) + body
    if name in _ADMONITIONS or base == "prf":
        if name in ("admonition", "dropdown", "topic", "sidebar", "card"):
            title = arg
        elif name in ("margin", "epigraph"):
            title, body = "", ([arg, ""] if arg else []) + body
        elif base == "prf":
            title = (name.split(":")[-1].capitalize() + (f" ({arg})" if arg else ""))
        else:
            title = "See also" if name == "seealso" else name.capitalize()
            body = ([arg, ""] if arg else []) + body
        lines = ([f"**{_inline(title, ctx)}**", ""] if title else []) + body
        while lines and not lines[-1].strip():
            lines.pop()
        return _quote(lines)
    return ([f"**{_inline(arg, ctx)}**", ""] if arg else []) + body


def _convert_lines(lines: list[str], ctx: _MarkdownContext) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        d = _DIRECTIVE.match(line)
        if d:
            fence, indent = d.group("fence"), d.group("indent")
            close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            inner = [line.removeprefix(indent) for line in lines[i + 1 : j]]
            options: dict = {}
            if inner and inner[0].strip() == "---":
                end = next((k for k in range(1, len(inner)) if inner[k].strip() == "---"), 0)
                for opt in inner[1:end]:
                    if ":" in opt:
                        key, _, value = opt.partition(":")
                        options[key.strip()] = value.strip()
                inner = inner[end + 1 :]
            else:
                while inner and re.match(r"^:[\w-]+:", inner[0]):
                    key, _, value = inner.pop(0)[1:].partition(":")
                    options[key.strip()] = value.strip()
            while inner and not inner[0].strip():
                inner.pop(0)
            name = d.group("name")
            body = inner if name in ("code-block", "code", "sourcecode", "math", "raw") else _convert_lines(inner, ctx)
            out += [indent + l if l else l for l in _directive(name, d.group("arg").strip(), options, body, ctx)]
            i = j + 1
            continue
        f = _FENCE.match(line)
        if f:
            close = re.compile(rf"^[ \t]*{re.escape(f.group(1)[0])}{{{len(f.group(1))},}}[ \t]*$")
            j = i + 1
            while j < len(lines) and not close.match(lines[j]):
                j += 1
            out += lines[i : j + 1]
            i = j + 1
            continue
        if re.match(r"^\s*\(([^)\s]+)\)=\s*$", line) or re.match(r"^\s*%", line) or line.strip() == "+++":
            i += 1
            continue
        eq = re.match(r"^(\s*)\$\$[ \t]*\(([^)\s]+)\)[ \t]*$", line)
        if eq:
            number = (ctx.equations or {}).get(eq.group(2))
            if number and out and out[-1].strip().endswith("$$") and out[-1].strip() != "$$":
                out[-1] = out[-1].rstrip()[:-2] + f" \\tag{{{number}}}$$"
            else:
                out += ([f"{eq.group(1)}\\tag{{{number}}}"] if number else []) + [f"{eq.group(1)}$$"]
            i += 1
            continue
        out.append(_inline(line, ctx))
        i += 1
    return out


def myst_to_markdown(text: str, context: _MarkdownContext | None = None) -> str:
    """Plain Markdown (as Jupyter and Colab render it) for the MyST Markdown ``text`` of a cell.

    Admonitions become block quotes with a bold title, ``$$ ... $$ (label)`` equations get a
    ``\\tag{n}`` and ``{eq}`` references their number, ``{cite}`` becomes "Author (year)",
    ``{doc}`` a link to the chapter's notebook or its title (with the context's ``base_url``,
    references become links to the published book), ``(label)=`` targets and ``%``
    comments are dropped, and other roles keep their text.

    Example:
      >>> print(myst_to_markdown("(sec)=\\n```{admonition} Exercise 1\\n:class: tip\\n\\nSee {doc}`model`.\\n```"))
      > **Exercise 1**
      >
      > See *model*.
    """
    ctx = context or _MarkdownContext({}, {}, {})
    if ctx.equations is None:
        ctx.equations = _equation_numbers(text)
    how = _HOW_WITH_SOLUTIONS if ctx.solutions else _HOW_IN_A_NOTEBOOK
    text = re.sub(r"\s+".join(map(re.escape, HOW_EXERCISES_WORK.split())), how, text)
    text = "\n".join(_convert_lines(text.split("\n"), ctx)).strip("\n")
    return re.sub(r"\n{3,}", "\n\n", text)


# --------------------------------------------------------------------------- the chapters' exercise cells

#: The sentence that says, in a chapter's text, how the exercises work on the page and in a notebook.
HOW_EXERCISES_WORK = (
    "On this page, **Show solution** under a task opens a worked solution together with the output of its "
    "check; in the student notebooks (see {doc}`exercises`) the solution is a stub for you to replace.")
_HOW_IN_A_NOTEBOOK = ("In this notebook each solution is a stub for you to replace; the worked solutions are on the "
                      "book's pages.")
_HOW_WITH_SOLUTIONS = ("In this notebook each exercise cell holds a worked solution, between `### BEGIN SOLUTION` and "
                       "`### END SOLUTION`: replace it with your own to try the exercise; the student notebooks "
                       "(`paththeory.exercises.write_student_notebooks`) have stubs instead.")
_OLD_SENTENCES = {
    r"Click the toggle to see a solution\.": HOW_EXERCISES_WORK,
    r"\(or raises an `AssertionError` saying what was expected\)":
        "(or raises an error with a hint on what to revisit)",
}


def _exercise_cell_header() -> list[str]:
    return ["---", "mystnb:", *(f"  {k}: {v}" for k, v in EXERCISE_PROMPTS.items()),
            f"tags: [{', '.join(EXERCISE_TAGS)}]", "---"]


def mark_exercise_cells(text: str) -> str:
    """The MyST source of a chapter with its exercise cells in the page's form; idempotent.

    For each code cell with a ``### BEGIN SOLUTION``: its options become the tags
    ``exercise, hide-cell`` (any ``hide-input``/``hide-output`` dropped, other tags kept) and the
    ``mystnb`` prompts "Show solution"/"Hide solution"; the label :func:`exercise_label` is put
    before its task (the admonition right before the cell, or the cell); the task gets a last
    line "**Your answer:** ..." naming the check call; and the old sentences about "the toggle"
    and "an AssertionError saying what was expected" are replaced.

    To convert a chapter and its paired notebook::

        from pathlib import Path
        from paththeory.exercises import mark_exercise_cells
        p = Path("book/markov.md"); p.write_text(mark_exercise_cells(p.read_text()))
        # then: jupytext --sync book/markov.md
    """
    import yaml

    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("```{code-cell}"):
            out.append(line)
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        cell = lines[i + 1 : j]
        options, k = {}, 0
        if cell and cell[0].strip() == "---":
            end = next(n for n in range(1, len(cell)) if cell[n].strip() == "---")
            options, k = yaml.safe_load("\n".join(cell[1:end])) or {}, end + 1
        else:
            while k < len(cell) and re.match(r"^:[\w-]+:", cell[k]):
                key, _, value = cell[k][1:].partition(":")
                options[key.strip()] = yaml.safe_load(value.strip())
                k += 1
        body = cell[k:]
        source = "\n".join(body)
        if BEGIN not in source:
            out += lines[i : j + 1]
            i = j + 1
            continue
        name = exercise_id(source)
        tags = [t for t in options.pop("tags", []) if t not in ("hide-input", "hide-output", "hide-cell", *EXERCISE_TAGS)]
        mystnb = {**(options.pop("mystnb", None) or {}), **EXERCISE_PROMPTS}
        header = _exercise_cell_header()
        if tags or options or set(mystnb) != set(EXERCISE_PROMPTS):
            meta = {"mystnb": mystnb, "tags": [*EXERCISE_TAGS, *tags], **options}
            header = ["---", *yaml.safe_dump(meta, sort_keys=False, default_flow_style=None).rstrip().split("\n"), "---"]
        while body and not body[0].strip():
            body = body[1:]
        if name:
            out = _label_task(out, name)
        out += [line, *header, *body, lines[j] if j < len(lines) else "```"]
        i = j + 1
    text = "\n".join(out)
    for old, new in _OLD_SENTENCES.items():
        text = re.sub(r"\s+".join(old.split(" ")), new, text)
    return text


def _label_task(out: list[str], name: str) -> list[str]:
    """``out`` with the label of exercise ``name`` before its task and a "Your answer" line in the task."""
    label = f"({exercise_label(name)})="
    answer = f'**Your answer:** store it in `answer` and run `check("{name}", answer)`.'
    k = len(out)
    while k > 0 and not out[k - 1].strip():
        k -= 1
    close = out[k - 1] if k else ""
    start = None
    if k and re.match(r"^(`{3,}|:{3,})[ \t]*$", close):
        fence = close.strip()
        for n in range(k - 2, -1, -1):
            if out[n].startswith(fence) and out[n][len(fence):].startswith("{admonition}"):
                start = n
                break
            if out[n].startswith("```{code-cell}"):
                break
    if start is None:
        if label not in out:
            out = out[:k] + ["", label, ""][1 if not k else 0:]
        return out
    task = out[start : k - 1]
    if not any(answer in t for t in task):
        while task and not task[-1].strip():
            task.pop()
        task += ["", answer]
    prefix = out[:start]
    if label not in prefix[-3:]:
        while prefix and not prefix[-1].strip():
            prefix.pop()
        prefix += ["", label, ""] if prefix else [label, ""]
    return prefix + task + [close] + out[k:]


# --------------------------------------------------------------------------- the exercises page


def _chapter_tasks(text: str) -> dict:
    """``{exercise id: (title of its task, labelled?)}`` of a chapter's MyST source."""
    found = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("```{code-cell}"):
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        source = "\n".join(lines[i + 1 : j])
        name = exercise_id(source) if BEGIN in source else None
        if not name:
            continue
        title = None
        for n in range(i - 1, -1, -1):
            m = re.match(r"^(`{3,}|:{3,})\{admonition\}\s*(.*)$", lines[n])
            if m:
                title = m.group(2).strip()
                break
            if lines[n].startswith("```{code-cell}"):
                break
        found[name] = (title, f"({exercise_label(name)})=" in text)
    return found


_COURSE_SECTION = """\
## Using the exercises in a course

**Student notebooks.** One call writes a notebook per chapter with exercises, with every
solution replaced by a stub that raises `NotImplementedError`:

```python
from paththeory.exercises import write_student_notebooks
write_student_notebooks("book", "student")   # student/model.ipynb, student/derivation.ipynb, ...
```

They are plain Jupyter notebooks: the book's MyST markup is turned into Markdown that Jupyter
and Colab render (admonitions as block quotes, numbered equations, citations as
"Author (year)", chapter links to the other student notebooks), and the first cell installs
`paththeory` when the notebook runs on Colab. Hand them out as files or upload them to a
repository and open them on Colab.

**Checks.** Each exercise cell ends with `check("<chapter>.<name>", answer)`, which recomputes
the expected answer with the package and compares within a stated tolerance. A right answer
prints `Correct (...)` with a sentence on what the number means. A wrong one raises
`WrongAnswer` with hints (sign, order of magnitude, which entries are off, which step to
revisit) but *not* the expected value. An answer of the wrong kind (`None`, the text `"24"`
instead of the number, NaN, a wrong shape) raises `InvalidAnswer`, saying which exercise and
what kind of answer it expects. In Jupyter both print as a short message, without a traceback;
both are `AssertionError`s, so a notebook run by an autograder (e.g. `nbclient` or
`jupyter nbconvert --execute`) fails at the first unsolved or wrong exercise.

**Hints and solutions.** `paththeory.exercises.hint("<id>")` prints the task, the kind of
answer and the step to revisit. The expected value is shown only on request:
`check("<id>", answer, reveal=True)` or `paththeory.exercises.solution("<id>")`. The worked
solutions are on the chapters' pages, under **Show solution**, together with the output of
their check; `paththeory.exercises.EXERCISES` lists every exercise by id.
"""


def exercises_page(book_dir: str | Path) -> str:
    """The MyST source of the book's exercises page (``book/exercises.md``).

    Lists every exercise of :data:`EXERCISES` with its chapter, its task and a link to it (a
    ``{ref}`` to its label when the chapter has one, else a ``{doc}`` link to the chapter), and
    says how a course uses them.
    """
    book = Path(book_dir)
    chapters: dict[str, list[str]] = {}
    for name in EXERCISES:
        chapters.setdefault(name.split(".")[0], []).append(name)
    rows = []
    for chapter, names in chapters.items():
        md = book / f"{chapter}.md"
        tasks = _chapter_tasks(md.read_text()) if md.exists() else {}
        for number, name in enumerate(names, 1):
            title, labelled = tasks.get(name, (None, False))
            title = title or f"Exercise {number}"
            link = f"{{ref}}`{title} <{exercise_label(name)}>`" if labelled else title
            task = EXERCISES[name].task.replace("*", "\\*")
            rows.append(f"| {{doc}}`{chapter}` | {link} | {task} | `{name}` |")
    table = "\n".join(["| Chapter | Exercise | Task | Check id |", "|---|---|---|---|", *rows])
    return f"""\
# Exercises

Every chapter of the paper's experiments ends with three exercises, and so do the theory's
{{doc}}`model` and {{doc}}`gp_vs_finite`; the derivation chapters {{doc}}`derivation` and
{{doc}}`depth` share three. Each states a task, which the package solves in a few lines; on
the chapter's page, **Show solution** under the task opens a worked solution together with
the output of its check. In a notebook, `check("<id>", answer)` says whether an answer is
right and, if not, gives a hint without giving the answer away.

{table}

{_COURSE_SECTION}"""


def write_exercises_page(book_dir: str | Path, path: str | Path | None = None) -> Path:
    """Write :func:`exercises_page` to ``path`` (default ``<book_dir>/exercises.md``) and return it."""
    target = Path(path) if path is not None else Path(book_dir) / "exercises.md"
    from paththeory._io import write_text

    return write_text(target, exercises_page(book_dir))
