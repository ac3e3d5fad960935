"""The next order of Laplace's method: how far the posterior mean of the order parameters lies from the saddle point
(book: the validity chapter, "How large is Laplace's error?").

The theory's one approximation reads the posterior mean of the overlaps off their mode. Its error is computable:
with ``x`` the free entries (the upper triangles of ``U_a``, ``U^(1), ..., U^(L)``), the posterior density against
``dx`` is ``exp(-S(x)/2 + J(x))``, with ``S`` the action (``N`` times :func:`paththeory.action.action` at an explicit
``U_a``) and ``J = -(C + 1)/2 ln det U_a - sum_l (D_l + 1)/2 ln det U^(l)`` the invariant measure (``D_l`` the size of
``U^(l)``, ``C`` that of ``U_a``: the number of outputs; ``-ln U_a`` for one). Expanding about the minimiser ``x*`` of ``S`` to first order in ``1/N`` (``S`` is of order ``N``):

    E[x] - x* = Sigma (grad J - 1/2 grad tr(Sigma H(x)))  at x*,     H = Hessian of S/2,  Sigma = H(x*)^-1,

the first term moving the mode from ``dmu`` to ``dx``, the second the mean away from the mode (the third
derivatives of ``S``, contracted with ``Sigma`` by differentiating ``tr(Sigma H(x))``). ``U`` is linear in ``x``, so
``E[U] - U*`` is the ``U^(1)`` block of that shift, exact up to ``O(1/N^2)``. :mod:`paththeory.one_path` is its
oracle for one output, the exact Gibbs sampler of the weights for two (tests/theory/test_laplace.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from paththeory.action import entropy_with_readout
from paththeory.kernels import path_kernels
from paththeory.solve import Solution, Theory


@dataclass(frozen=True)
class LaplaceShift:
    """The posterior means of Laplace's method at next order, against the saddle point.

    ``U_mean``: ``E[U^(1)]`` ``[C n_paths, C n_paths]``; ``shift``: ``E[U^(1)] - U*``; ``relative``:
    ``|shift|_F / |U*|_F`` (the distance between the sampled and the theory's ``U`` that an exact sampler's mean
    approaches, the one of :mod:`paththeory.experiments.compare`); ``readout_shift``: ``E[U_a] - U_a*`` (a number for
    one output, ``[C, C]`` for ``C``); ``width``: ``N``.
    """

    U_mean: np.ndarray
    shift: np.ndarray
    relative: float
    readout_shift: float | np.ndarray
    width: float


def _energy(K, y, temperature):
    """``ln det(K + T I) + y^T (K + T I)^{-1} y``, differentiable in every mode (one Cholesky factor)."""
    L = jnp.linalg.cholesky(K + temperature * jnp.eye(K.shape[0]))
    b = jax.scipy.linalg.solve_triangular(L, y, lower=True)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(L))) + b @ b


def _pack(mats) -> np.ndarray:
    """The flat ``x`` of symmetric matrices: each upper triangle, row by row, in order."""
    return np.concatenate([np.atleast_2d(m)[np.triu_indices(np.atleast_2d(m).shape[0])] for m in mats])


def _unpack(x, sizes):
    """The symmetric matrices of sizes ``sizes`` (``U_a``'s first) from the flat ``x`` that :func:`_pack` wrote."""
    out, start = [], 0
    for n in sizes:
        iu = np.triu_indices(n)
        m = jnp.zeros((n, n)).at[iu].set(x[start:start + len(iu[0])])
        out.append(m + jnp.triu(m, 1).T)
        start += len(iu[0])
    return out


def log_measure(x, sizes) -> jnp.ndarray:
    """``J(x) = -sum (D + 1)/2 ln det U`` over ``U_a`` and every ``U^(l)``: the invariant measure's log-density against
    ``dx``, for symmetric matrices of sizes ``D = sizes[i]`` (``U_a``'s first: ``-ln U_a`` for one output) packed in
    ``x`` as :func:`laplace_shift` packs them."""
    return -sum(0.5 * (n + 1) * jnp.linalg.slogdet(U)[1] for n, U in zip(sizes, _unpack(x, sizes)))


def mean_shift(half_action, measure, x_star) -> np.ndarray:
    """``E[x] - x*`` to first order in ``1/N`` for the density ``exp(-half_action(x) + measure(x))`` against
    ``dx``, ``x*`` the minimiser of ``half_action`` (of order ``N``; ``measure`` of order one): ``Sigma (grad J -
    1/2 grad tr(Sigma H(x)))`` at ``x*`` (module docstring); forward over reverse mode.

    Example:
      >>> n = 50.0  # Gamma(n/2, rate n/2) against dx/x: mode 1, mean 1, and no shift
      >>> float(mean_shift(lambda x: 0.5 * n * (x[0] - jnp.log(x[0])), lambda x: -jnp.log(x[0]), jnp.ones(1))[0])
      0.0
    """
    return np.asarray(jax.jit(_mean_shift, static_argnums=(0, 1))(half_action, measure, x_star))  # one program


def _mean_shift(half_action, measure, x_star) -> jax.Array:
    """:func:`mean_shift` as a traceable array (for :func:`jax.jit`)."""
    hess = jax.hessian(half_action)  # forward over reverse
    sigma = jnp.linalg.inv(hess(x_star))
    sigma = 0.5 * (sigma + sigma.T)
    contracted = jax.grad(lambda x: jnp.vdot(sigma, hess(x)))(x_star)
    return sigma @ (jax.grad(measure)(x_star) - 0.5 * contracted)


@partial(jax.jit, static_argnames=("sizes", "heads", "variances"))
def _network_shift(x_star, widths, temperature, paths, y, *, sizes, heads, variances) -> jax.Array:
    """:func:`_mean_shift` of the action of a network without skips (heads ``heads``, variances ``variances``) at
    widths ``widths`` and temperature ``temperature``, with path kernels ``paths [n, n, P, P]`` and labels ``y``
    (``vec(Y)``, output index slowest), order parameters of sizes ``sizes`` (``U_a``'s first) packed in ``x_star``;
    compiled once per network and data shape, whatever the width."""
    n_out, n_paths, P = sizes[0], paths.shape[0], paths.shape[-1]

    def kernel(U):  # K^{cd}(mu, nu) = sum U^{cd}_{pi sigma} C^{pi sigma}(mu, nu), packed (c, mu)
        blocks = jnp.einsum("cadb,abmq->cmdq", U.reshape(n_out, n_paths, n_out, n_paths), paths)
        return blocks.reshape(n_out * P, n_out * P)

    def half_action(x):
        readout, *levels = _unpack(x, sizes)
        ent = entropy_with_readout(levels, readout, tuple(widths[i] for i in range(len(heads) + 1)), heads,
                                   variances)
        return 0.5 * (ent + _energy(kernel(levels[0]), y, temperature))

    return _mean_shift(half_action, lambda x: log_measure(x, sizes), x_star)


def laplace_shift(theory: Theory, solution: Solution) -> LaplaceShift:
    """:class:`LaplaceShift` of ``solution`` (a minimiser of ``theory``'s action at one width and temperature): the
    posterior mean of ``U`` to next order in ``1/N`` (module docstring), for one output or ``C`` (labels ``[P, C]``:
    ``U_a`` is ``C x C`` and the energy acts on the ``(C P) x (C P)`` kernel). No skip connections (their tied levels
    carry another measure); float64.

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
    if any(theory.arch.skips):
        raise ValueError(f"laplace_shift covers networks without skip connections; got skips {theory.arch.skips}.")
    arch, widths, temperature = theory.arch, tuple(float(w) for w in solution.widths), float(solution.temperature)
    n_out = theory.n_outputs
    mats = [np.atleast_2d(np.asarray(solution.U_a, dtype=float))] + [np.asarray(U, dtype=float)
                                                                       for U in solution.order_parameters]
    paths = path_kernels(theory.features)  # [n, n, P, P]: the kernel is linear in U
    P = paths.shape[-1]
    y = jnp.asarray(np.asarray(theory.y, dtype=float).reshape(P, n_out).T.reshape(-1))  # vec(Y), output slowest
    sizes = tuple(len(m) for m in mats)
    shift_x = _network_shift(jnp.asarray(_pack(mats)), jnp.asarray(widths), temperature, paths, y, sizes=sizes,
                             heads=tuple(arch.heads), variances=tuple(float(v) for v in arch.variances))
    readout_shift, shift, *_ = (np.asarray(m) for m in _unpack(shift_x, sizes))
    return LaplaceShift(mats[1] + shift, shift, float(np.linalg.norm(shift) / np.linalg.norm(mats[1])),
                        float(readout_shift[0, 0]) if n_out == 1 else readout_shift, max(widths))
