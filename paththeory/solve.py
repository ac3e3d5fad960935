"""The order-parameter solver: minimise S/N over positive-definite matrices (paper Eq. (11), App. B.1 Eq. (32)).

Every order parameter is parametrised by a Cholesky factor ``R_l`` (the book's letter: ``L`` is the depth) with a
log-diagonal,

    U^(l) = c_l R_l R_l^T,   R_l = strict_tril(theta_l) + diag(exp(diag theta_l)),

with ``c_l`` its GP value, so ``theta = 0`` is the GP point and every iterate is positive
definite. ``U_a`` is eliminated in closed form; all ``U^(l)`` are optimised jointly with
L-BFGS (compact form, backtracking line search with Armijo's condition or, at round-off level,
an approximate Wolfe condition) inside one jitted ``lax.while_loop``. Width and temperature are
traced arguments, so a sweep compiles once.

Where it is cheap enough (:func:`hessian_pays`), once ``max |dS/dU| <= 3e-2`` the solver computes
the exact Hessian of S/N from the path features (:mod:`paththeory.hessian`; negative curvature
flipped) and restarts L-BFGS from its inverse as the initial matrix: from there a few
quasi-Newton steps converge superlinearly (at the Omniglot size, 37 evaluations to 1e-9 instead
of about 120). With ``C > 1`` outputs the energy's Hessian is contracted straight into the Cholesky
coordinates while the blocks ``X_a^T G^{cd} X_b`` stream through a few features at a time
(:func:`~paththeory.hessian.energy_hessian_cholesky`): no ``(C n)^4`` tensor, only the ``D x D`` Hessian and
its Cholesky factor (shifted where it is not positive definite), which L-BFGS applies by triangular solves.

From P = 256 training examples, with Gram blocks (or a factorised kernel over many features), the
solver runs in mixed precision
(``Theory(precision=...)``): it iterates on the action evaluated in float32, about twice as cheap
per evaluation, until the gradient reaches 1e-5 (or float32's own error, measured at the start)
or float32 can no longer certify descent, then finishes in float64 from there with the same
curvature history. Tolerances and reported gradients are always float64's.

With one output and many more examples than features (``P >= 1.5 n_paths N0``, from P = 1000) the energy is
evaluated in the ``n_paths N0``-dimensional feature space instead of from the ``P x P`` kernel
(:class:`~paththeory.kernels.LowRankKernel`, :func:`~paththeory.kernels.low_rank_energy`): at the Markov task's
P = 10,000 one solve takes seconds and the process stays under 3 GB.

Convergence is measured on the gradient, as in the authors' code (the paper, App. E, minimises
the action with Adam): ``tol`` bounds the largest absolute entry of the gradient of ``S/N`` with
respect to the symmetric matrices ``U^(l)`` (derivative of ``S(sym(P))/N`` with respect to a free
matrix ``P``), in units of ``S/N``. Where ``|S/N|`` is large (tiny temperatures, many examples),
round-off in that gradient grows with it; ``rtol`` then stops at ``max(tol, rtol |S/N|)``. A
solution returned unconverged (iteration limit or failed line search) comes with a
:class:`ConvergenceWarning`.
"""

from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import (
    as_float_array,
    check_count,
    check_flag,
    check_nonnegative,
    check_order_parameter,
    check_positive,
)
from paththeory.action import (
    action,
    check_ties,
    energy,
    entropy,
    entropy_with_readout,
    gp_order_parameters,
    level_scale,
    order_parameter_sizes,
    partial_trace,
    plus_diagonal,
    readout_order_parameter,
)
from paththeory.hessian import energy_derivatives, energy_hessian_cholesky, stream_bytes
from paththeory.kernels import (
    DEFAULT_MEMORY_BUDGET,
    GramBlocks,
    KernelOperator,
    LowRankKernel,
    _low_rank_energy,
    apply_operator,
    check_backend,
    check_features,
    kernel_operator,
    operator_astype,
)
from paththeory._compiled import Precompiled
from paththeory._lbfgs import State as _State
from paththeory._lbfgs import reached as _reached
from paththeory._lbfgs import iteration as _lbfgs_iteration
from paththeory.model import Architecture, check_architecture
from paththeory._labels import as_labels, stacked

Array = jax.Array


class ConvergenceWarning(RuntimeWarning):
    """A :class:`Solution` was returned before reaching its tolerance (``report["converged"]`` is False).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """


STATUS = {0: "running", 1: "converged", 2: "maximum iterations reached", 3: "line search failed"}
# The float32 phase of the mixed-precision solver stops once max |dS/dU| is below LOW_PRECISION_TOL
# and below LOW_PRECISION_NOISE_MARGIN times the float32 gradient's error at the start point
# (~2e-7 at the Omniglot size, larger for larger S/N), or after LOW_PRECISION_MAX_UNCERTIFIED
# steps the float32 action could not certify; then float64 takes over.
LOW_PRECISION_TOL = 1e-5
LOW_PRECISION_NOISE_MARGIN = 10.0
LOW_PRECISION_MAX_UNCERTIFIED = 20
# L-BFGS restarts from the exact inverse Hessian (computed from the features) once max |dS/dU| is
# below HESSIAN_SWITCH, where a Hessian costs at most HESSIAN_MAX_COST evaluations' worth of flops.
HESSIAN_SWITCH = 3e-2
HESSIAN_MAX_COST = 40.0
# Below this many examples an evaluation takes about a millisecond, and the Hessian's extra
# compilation (about 1.5 s) would cost more than the evaluations it saves.
HESSIAN_MIN_EXAMPLES = 256
# Mixed precision pays off where the O(n^2 P^2) kernel products and the O(P^3) Cholesky dominate.
MIXED_PRECISION_MIN_EXAMPLES = 256
# With the factorised kernel, float32 pays only when the [P, n N0] feature products dominate: measured
# on 2 CPU cores at P = 600, 64 paths x N0 = 192 (n N0 = 12,288) ran 1.4-2x faster in mixed precision
# (N = 10: 46 s vs 64 s; N = 100: 17 s vs 34 s), 16 paths x N0 = 64 (1,024) 1.1x slower (sweep 24 s vs 22 s).
MIXED_PRECISION_MIN_FACTORISED_WIDTH = 4096


# --------------------------------------------------------------------------- parametrisation


def _tril(size: int) -> tuple[np.ndarray, np.ndarray]:
    return np.tril_indices(size)


def _skip_order(n_outputs: int, branches: int, rest: int) -> np.ndarray:
    """``order[i] = j``: natural index ``i = (c, b, r)`` of a skip level's ``U`` to its branch-major index
    ``j = (b, c, r)``, in which the skip block (``b = 0``) is the top-left ``C r x C r`` corner."""
    return np.arange(branches * n_outputs * rest).reshape(branches, n_outputs, rest).transpose(1, 0, 2).reshape(-1)


def _tril_factor(vals: Array, size: int) -> Array:
    rows, cols = _tril(size)
    vals = jnp.where(rows == cols, jnp.exp(vals), vals)
    return jnp.zeros((size, size), vals.dtype).at[rows, cols].set(vals)


def parameter_count(sizes: Sequence[int], skips: Sequence[bool] | None = None) -> int:
    """Entries of the solver's parameter vector: ``s (s + 1) / 2`` per level of size ``s``, except a skip level,
    whose skip block is the level above's: ``m d + m (m + 1) / 2`` (``d`` the level above's size, ``m = s - d``).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> parameter_count((6, 2)), parameter_count((4, 2, 1), (True, True))
      (24, 10)
    """
    return int(sum(_level_counts(sizes, skips)))


