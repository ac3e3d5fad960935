"""The graduate problem set (``book/problems.md``): its registry and the checker of the implement problems.

The problem set has three kinds of problems, each an ``{exercise}`` of sphinx-exercise with the label
``prob-<name>``:

* ``"derivation"``: a pen-and-paper derivation with a written solution, graded by hand;
* ``"implement"``: the reader writes a function; :func:`check_implementation` runs it on inputs the
  reader never saw (seeded, different from every example in the task) and compares the outputs with a
  reference computed by the package itself (:mod:`paththeory.action`, :mod:`paththeory.kernels`,
  :mod:`paththeory.predict`), not with the book's worked solution;
* ``"interpret"``: a question about numbers the book shows, with a model answer, graded by hand.

:data:`KINDS` and :data:`POINTS` list every problem by its exercise label, :data:`PARTS` the rubric of
each derivation (its numbered parts, their points and what earns them); :data:`IMPLEMENT` lists the
implement problems by their ids ``"problems.<name>"``. The other graded sets have registries of their own
(:mod:`paththeory.exercises.problems_residual`, :mod:`paththeory.exercises.problems_inference`; joined in
:mod:`paththeory.exercises.sets`) and :func:`check_implementation` takes the id of any. A grader freezes
:func:`expected_outputs` into hidden tests and calls :func:`check_implementation` with them.

Example:
  >>> sorted(IMPLEMENT)
  ['problems.action', 'problems.overlap_distance', 'problems.predictor']
  >>> IMPLEMENT["problems.action"].label, IMPLEMENT["problems.action"].function
  ('prob-action', 'one_layer_action')
  >>> [(p.part, p.points) for p in PARTS["prob-gamma"]]
  [('1', 3), ('2', 2), ('3', 3), ('4', 2)]
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np

from paththeory.exercises import problems_inference, problems_residual
from paththeory.exercises.answers import WrongAnswer, diagnose
from paththeory.exercises.registry import Implementation, Part, _action_cases, _features, _random_pd, _x64

#: Exercise label -> kind of every problem of ``book/problems.md``.
KINDS: dict[str, str] = {
    "prob-gamma": "derivation",
    "prob-gp-induction": "derivation",
    "prob-prior-covariance": "derivation",
    "prob-single-path": "derivation",
    "prob-one-path-temperature": "derivation",
    "prob-prefactor": "derivation",
    "prob-skip-level": "derivation",
    "prob-action": "implement",
    "prob-predictor": "implement",
    "prob-overlap-distance": "implement",
    "prob-anticorrelation": "interpret",
    "prob-width-gain": "interpret",
    "prob-omniglot-validity": "interpret",
    "prob-temperature-width": "interpret",
}

#: Exercise label -> points.
POINTS: dict[str, int] = {
    "prob-gamma": 10,
    "prob-gp-induction": 15,
    "prob-prior-covariance": 10,
    "prob-single-path": 10,
    "prob-one-path-temperature": 15,
    "prob-prefactor": 15,
    "prob-skip-level": 10,
    "prob-action": 15,
    "prob-predictor": 10,
    "prob-overlap-distance": 15,
    "prob-anticorrelation": 5,
    "prob-width-gain": 5,
    "prob-omniglot-validity": 5,
    "prob-temperature-width": 5,
}


#: Derivation label -> its rubric: the numbered parts of the task, in order, with their points
#: (summing to the problem's :data:`POINTS`; the task states each part's points) and what earns them.
PARTS: dict[str, tuple[Part, ...]] = {
    "prob-gamma": (
        Part("1", 3, "the integral over U with its normalising constant, and a proof of the identity"),
        Part("2", 2, "the distribution of U named with its parameters, and the identity shown to be its "
                     "average of exp(-Uq/2)"),
        Part("3", 3, "the maximiser found and shown to be a maximum; the difference of -2 ln computed and "
                     "compared with the exact left-hand side"),
        Part("4", 2, "the identity written against dU/U with its normalisation; the same exponent against dU "
                     "evaluated, with the relative error of its logarithm; which measure is the theory's, and why"),
    ),
    "prob-gp-induction": (
        Part("1", 3, "strict convexity proved; the minimiser and the minimum of F"),
        Part("2", 2, "both identities proved (the determinant and the partial trace)"),
        Part("3", 5, "the layer-by-layer minimisation with the cancellation between layers shown; "
                     "uniqueness argued; every order parameter at the minimum"),
        Part("4", 3, "the minimum of the entropy as a function of the widths, heads and variances"),
        Part("5", 2, "the kernel at this point in terms of the path-path kernels, and what it cannot do"),
    ),
    "prob-prior-covariance": (
        Part("1", 5, "the readout, then each layer, integrated; the covariance in path-path kernels, and "
                     "its dependence on the widths stated and justified"),
        Part("2", 2, "the comparison with K_U at the minimum of the entropy"),
        Part("3", 3, "the fourth-moment ratio at widths n0, n1; whether f is Gaussian at finite width, and "
                     "what the infinite-width limit adds"),
    ),
    "prob-single-path": (
        Part("1", 5, "the minimum over the inner order parameters in closed form, with the minimisers, and "
                     "an argument that it is attained"),
        Part("2", 2, "the minimiser over U and the minimum value"),
        Part("3", 3, "U_a at fixed U for unequal widths in closed form, the choice of root justified, and "
                     "the check against part 1"),
    ),
    "prob-one-path-temperature": (
        Part("1", 3, "the combination of U and T named; the mean and the variance written with it"),
        Part("2", 4, "U_a eliminated; S(U)/N in the eigenvalues and the projected labels; the stationarity "
                     "condition"),
        Part("3", 6, "the polynomial in sqrt(U), its positive roots counted and the minimum shown unique; "
                     "the mean at T = 0 and its dependence on U; what finite width changes and what not; "
                     "when U* is above the GP point"),
        Part("4", 2, "the answer for two or more paths, with its reason"),
    ),
    "prob-prefactor": (
        Part("1", 3, "the Wishart density identified, with its degrees of freedom and scale matrix"),
        Part("2", 4, "its mean and its mode; the large-n maximiser found and compared with both; shown to be the "
                     "mode against the invariant measure, whose invariance is proved"),
        Part("3", 3, "parts 1 and 2 repeated for the scalar Gamma identity"),
        Part("4", 5, "the relative difference as a function of the number of paths and N, evaluated in the "
                     "three settings; what happens in the last; why it is not an error of U*, and which gap is"),
    ),
    "prob-skip-level": (
        Part("1", 4, "the term split with the Schur complement; the cross block and the Schur complement minimised "
                     "separately, uniqueness argued; the minimum, and the term that removes its dependence on the "
                     "level above"),
        Part("2", 3, "the minimum with the wrong coefficient; the one-head entropy reduced to U_a and minimised "
                     "with both coefficients"),
        Part("3", 3, "the normalisation argument (Laplace on a conditional density); the law of large numbers for "
                     "U_a; the step of the proof that supplies the +1"),
    ),
}


def _action_reference(U, C, y, n, temperature, var_a=1.0, var_1=1.0) -> float:
    _x64()
    import jax.numpy as jnp

    from paththeory import action as act

    U = np.asarray(U, dtype=float)
    K = np.einsum("ab,abmq->mq", U, np.asarray(C, dtype=float))
    value = act.action([jnp.asarray(U)], jnp.asarray(K), jnp.asarray(y, dtype=float), float(temperature),
                       (float(n), float(n)), (U.shape[0],), (1.0, float(var_1), float(var_a)))
    return float(value)


# --------------------------------------------------------------------------- problems.predictor


def _predictor_cases(seed: int = 7771) -> list[tuple]:
    rng = np.random.default_rng(seed)
    cases = []
    # (paths, P, P_test, N0, temperature)
    for n_paths, P, P_test, dim, T in [(1, 8, 5, 4, 0.2), (2, 15, 6, 7, 0.05), (4, 21, 9, 6, 0.5),
                                       (3, 12, 4, 10, 0.01)]:
        xi = _features(rng, P + P_test, n_paths, dim)
        U = _random_pd(rng, n_paths, scale=1.5)
        y = np.sign(rng.normal(size=P) + 0.5 * xi[:P, 0, 0] * math.sqrt(dim))
        y[y == 0] = 1.0
        cases.append((U, xi[:P], y, xi[P:], T))
    return cases


def _predictor_reference(U, xi_train, y, xi_test, temperature):
    _x64()
    from paththeory.predict import predictor

    mean, var = predictor(np.asarray(U, float), np.asarray(xi_train, float), np.asarray(y, float),
                          np.asarray(xi_test, float), float(temperature))
    return np.asarray(mean), np.asarray(var)


# --------------------------------------------------------------------------- problems.overlap_distance


def _overlap_cases(seed: int = 31337) -> list[tuple]:
    rng = np.random.default_rng(seed)
    cases = []
    # (draws, paths, n0)
    for S, n_paths, n0 in [(5, 2, 3), (40, 4, 11), (17, 3, 25), (1, 6, 8)]:
        U_theory = _random_pd(rng, n_paths, scale=0.9)
        # draws whose overlap is near, not at, U_theory
        L = np.linalg.cholesky(U_theory)
        w = np.einsum("ab,sbn->san", L, rng.normal(size=(S, n_paths, n0)))
        w += 0.3 * rng.normal(size=w.shape)
        cases.append((U_theory, w))
    return cases


def _overlap_reference(U_theory, w_draws) -> float:
    _x64()
    from paththeory.kernels import path_kernels

    w = np.asarray(w_draws, float)
    S, _, n0 = w.shape
    # the path kernels of the "features" w: C^{ab}(s, s') = w_s^a . w_{s'}^b; the draws' own overlaps sit on s = s'
    overlaps = np.asarray(path_kernels(w))  # [paths, paths, S, S]
    U_sampled = np.einsum("abss->ab", overlaps) / (S * n0)
    U_theory = np.asarray(U_theory, float)
    return float(np.linalg.norm(U_sampled - U_theory) / np.linalg.norm(U_theory))


#: Id -> implement problem.
IMPLEMENT: dict[str, Implementation] = {
    "problems.action": Implementation(
        id="problems.action",
        label="prob-action",
        function="one_layer_action",
        signature="def one_layer_action(U, C, y, n, temperature, var_a=1.0, var_1=1.0):",
        rtol=1e-7,
        atol=1e-9,
        make_cases=_action_cases,
        reference_fn=_action_reference,
        output="the action per unit width S/N, one float",
    ),
    "problems.predictor": Implementation(
        id="problems.predictor",
        label="prob-predictor",
        function="path_predictor",
        signature="def path_predictor(U, xi_train, y, xi_test, temperature):",
        rtol=1e-6,
        atol=1e-9,
        make_cases=_predictor_cases,
        reference_fn=_predictor_reference,
        output="a tuple (mean, var) of two arrays of shape [P_test]",
    ),
    "problems.overlap_distance": Implementation(
        id="problems.overlap_distance",
        label="prob-overlap-distance",
        function="overlap_distance",
        signature="def overlap_distance(U_theory, w_draws):",
        rtol=1e-8,
        atol=1e-12,
        make_cases=_overlap_cases,
        reference_fn=_overlap_reference,
        output="the relative Frobenius distance, one float",
    ),
}


def _lookup(exercise_id: str) -> Implementation:
    """The implement problem ``exercise_id`` of any graded set: this one's or another set's registry
    (:mod:`paththeory.exercises.sets` joins the sets above this module)."""
    tables = (IMPLEMENT, problems_residual.IMPLEMENT, problems_inference.IMPLEMENT)
    for table in tables:
        if exercise_id in table:
            return table[exercise_id]
    raise KeyError(f"No implement problem {exercise_id!r}; the ids are {', '.join(sorted(k for t in tables for k in t))}.")


def _as_output(value):
    """A reference output as numpy: a float, an array, or a tuple of arrays."""
    if isinstance(value, tuple):
        return tuple(np.asarray(v, dtype=float) for v in value)
    arr = np.asarray(value, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


@functools.lru_cache(maxsize=None)
def _expected(exercise_id: str) -> tuple:
    spec = _lookup(exercise_id)
    return tuple(_as_output(spec.reference(*args)) for args in spec.cases())


def _copy(value):
    return tuple(np.array(v) for v in value) if isinstance(value, tuple) else (
        value if isinstance(value, float) else np.array(value))


def expected_outputs(exercise_id: str) -> list:
    """The reference outputs on :meth:`Implementation.cases`, as floats, arrays or tuples of arrays.

    Example:
      >>> outs = expected_outputs("problems.predictor")
      >>> len(outs), [o[0].shape for o in outs]
      (4, [(5,), (6,), (9,), (4,)])
    """
    _lookup(exercise_id)
    return [_copy(v) for v in _expected(exercise_id)]


def _shape_text(args) -> str:
    parts = []
    for a in args:
        if hasattr(a, "shape") and np.ndim(a) > 0:
            parts.append(f"array{tuple(np.shape(a))}")
        else:
            parts.append(repr(a) if isinstance(a, (int, float)) else type(a).__name__)
    return "(" + ", ".join(parts) + ")"


def _compare(got, want, rtol: float, atol: float, spec: Implementation) -> list[str]:
    """Reasons why ``got`` is not ``want`` (empty when it matches)."""
    if isinstance(want, tuple):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return [f"it should return {spec.output}; got {type(got).__name__}"
                    + (f" of {len(got)} items" if isinstance(got, (tuple, list)) else "")]
        notes = []
        for k, (g, w) in enumerate(zip(got, want)):
            sub = _compare(g, w, rtol, atol, spec)
            if sub:
                notes.append(f"item {k} of the tuple: " + "; ".join(sub))
        return notes
    try:
        g = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return [f"it should return {spec.output}; got an object of type {type(got).__name__}"]
    w = np.asarray(want, dtype=float)
    if g.size == 1 and w.size == 1:
        g, w = g.reshape(()), w.reshape(())
    if g.shape != w.shape:
        return [f"the output has shape {g.shape}, expected shape {w.shape}"]
    if not np.all(np.isfinite(g)):
        return ["the output holds NaN or infinite values"]
    if np.allclose(g, w, rtol=rtol, atol=atol):
        return []
    return diagnose(g, w, rtol, atol)


def check_implementation(exercise_id: str, fn: Callable, expected: list | None = None, *,
                         partial: bool = False) -> float:
    """Run ``fn`` on every hidden case of ``exercise_id`` and compare with ``expected`` (or the reference).

    Prints ``Correct (...)`` and returns 1.0 when every case passes. Otherwise raises
    :class:`paththeory.exercises.WrongAnswer` naming the first failing case, its argument shapes and a
    diagnosis that does not reveal the expected values, or, with ``partial=True`` and at least one case
    right, prints the diagnosis and returns the fraction of cases passed.

    Example:
      >>> spec = IMPLEMENT["problems.overlap_distance"]
      >>> check_implementation("problems.overlap_distance", spec.reference)
      Correct (problems.overlap_distance): overlap_distance agrees with the reference on all 4 hidden cases.
      1.0
    """
    spec = _lookup(exercise_id)
    if not callable(fn):
        raise WrongAnswer(f"{exercise_id}: pass the function itself, {spec.signature[4:].split('(')[0]}, "
                          f"not {type(fn).__name__}.")
    cases = spec.cases()
    wants = expected_outputs(exercise_id) if expected is None else [_as_output(e) for e in expected]
    if len(wants) != len(cases):
        raise ValueError(f"{exercise_id}: {len(wants)} expected outputs for {len(cases)} cases.")
    failures = []
    for k, (args, want) in enumerate(zip(cases, wants)):
        copies = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)
        try:
            got = fn(*copies)
        except Exception as exc:  # noqa: BLE001 - the reader's code may raise anything
            failures.append(f"case {k + 1} {_shape_text(args)}: your function raised "
                            f"{type(exc).__name__}: {exc}")
            continue
        notes = _compare(got, want, spec.rtol, spec.atol, spec)
        if notes:
            failures.append(f"case {k + 1} {_shape_text(args)}: " + "; ".join(notes))
    passed = len(cases) - len(failures)
    if not failures:
        print(f"Correct ({exercise_id}): {spec.function} agrees with the reference on all {len(cases)} hidden cases.")
        return 1.0
    message = (f"{exercise_id}: {spec.function} is right on {passed} of {len(cases)} hidden cases "
               f"(rtol {spec.rtol:g}, atol {spec.atol:g}); it should return {spec.output}.\n  "
               + "\n  ".join(failures))
    if partial and passed > 0:
        print(message)
        return passed / len(cases)
    raise WrongAnswer(message)
