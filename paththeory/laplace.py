"""The next order of Laplace's method: how far the posterior mean of the order parameters lies from the saddle point
(book: the validity chapter, "How large is Laplace's error?").

The theory's one approximation reads the posterior mean of the overlaps off their mode. Its error is computable:
with ``x`` the free entries (``U_a``, then the upper triangles of ``U^(1), ..., U^(L)``), the posterior density
against ``dx`` is ``exp(-S(x)/2 + J(x))``, with ``S`` the action (``N`` times :func:`paththeory.action.action` at an
explicit ``U_a``) and ``J = -ln U_a - sum_l (D_l + 1)/2 ln det U^(l)`` the invariant measure (``D_l`` the size of
``U^(l)``). Expanding about the minimiser ``x*`` of ``S`` to first order in ``1/N`` (``S`` is of order ``N``):

    E[x] - x* = Sigma (grad J - 1/2 grad tr(Sigma H(x)))  at x*,     H = Hessian of S/2,  Sigma = H(x*)^-1,

the first term moving the mode from ``dmu`` to ``dx``, the second the mean away from the mode (the third
derivatives of ``S``, contracted with ``Sigma`` by differentiating ``tr(Sigma H(x))``). ``U`` is linear in ``x``, so
``E[U] - U*`` is the ``U^(1)`` block of that shift, exact up to ``O(1/N^2)``. :mod:`paththeory.one_path` is its
oracle (tests/theory/test_laplace.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from paththeory.action import entropy_with_readout
from paththeory.kernels import path_kernels
from paththeory.solve import Solution, Theory


@dataclass(frozen=True)
class LaplaceShift:
    """The posterior means of Laplace's method at next order, against the saddle point.

    ``U_mean``: ``E[U^(1)]`` ``[n_paths, n_paths]``; ``shift``: ``E[U^(1)] - U*``; ``relative``: ``|shift|_F / |U*|_F``
    (the distance between the sampled and the theory's ``U`` that an exact sampler's mean approaches, the one of
    :mod:`paththeory.experiments.compare`); ``readout_shift``: ``E[U_a] - U_a*``; ``width``: ``N``.
    """

    U_mean: np.ndarray
    shift: np.ndarray
    relative: float
    readout_shift: float
    width: float


def _energy(K, y, temperature):
    """``ln det(K + T I) + y^T (K + T I)^{-1} y``, differentiable in every mode (one Cholesky factor)."""
    L = jnp.linalg.cholesky(K + temperature * jnp.eye(K.shape[0]))
    b = jax.scipy.linalg.solve_triangular(L, y, lower=True)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(L))) + b @ b


def _unpack(x, sizes):
    """``(U_a, [U^(1), ..., U^(L)])`` from the flat ``x`` (``U_a``, then each upper triangle, row by row)."""
    out, start = [], 1
    for n in sizes:
        iu = np.triu_indices(n)
        m = jnp.zeros((n, n)).at[iu].set(x[start:start + len(iu[0])])
        out.append(m + jnp.triu(m, 1).T)
        start += len(iu[0])
    return x[0], out


def log_measure(x, sizes) -> jnp.ndarray:
    """``J(x) = -ln U_a - sum_l (D_l + 1)/2 ln det U^(l)``: the invariant measure's log-density against ``dx``, for
    order parameters of sizes ``D_l = sizes[l]`` packed in ``x`` as :func:`laplace_shift` packs them."""
    U_a, mats = _unpack(x, sizes)
    return -jnp.log(U_a) - sum(0.5 * (n + 1) * jnp.linalg.slogdet(U)[1] for n, U in zip(sizes, mats))


def mean_shift(half_action, measure, x_star) -> np.ndarray:
    """``E[x] - x*`` to first order in ``1/N`` for the density ``exp(-half_action(x) + measure(x))`` against
    ``dx``, ``x*`` the minimiser of ``half_action`` (of order ``N``; ``measure`` of order one): ``Sigma (grad J -
    1/2 grad tr(Sigma H(x)))`` at ``x*`` (module docstring); forward over reverse mode.

    Example:
      >>> n = 50.0  # Gamma(n/2, rate n/2) against dx/x: mode 1, mean 1, and no shift
      >>> float(mean_shift(lambda x: 0.5 * n * (x[0] - jnp.log(x[0])), lambda x: -jnp.log(x[0]), jnp.ones(1))[0])
      0.0
    """
    hess = jax.hessian(half_action)  # forward over reverse
    sigma = jnp.linalg.inv(hess(x_star))
    sigma = 0.5 * (sigma + sigma.T)
    contracted = jax.grad(lambda x: jnp.vdot(sigma, hess(x)))(x_star)
    return np.asarray(sigma @ (jax.grad(measure)(x_star) - 0.5 * contracted))


def laplace_shift(theory: Theory, solution: Solution) -> LaplaceShift:
    """:class:`LaplaceShift` of ``solution`` (a minimiser of ``theory``'s action at one width and temperature): the
    posterior mean of ``U`` to next order in ``1/N`` (module docstring). One output and no skip connections (their
    tied levels carry another measure); float64.

    Example:
      >>> from paththeory.tasks.examples import one_path_problem
      >>> arch, f, y = one_path_problem()
      >>> th = Theory(arch, f[:10], y[:10])  # P = N = 10: the exact mean is 1.1878, the saddle 1.1417
      >>> s = laplace_shift(th, th.solve(10.0, 0.1))
      >>> round(float(s.U_mean[0, 0]), 3), round(s.relative, 3)
      (1.187, 0.04)
    """
    if not isinstance(solution, Solution) or not solution.solved_by(theory):
        raise ValueError("solution must be a Solution of this theory (theory.solve(...)).")
    if theory.n_outputs != 1 or any(theory.arch.skips):
        raise ValueError("laplace_shift covers one output and no skip connections; got "
                         f"{theory.n_outputs} outputs and skips {theory.arch.skips}.")
    arch, widths, temperature = theory.arch, tuple(float(w) for w in solution.widths), float(solution.temperature)
    N = max(widths)
    Us = [np.asarray(U, dtype=float) for U in solution.order_parameters]
    sizes = [U.shape[0] for U in Us]
    x_star = jnp.asarray(np.concatenate([[float(solution.U_a)], *[U[np.triu_indices(len(U))] for U in Us]]))
    C, y = path_kernels(theory.features), jnp.asarray(theory.y)  # [n, n, P, P]: the kernel is linear in U

    def half_action(x):
        U_a, mats = _unpack(x, sizes)
        ent = entropy_with_readout(mats, U_a, widths, arch.heads, arch.variances)
        return 0.5 * (ent + _energy(jnp.einsum("ab,abpq->pq", mats[0], C), y, temperature))

    shift_x = mean_shift(half_action, lambda x: log_measure(x, sizes), x_star)
    _, (shift, *_) = _unpack(jnp.asarray(shift_x), sizes)
    shift = np.asarray(shift)
    return LaplaceShift(Us[0] + shift, shift, float(np.linalg.norm(shift) / np.linalg.norm(Us[0])),
                        float(shift_x[0]), N)