def _level_counts(sizes: Sequence[int], skips: Sequence[bool] | None) -> list[int]:
    skips = _padded(skips, len(sizes))
    counts = []
    for l, size in enumerate(sizes):
        m = size - sizes[l + 1] if skips[l] else size
        counts.append((m * sizes[l + 1] if skips[l] else 0) + m * (m + 1) // 2)
    return counts


def _padded(skips: Sequence[bool] | None, count: int) -> tuple[bool, ...]:
    """``skips`` with ``False`` for the levels it does not name (the free readout ``U_a``)."""
    skips = () if skips is None else tuple(skips)
    return skips + (False,) * (count - len(skips))


def theta_to_matrices(theta: Array, sizes: Sequence[int], scales: Sequence[float],
                      skips: Sequence[bool] | None = None, n_outputs: int = 1) -> list[Array]:
    """Unpack the flat parameter vector into ``[U^(1), ..., U^(L)]`` (all positive definite).

    A level without a skip is ``U = c R R^T`` (``c = scales[l]``, ``R`` lower triangular with a log-diagonal).
    A skip level is built on the level above's factor ``F`` (``F F^T = U^(l+1)``), in branch-major order:
    ``[[F, 0], [G X, G R]]`` with ``G = sigma_l (I_H x F)`` (``sigma_l^2 = scales[l]``), so its skip block
    is ``U^(l+1)`` exactly, its Schur complement is ``G R R^T G^T`` and ``theta = 0`` is the GP point. With a
    skip at the top level, ``sizes`` and ``scales`` end with ``U_a``'s (``C`` and ``sigma_a^2``) and ``U_a``
    is the last matrix returned.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    theta = jnp.asarray(as_float_array(theta, "theta", ndim=1))
    skips = _padded(skips, len(sizes))
    offsets = np.cumsum([0] + _level_counts(sizes, skips))
    out, factor = [None] * len(sizes), None
    for l in reversed(range(len(sizes))):
        vals = theta[offsets[l]:offsets[l + 1]]
        if not skips[l]:
            chol = _tril_factor(vals, sizes[l])
            out[l] = scales[l] * chol @ chol.T
            factor = np.sqrt(scales[l]) * chol if l > 0 and skips[l - 1] else None
            continue
        d = sizes[l + 1]
        m = sizes[l] - d
        heads = m // d
        g = np.sqrt(scales[l]) * jnp.kron(jnp.eye(heads, dtype=theta.dtype), factor)
        cross = g @ vals[: m * d].reshape(m, d)
        lower = g @ _tril_factor(vals[m * d:], m)
        branch_major = jnp.block([[factor, jnp.zeros((d, m), theta.dtype)], [cross, lower]])
        factor = branch_major[_skip_order(n_outputs, heads + 1, d // n_outputs)]
        out[l] = factor @ factor.T
    return out


def _packed(chol: np.ndarray) -> np.ndarray:
    """The lower triangle of a Cholesky factor, row-major, its diagonal as logarithms."""
    rows, cols = _tril(chol.shape[0])
    vals = chol[rows, cols]
    return np.where(rows == cols, np.log(np.abs(np.where(rows == cols, vals, 1.0))), vals)


def matrices_to_theta(Us: Sequence[np.ndarray], scales: Sequence[float], skips: Sequence[bool] | None = None,
                       n_outputs: int = 1) -> np.ndarray:
    """Inverse of :func:`theta_to_matrices` (Cholesky factors with log-diagonals).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    skips = _padded(skips, len(Us))
    parts, factor = [None] * len(Us), None
    for l in reversed(range(len(Us))):
        U = np.asarray(Us[l])
        if not skips[l]:
            chol = np.linalg.cholesky(U / scales[l])
            parts[l] = _packed(chol)
            factor = np.sqrt(scales[l]) * chol
            continue
        d = factor.shape[0]
        m = U.shape[0] - d
        heads = m // d
        order = _skip_order(n_outputs, heads + 1, d // n_outputs)
        branch_major = np.empty_like(U)
        branch_major[np.ix_(order, order)] = U
        cross = np.linalg.solve(factor, branch_major[d:, :d].T).T  # C F^{-T}
        schur = branch_major[d:, d:] - cross @ cross.T
        g = np.sqrt(scales[l]) * np.kron(np.eye(heads), factor)
        lower = np.linalg.cholesky(np.linalg.solve(g, np.linalg.solve(g, schur).T).T)
        parts[l] = np.concatenate([np.linalg.solve(g, cross).reshape(-1), _packed(lower)])
        factor = np.block([[factor, np.zeros((d, m))], [cross, g @ lower]])[order]
    return np.concatenate(parts)


# --------------------------------------------------------------------------- L-BFGS


def bucket_size(n_examples: int) -> int:
    """The padded size of ``Theory(..., bucket=True)``: the least ``m 2^k >= P`` with ``m`` in 4..8, four sizes per
    doubling (at most 25% padding: up to about 2x the flops of a ``P x P`` factor), so that a chapter that solves
    at several nearby ``P`` compiles the solver once per bucket.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> [bucket_size(p) for p in (3, 60, 100, 110, 200, 300)]
      [4, 64, 112, 112, 224, 320]
    """
    p = check_count(n_examples, "n_examples")
    k = max(0, p.bit_length() - 3)
    return next(m << k for m in range(4, 9) if m << k >= p)


class _Data(NamedTuple):
    op: KernelOperator
    y: Array
    temperature: Array
    widths: Array  # [L+1]
    features: Array | None = None  # [P, n_paths, N0], for the Hessian
    mask: Array | None = None  # [C P]: 1 at the padded examples of Theory(..., bucket=True), else 0


def _n_outputs(sizes, heads, skips) -> int:
    return sizes[len(heads) - 1] // (heads[-1] + skips[-1])


def _kernel(op: KernelOperator, U: Array, mask: Array | None) -> Array:
    """``K(U)``, with 1 on the diagonal of padded examples (``mask``, :func:`bucket_size`): their features and
    targets are zero, so ``K + T I`` is block diagonal and they add ``sum(mask) ln(1 + T)`` to the energy and
    nothing to its dependence on ``U``."""
    K = apply_operator(op, U)
    return K if mask is None else plus_diagonal(K, mask)


def _action(us, op: KernelOperator, y, temperature, widths, heads, variances, skips, U_a=None, mask=None):
    """``S/N`` (:func:`~paththeory.action.action`) with the energy of the backend ``op``: from the ``P x P``
    kernel, or in feature space for :class:`~paththeory.kernels.LowRankKernel`
    (:func:`~paththeory.kernels.low_rank_energy`). Padded examples (``mask``, :func:`_kernel`) are taken out:
    their constant ``sum(mask) ln(1 + T)`` is subtracted."""
    if not isinstance(op, LowRankKernel):
        value = action(us, _kernel(op, us[0], mask), y, temperature, widths, heads, variances, skips, U_a)
        return value if mask is None else value - jnp.sum(mask) * jnp.log1p(temperature) / jnp.max(
            jnp.asarray(widths))
    ent = entropy(us, widths, heads, variances, skips) if U_a is None else entropy_with_readout(
        us, U_a, widths, heads, variances, skips)
    return (ent + _low_rank_energy(op, us[0], y, temperature)) / jnp.max(jnp.asarray(widths))


def _objective(theta, data: _Data, sizes, scales, heads, variances, skips):
    """``S/N`` as a function of the flat parameters ``theta``."""
    us = theta_to_matrices(theta, sizes, scales, skips, _n_outputs(sizes, heads, skips))
    widths = tuple(data.widths[i] for i in range(data.widths.shape[0]))
    return _action(us[:len(heads)], data.op, data.y, data.temperature, widths, heads, variances, skips,
                   us[len(heads)] if skips[-1] else None, data.mask)


def _gradients(theta, data: _Data, sizes, scales, heads, variances, skips):
    """``(S/N, dS/dtheta, [dS/dU^(l)])``; the U-gradients come for free from the chain rule. Those reported
    are the free entries' (:func:`_free_gradients`)."""
    n_outputs = _n_outputs(sizes, heads, skips)
    Us, pullback = jax.vjp(lambda t: theta_to_matrices(t, sizes, scales, skips, n_outputs), theta)
    widths = tuple(data.widths[i] for i in range(data.widths.shape[0]))

    def s_of_u(us):
        U_a = us[len(heads)] if skips[-1] else None
        return _action(us[:len(heads)], data.op, data.y, data.temperature, widths, heads, variances, skips, U_a,
                       data.mask)

    f, g_us = jax.value_and_grad(s_of_u)(Us)
    g_us = [0.5 * (g + g.T) for g in g_us]
    (g_theta,) = pullback(g_us)
    return f, g_theta, _free_gradients(g_us, heads, skips, n_outputs)


def _free_gradients(g_us: list[Array], heads, skips, n_outputs: int) -> list[Array]:
    """The gradient on the free entries: a skip block's force is passed on to the level above
    (``G^(l+1) += [G^(l)]_00``, bottom-up) and the block itself, tied, reported as zero."""
    out = list(g_us)
    for l, skip in enumerate(skips):
        if skip:
            d = out[l + 1].shape[0]
            index = np.flatnonzero(_skip_order(n_outputs, heads[l] + 1, d // n_outputs) < d)  # the skip block
            out[l + 1] = out[l + 1] + out[l][np.ix_(index, index)]
            out[l] = out[l].at[np.ix_(index, index)].set(0.0)
    return out


def _max_abs(arrays) -> Array:
    return jnp.max(jnp.stack([jnp.max(jnp.abs(a)) for a in arrays]))


def _objective_and_grads(theta, data: _Data, sizes, scales, heads, variances, skips):
    """``(S/N, dS/dtheta, max |dS/dU|)``."""
    f, g_theta, g_us = _gradients(theta, data, sizes, scales, heads, variances, skips)
    return f, g_theta, _max_abs(g_us)


def _hessian(theta, data: _Data, sizes, scales, heads, variances, skips) -> Array:
    """Hessian of ``S/N`` with respect to ``theta``, in the precision of ``data.features``.

    ``d2 S/dtheta2 = J^T H_E J + d2/dtheta2 [<dE/dU, U(theta)> + S_ent(theta)]`` (over ``N``), with
    ``J = dU/dtheta`` and ``dE/dU``, ``H_E`` from :func:`~paththeory.hessian.energy_derivatives`
    held fixed in the second term; the small entropy and parametrisation terms are left to autodiff.
    With ``C > 1`` outputs ``J^T H_E J`` comes from :func:`~paththeory.hessian.energy_hessian_cholesky`,
    the second term row by row (:func:`_hessian_rows`), and only the upper triangle is exact: the one
    its Cholesky factor reads (:func:`_factored_inverse`). With the feature-space backend
    (:class:`~paththeory.kernels.LowRankKernel`) the whole Hessian comes from autodiff, ``D`` Hessian-vector
    products through :func:`~paththeory.kernels.low_rank_energy`.
    """
    th = theta.astype(data.features.dtype)
    if isinstance(data.op, LowRankKernel):  # the energy in feature space: autodiff through it, row by row
        H = _hessian_rows(lambda t: _objective(t, data, sizes, scales, heads, variances, skips), th)
        return (0.5 * (H + H.T)).astype(theta.dtype)
    widths = tuple(data.widths[i] for i in range(data.widths.shape[0]))
    n_outputs = _n_outputs(sizes, heads, skips)
    width = jnp.max(data.widths).astype(th.dtype)
    to_matrices = lambda t: theta_to_matrices(t, sizes, scales, skips, n_outputs)  # noqa: E731
    U = to_matrices(th)[0]
    K = _kernel(data.op, U, data.mask)
    y, temperature = data.y.astype(th.dtype), data.temperature.astype(th.dtype)
    if n_outputs == 1:
        g_energy, h_energy = energy_derivatives(data.features, K, y, temperature)
    else:
        g_energy = jax.grad(lambda u: energy(_kernel(data.op, u, data.mask), y, temperature))(U)
    g_energy = 0.5 * (g_energy + g_energy.T)

    def rest(t):
        us = to_matrices(t)
        ent = (entropy_with_readout(us[:len(heads)], us[-1], widths, heads, variances, skips) if skips[-1]
               else entropy(us, widths, heads, variances, skips))
        return (jnp.vdot(g_energy, us[0]) + ent) / width

    if n_outputs == 1:
        J = jax.jacfwd(lambda t: to_matrices(t)[0])(th)
        H = jnp.einsum("abk,abcd,cdl->kl", J, h_energy, J) / width + jax.hessian(rest)(th)
        return (0.5 * (H + H.T)).astype(theta.dtype)
    rows, cols = _tril(sizes[0])
    first = rows.size
    R = jnp.zeros((sizes[0], sizes[0]), th.dtype).at[rows, cols].set(
        jnp.where(rows == cols, jnp.exp(th[:first]), th[:first]))
    return energy_hessian_cholesky(data.features, K, y, temperature, R, scales[0], 1.0 / width,
                                   _hessian_rows(rest, th), n_outputs)


def _hessian_rows(fun, theta: Array, max_rows: int = 128) -> Array:
    """The Hessian of the scalar ``fun`` at ``theta``, ``rows`` Hessian-vector products at a time (``rows``: the
    largest divisor of ``D`` up to ``max_rows``), so no temporary holds ``D`` tangents of ``fun``'s intermediates."""
    d = theta.shape[0]
    rows = max(r for r in range(1, min(d, max_rows) + 1) if d % r == 0)
    _, hvp = jax.linearize(jax.grad(fun), theta)
    unit = lambda i: jax.vmap(hvp)(jax.nn.one_hot(i * rows + jnp.arange(rows), d, dtype=theta.dtype))  # noqa: E731
    return jax.lax.map(unit, jnp.arange(d // rows)).reshape(d, d)


def _inverse_hessian(H: Array) -> Array:
    """``V diag(1/max(|lambda|, eps)) V^T``: the inverse of ``H`` with negative curvature flipped and
    tiny eigenvalues floored (a modified Newton step that always descends)."""
    lam, V = jnp.linalg.eigh(H)
    size = jnp.abs(lam)
    size = jnp.maximum(size, 1e-8 * jnp.max(size))
    inverse = (V / size) @ V.T
    return jnp.where(jnp.all(jnp.isfinite(inverse)) & (jnp.max(size) > 0), inverse, jnp.eye(H.shape[0], dtype=H.dtype))


class _CholeskyInverse(NamedTuple):
    """``(R R^T)^{-1} x`` by two triangular solves in the factor's precision (the L-BFGS initial matrix ``h0``,
    applied as ``h0 @ x``); ``x`` itself where no factor was found (``ok`` false). The factor is held as
    ``upper = R^T``: row-major, that is ``R`` in LAPACK's column-major order, so that neither the solves nor the
    quasi-Newton loop that carries it copy it."""

    upper: Array
    ok: Array

    def __matmul__(self, x: Array) -> Array:
        solved = jax.scipy.linalg.cho_solve((self.upper.T, True), x.astype(self.upper.dtype)).astype(x.dtype)
        return jnp.where(self.ok, solved, x)


def _factored_inverse(H: Array, shifts: int = 10) -> _CholeskyInverse:
    """The inverse of ``H + tau I`` as a Cholesky factor, from its upper triangle, with the first ``tau`` of
    ``0, 1e-6 h, 1e-5 h, ...`` (``h = max |H_kk|``, at most ``shifts`` shifts) that makes it positive
    definite: a modified Newton step that always descends (Nocedal & Wright, Algorithm 3.3). The search keeps
    only ``tau`` and the factor is taken once more at the end, in ``H``'s place, so that at most ``H`` and one
    factor are held (a factor carried through the loop took two more ``D x D`` buffers), never an
    eigendecomposition's."""
    scale = jnp.max(jnp.abs(jnp.diagonal(H)))

    def factor(tries):  # one buffer per trial: H's transpose, its diagonal shifted in place, factored in place
        shift = jnp.where(tries == 0, 0.0, scale * 10.0 ** (tries - 7).astype(H.dtype))
        # The lower triangle of H's transpose is H's upper. Shifting H first, then transposing, held a shifted copy
        # and its transposed copy beside H (0.75 GB each in float32 at C = 10, D = 13,700: with H, 2.25 of XLA's
        # 3.04 GB peak for the solve at the Omniglot size).
        return jax.lax.linalg.cholesky(plus_diagonal(H.T, shift), symmetrize_input=False)

    def finite(chol):  # a failed factor is all NaN: its diagonal tells
        return jnp.all(jnp.isfinite(jnp.diagonal(chol)))

    def failed(tries):
        return (tries <= shifts) & ~finite(factor(tries))

    tries = jax.lax.while_loop(failed, lambda t: t + 1, jnp.array(0))
    chol = factor(jnp.minimum(tries, shifts))
    return _CholeskyInverse(chol.T, finite(chol) & (scale > 0))


def hessian_pays(n_examples: int, n_paths: int, n_features: int, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 n_outputs: int = 1, itemsize: int = 8, n_parameters: int | None = None) -> bool:
    """Whether the solver uses the Hessian restart: from ``HESSIAN_MIN_EXAMPLES`` examples (``C P`` with ``C``
    outputs), when its flops are at most ``HESSIAN_MAX_COST`` times an evaluation's (``n^2 P^2 + 3 P^3``,
    with ``P -> C P``, ``n -> C n``) and its temporaries fit the memory budget.

    One output (:func:`~paththeory.hessian.energy_derivatives`): ``2 P^2 m + 2 P m^2 + 2 n^2 m^2`` flops with
    ``m = n N0``, two ``m x m`` float64 temporaries in a quarter of the budget. ``C > 1``
    (:func:`~paththeory.hessian.energy_hessian_cholesky`): ``2 C^2 (P^2 m + P m^2) + 6 N0^2 (C n)^3
    + (2/3) N0^2 (C n)^4 + D^3 / 3`` flops (the last: the Cholesky factor of the ``D x D`` Hessian, ``D``
    = ``n_parameters``, by default ``C n (C n + 1) / 2``, the first level's), and the peak bytes of
    :func:`~paththeory.hessian.stream_bytes` of ``itemsize`` (4 in mixed precision, where the Hessian is computed
    in float32) in the whole budget (the restart runs once, while nothing else of that size is held).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> hessian_pays(600, 16, 192), hessian_pays(600, 64, 192), hessian_pays(100, 16, 192)
      (True, False, False)
      >>> [hessian_pays(600, 16, 192, n_outputs=c, itemsize=4) for c in (3, 10, 20)]
      [True, True, False]
    """
    n_examples, n_paths = check_count(n_examples, "n_examples"), check_count(n_paths, "n_paths")
    n_features, n_outputs = check_count(n_features, "n_features"), check_count(n_outputs, "n_outputs")
    memory_budget = check_count(memory_budget, "memory_budget", minimum=0)
    itemsize = check_count(itemsize, "itemsize")
    p, n = n_outputs * n_examples, n_outputs * n_paths  # C outputs: C n paths over C P examples
    evaluation = n * n * p * p + 3 * p**3
    if n_outputs == 1:
        m = n * n_features
        cost = 2 * p * p * m + 2 * p * m * m + 2 * n * n * m * m
        return p >= HESSIAN_MIN_EXAMPLES and cost <= HESSIAN_MAX_COST * evaluation and 2 * 8 * m * m <= memory_budget // 4
    d = n * (n + 1) // 2 if n_parameters is None else check_count(n_parameters, "n_parameters")
    m = n_paths * n_features
    cost = (2 * n_outputs**2 * (n_examples**2 * m + n_examples * m * m) + 6 * n_features**2 * n**3
            + 2 * n_features**2 * n**4 // 3 + d**3 // 3)
    memory = stream_bytes(p, n, n_features, d, itemsize)
    return p >= HESSIAN_MIN_EXAMPLES and cost <= HESSIAN_MAX_COST * evaluation and memory <= memory_budget


# The steps of a solve (:func:`_minimise`): evaluations at the current point (the start in float32, the start in
# float64 for float32's error, the switch to float64), the Hessian restart, and L-BFGS phases.
_START, _NOISE, _TO_DOUBLE, _HESSIAN, _LBFGS = range(5)


class _Phase(NamedTuple):
    """One step of a solve: ``kind`` (above), and for an L-BFGS phase its precision, its tolerance (``"tol"``,
    ``"switch"``, ``"first"``: see :func:`_minimise`), whether it stops at ``rtol``, the initial matrix and the
    line search's options."""

    kind: int
    low: bool = False
    tol: str = "tol"
    rtol: bool = False
    h0: bool = False
    roundoff: float = 1e-12
    max_backtracks: int = 50
    max_uncertified: int = np.iinfo(np.int32).max


def _schedule(low: bool, hessian: bool) -> tuple[_Phase, ...]:
    """The steps of :func:`_minimise` for its precision (``low``: float32 first) and ``hessian`` restart."""
    if not low:
        first = (_Phase(_LBFGS, tol="first"), _Phase(_HESSIAN)) if hessian else ()
        return (_Phase(_START), *first, _Phase(_LBFGS, rtol=True, h0=hessian))
    opts = dict(low=True, roundoff=1e-6, max_backtracks=20, max_uncertified=LOW_PRECISION_MAX_UNCERTIFIED)
    first = (_Phase(_LBFGS, tol="first", **opts), _Phase(_HESSIAN, low=True)) if hessian else ()
    return (_Phase(_START, low=True), _Phase(_NOISE), *first, _Phase(_LBFGS, tol="switch", h0=hessian, **opts),
            _Phase(_TO_DOUBLE), _Phase(_LBFGS, rtol=True, h0=hessian))


class _Extra(NamedTuple):
    """What a solve carries beside the L-BFGS state: the step it is at, the float32 phase's tolerance, the start
    point's float32 gradients (for float32's error) and the Hessian restart's initial matrix."""

    phase: Array
    switch: Array
    g_low: Array
    h0: object


class _Steps:
    """The steps of one solve (:func:`_minimise`), each a function of the state ``(s, x)``: a :class:`_State` and
    its :class:`_Extra`."""

    def __init__(self, data: _Data, low: _Data | None, hessian: bool, tol, max_iter, rtol, opts: dict):
        self.data, self.low, self.hessian, self.tol, self.max_iter, self.rtol, self.opts = (
            data, low, hessian, tol, max_iter, rtol, opts)
        self.schedule = _schedule(low is not None, hessian)
        features = data.features
        self.inverse = (_inverse_hessian if features is None or opts["sizes"][0] == features.shape[1]
                        else _factored_inverse)

    def gradients(self, th, precision: _Data):
        """``(S/N, dS/dtheta, max |dS/dU|, dS/dU flat)`` in ``precision``'s dtype, returned in ``theta``'s."""
        f, g, g_us = _gradients(th.astype(precision.y.dtype), precision, **self.opts)
        flat = jnp.concatenate([u.reshape(-1) for u in g_us]).astype(th.dtype)
        return f.astype(th.dtype), g.astype(th.dtype), jnp.max(jnp.abs(flat)), flat

    def evaluate(self, th, on_low):
        """:meth:`gradients` in float32 where ``on_low`` (a Python or a traced flag), else in float64."""
        if self.low is None:
            return self.gradients(th, self.data)
        if isinstance(on_low, bool):
            return self.gradients(th, self.low if on_low else self.data)
        return jax.lax.cond(on_low, lambda t: self.gradients(t, self.low), lambda t: self.gradients(t, self.data), th)

    def restart_matrix(self, th):
        """The L-BFGS initial matrix from the exact Hessian, in the first phase's precision."""
        return self.inverse(_hessian(th, self.data if self.low is None else self.low, **self.opts))

    def tolerances(self, x: _Extra) -> dict:
        first = jnp.maximum(self.tol if self.low is None else x.switch, HESSIAN_SWITCH)
        return {"tol": self.tol, "switch": x.switch, "first": first}

    def after_evaluation(self, kind, s: _State, x: _Extra, f, g, gmax, flat) -> tuple[_State, _Extra]:
        """The state after step ``kind``, the evaluation ``(f, g, gmax, flat)`` at ``s.theta``."""
        if kind == _START:
            status = jnp.where(_reached(gmax, f, self.tol, self.rtol), 1, 0) if self.low is None else s.status
            return s._replace(f=f, g=g, gmax=gmax, evals=jnp.ones_like(s.evals), status=status), x._replace(g_low=flat)
        if kind == _NOISE:  # float32's error at the start point sets where the float32 phase ends
            noise = jnp.max(jnp.abs(x.g_low - flat))
            switch = jnp.maximum(jnp.maximum(self.tol, LOW_PRECISION_TOL), LOW_PRECISION_NOISE_MARGIN * noise)
            finite = jnp.isfinite(s.f) & jnp.all(jnp.isfinite(s.g))
            return s._replace(status=jnp.where(finite & (s.gmax > switch), 0, 1)), x._replace(switch=switch)
        status = jnp.where(_reached(gmax, f, self.tol, self.rtol), 1, jnp.where(s.it >= self.max_iter, 2, 0))
        return s._replace(f=f, g=g, gmax=gmax, evals=s.evals + 2, status=status), x  # _TO_DOUBLE

    def after_restart(self, s: _State, x: _Extra) -> tuple[_State, _Extra]:
        """From here the quasi-Newton model starts at the inverse Hessian, without the old pairs. A solve that has
        reached ``max_iter`` (status 2) stops, so its restart matrix is not computed (``h0`` stays zero): the
        benchmark's compile timing, one iteration, ran the restart for nothing (about 8 of its 30 CPU-s at the Omniglot
        size with C = 3)."""
        if self.low is None:
            status = jnp.where(s.status == 2, 2, jnp.where(_reached(s.gmax, s.f, self.tol, self.rtol), 1, 0))
        else:  # go on in float32 only if the first phase ended at its tolerance, not at float32's limits
            more = (s.status == 1) & (s.gmax <= self.tolerances(x)["first"]) & (s.gmax > x.switch) & (
                s.uncertified < LOW_PRECISION_MAX_UNCERTIFIED)
            status = jnp.where(more, 0, jnp.where(s.status == 2, 2, 1))
        h0 = jax.lax.cond(status == 2, lambda t: jax.tree.map(jnp.zeros_like, x.h0), self.restart_matrix, s.theta)
        return s._replace(count=jnp.zeros_like(s.count), status=status), x._replace(h0=h0)

    def lbfgs_options(self, phase, x: _Extra) -> dict:
        """The L-BFGS options of step ``phase`` (a Python or a traced index)."""
        def pick(values):
            return values[phase] if isinstance(phase, int) else jnp.stack([jnp.asarray(v) for v in values])[phase]

        tols = self.tolerances(x)
        column = {name: pick([getattr(p, name) for p in self.schedule])
                  for name in ("roundoff", "max_backtracks", "max_uncertified", "low", "h0")}
        return dict(tol=pick([tols[p.tol] for p in self.schedule]), max_iter=self.max_iter,
                    rtol=pick([self.rtol if p.rtol else 0.0 for p in self.schedule]), **column)

    def one_by_one(self, s: _State, x: _Extra) -> _State:
        """The steps in order, each L-BFGS phase a loop of its own."""
        for phase, step in enumerate(self.schedule):
            if step.kind == _HESSIAN:
                s, x = self.after_restart(s, x)
            elif step.kind != _LBFGS:
                s, x = self.after_evaluation(step.kind, s, x, *self.evaluate(s.theta, step.low))
            else:
                s = jax.lax.while_loop(lambda s: s.status == 0, partial(self.iteration, phase=phase, x=x), s)
        return s

    def iteration(self, s: _State, *, phase, x: _Extra, probe=None, active=None):
        """One L-BFGS iteration of step ``phase`` (:func:`paththeory._lbfgs.iteration`)."""
        o = self.lbfgs_options(phase, x)
        low, has_h0 = o.pop("low"), o.pop("h0")
        if isinstance(phase, int):
            h0, has_h0 = (x.h0 if has_h0 else None), None
        else:
            h0, has_h0 = x.h0, (has_h0 if self.hessian else None)
        out = _lbfgs_iteration(s, lambda th: self.evaluate(th, low), h0=h0, has_h0=has_h0, probe=probe,
                               active=active, aux=x.g_low, **o)
        return out if probe is not None else out[0]

    def fused(self, s: _State, x: _Extra) -> _State:
        """The steps in one ``lax.while_loop``: one evaluation and one Hessian restart in its body."""
        kinds = jnp.array([p.kind for p in self.schedule])
        last = len(self.schedule) - 1

        def restart(c):
            s, x = self.after_restart(*c)
            return s, x._replace(phase=x.phase + 1)

        def body(carry):
            s, x = carry
            if self.hessian:
                s, x = jax.lax.cond(kinds[x.phase] == _HESSIAN, restart, lambda c: c, (s, x))
            kind = kinds[x.phase]
            probe = (kind != _LBFGS) & (kind != _HESSIAN)
            active = probe | (s.status == 0)
            new, flat = self.iteration(s, phase=x.phase, x=x, probe=probe, active=active)
            outcomes = [self.after_evaluation(k, s, x, new.f, new.g, new.gmax, flat) for k in (_START, _NOISE, _TO_DOUBLE)]
            evaluated = jax.tree.map(lambda a, b, c: jnp.where(kind == _START, a, jnp.where(kind == _NOISE, b, c)),
                                     *outcomes)
            h0, strip = x.h0, lambda c: (c[0], c[1]._replace(h0=None))  # noqa: E731  (no selects of h0)
            s, x = jax.tree.map(lambda e, n, old: jnp.where(probe, e, jnp.where(active, n, old)), strip(evaluated),
                                strip((new, x)), strip((s, x)))
            x = x._replace(h0=h0)
            advance = probe | ((kind == _LBFGS) & (s.status != 0) & (x.phase < last))
            return s, x._replace(phase=x.phase + advance)

        def going(carry):
            s, x = carry
            return (x.phase < last) | (s.status == 0)

        return jax.lax.while_loop(going, body, (s, x))[0]


def _minimise(theta0, data: _Data, tol, max_iter, *, sizes, scales, heads, variances, skips, low: _Data | None = None,
              hessian: bool = False, history=80, rtol=0.0, fused: bool = True):
    """L-BFGS from ``theta0`` down to ``max |dS/dU| <= max(tol, rtol |S/N|)``.

    With ``low`` (the same problem in float32), iterate on the float32 objective first, down to
    ``max |dS/dU| <= max(tol, LOW_PRECISION_TOL, margin x float32 error)`` or until float32 can no
    longer certify descent or its line search fails, then go on in float64 from there, keeping the
    curvature history. With ``hessian``, once ``max |dS/dU| <= HESSIAN_SWITCH`` the exact Hessian
    (from the features, in the first phase's precision) restarts L-BFGS as its initial matrix.
    ``history``: the curvature pairs kept (at the Omniglot size without the restart, 40 pairs took
    124 evaluations to 1e-9 and 80 took 90).

    The steps (:func:`_schedule`) run in one ``lax.while_loop`` (``fused``), whose body evaluates the action once,
    in the precision of the step it is at (``lax.cond``), and holds the Hessian restart once; a loop per phase
    inlines the objective and its gradient once per phase and precision (six copies in mixed precision, each with
    the ``P x P`` factor and its inverse). Without ``fused`` (under ``vmap``, where a ``lax.cond`` runs both
    branches) each L-BFGS phase is a loop of its own.
    """
    steps = _Steps(data, low, hessian, tol, max_iter, rtol,
                   dict(sizes=sizes, scales=scales, heads=heads, variances=variances, skips=skips))
    d, f64 = theta0.shape[0], theta0.dtype
    state = _State(theta0, jnp.array(jnp.nan, f64), jnp.zeros(d, f64), jnp.array(jnp.inf, f64),
                   s_hist=jnp.zeros((history, d)), y_hist=jnp.zeros((history, d)), count=jnp.array(0),
                   it=jnp.array(0), evals=jnp.array(0), status=jnp.array(0), uncertified=jnp.array(0))
    flat = jax.eval_shape(lambda t: steps.evaluate(t, False)[3], theta0)
    h0 = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), jax.eval_shape(steps.restart_matrix, theta0)) if (
        hessian) else None
    extra = _Extra(jnp.array(0), jnp.asarray(tol, f64), jnp.zeros(flat.shape, flat.dtype), h0)
    return steps.fused(state, extra) if fused else steps.one_by_one(state, extra)


def _minimise_many(theta0, op, y, temperature, widths, tol, max_iter, low_op=None, features=None, rtol=0.0, mask=None,
                   *, sizes, scales, heads, variances, skips, sequential=False):
    """:func:`_minimise` for a batch of start points, temperatures ``[B]`` and widths ``[B, L+1]``.

    With ``sequential`` (the default on CPU) the points are solved one after another in a
    ``lax.map``, each in the one loop of :func:`_minimise`; otherwise (GPU) in ``vmap``-ed while loops, one per
    phase (a ``lax.cond`` under ``vmap`` runs both branches), where every lane stops updating once it
    has converged and the loop ends when the last lane does. On CPU the batched form can deadlock:
    with a batch dimension, jaxlib's LAPACK kernels (Cholesky, triangular solve) split the batch over
    XLA's intra-op thread pool and wait for it, and two of them running at once occupied both
    threads of a 2-core machine (seen at P = 600 with 3 widths; the threads' native stacks showed
    ``lapack_dpotrf_ffi`` and ``lapack_dtrsm_ffi`` waiting in ``ParallelBatchMap``). Sequential lanes
    were also no slower on CPU (Markov-chain sweep of 10 widths: 0.049 s against 0.062 s).
    ``low_op``: the kernel operator in float32, for the mixed-precision first phase. ``features``:
    the path features, for the Hessian restart (``None``: L-BFGS from a scaled identity throughout). ``mask``:
    ``[C P]``, 1 at padded examples (:func:`bucket_size`; ``None``: none).
    """
    f32 = jnp.float32
    hessian = features is not None
    low_y = y.astype(f32)
    low_features = features.astype(f32) if hessian and low_op is not None else None

    def one(t0, temp, w):
        low = None
        if low_op is not None:
            low = _Data(low_op, low_y, temp.astype(f32), w.astype(f32), low_features,
                        None if mask is None else mask.astype(f32))
        return _minimise(t0, _Data(op, y, temp, w, features, mask), tol, max_iter, low=low, hessian=hessian,
                         sizes=sizes, scales=scales, heads=heads, variances=variances, skips=skips, rtol=rtol,
                         fused=sequential)

    if sequential:
        state = jax.lax.map(lambda a: one(*a), (theta0, temperature, widths))
    else:
        state = jax.vmap(one)(theta0, temperature, widths)
    n_outputs = _n_outputs(sizes, heads, skips)
    mats = jax.vmap(lambda t: theta_to_matrices(t, sizes, scales, skips, n_outputs))(state.theta)
    return state, mats


# Compiled before it runs, the compiler's freed memory handed back first (1.9 GB at C = 10, Omniglot size).
_minimise_many_jit = Precompiled(_minimise_many, ("sizes", "scales", "heads", "variances", "skips", "sequential"))
#: The solver's compiled program (:class:`paththeory._compiled.Precompiled`): the benchmark measures its
#: compilations (``COMPILED_SOLVER.measure``).
COMPILED_SOLVER = _minimise_many_jit


# --------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class Solution:
    """A minimiser of the action at one ``(widths, temperature)``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Attributes:
      U: ``[n_paths, n_paths]`` order parameter ``U^(1)`` that enters the kernel; a read-only numpy
        array (``np.array(sol.U)`` gives a writable copy).
      inner: ``[U^(2), ..., U^(L)]`` (empty for L = 1).
      U_a: the readout order parameter at its closed-form root: a float for labels ``[P]``, a ``[C, C]``
        array for labels ``[P, C]``.
      widths: ``(n_0, ..., n_L)``.
      temperature: the Gibbs temperature ``T``.
      report: convergence report: ``grad_norm`` (max ``|d(S/N)/dU|``), ``iterations``,
        ``evaluations``, ``seconds``, ``converged``, ``status``, ``action`` (S/N), ``tolerance``,
        ``rtol``, ``precision``, ``hessian``, ``kernel_backend`` (the kernel operator's class name).

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> sol = solve(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), 10, 0.1)
      >>> [u.shape for u in sol.order_parameters], sol.widths, sol.report["converged"]
      ([(6, 6), (2, 2)], (10.0, 10.0, 10.0), True)
    """

    U: np.ndarray
    inner: list[np.ndarray]
    U_a: float | np.ndarray
    widths: tuple[float, ...]
    temperature: float
    report: dict = field(default_factory=dict)
    #: A weak reference to the :class:`Theory` that solved it (``None``: built by hand), for :meth:`solved_by`.
    source: weakref.ReferenceType | None = field(default=None, repr=False, compare=False)

    @property
    def order_parameters(self) -> list[np.ndarray]:
        """``[U^(1), ..., U^(L)]``."""
        return [self.U, *self.inner]

    def solved_by(self, theory: "Theory") -> bool:
        """Whether ``theory`` (this very object) produced this solution; ``True`` for a solution built by hand."""
        return self.source is None or self.source() is theory


class Theory:
    """The theory for one architecture and training set: holds the kernel operator for reuse.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Args:
      arch: the :class:`~paththeory.model.Architecture` (heads and variances are used here).
      features: path features of the training set ``[P, n_paths, N0]``.
      y: training targets ``[P]``, or ``[P, C]`` for ``C`` outputs (one-hot or simplex-coded classes):
        then every ``U^(l)`` is ``C prod_{m >= l} H_m`` square with the output index slowest
        (``U`` has blocks ``U^{cd}_{pi sigma}``), ``U_a`` is ``C x C`` and the energy acts on the
        ``(C P) x (C P)`` kernel.
      memory_budget: bytes allowed for precomputed Gram blocks (default 2 GiB); above it the
        kernel is evaluated from the features, see :func:`~paththeory.kernels.kernel_operator`.
      precision: ``"double"`` iterates in float64 throughout; ``"mixed"`` keeps a float32 copy of the
        kernel operator (half its memory again), iterates on the float32 action down to
        ``max |d(S/N)/dU| <= 1e-5`` (:data:`LOW_PRECISION_TOL`, or ten times float32's gradient error at
        the start if larger) and finishes in float64, so the reported
        gradient and the tolerance are float64's; ``"auto"`` (default) picks ``"mixed"`` from
        P = 256 training examples (:data:`MIXED_PRECISION_MIN_EXAMPLES`) with the Gram-block backend,
        where it is about twice as fast, and with the factorised backend where ``n_paths * N0`` is at
        least :data:`MIXED_PRECISION_MIN_FACTORISED_WIDTH`.
      hessian: restart L-BFGS from the exact inverse Hessian (from the features, in the first
        phase's precision) once ``max |d(S/N)/dU| <= 3e-2`` (:data:`HESSIAN_SWITCH`), for tolerances
        below that; ``None`` (default) decides by cost with :func:`hessian_pays`. At the Omniglot
        size it cuts the evaluations to tolerance 1e-9 from about 120 to 37, and with 3 outputs the
        iterations from about 330 to about 25. With ``C > 1`` its memory is the ``D x D`` Hessian in the
        Cholesky coordinates and its factor (:func:`~paththeory.hessian.stream_bytes`, 1.4 GiB in float32 at
        C = 10), not the ``(C n)^4`` tensor of the former restart, which at P = 600 with 16 paths of N0 = 192
        took the process to 2.9, 6.3 and 21 GB for C = 3, 5 and 10 and needed ``memory_budget=2**34`` at
        C = 10. At C = 3 (2 CPU cores shared with other jobs, mixed precision) the streamed restart peaked at
        2.5 GB against 3.5 GB for the former one, both 25 iterations to 6e-10 and U within 5e-10. At C = 10
        with the default budget (N = 10, T = 0.5, same machine) the whole solve, compilation included, took
        298 s to 1.6e-11 in 27 iterations at a peak of 3.46 GiB (3.7 GB) of process memory: 5.9 GiB before
        the stream updated the Hessian in place, the compiler's freed memory was handed back before the run
        (``paththeory._compiled``), the shift search factored one copy of the Hessian at a time and the
        kernel's gradient stopped holding a zero array; the code before these two changes, run just before on
        the same machine, took 291 s at a peak of 4.11 GiB to the same U (largest difference 4.7e-12).
        ``memory_budget`` gates it (:func:`hessian_pays`). With the feature-space backend (below) the
        Hessian comes from autodiff and is off unless set, since it does not pay there.
      backend: ``"auto"`` (default), ``"dense"`` or ``"low_rank"`` (:func:`~paththeory.kernels.kernel_operator`).
        ``K_U`` has rank at most ``n_paths N0``; with one output and ``P >= max(1000, 1.5 n_paths N0)`` examples
        (:func:`~paththeory.kernels.low_rank_pays`) ``"auto"`` evaluates the energy in that feature space
        (:class:`~paththeory.kernels.LowRankKernel`, :func:`~paththeory.kernels.low_rank_energy`: an
        ``(n_paths N0)``-square Cholesky factor per evaluation instead of a ``P x P`` one), in float64
        throughout. ``"low_rank"`` forces it at any ``P`` (with ``C > 1`` outputs it warns and uses the
        ``P x P`` form); it needs ``T > 0``. Book: Many more examples than features
        (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank).
      bucket: solve with the examples padded to :func:`bucket_size` (zero features and targets, taken out of the
        action exactly), so that training sets of nearby sizes share one compiled solver; up to 25% more
        examples per evaluation and a second, padded kernel operator. A sweep over P = 100, 120, ..., 300 (Markov
        task, N = 30, T = 0.01; 2 CPU cores) compiled 7 programs instead of 11, in 29 s instead of 53 s, with U
        within 1e-10. Off by default, and with the feature-space backend.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> theory = Theory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]))
      >>> sol = theory.solve(10, 0.1)
      >>> sol.U.shape, sol.report["converged"]
      ((6, 6), True)
      >>> theory.action(sol.order_parameters, 10, 0.1) <= theory.action(theory.gp_order_parameters(), 10, 0.1)
      True
    """

    def __init__(self, arch: Architecture, features, y, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 precision: str = "auto", hessian: bool | None = None, backend: str = "auto", bucket: bool = False):
        if precision not in ("auto", "double", "mixed"):
            raise ValueError(f"precision must be 'auto', 'double' or 'mixed'; got {precision!r}.")
        backend = check_backend(backend)
        check_architecture(arch)
        if not arch.linear:
            raise ValueError(f"Theory is the paper's theory of networks linear in each weight matrix; this one has a "
                             f"nonlinear MLP block (nonlinearities {arch.nonlinearities}). Use the heuristic for it: "
                             "paththeory.nonlinear_theory.NonlinearTheory(arch, features, y).")
        hessian = None if hessian is None else check_flag(hessian, "hessian")
        feats = check_features(features)
        if feats.shape[1] != arch.n_paths:
            raise ValueError(
                f"features have {feats.shape[1]} paths but the architecture with heads {arch.heads} has "
                f"{arch.n_paths}; compute them with paththeory.path_features(arch, x)."
            )
        labels = as_labels(y, feats.shape[0])
        self.arch = arch
        self.features = feats
        self.y = jnp.asarray(labels if np.ndim(y) == 2 else labels[:, 0])
        self.n_outputs = labels.shape[1]
        self.targets = jnp.asarray(stacked(labels))  # vec(Y) [C P], output index slowest
        self.operator = kernel_operator(feats, memory_budget, self.n_outputs, backend)
        low_rank = isinstance(self.operator, LowRankKernel)
        gram = isinstance(self.operator, GramBlocks)
        # In feature space an evaluation is one m x m Cholesky factor, kept in float64 (no float32 phase).
        pays = not low_rank and (gram or feats.shape[1] * feats.shape[2] >= MIXED_PRECISION_MIN_FACTORISED_WIDTH)
        # C outputs: the energy is that of C P examples.
        mixed = precision == "mixed" or (
            precision == "auto" and pays and self.n_outputs * feats.shape[0] >= MIXED_PRECISION_MIN_EXAMPLES)
        self.precision = "mixed" if mixed else "double"
        self._low_operator = operator_astype(self.operator, jnp.float32) if mixed else None
        skips = self.skips = arch.skips
        free_readout = (self.n_outputs,) if skips[-1] else ()  # a top-level skip ties U_a: no closed form
        self.sizes = tuple(order_parameter_sizes(arch.heads, self.n_outputs, skips)) + free_readout
        # Scales: U = c R R^T without a skip (c the GP value), sigma_l^2 of the weighted block at a skip level.
        self.scales = tuple(arch.variances[l + 1] if skip else level_scale(l, arch.variances)
                            for l, skip in enumerate(skips)) + ((arch.variances[-1],) if skips[-1] else ())
        streamed = self.n_outputs > 1 and skips[0]  # the streamed C > 1 Hessian needs U^(1) = c R R^T
        if low_rank and hessian is None:
            # Here the Hessian is D Hessian-vector products through the m x m factor, about 4 evaluations each:
            # at the Markov task's P = 2,000 (D = 13) it took 14 s against 8 s for the whole solve without it.
            self.hessian = False
        else:
            self.hessian = False if streamed else (
                hessian_pays(*feats.shape, memory_budget, self.n_outputs, 4 if mixed else 8,
                             parameter_count(self.sizes, skips)) if hessian is None else bool(hessian))
        self._gp_eigmin: float | None = None
        self.bucket = check_flag(bucket, "bucket") and not low_rank
        self._solver_data = self._padded(labels, memory_budget) if self.bucket else (
            self.operator, self.targets, self._low_operator, self.features, None)

    def _padded(self, labels: np.ndarray, memory_budget: int) -> tuple:
        """The solver's ``(operator, targets, float32 operator, features, mask)`` with the examples padded to
        :func:`bucket_size` by zero features and zero targets (``mask`` 1 there, :func:`_kernel`)."""
        p = self.features.shape[0]
        extra = bucket_size(p) - p
        feats = jnp.concatenate([self.features, jnp.zeros((extra, *self.features.shape[1:]), self.features.dtype)])
        targets = jnp.asarray(stacked(np.concatenate([labels, np.zeros((extra, labels.shape[1]))])))
        padded = np.repeat((np.arange(p + extra) >= p)[:, None], labels.shape[1], axis=1)
        mask = jnp.asarray(stacked(padded), feats.dtype)
        op = kernel_operator(feats, memory_budget, self.n_outputs, "dense")
        low = operator_astype(op, jnp.float32) if self.precision == "mixed" else None
        return op, targets, low, feats, mask

    # ------------------------------------------------------------------ checks
    def _check_temperature(self, temperature) -> float:
        t = check_nonnegative(temperature, "temperature")
        if t == 0 and isinstance(self.operator, LowRankKernel):
            p, n, n0 = self.features.shape
            fix = ("the kernel, of rank at most n N0 < P, is singular: use T > 0" if p > n * n0
                   else "use T > 0, or Theory(..., backend='dense')")
            raise ValueError(f"temperature T = 0 is outside the low-rank backend, whose energy holds (P - n N0) ln T "
                             f"(P = {p}, n N0 = {n * n0}); {fix}.")
        if t == 0:
            if self._gp_eigmin is None:
                K = np.asarray(apply_operator(self.operator, jnp.eye(self.arch.n_paths)))
                ev = np.linalg.eigvalsh(K)
                self._gp_eigmin = float(ev[0] / max(ev[-1], 1e-300))
            if self._gp_eigmin < 1e-10:
                raise ValueError(
                    "temperature T = 0 needs a non-singular kernel, but the training kernel is singular "
                    f"(relative smallest eigenvalue {self._gp_eigmin:.2e}; e.g. P > n_paths * N0 or repeated "
                    "inputs). Use T > 0."
                )
        return t

    def _initial_theta(self, init) -> np.ndarray:
        if init is None and not any(self.skips):
            return np.zeros(parameter_count(self.sizes))  # the GP point
        Us = self.gp_order_parameters() if init is None else self._solution_matrices(init)
        return matrices_to_theta(self._check_order_parameters(Us, "init"), self.scales, self.skips, self.n_outputs)

    def _solution_matrices(self, init) -> list:
        if not isinstance(init, Solution):
            return init
        return init.order_parameters + ([np.atleast_2d(init.U_a)] if self.skips[-1] else [])

    def _check_order_parameters(self, Us: Sequence, name: str) -> list[np.ndarray]:
        """``[U^(1), ..., U^(L)]`` (and ``U_a`` after them with a skip at the top level) as float64 arrays, each of
        the right size, positive definite and with every skip block equal to the level above."""
        expected = "[U^(1), ..., U^(L), U_a]" if self.skips[-1] else "[U^(1), ..., U^(L)]"
        count = f"{'L + 1' if self.skips[-1] else 'L'} = {len(self.sizes)}"
        if not isinstance(Us, (list, tuple)):
            raise TypeError(f"{name} must be a list of {count} matrices {expected} (or a Solution); got "
                            f"{type(Us).__name__}.")
        Us = list(Us)
        if len(Us) != len(self.sizes):
            raise ValueError(f"{name} must hold {count} matrices {expected}; got {len(Us)}.")
        mats = [check_order_parameter(np.atleast_2d(U) if l == self.arch.n_layers else U,
                                      f"{name} {'U_a' if l == self.arch.n_layers else f'U^({l + 1})'}", size)
                for l, (U, size) in enumerate(zip(Us, self.sizes))]
        if any(self.skips):
            readout = jnp.asarray(mats[-1]) if self.skips[-1] else None
            check_ties([jnp.asarray(m) for m in mats[:self.arch.n_layers]], readout, self.arch.heads, self.skips,
                       self.n_outputs)
        return mats

    # ------------------------------------------------------------------ API
    def gp_order_parameters(self) -> list[np.ndarray]:
        """The GP point ``[U^(1), ..., U^(L)]``, with ``U_a = sigma_a^2 I`` after them when the top level has a
        skip connection (which ties ``U_a`` to ``U^(L)``)."""
        gp = gp_order_parameters(self.arch.heads, self.arch.variances, self.n_outputs, self.skips)
        return gp + ([self.arch.variances[-1] * np.eye(self.n_outputs)] if self.skips[-1] else [])

    def action(self, Us: Sequence, width, temperature) -> float:
        """``S/N`` at explicit order parameters (checked positive definite; with a skip at the top level, ``U_a``
        follows ``U^(L)`` in ``Us``)."""
        widths = self.arch.widths(width)
        t = self._check_temperature(temperature)
        mats = [jnp.asarray(U) for U in self._check_order_parameters(Us, "Us")]
        L = self.arch.n_layers
        return float(_action(mats[:L], self.operator, self.targets, t, widths, self.arch.heads, self.arch.variances,
                             self.skips, mats[L] if self.skips[-1] else None))

    def solve(self, width, temperature, init=None, tol: float = 1e-9, max_iter: int = 5000,
              rtol: float = 0.0) -> Solution:
        """Minimise ``S/N`` at widths ``width`` (N, or a tuple ``(n_0..n_L)``; a list is refused, being
        the spelling of several width points in :meth:`sweep`) and temperature ``T``.

        Starts at the GP point unless ``init`` (a :class:`Solution` or list of matrices) is given.
        Stops once ``max |d(S/N)/dU| <= max(tol, rtol |S/N|)`` (``tol > 0``, ``rtol >= 0``), after
        ``max_iter >= 1`` iterations or when the line search fails; the last two return an
        unconverged :class:`Solution` with a :class:`ConvergenceWarning`.

        Example:
          >>> from paththeory.tasks.examples import model_problem
          >>> arch, _, x = model_problem("mean")
          >>> theory = Theory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]))
          >>> sol = theory.solve(10, 0.1)
          >>> bool(np.allclose(sol.U, sol.U.T)), sol.temperature
          (True, 0.1)
        """
        return self.solve_many([_one_point(width)], [temperature], [init], tol=tol, max_iter=max_iter, rtol=rtol)[0]

    def solve_many(self, widths: Sequence, temperatures: Sequence, inits: Sequence | None = None,
                   tol: float = 1e-9, max_iter: int = 5000, rtol: float = 0.0) -> list[Solution]:
        """Solve several ``(width, temperature)`` points at once in one batched L-BFGS run.

        Args:
          widths: one width (N or ``(n_0..n_L)``) per point.
          temperatures: one temperature per point.
          inits: optional start points (:class:`Solution`, list of matrices or ``None``).
          tol, max_iter, rtol: as in :meth:`solve`.
        Returns:
          one :class:`Solution` per point; ``report["seconds"]`` is the time of the whole batch.
        """
        tol, rtol = check_positive(tol, "tol"), check_nonnegative(rtol, "rtol")
        max_iter = check_count(max_iter, "max_iter")
        widths = _points(_width_points(widths, "solve_many"), "widths")
        temperatures = _points(temperatures, "temperatures")
        if len(widths) != len(temperatures):
            raise ValueError(f"got {len(widths)} widths but {len(temperatures)} temperatures; pass one of each per "
                             "point.")
        inits = [None] * len(widths) if inits is None else list(inits)
        if len(inits) != len(widths):
            raise ValueError(f"got {len(inits)} inits for {len(widths)} points; pass one (or None) per point.")
        all_widths = [self.arch.widths(w) for w in widths]
        temps = [self._check_temperature(t) for t in temperatures]
        theta0 = jnp.asarray(np.stack([self._initial_theta(i) for i in inits]))
        use_hessian = self.hessian and tol < HESSIAN_SWITCH
        op, targets, low_op, features, mask = self._solver_data
        start = time.perf_counter()
        state, mats = _minimise_many_jit(
            theta0, op, targets, jnp.asarray(temps), jnp.asarray(all_widths),
            jnp.asarray(tol), jnp.asarray(max_iter), low_op, features if use_hessian else None,
            jnp.asarray(rtol), mask,
            sizes=self.sizes, scales=self.scales, heads=self.arch.heads, variances=self.arch.variances,
            skips=self.skips, sequential=jax.default_backend() == "cpu",
        )
        mats = [np.asarray(m) for m in mats]
        seconds = time.perf_counter() - start
        if not np.all(np.isfinite(np.asarray(state.f))):
            raise ValueError("the action is not finite at the start point; check features, labels and temperature.")
        solutions = []
        L = self.arch.n_layers
        for b, (ws, t) in enumerate(zip(all_widths, temps)):
            Us = [m[b] for m in mats[:L]]
            status = int(state.status[b])
            report = {
                "grad_norm": float(state.gmax[b]),
                "iterations": int(state.it[b]),
                "evaluations": int(state.evals[b]),
                "seconds": seconds,
                "batch_size": len(temps),
                "converged": status == 1,
                "status": STATUS[status],
                "action": float(state.f[b]),
                "tolerance": tol,
                "rtol": rtol,
                "precision": self.precision,
                "hessian": use_hessian,
                "kernel_backend": type(self.operator).__name__,
            }
            heads = self.arch.heads
            U_a = mats[L][b] if self.skips[-1] else np.asarray(readout_order_parameter(
                partial_trace(Us[-1], heads[-1], self.n_outputs), ws, heads, self.arch.variances))
            U_a = U_a if self.y.ndim == 2 else float(U_a[0, 0])
            solutions.append(Solution(Us[0], Us[1:], U_a, ws, t, report, weakref.ref(self)))
            if not report["converged"]:
                _warn_unconverged(report, ws, t)
        return solutions

    def sweep(self, widths, temperatures, **opts):
        """Solve on a grid of widths and temperatures, reusing the kernel operator.

        All widths of one temperature are solved together (:meth:`solve_many`); each further
        temperature warm-starts every width from its solution at the previous temperature.
        ``widths`` is one number N or a list of widths (each N or a tuple ``(n_0..n_L)``; a tuple of
        widths is refused, being :meth:`solve`'s spelling of one point); ``temperatures`` one number or a list. The result has one list level per argument given as a list, temperatures outside:
        lists for both give ``grid[i_T][i_N]``, a scalar temperature a list over widths, a scalar
        width a list over temperatures, scalars for both one :class:`Solution`. ``opts`` go to
        :meth:`solve_many` (``tol``, ``max_iter``, ``rtol``).

        Example:
          >>> from paththeory.tasks.examples import model_problem
          >>> arch, _, x = model_problem("mean")
          >>> theory = Theory(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]))
          >>> grid = theory.sweep([10], [0.1, 1.0])  # one list of widths per temperature
          >>> [[round(float(np.linalg.norm(s.U - np.eye(6))), 2) for s in sols] for sols in grid]
          [[0.66], [0.12]]
          >>> [round(float(np.linalg.norm(s.U - np.eye(6))), 2) for s in theory.sweep(10, [0.1, 1.0])]
          [0.66, 0.12]
        """
        one_width, one_temperature = _is_scalar(_width_points(widths, "sweep")), _is_scalar(temperatures)
        ws = [widths] if one_width else _points(widths, "widths")
        temps = [temperatures] if one_temperature else _points(temperatures, "temperatures")
        grid, inits = [], None
        for t in temps:
            inits = self.solve_many(ws, [t] * len(ws), inits, **opts)
            grid.append(inits[0] if one_width else inits)
        return grid[0] if one_temperature else grid


def _is_scalar(value) -> bool:
    """Whether ``value`` is one number (not a list of points, nor one width per layer)."""
    return not isinstance(value, (list, tuple)) and np.ndim(value) == 0


def _one_point(width):
    """``width`` of one point: a number N or a tuple ``(n_0..n_L)``; a list (the spelling of several
    width points in :meth:`Theory.sweep`) is refused with the two spellings."""
    if isinstance(width, list):
        raise ValueError(f"solve takes one point: a width N, or the per-layer widths as a tuple (n_0, ..., n_L); got "
                         f"the list {width!r}. For {len(width)} width points use sweep({width!r}, T); for per-layer "
                         f"widths write {tuple(width)!r}.")
    return width


def _width_points(widths, caller: str):
    """``widths`` of several points: a number or a list; a tuple (the spelling of one point's per-layer
    widths in :meth:`Theory.solve`) is refused with the two spellings."""
    if isinstance(widths, tuple):
        raise ValueError(f"{caller} reads widths as points, a number N or a list [N_1, N_2, ...]; got the tuple "
                         f"{widths!r}, which solve reads as the per-layer widths (n_0, ..., n_L) of one point. Pass "
                         f"{list(widths)!r} for {len(widths)} width points, or [{widths!r}] for one point with these "
                         "per-layer widths.")
    return widths


def _points(values, name: str) -> list:
    """``values`` as a non-empty list with one entry per point."""
    try:
        out = list(values)
    except TypeError:
        raise TypeError(f"{name} must be a list with one entry per point; got {type(values).__name__} "
                        f"{values!r}.") from None
    if not out:
        raise ValueError(f"{name} is empty; pass at least one point.")
    return out


def _unconverged_advice(x64: bool | None = None) -> str:
    """What to change after an unconverged solve: float64 first when JAX runs in float32 (``x64``:
    whether it runs in float64; default JAX's current setting)."""
    if not (jax.config.jax_enable_x64 if x64 is None else x64):
        return ("JAX runs in float32 here (PATHTHEORY_NO_X64 was set, or x64 was switched off after "
                "`import paththeory`), and the solver's tolerances need float64: unset PATHTHEORY_NO_X64 or call "
                "jax.config.update('jax_enable_x64', True) before solving; more iterations will not help")
    return "Raise max_iter, loosen tol, or set rtol where |S/N| is large"


def _warn_unconverged(report: dict, widths: tuple[float, ...], temperature: float) -> None:
    target = max(report["tolerance"], report["rtol"] * abs(report["action"]))
    warnings.warn(
        f"the solve at widths {widths}, temperature T = {temperature:g} stopped unconverged "
        f"({report['status']}, {report['iterations']} iterations): max |d(S/N)/dU| = {report['grad_norm']:.3g} "
        f"> {target:.3g} (tol = {report['tolerance']:g}, rtol = {report['rtol']:g}, S/N = {report['action']:.6g}). "
        f"{_unconverged_advice()}; the Solution has report['converged'] = False.",
        ConvergenceWarning,
        stacklevel=3,
    )


def solve(arch: Architecture, features, y, width, temperature, **opts) -> Solution:
    """One-call solver: ``Theory(arch, features, y).solve(width, temperature, **opts)``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> sol = solve(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), 10, 0.1)
      >>> sol.U.shape, sol.report["converged"]
      ((6, 6), True)
    """
    width = _one_point(width)
    return _theory(arch, features, y, opts).solve(width, temperature, **opts)


def sweep(arch: Architecture, features, y, widths, temperatures, **opts):
    """One-call sweep: ``Theory(arch, features, y).sweep(widths, temperatures, **opts)`` (same result shape).

    Book: The order parameter against the load P/N
    (https://paththeory.github.io/paththeory/book/gp_vs_finite.html#gp-vs-finite-load)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> sols = sweep(arch, pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0]), [10], 0.1)
      >>> [round(float(np.linalg.norm(s.U - np.eye(6))), 2) for s in sols]
      [0.66]
    """
    widths = _width_points(widths, "sweep")
    return _theory(arch, features, y, opts).sweep(widths, temperatures, **opts)


def _theory(arch: Architecture, features, y, opts: dict) -> Theory:
    """A :class:`Theory` from the one-call functions' options (pops ``memory_budget``, ``precision``, ``hessian``,
    ``backend``)."""
    return Theory(arch, features, y, opts.pop("memory_budget", DEFAULT_MEMORY_BUDGET), opts.pop("precision", "auto"),
                  opts.pop("hessian", None), opts.pop("backend", "auto"))
