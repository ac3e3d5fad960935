r"""The action S = entropy + energy for any depth L (paper Eqs. (11)-(12), App. B.1 Eqs. (32)-(34)).

Order parameters are passed as a list ``Us = [U^(1), U^(2), ..., U^(L)]`` (layer order;
the authors' code stores them reversed). ``U^(l)`` is symmetric positive definite of size
``prod_{m >= l} H_m``, indexed by partial paths ``(h_l, ..., h_L)`` with ``h_l`` slowest, and
``U = U^(1)`` is the path-by-path matrix that enters the kernel. The readout order parameter
``U_a`` is eliminated in closed form (:func:`readout_order_parameter`).

With widths ``n_0..n_L`` and variances ``(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)``:

.. math::

    \begin{aligned}
    S ={}& n_L \Big(\frac{U_a}{\sigma_a^2} - \ln U_a\Big)
        + n_{L-1} \Big(\frac{\operatorname{Tr} U^{(L)}}{\sigma_L^2 U_a} - \ln\det U^{(L)} + H_L \ln U_a\Big) \\
      &+ \sum_{l=1}^{L-1} n_{l-1} \Big(\frac{\operatorname{Tr}\big[(U^{(l+1)})^{-1}
        \operatorname{Tr}_{h_l} U^{(l)}\big]}{\sigma_l^2}
        - \ln\det U^{(l)} + H_l \ln\det U^{(l+1)}\Big) \\
      &+ \ln\det(K_U + T I) + y^\top (K_U + T I)^{-1} y .
    \end{aligned}

With ``C`` outputs (labels ``Y[P, C]``; book: the many-outputs chapter) every ``U^(l)`` carries the output index too,
slowest: ``(c, h_l, ..., h_L)``, size ``C prod_{m >= l} H_m``; ``U_a`` is ``C x C``, ``ln U_a`` becomes
``ln det U_a``, ``Tr U^(L) / U_a`` becomes ``Tr[U_a^{-1} Tr_{h_L} U^(L)]``, the partial traces keep
``c``, and the energy acts on the ``(C P) x (C P)`` kernel with ``y = vec(Y)`` (output index slowest).
One output is the case ``C = 1`` of the same formulas.

Linear MLP blocks and skip connections (the paper's outlook, §5; the book's chapter "The residual
stream") use the same formulas level by level. An MLP block is a level with one head. A level inside a
skip connection (``skips[l]``) has ``B_l = H_l + 1`` branches, the skip first: ``U^(l)`` is indexed
``(c, b_l, ..., b_L)``, its skip block equals the level above exactly (``U^(l)_{00} = U^(l+1)``, with
``U^(L+1) = U_a``), the trace runs over the ``H_l`` weighted branches only and ``B_l`` multiplies
``ln det U^(l+1)`` (the Jacobian of the Schur complement). A skip at the top level ties ``U_a`` to
``U^(L)``, which is then an order parameter of its own (no closed form).

The solver minimises ``S / N`` with ``N = max_l n_l`` (a normalisation of ours: the minimiser is
that of ``S``, and ``S / N`` stays of order one as the widths grow).
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import (
    as_float_array,
    check_count,
    check_flag,
    check_heads,
    check_nonnegative,
    check_order_parameter,
    check_positive,
    check_positive_definite,
    check_symmetric,
    require_finite,
)

Array = jax.Array


def _traced(value) -> bool:
    return isinstance(value, jax.core.Tracer)


def check_network(widths, heads, variances) -> tuple[tuple, tuple[int, ...], tuple]:
    """``(widths, heads, variances)`` of an L-layer network, checked against each other: ``L >= 1`` head counts,
    ``L + 1`` widths ``(n_0..n_L)`` and ``L + 2`` variances, all finite and positive (traced widths pass).

    Book: Any depth (https://paththeory.github.io/paththeory/book/depth.html#derivation-any-depth)

    Example:
      >>> check_network([10, 10, 30], (2, 3), (1, 1, 0.8, 1.5))
      ((10.0, 10.0, 30.0), (2, 3), (1.0, 1.0, 0.8, 1.5))
    """
    heads = check_heads(heads)
    n = len(heads)
    return (_positive_numbers(widths, "widths", n + 1, f"(n_0..n_L) for heads {heads}"), heads,
            _positive_numbers(variances, "variances", n + 2, "(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)"))


def _positive_numbers(values, name: str, count: int, meaning: str) -> tuple:
    """``values`` as a tuple of ``count`` positive numbers (traced entries pass unchecked)."""
    if not isinstance(values, (list, tuple, np.ndarray, jax.Array)):
        raise TypeError(f"{name} must be a sequence of {count} numbers {meaning}; got {type(values).__name__} "
                        f"{values!r}.")
    if len(values) != count:
        raise ValueError(f"{name} must hold {count} numbers {meaning}; got {len(values)}.")
    return tuple(v if _traced(v) else check_positive(v, f"{name}[{i}]") for i, v in enumerate(values))


def check_skips(skips, n_levels: int) -> tuple[bool, ...]:
    """``skips`` as ``n_levels`` booleans (``None``: no skip connection anywhere).

    Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-theory)

    Example:
      >>> check_skips(None, 2), check_skips([True, False], 2)
      ((False, False), (True, False))
    """
    if skips is None:
        return (False,) * n_levels
    if not isinstance(skips, (list, tuple)) or len(skips) != n_levels or not all(
            isinstance(s, (bool, np.bool_)) for s in skips):
        raise ValueError(f"skips must be {n_levels} booleans, one per level (Architecture.skips); got {skips!r}.")
    return tuple(bool(s) for s in skips)


def order_parameter_sizes(heads: Sequence[int], n_outputs: int = 1, skips: Sequence[bool] | None = None) -> list[int]:
    """Sizes of ``U^(1), ..., U^(L)``: ``C prod_{m >= l} B_m`` for ``C`` outputs, ``B_m = H_m + 1`` at a skip level.

    Book: Any depth (https://paththeory.github.io/paththeory/book/depth.html#derivation-any-depth)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Example:
      >>> order_parameter_sizes((2, 3)), order_parameter_sizes((2, 3), n_outputs=2)
      ([6, 3], [12, 6])
      >>> order_parameter_sizes((2, 3), skips=(True, True))
      [12, 4]
    """
    heads, n_outputs = check_heads(heads), check_count(n_outputs, "n_outputs")
    branches = [h + s for h, s in zip(heads, check_skips(skips, len(heads)))]
    return [n_outputs * int(np.prod(branches[l:])) for l in range(len(heads))]


def gp_order_parameters(heads: Sequence[int], variances: Sequence[float], n_outputs: int = 1,
                        skips: Sequence[bool] | None = None) -> list[np.ndarray]:
    """The GP point ``U^(l) = sigma_a^2 prod_{m >= l} sigma_m^2 I``: the minimum of the entropy ``S_ent``
    (:func:`entropy`), which enters the action with a plus sign in this package. The paper (§3.1,
    App. B.1) uses the opposite sign for its entropy and so calls the GP point its maximum.

    With ``C`` outputs the identity is ``C prod_{m >= l} H_m`` square: independent GPs per output. At a
    skip level the point is ``blockdiag(U^(l+1), sigma_l^2 I_{H_l} x U^(l+1))`` (a skip adds no variance),
    still diagonal.

    Book: The GP point (corollary) (https://paththeory.github.io/paththeory/book/depth.html#cor-gp-point)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Example:
      >>> [round(float(u[0, 0]), 4) for u in gp_order_parameters((2, 3), (1.0, 0.6, 1.7, 2.1))]
      [2.142, 3.57]
      >>> [np.diag(u).tolist() for u in gp_order_parameters((1,), (1.0, 0.5, 2.0), skips=(True,))]
      [[2.0, 1.0]]
    """
    sizes = order_parameter_sizes(heads, n_outputs, skips)
    skips = check_skips(skips, len(sizes))
    variances = _positive_numbers(variances, "variances", len(sizes) + 2,
                                  "(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)")
    for l in range(len(sizes)):
        level_scale(l, variances)  # the GP values in float64's range, or a clear error
    diag, out = np.array([variances[-1]]), []
    for l in reversed(range(len(sizes))):  # one output's diagonal, built top-down
        diag = np.concatenate(([diag] if skips[l] else []) + [variances[l + 1] * diag] * heads[l])
        out.append(np.diag(np.tile(diag, n_outputs)))
    return out[::-1]


def level_scale(l: int, variances: Sequence[float]) -> float:
    """``sigma_a^2 prod_{m > l} sigma_m^2`` for 0-based layer index ``l`` (the GP value of ``U^(l+1)``).

    Book: The GP point (corollary) (https://paththeory.github.io/paththeory/book/depth.html#cor-gp-point)

    Example:
      >>> round(level_scale(0, (1.0, 0.6, 1.7, 2.1)), 4), round(level_scale(1, (1.0, 0.6, 1.7, 2.1)), 4)
      (2.142, 3.57)
    """
    count = max(len(variances), 3) if isinstance(variances, (list, tuple, np.ndarray)) else 3
    variances = _positive_numbers(variances, "variances", count, "(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2), L >= 1")
    l = check_count(l, "l", minimum=0)
    if l > len(variances) - 3:
        raise ValueError(f"l must be a 0-based layer index below L = {len(variances) - 2}; got {l}.")
    with np.errstate(over="ignore", under="ignore"):  # out of range: the error below
        scale = float(variances[-1] * np.prod(variances[1 + l : -1]))
    if not 0 < scale < np.inf:
        raise ValueError(f"the variances {variances} give sigma_a^2 prod_(m > l) sigma_m^2 = {scale:g} at l = {l}, "
                         "outside float64's range; rescale them.")
    return scale


def partial_trace(U: Array, n_heads: int, n_outputs: int = 1, skip: bool = False) -> Array:
    """``(Tr_{h_l} U^(l))_{(c, pi'), (c', sigma')} = sum_h U_{(c, h, pi'), (c', h, sigma')}``: the trace over
    the head index after the (slowest) output index ``c``. With ``skip`` the level's first branch is its skip,
    which the trace leaves out (it carries no weights).

    Book: Any depth (https://paththeory.github.io/paththeory/book/depth.html#derivation-any-depth)

    Example:
      >>> print(np.asarray(partial_trace(jnp.eye(4), 2)))
      [[2. 0.]
       [0. 2.]]
      >>> print(np.asarray(partial_trace(jnp.diag(jnp.array([5.0, 1.0, 2.0])), 2, skip=True)))
      [[3.]]
    """
    U = jnp.asarray(as_float_array(U, "U"))
    n_heads, n_outputs = check_count(n_heads, "n_heads"), check_count(n_outputs, "n_outputs")
    skip = check_flag(skip, "skip")
    branches = n_heads + skip
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] % (n_outputs * branches):
        raise ValueError(f"U must be a square matrix whose size is a multiple of n_outputs * "
                         f"{'(n_heads + 1)' if skip else 'n_heads'} = {n_outputs * branches}; got shape {U.shape}.")
    m = U.shape[0] // (n_outputs * branches)
    u = U.reshape(n_outputs, branches, m, n_outputs, branches, m)[:, skip:, :, :, skip:, :]
    return jnp.einsum("chadhb->cadb", u).reshape(n_outputs * m, n_outputs * m)


def skip_block(U: Array, n_branches: int, n_outputs: int = 1) -> Array:
    """The skip block ``U^(l)_{00}`` of a skip level (its first branch), ``(C m) x (C m)``: equal to ``U^(l+1)``.

    Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-theory)

    Example:
      >>> print(np.asarray(skip_block(jnp.diag(jnp.array([5.0, 1.0, 2.0])), 3)))
      [[5.]]
    """
    m = U.shape[0] // (n_outputs * n_branches)
    return U.reshape(n_outputs, n_branches, m, n_outputs, n_branches, m)[:, 0, :, :, 0, :].reshape(
        n_outputs * m, n_outputs * m)


def sqrtm_pd(M: Array) -> Array:
    """The positive square root ``S`` of a symmetric positive-definite ``M`` (eigendecomposition).

    Its derivative ``dS`` solves the Sylvester equation ``S dS + dS S = dM`` (a ``C^2`` linear system),
    so it is differentiable to any order, also at repeated eigenvalues (where the eigenvectors' are not).

    Book: The result for one layer (https://paththeory.github.io/paththeory/book/derivation.html#derivation-one-layer)

    Example:
      >>> print(np.asarray(sqrtm_pd(jnp.array([[4.0, 0.0], [0.0, 9.0]]))))
      [[2. 0.]
       [0. 3.]]
    """
    return _sqrtm_pd(jnp.asarray(as_float_array(M, "M", ndim=2)))


@jax.custom_jvp
def _sqrtm_pd(M: Array) -> Array:
    if M.shape[0] == 1:
        return jnp.sqrt(M)
    lam, vecs = jnp.linalg.eigh(M)
    return (vecs * jnp.sqrt(jnp.maximum(lam, 0.0))) @ vecs.T


@_sqrtm_pd.defjvp
def _sqrtm_pd_jvp(primals, tangents):
    (M,), (dM,) = primals, tangents
    S = _sqrtm_pd(M)
    eye = jnp.eye(M.shape[0], dtype=M.dtype)
    sylvester = jnp.kron(S, eye) + jnp.kron(eye, S)  # row-major vec(S X + X S)
    return S, jnp.linalg.solve(sylvester, dM.reshape(-1)).reshape(M.shape)


def readout_order_parameter(traced_last: Array, widths: Sequence[float], heads: Sequence[int], variances) -> Array:
    """``U_a``, the positive-definite root of ``U_a^2 + beta_a U_a - gamma_a = 0`` (stationarity of paper Eq. (32)).

    ``beta_a = sigma_a^2 (H_L n_{L-1} / n_L - 1)``,
    ``gamma_a = sigma_a^2 n_{L-1} Tr_{h_L} U^(L) / (sigma_L^2 n_L)``. With ``C`` outputs ``U_a`` and
    ``Tr_{h_L} U^(L)`` (``traced_last``) are ``C x C`` and commute:
    ``U_a = sqrt(beta_a^2 / 4 + gamma_a) - beta_a / 2`` (matrix square root); a scalar ``traced_last``
    (``Tr U^(L)``, one output) gives a scalar.

    Book: The result at any depth (https://paththeory.github.io/paththeory/book/depth.html#derivation-any-depth)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Example:
      >>> round(float(readout_order_parameter(2.5, (10.0, 10.0, 30.0), (2, 3), (1.0, 1.0, 0.8, 1.5))), 6)
      1.25
    """
    widths, heads, variances = check_network(widths, heads, variances)
    n_prev, n_last = widths[-2], widths[-1]
    var_a, var_last = variances[-1], variances[-2]
    u = traced_last if _traced(traced_last) else _readout_trace(traced_last)
    traced = jnp.atleast_2d(u)
    half_beta = 0.5 * var_a * (heads[-1] * n_prev / n_last - 1.0)
    gamma = var_a * n_prev * traced / (var_last * n_last)
    eye = jnp.eye(traced.shape[0], dtype=traced.dtype)
    root = (sqrtm_pd(half_beta**2 * eye + gamma) - half_beta * eye).reshape(u.shape)
    return require_finite(root, "readout_order_parameter", "traced_last, the widths or the variances are too large "
                                                           "for float64; rescale them.")


def _readout_trace(traced_last) -> Array:
    """A concrete ``Tr_{h_L} U^(L)``: a number >= 0, or a ``[C, C]`` positive semi-definite matrix."""
    t = as_float_array(traced_last, "traced_last", ndim=(0, 2))
    if t.ndim == 0:
        check_nonnegative(float(t), "traced_last (Tr U^(L))")
    else:
        check_positive_definite(t, "traced_last (Tr_{h_L} U^(L))", semi=True)
    return jnp.asarray(t)


# The entropy's matrices are small (``C n x C n`` at most), but its derivatives are taken to second order (the
# solver's Hessian restart): differentiated through the factorisations, each order adds triangular solves and their
# transposes (the restart at the Omniglot size with C = 3 held 59 triangular solves, 17 now). With the derivatives
# written through the inverse, ``d ln det U = Tr(U^{-1} dU)`` and ``dU^{-1} = -U^{-1} dU U^{-1}``, every order past
# the first is matrix products. Along symmetric directions (the only ones the solver takes) they equal the
# factorisations' derivatives to rounding.


@jax.custom_jvp
def _inverse_pd(U: Array) -> Array:
    """``U^{-1}`` of a symmetric positive-definite ``U`` from its Cholesky factor; tangent ``-U^{-1} dU U^{-1}``
    (``U`` and ``dU`` symmetrised, as ``jax.numpy.linalg.cholesky`` symmetrises its input)."""
    chol = jnp.linalg.cholesky(U)
    return jax.scipy.linalg.cho_solve((chol, True), jnp.eye(U.shape[0], dtype=U.dtype))


@_inverse_pd.defjvp
def _inverse_pd_jvp(primals, tangents):
    (U,), (dU,) = primals, tangents
    inverse = _inverse_pd(U)
    return inverse, -(inverse @ (0.5 * (dU + dU.T)) @ inverse)


@jax.custom_jvp
def _logdet_factor(U: Array) -> Array:
    """``ln det U`` of a symmetric positive-definite ``U`` from its Cholesky factor; tangent ``Tr(U^{-1} dU)``
    (symmetrised, as in ``_inverse_pd``)."""
    return 2.0 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(U))))


@_logdet_factor.defjvp
def _logdet_factor_jvp(primals, tangents):
    (U,), (dU,) = primals, tangents
    return _logdet_factor(U), 0.5 * jnp.sum(_inverse_pd(U) * (dU + dU.T))


def _logdet_pd(U: Array) -> Array:
    if U.shape[0] == 1:  # one output's U_a: no factorisation (a LAPACK call per evaluation)
        return jnp.log(U[0, 0])
    return _logdet_factor(U)


def _trace_solve(A: Array, B: Array) -> Array:
    """``Tr(A^{-1} B)`` for a symmetric positive-definite ``A``."""
    if A.shape[0] == 1:
        return B[0, 0] / A[0, 0]
    return jnp.sum(_inverse_pd(A).T * B)


def entropy_with_readout(Us: Sequence[Array], U_a: Array, widths, heads, variances,
                         skips: Sequence[bool] | None = None) -> Array:
    """The entropy part of S (not divided by N) at a given ``U_a``.

    Book: The action at any depth (proposition)
    (https://paththeory.github.io/paththeory/book/depth.html#prop-action-any-depth)

    Example:
      >>> Us = [jnp.eye(4), jnp.eye(2)]
      >>> round(float(entropy_with_readout(Us, 1.0, (10.0, 10.0, 10.0), (2, 2), (1.0,) * 4)), 6)
      70.0
    """
    widths, heads, variances = check_network(widths, heads, variances)
    skips = check_skips(skips, len(heads))
    Us = _check_order_parameters(Us, heads, skips)
    readout = _check_readout(U_a, Us[-1].shape[0] // (heads[-1] + skips[-1]))
    check_ties(Us, readout, heads, skips)
    return _entropy(Us, readout, widths, heads, variances, skips)


def _check_order_parameters(Us, heads: tuple[int, ...], skips: tuple[bool, ...]) -> list[Array]:
    """``Us = [U^(1), ..., U^(L)]`` as arrays after checking there is one per level of ``heads``, each of size
    ``C prod_{m >= l} B_m`` and (concrete ones) finite, symmetric and positive definite."""
    if not isinstance(Us, (list, tuple)) or len(Us) != len(heads):
        got = len(Us) if isinstance(Us, (list, tuple)) else type(Us).__name__
        raise ValueError(f"Us must be a list of L = {len(heads)} matrices [U^(1), ..., U^(L)], one per layer of heads "
                         f"{heads}; got {got}.")
    last = Us[-1] if _traced(Us[-1]) else as_float_array(Us[-1], f"Us U^({len(heads)})", ndim=2)
    size, branches = last.shape[0], heads[-1] + skips[-1]
    if size % branches:
        raise ValueError(f"Us U^({len(heads)}) must be [C B_L, C B_L] (B_L = {branches} branches of the last level, C "
                         f"outputs); got shape {tuple(last.shape)}.")
    sizes = order_parameter_sizes(heads, size // branches, skips)
    return [jnp.asarray(check_order_parameter(U, f"Us U^({l + 1})", n)) for l, (U, n) in enumerate(zip(Us, sizes))]


def check_ties(Us: list[Array], readout: Array | None, heads: tuple[int, ...], skips: tuple[bool, ...],
               n_outputs: int = 1) -> None:
    """Raise unless every (concrete) skip level's skip block equals the level above (to 1e-9 of its scale);
    ``readout`` is ``U_a`` (``[C, C]``), the level above ``U^(L)``, needed only when the top level has a skip.

    Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-theory)
    """
    if readout is None and skips[-1]:
        raise ValueError("the top level has a skip connection, which ties U_a to U^(L): pass U_a as readout.")
    uppers = [*Us[1:], readout]
    n_outputs = n_outputs if readout is None else readout.shape[0]
    for l, skip in enumerate(skips):
        if not skip or _traced(Us[l]) or _traced(uppers[l]):
            continue
        block, upper = np.asarray(skip_block(Us[l], heads[l] + 1, n_outputs)), np.asarray(uppers[l])
        if not np.allclose(block, upper, rtol=0.0, atol=1e-9 * max(1.0, float(np.max(np.abs(upper))))):
            name = "U_a" if l == len(skips) - 1 else f"U^({l + 2})"
            raise ValueError(f"level {l + 1} has a skip connection, so the skip block of U^({l + 1}) must equal {name} "
                             f"exactly (the skip copies the level above); they differ by "
                             f"{np.max(np.abs(block - upper)):.3g}. Build it with that block, e.g. from a Solution.")


def _check_readout(U_a, n_outputs: int) -> Array:
    """``U_a`` as a ``[C, C]`` array: a positive number for one output, a positive-definite ``[C, C]`` matrix for
    ``C``; traced values get the shape check only."""
    readout = jnp.atleast_2d(U_a if _traced(U_a) else as_float_array(U_a, "U_a", ndim=(0, 2)))
    if readout.shape != (n_outputs, n_outputs):
        raise ValueError(f"U_a must be a number for one output, or [C, C] for C outputs (here C = {n_outputs}); got "
                         f"shape {jnp.shape(U_a)}.")
    if not _traced(readout):
        check_positive_definite(readout, "U_a")
    return readout


def _entropy(Us: list[Array], readout: Array, widths, heads, variances, skips: tuple[bool, ...]) -> Array:
    """:func:`entropy_with_readout` of checked arguments, ``readout`` the ``[C, C]`` ``U_a``: level by level,
    ``n_{l-1} [Tr((U^(l+1))^{-1} Tr_h U^(l)) / sigma_l^2 - ln det U^(l) + B_l ln det U^(l+1)]``."""
    n_outputs = readout.shape[0]
    uppers = [*Us[1:], readout]
    logdets = [_logdet_pd(U) for U in uppers]
    ent = widths[-1] * (jnp.trace(readout) / variances[-1] - logdets[-1])
    for l, (U, upper, logdet_upper) in enumerate(zip(Us, uppers, logdets)):  # U^(l+1): width n_l, variance sigma_{l+1}^2
        traced = partial_trace(U, heads[l], n_outputs, skips[l])
        ent += widths[l] * (_trace_solve(upper, traced) / variances[l + 1] - _logdet_pd(U)
                            + (heads[l] + skips[l]) * logdet_upper)
    return ent


def entropy(Us: Sequence[Array], widths, heads, variances, skips: Sequence[bool] | None = None) -> Array:
    """Entropy part of S with ``U_a`` at its closed-form root (not divided by N); a skip at the top level ties
    ``U_a`` to ``U^(L)`` and leaves no closed form (use :func:`entropy_with_readout`).

    Book: The action at any depth (proposition)
    (https://paththeory.github.io/paththeory/book/depth.html#prop-action-any-depth)

    Example:
      >>> Us = [jnp.eye(4), jnp.eye(2)]
      >>> round(float(entropy(Us, (10.0, 10.0, 10.0), (2, 2), (1.0,) * 4)), 6)
      70.0
    """
    widths, heads, variances = check_network(widths, heads, variances)
    skips = check_skips(skips, len(heads))
    if skips[-1]:
        raise ValueError("the top level has a skip connection, so U_a is the skip block of U^(L) and has no closed "
                         "form; pass it: entropy_with_readout(Us, U_a, ...), or action(..., U_a=U_a).")
    Us = _check_order_parameters(Us, heads, skips)
    n_outputs = Us[-1].shape[0] // heads[-1]
    U_a = jnp.atleast_2d(readout_order_parameter(partial_trace(Us[-1], heads[-1], n_outputs), widths, heads, variances))
    check_ties(Us, U_a, heads, skips)
    return _entropy(Us, U_a, widths, heads, variances, skips)


def energy(K: Array, y: Array, temperature) -> Array:
    """``ln det(K + T I) + y^T (K + T I)^{-1} y`` through a Cholesky factor.

    Its gradient is written out (reverse mode only): with ``G = (K + T I)^{-1}`` and ``b = G y``,
    ``dE/dK = G - b b^T``, ``dE/dy = 2 b``, ``dE/dT = Tr G - b.b``; ``G`` comes from the same
    Cholesky factor, which is cheaper than differentiating through the factorisation.

    Book: The energy: evidence and spectrum
    (https://paththeory.github.io/paththeory/book/order_parameter.html#order-parameter-energy)

    Example:
      >>> round(float(energy(jnp.eye(2), jnp.array([1.0, -1.0]), 1.0)), 6)
      2.386294
    """
    K, y, temperature = check_energy_inputs(K, y, temperature)
    return check_energy_result(_energy(K, y, temperature), K, temperature, "the energy")


def check_energy_inputs(K, y, temperature) -> tuple[Array, Array, float | Array]:
    """``(K, y, T)`` of the energy as arrays, after checking that ``K`` is a square ``[P, P]`` kernel (concrete:
    finite and symmetric), ``y`` its ``[P]`` finite targets and ``T >= 0``; traced values get the shape checks.

    Book: The energy: evidence and spectrum
    (https://paththeory.github.io/paththeory/book/order_parameter.html#order-parameter-energy)

    Example:
      >>> [np.shape(v) for v in check_energy_inputs(np.eye(2), [1.0, -1.0], 0.5)]
      [(2, 2), (2,), ()]
    """
    if not _traced(K):
        check_symmetric(as_float_array(K, "K", ndim=2), "K")
    if not _traced(y):
        as_float_array(y, "y", ndim=1)
    K, y = jnp.asarray(K), jnp.asarray(y)
    if K.ndim != 2 or K.shape[0] != K.shape[1] or K.shape[0] == 0 or y.shape != (K.shape[0],):
        raise ValueError(f"K must be a square [P, P] kernel and y its [P] targets; got shapes {K.shape} and {y.shape}.")
    return K, y, temperature if _traced(temperature) else check_nonnegative(temperature, "temperature")


def check_energy_result(value, K: Array, temperature, what: str):
    """``value`` (computed from a Cholesky factor of ``K + T I``) if it is finite or traced; else a ValueError
    saying why: ``K + T I`` is not positive definite, or too large for float64.

    Book: The energy: evidence and spectrum
    (https://paththeory.github.io/paththeory/book/order_parameter.html#order-parameter-energy)
    """
    leaves = jax.tree.leaves(value)
    if any(_traced(v) for v in leaves) or all(bool(jnp.all(jnp.isfinite(v))) for v in leaves):
        return value
    eig = float(np.linalg.eigvalsh(np.asarray(K, dtype=np.float64))[0]) + float(temperature)
    if eig > 0:
        raise ValueError(f"{what} came out non-finite: K + T I (smallest eigenvalue {eig:.3g}) or y are too large for "
                         "float64, or K + T I is too ill-conditioned; rescale them or raise T.")
    raise ValueError(f"{what} needs K + T I positive definite, but its smallest eigenvalue is {eig:.3g} (T = "
                     f"{float(temperature):g}). Pass a kernel K_U of a positive semi-definite U "
                     "(paththeory.kernels.kernel_matrix) and T >= 0, or raise T.")


def plus_diagonal(K: Array, value) -> Array:
    """``K + value I`` without forming ``I``: a broadcast identity is loop-invariant, so XLA hoists it out of the
    solver's loops and keeps it for the whole solve (288 MB at ``C P = 6000`` in float64).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> print(np.asarray(plus_diagonal(jnp.ones((2, 2)), 0.5)))
      [[1.5 1. ]
       [1.  1.5]]
    """
    i = jnp.arange(K.shape[0])
    return K.at[i, i].add(jnp.asarray(value, K.dtype))


@jax.custom_vjp
def _energy(K: Array, y: Array, temperature) -> Array:
    return _energy_factor(K, y, temperature)[0]


def _energy_factor(K: Array, y: Array, temperature) -> tuple[Array, tuple[Array, Array]]:
    chol = jnp.linalg.cholesky(plus_diagonal(K, temperature))
    alpha = jax.scipy.linalg.solve_triangular(chol, y, lower=True)
    value = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol))) + alpha @ alpha
    return value, (chol, alpha)


def _energy_fwd(K, y, temperature):
    value, (chol, alpha) = _energy_factor(K, y, temperature)
    return value, (chol, alpha, temperature)


def inverse_upper_triangular(R: Array, levels: int = 2, base: int = 32) -> Array:
    r"""``R^{-1}`` for an upper-triangular ``R`` by recursive halving (LAPACK's trtri, blocked):

    .. math::

        \begin{pmatrix} A & B \\ 0 & D \end{pmatrix}^{-1}
        = \begin{pmatrix} A^{-1} & -A^{-1} B D^{-1} \\ 0 & D^{-1} \end{pmatrix},

    ``levels`` times at most, with a triangular solve against the identity below (and for blocks of at most
    ``base`` rows). Most of its ``P^3 / 3`` flops are matrix products, faster on CPU than triangular solves
    against the identity (the solver at the size ``C P = 1800`` took 1.5x as long with one solve). The fixed
    depth keeps the program the same size at every size of ``R``: halving down to ``base`` rows unrolled 64
    solves at ``C P = 1800``, 18 times the instructions, in each copy of the objective.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> R = jnp.array([[2.0, 1.0], [0.0, 4.0]])
      >>> print(np.asarray(inverse_upper_triangular(R, base=1)))
      [[ 0.5   -0.125]
       [ 0.     0.25 ]]
    """
    R = jnp.asarray(R)
    n = R.shape[0]
    if levels <= 0 or n <= base:
        return jax.scipy.linalg.solve_triangular(R, jnp.eye(n, dtype=R.dtype), lower=False)
    h = n // 2
    a_inv = inverse_upper_triangular(R[:h, :h], levels - 1, base)
    d_inv = inverse_upper_triangular(R[h:, h:], levels - 1, base)
    top = jnp.concatenate([a_inv, -(a_inv @ R[:h, h:]) @ d_inv], axis=1)
    bottom = jnp.concatenate([jnp.zeros((n - h, h), R.dtype), d_inv], axis=1)
    return jnp.concatenate([top, bottom], axis=0)


def _energy_bwd(res, cot):
    chol, alpha, temperature = res
    # K + T I = R^T R with R = chol^T, so G = R^{-1} R^{-T} and b = R^{-1} alpha.
    r_inv = inverse_upper_triangular(chol.T)
    inverse = r_inv @ r_inv.T
    b = r_inv @ alpha
    dK = cot * (inverse - jnp.outer(b, b))
    dT = cot * (jnp.trace(inverse) - b @ b)
    return dK, cot * 2.0 * b, jnp.reshape(dT, jnp.shape(temperature)).astype(jnp.result_type(temperature))


_energy.defvjp(_energy_fwd, _energy_bwd)


def action(Us: Sequence[Array], K: Array, y: Array, temperature, widths, heads, variances,
           skips: Sequence[bool] | None = None, U_a=None) -> Array:
    """``S / N`` with ``N = max_l n_l`` for order parameters ``Us`` and the kernel ``K = K(U^(1))``.

    ``skips``: the levels inside a skip connection (``Architecture.skips``); ``U_a`` the readout order
    parameter, needed only when the top level has one (otherwise at its closed-form root).

    Book: The action at any depth (proposition)
    (https://paththeory.github.io/paththeory/book/depth.html#prop-action-any-depth)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> from paththeory.kernels import kernel_matrix
      >>> arch, _, x = model_problem()
      >>> Us = [jnp.eye(6), jnp.eye(2)]
      >>> K = kernel_matrix(Us[0], pt.path_features(arch, x))
      >>> round(float(action(Us, K, jnp.array([1.0, -1.0, 1.0, -1.0]), 0.1, (10.0,) * 3, arch.heads, arch.variances)), 4)
      9.4033
    """
    if U_a is None:
        ent = entropy(Us, widths, heads, variances, skips)  # checks the widths first
    else:
        ent = entropy_with_readout(Us, U_a, widths, heads, variances, skips)
    return (ent + energy(K, y, temperature)) / jnp.max(jnp.asarray(widths))


def single_path_entropy_minimum(U: float, depth: int) -> float:
    """Closed form for one path at depth L: ``min_inner S_ent / N = (L+1) U^{1/(L+1)} - ln U``.

    The deep linear network's form (Li & Sompolinsky 2021), derived for this model in the book's
    derivation chapter. Valid for one head per layer, equal widths and unit variances: the
    minimum over the inner order parameters makes the ``L + 1`` ratios ``U_a``, ``U^(L) / U_a``, ...,
    ``U^(1) / U^(2)`` equal, each ``U^{1/(L+1)}``.

    Book: The single-path entropy (corollary) (https://paththeory.github.io/paththeory/book/depth.html#cor-single-path)

    Example:
      >>> float(single_path_entropy_minimum(1.0, 2))
      3.0
    """
    u, depth = as_float_array(U, "U"), check_count(depth, "depth")
    if np.any(u <= 0):
        raise ValueError(f"U must be > 0 (a one-path order parameter); its smallest entry is {u.min():g}.")
    return (depth + 1) * u ** (1.0 / (depth + 1)) - np.log(u)


def inner_order_parameter_l2(U: np.ndarray, heads: Sequence[int], widths, variances, iterations: int = 2000,
                             tol: float = 1e-14) -> tuple[np.ndarray, float]:
    """For L = 2, the stationary ``U^(2)`` (and ``U_a``) given ``U = U^(1)`` (stationarity of paper Eq. (32)).

    Solves ``a (U2)^2 + b U2 - c u = 0`` with ``u = Tr_{h_1} U``, ``a = n_1 / (sigma_2^2 U_a)``,
    ``b = n_0 H_1 - n_1``, ``c = n_0 / sigma_1^2`` in the eigenbasis of ``u``, iterating ``U_a`` to
    its fixed point. An independent oracle for the jointly optimised inner order parameter.

    Book: Two layers: the inner order parameter
    (https://paththeory.github.io/paththeory/book/order_parameter.html#derivation-two-layers)

    Example:
      >>> U2, U_a = inner_order_parameter_l2(np.eye(4), (2, 2), (10.0, 10.0, 10.0), (1.0,) * 4)
      >>> print(np.round(U2, 4), round(U_a, 4))
      [[1. 0.]
       [0. 1.]] 1.0
    """
    widths, heads, variances = check_network(widths, heads, variances)
    if len(heads) != 2:
        raise ValueError(f"heads must be (H_1, H_2) of a two-layer network; got {heads}.")
    iterations, tol = check_count(iterations, "iterations"), check_positive(tol, "tol")
    h1, h2 = heads
    n0, n1, n2 = widths
    u = np.asarray(partial_trace(jnp.asarray(check_order_parameter(U, "U", h1 * h2, semi=True)), h1))
    lam, vecs = np.linalg.eigh(u)
    b = n0 * h1 - n1
    c = n0 / variances[1]
    U2 = np.eye(h2) * level_scale(1, variances)
    U_a = float(variances[-1])
    for _ in range(iterations):
        U_a = float(readout_order_parameter(np.trace(U2), (n0, n1, n2), heads, variances))
        a = n1 / (variances[2] * U_a)
        roots = (-b + np.sqrt(b * b + 4 * a * c * lam)) / (2 * a)
        new = (vecs * roots) @ vecs.T
        if np.max(np.abs(new - U2)) < tol:
            U2 = new
            break
        U2 = new
    return U2, U_a
