r"""Predictions of the theory: mean predictor, variance, accuracies, kernel-task alignment.

Paper Eq. (9) and App. B.1, Eqs. (29)-(30).

With :math:`K=K_U` on the training set, :math:`k_*=K_U(x^\mu,x_*)` and :math:`k_{**}=K_U(x_*,x_*)`:

.. math::

    \langle f(x_*)\rangle = k_*^\top (K+TI)^{-1} y, \qquad
    \operatorname{Var} f(x_*) = k_{**} - k_*^\top (K+TI)^{-1} k_* .

The variance is that of the network output (no ``+T``). With ``C`` outputs (labels ``[P, C]``) the
kernels are ``(C P) x (C P)`` with blocks ``K^{cd}``, ``y`` is ``vec(Y)`` (output index slowest), and
the same formulas give every output's mean and the output-output covariance
``Cov(f^c, f^d) = k^{cd}_{**} - (k^c_*)^T (K+TI)^{-1} k^d_*``.

The mean is computed in weight space: with :math:`\alpha=(K+TI)^{-1}y` and the path features
:math:`\xi^a`, :math:`\langle f^c(x_*)\rangle=\sum_a \xi^a(x_*)\cdot\sum_{d,b}U^{cd}_{ab}w^{db}`,
:math:`w^{db}=\sum_\mu \alpha^d_\mu \xi^b(x^\mu)`: ``O(P n N0 + P_test n^2 N0)`` operations instead
of the ``O(P P_test n N0)`` of the cross kernel :math:`k_*`, which only the variance needs
(:func:`mean_predictor` skips it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr
from scipy.linalg import lapack

from paththeory._checks import (
    as_float_array,
    check_count,
    check_nonnegative,
    check_sign_labels,
    check_symmetric,
    require_finite,
)
from paththeory.kernels import check_features, kernel_diagonal, kernel_matrix
from paththeory._labels import as_labels, stacked

Array = jax.Array
#: The largest error of the means, relative to the labels, that :func:`predictor` accepts: it refuses a
#: training kernel whose solve could be off by more, ``eps / rcond(K + T I)`` (round-off amplified by
#: the reciprocal condition number).
MAX_SOLVE_ERROR = 1e-6


def predictor(U, features_train, y, features_test, temperature, batch_size: int = 2048) -> tuple[Array, Array]:
    """Mean and variance of the network output on test inputs: ``([P_test], [P_test])``; for labels ``[P, C]``
    the means ``[P_test, C]`` and the output-output covariances ``[P_test, C, C]``.

    Book: Step 5: integrate the auxiliary variables: the predictor
    (https://paththeory.github.io/paththeory/book/derivation.html#derivation-step-predictor)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Args:
      U: ``[n_paths, n_paths]`` order parameter, symmetric positive semi-definite (``arch.gp_scale * I`` for the GP);
        ``C n_paths`` square (blocks ``U^{cd}``, output index slowest) for ``C`` outputs.
      features_train: ``[P, n_paths, N0]``; features_test: ``[P_test, n_paths, N0]``.
      y: ``[P]`` training targets, or ``[P, C]`` for ``C`` outputs.
      temperature: Gibbs temperature ``T >= 0`` added to the training kernel.
      batch_size: test points per batch of the cross kernel.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> f = pt.path_features(arch, x)
      >>> mean, var = predictor(arch.gp_scale * np.eye(6), f[:3], np.array([1.0, -1.0, 1.0]), f, 0.1)
      >>> mean.shape, var.shape, bool(np.all(var > -1e-12))
      ((4,), (4,), True)
    """
    fit = _fit(U, features_train, y, features_test, temperature)
    u, ftr, fte, c, chol = fit["U"], fit["train"], fit["test"], fit["outputs"], fit["chol"]
    batch_size = check_count(batch_size, "batch_size")
    variances = []
    for start in range(0, fte.shape[0], batch_size):
        fb = fte[start : start + batch_size]
        k_star = kernel_matrix(u, ftr, fb, n_outputs=c)  # [C P, C b]
        v = jax.scipy.linalg.solve_triangular(chol, k_star, lower=True).reshape(chol.shape[0], c, -1)
        prior = kernel_diagonal(u, fb, n_outputs=c).reshape(-1, c, c)
        variances.append(prior - jnp.einsum("rcj,rdj->jcd", v, v))  # [b, C, C]
    cov = jnp.concatenate(variances)
    if np.ndim(y) == 1:
        cov = cov[:, 0, 0]
    return _mean(fit, np.ndim(y) == 1), require_finite(cov, "the predictor's variance", _TOO_LARGE)


def mean_predictor(U, features_train, y, features_test, temperature) -> Array:
    """The mean of :func:`predictor` alone, without the cross kernel the variance needs: ``[P_test]``,
    or ``[P_test, C]`` for labels ``[P, C]`` (the paper's Eq. 29). Same arguments and checks.

    Book: Step 5: integrate the auxiliary variables: the predictor
    (https://paththeory.github.io/paththeory/book/derivation.html#derivation-step-predictor)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> f = pt.path_features(arch, x)
      >>> U, y = arch.gp_scale * np.eye(6), np.array([1.0, -1.0, 1.0])
      >>> bool(np.allclose(mean_predictor(U, f[:3], y, f, 0.1), predictor(U, f[:3], y, f, 0.1)[0]))
      True
    """
    return _mean(_fit(U, features_train, y, features_test, temperature), np.ndim(y) == 1)


_TOO_LARGE = "the features, U or y are too large for float64, or T is too small for this kernel; rescale them."


def _fit(U, features_train, y, features_test, temperature) -> dict:
    """The checked inputs, the Cholesky factor of ``K + T I`` and ``alpha = (K + T I)^{-1} vec(Y)``."""
    ftr = check_features(features_train, "features_train")
    fte = check_features(features_test, "features_test")
    if fte.shape[1:] != ftr.shape[1:]:
        raise ValueError(f"features_test must be [P_test, n_paths={ftr.shape[1]}, N0={ftr.shape[2]}] like features_train; "
                         f"got {tuple(fte.shape)}.")
    labels = as_labels(y, ftr.shape[0])
    c = labels.shape[1]
    t = check_nonnegative(temperature, "temperature")
    K = kernel_matrix(U, ftr, n_outputs=c)  # checks U: symmetric positive semi-definite
    chol = jnp.linalg.cholesky(K + t * jnp.eye(K.shape[0]))
    _check_conditioning(K, chol, t)
    alpha = jax.scipy.linalg.cho_solve((chol, True), jnp.asarray(stacked(labels)))
    return {"U": jnp.asarray(np.asarray(U, dtype=float)), "train": ftr, "test": fte, "outputs": c, "chol": chol, "alpha": alpha}


def _mean(fit: dict, single: bool) -> Array:
    """``<f^c(x_*)> = sum_a xi^a(x_*) . sum_{d,b} U^{cd}_ab w^{db}`` with ``w^{db} = sum_mu alpha^d_mu xi^b(x^mu)``."""
    ftr, c = fit["train"], fit["outputs"]
    n = ftr.shape[1]
    w = jnp.einsum("dp,pbn->dbn", fit["alpha"].reshape(c, ftr.shape[0]), ftr)
    readout = jnp.einsum("cadb,dbn->can", fit["U"].reshape(c, n, c, n), w)
    mean = jnp.einsum("jan,can->jc", fit["test"], readout)
    return require_finite(mean[:, 0] if single else mean, "the predictor's mean", _TOO_LARGE)


def _check_conditioning(K: Array, chol: Array, t: float) -> None:
    """Raise unless the Cholesky factor ``chol`` of ``K + T I`` is finite and its solve accurate to
    :data:`MAX_SOLVE_ERROR` (LAPACK's condition estimate, ``O(P^2)``)."""
    singular = ("(the kernel is singular or nearly so, e.g. more examples than n_paths * N0, or repeated inputs)")
    k_norm = float(jnp.max(jnp.sum(jnp.abs(K), axis=0)))  # 1-norm, as LAPACK's estimate
    eps = float(jnp.finfo(chol.dtype).eps)
    # rcond_1(K + T I) >= T / (sqrt(P) ||K + T I||_1): this T keeps eps / rcond below the bound
    advice = f"raise T to about {np.sqrt(K.shape[0]) * k_norm * eps / MAX_SOLVE_ERROR:.0e} or more."
    if not bool(jnp.all(jnp.isfinite(chol))):
        raise ValueError(f"the training kernel K_U + T I is singular at temperature T = {t:g} {singular}; {advice}")
    rcond, info = lapack.dpocon(np.asarray(chol, np.float64), k_norm + t, uplo="L")
    if info != 0 or not eps / max(rcond, 1e-300) <= MAX_SOLVE_ERROR:
        raise ValueError(
            f"the training kernel K_U + T I is too ill-conditioned at temperature T = {t:g} (reciprocal condition "
            f"number {rcond:.1e}) {singular}: the means could be off by up to {min(eps / max(rcond, 1e-300), 1.0):.0e} "
            f"of the labels' scale. To solve it accurately, {advice}"
        )


def accuracy(mean, y) -> float:
    """Classification accuracy ``mean_mu Theta(y^mu <f(x^mu)>)`` for labels ``+-1``.

    Book: Accuracy against width (Fig. 2c) (https://paththeory.github.io/paththeory/book/markov.html#markov-accuracy)

    Example:
      >>> round(accuracy(np.array([0.3, -1.2, 0.5]), np.array([1.0, -1.0, -1.0])), 3)
      0.667
    """
    m, t = _matching(mean, "mean", y)
    return float(np.mean(np.sign(m) * np.sign(t) > 0))


def _matching(values, name: str, y) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and labels ``y`` (``-1`` or ``+1``) as finite, non-empty float arrays of the same shape."""
    v, t = as_float_array(values, name), check_sign_labels(y, "y")
    if v.shape != t.shape:
        raise ValueError(f"{name} and y must have the same shape; got {v.shape} and {t.shape}.")
    return v, t


def soft_accuracy(mean, variance, y) -> float:
    """``mean_mu Phi(y^mu <f> / sqrt(Var f))``, the probability of a correct sign under the posterior.

    Book: The predictor's variance (https://paththeory.github.io/paththeory/book/markov.html#markov-variance)

    Example:
      >>> round(soft_accuracy(np.array([1.0, -1.0]), np.array([1.0, 1.0]), np.array([1.0, -1.0])), 4)
      0.8413
    """
    m, t = _matching(mean, "mean", y)
    v, _ = _matching(variance, "variance", y)
    if np.any(v < -1e-10 * max(1.0, float(np.max(np.abs(v))))):  # beyond round-off of a zero variance
        raise ValueError(f"variance must be >= 0 (a posterior variance); its smallest entry is {v.min():.3g}.")
    return float(np.mean(ndtr(t * m / np.sqrt(np.maximum(v, 1e-300)))))


def pc_label_overlap(K, y, k: int = 30) -> np.ndarray:
    """``|phi_i . y| / sqrt(P)`` for the top-``k`` eigenvectors of the training kernel (alignment, paper §3.2).

    Book: Kernel-task alignment (https://paththeory.github.io/paththeory/book/gp_vs_finite.html#gp-vs-finite-alignment)

    Example:
      >>> print(np.round(pc_label_overlap(np.diag([3.0, 2.0, 1.0]), np.array([1.0, -1.0, 1.0]), k=2), 4))
      [0.5774 0.5774]
    """
    kern = check_symmetric(as_float_array(K, "K", ndim=2), "K")
    targets = as_float_array(y, "y", ndim=1)
    k = check_count(k, "k")
    if kern.shape != (targets.size, targets.size):
        raise ValueError(f"K must be [P, P] with P = len(y) = {targets.size}; got {kern.shape}.")
    _, vecs = np.linalg.eigh(kern)
    top = vecs[:, ::-1][:, :k]
    return np.abs(top.T @ targets) / np.sqrt(targets.size)
