"""What every graded problem set's registry is made of: a derivation's rubric (:class:`Part`), an implement problem
(:class:`Implementation`) and the random cases the implement problems are called on.

The registries (:mod:`paththeory.exercises.problems`, :mod:`paththeory.exercises.problems_residual`,
:mod:`paththeory.exercises.problems_inference`) import from here; :mod:`paththeory.exercises.sets` joins them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np


class Part(NamedTuple):
    """One part of a derivation's rubric: ``part`` (its number in the task), ``points`` and what
    earns them (``earns``: the steps a marker looks for, worded so that it gives no result away)."""

    part: str
    points: int
    earns: str



@dataclass(frozen=True)
class Implementation:
    """One implement-it-yourself problem.

    Attributes:
      id: ``"<set>.<name>"``, e.g. ``"problems.action"``.
      label: the exercise label in the set's chapter, e.g. ``"prob-action"`` in ``book/problems.md``.
      function: the name of the reader's function.
      signature: its ``def`` line, as the task gives it.
      rtol, atol: tolerances of the comparison (``numpy.isclose``).
      make_cases: returns the argument tuples of the cases (optional argument: a seed; without it
        the package's own seed, whose cases are public: a course draws its hidden cases from its
        own secret, ``paththeory-tools course release``).
      reference_fn: computes the right output of one case with the package.
      output: what the function returns, in words (for messages).
    """

    id: str
    label: str
    function: str
    signature: str
    rtol: float
    atol: float
    make_cases: Callable[..., list]
    reference_fn: Callable
    output: str

    def cases(self, seed: int | None = None) -> list[tuple]:
        """The argument tuples of the cases: the package's own (public) without ``seed``, else
        those drawn from ``seed`` (the same on every call)."""
        return self.make_cases() if seed is None else self.make_cases(int(seed))

    def reference(self, *args):
        """The right output for one argument tuple, computed with the package."""
        return self.reference_fn(*args)


# --------------------------------------------------------------------------- random cases


def _x64() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)


def _random_pd(rng: np.random.Generator, n: int, scale: float = 1.0) -> np.ndarray:
    """A random symmetric positive-definite matrix, well conditioned, with entries of order ``scale``."""
    B = rng.normal(size=(n, n))
    return scale * (B @ B.T / n + 0.5 * np.eye(n))


def _features(rng: np.random.Generator, n_examples: int, n_paths: int, dim: int) -> np.ndarray:
    """Random attentioned inputs ``[P, n_paths, N0]`` with correlated paths (as real attention gives)."""
    shared = rng.normal(size=(n_examples, 1, dim))
    own = rng.normal(size=(n_examples, n_paths, dim))
    return (0.7 * shared + own) / math.sqrt(dim * n_paths)


# --------------------------------------------------------------------------- cases shared by two sets


def _kernel_action_cases(seed: int, sizes: list[tuple], extra_paths: int = 0) -> list[tuple]:
    """Cases ``(U, C, y, width, temperature, var_a, var_1)`` of an action over path kernels ``C [n, n, P, P]``, one per
    row ``(heads, P, N0, width, temperature, var_a, var_1)`` of ``sizes``, with ``n = heads + extra_paths`` paths
    (``extra_paths=1``: a skip path)."""
    rng = np.random.default_rng(seed)
    cases = []
    for H, P, dim, n, T, var_a, var_1 in sizes:
        xi = _features(rng, P, H + extra_paths, dim)
        C = np.einsum("man,qbn->abmq", xi, xi)  # [n, n, P, P]
        U = _random_pd(rng, H + extra_paths, scale=1.2)
        y = np.where(rng.random(P) < 0.5, -1.0, 1.0)
        cases.append((U, C, y, n, T, var_a, var_1))
    return cases


def _action_cases(seed: int = 20240611) -> list[tuple]:
    # (heads, P, N0, width, temperature, var_a, var_1)
    return _kernel_action_cases(seed, [
        (1, 9, 5, 7.0, 0.3, 1.0, 1.0),
        (2, 14, 6, 25.0, 0.05, 1.0, 1.0),
        (3, 11, 7, 4.0, 0.7, 1.6, 0.8),
        (4, 17, 5, 300.0, 0.02, 0.7, 1.3),
        (2, 23, 9, 12.0, 1.5, 2.0, 0.5),
    ])
