r"""Predictions of the theory: mean predictor, variance, accuracies, kernel-task alignment.

Paper Eq. (9) and App. B.1, Eqs. (29)-(30).

With :math:`K=K_U` on the training set, :math:`k_*=K_U(x^\mu,x_*)` and :math:`k_{**}=K_U(x_*,x_*)`:

.. math::

    \langle f(x_*)\rangle = k_*^\top (K+TI)^{-1} y, \qquad
    \operatorname{Var} f(x_*) = k_{**} - k_*^\top (K+TI)^{-1} k_* .

The variance is that of the network output (no ``+T``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from paththeory._checks import as_float_array, check_count, check_nonnegative, require_finite
from paththeory.kernels import check_features, kernel_diagonal, kernel_matrix

Array = jax.Array


def predictor(U, features_train, y, features_test, temperature, batch_size: int = 2048) -> tuple[Array, Array]:
    """Mean and variance of the network output on test inputs: ``([P_test], [P_test])``.

    Args:
      U: ``[n_paths, n_paths]`` order parameter, symmetric positive semi-definite (``arch.gp_scale * I`` for the GP).
      features_train: ``[P, n_paths, N0]``; features_test: ``[P_test, n_paths, N0]``.
      y: ``[P]`` training targets.
      temperature: Gibbs temperature ``T >= 0`` added to the training kernel.
      batch_size: test points per batch of the cross kernel.

    Example:
      >>> from paththeory.exercises import model_problem
      >>> arch, _, x = model_problem("mean")
      >>> f = pt.path_features(arch, x)
      >>> mean, var = predictor(arch.gp_scale * np.eye(6), f[:3], np.array([1.0, -1.0, 1.0]), f, 0.1)
      >>> mean.shape, var.shape, bool(np.all(var > -1e-12))
      ((4,), (4,), True)
    """
    ftr = check_features(features_train, "features_train")
    fte = check_features(features_test, "features_test")
    targets = jnp.asarray(as_float_array(y, "y", ndim=1))
    if targets.shape[0] != ftr.shape[0]:
        raise ValueError(f"y has {targets.shape[0]} labels but features_train has {ftr.shape[0]} examples.")
    t = check_nonnegative(temperature, "temperature")
    K = kernel_matrix(U, ftr)  # checks U: symmetric positive semi-definite
    chol = jnp.linalg.cholesky(K + t * jnp.eye(K.shape[0]))
    if not bool(jnp.all(jnp.isfinite(chol))):
        raise ValueError(
            f"the training kernel K_U + T I is singular at temperature T = {t:g} (e.g. more examples than "
            "n_paths * N0, or repeated inputs); use a temperature T > 0 large enough to regularise it."
        )
    alpha = jax.scipy.linalg.cho_solve((chol, True), targets)
    means, variances = [], []
    for start in range(0, fte.shape[0], batch_size):
        fb = fte[start : start + batch_size]
        k_star = kernel_matrix(U, ftr, fb)  # [P, b]
        v = jax.scipy.linalg.solve_triangular(chol, k_star, lower=True)
        means.append(k_star.T @ alpha)
        variances.append(kernel_diagonal(U, fb) - jnp.sum(v * v, axis=0))
    hint = "the features, U or y are too large for float64, or T is too small for this kernel; rescale them."
    return require_finite(jnp.concatenate(means), "the predictor's mean", hint), require_finite(
        jnp.concatenate(variances), "the predictor's variance", hint)


def accuracy(mean, y) -> float:
    """Classification accuracy ``mean_mu Theta(y^mu <f(x^mu)>)`` for labels ``+-1``.

    Example:
      >>> round(accuracy(np.array([0.3, -1.2, 0.5]), np.array([1.0, -1.0, -1.0])), 3)
      0.667
    """
    m, t = _matching(mean, "mean", y)
    return float(np.mean(np.sign(m) * np.sign(t) > 0))


def _matching(values, name: str, y) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and labels ``y`` as finite, non-empty float arrays of the same shape."""
    v, t = as_float_array(values, name), as_float_array(y, "y")
    if v.shape != t.shape:
        raise ValueError(f"{name} and y must have the same shape; got {v.shape} and {t.shape}.")
    return v, t


def soft_accuracy(mean, variance, y) -> float:
    """``mean_mu Phi(y^mu <f> / sqrt(Var f))``, the probability of a correct sign under the posterior.

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
    """``|v_i . y| / sqrt(P)`` for the top-``k`` eigenvectors of the training kernel (alignment, paper §3.2).

    Example:
      >>> print(np.round(pc_label_overlap(np.diag([3.0, 2.0, 1.0]), np.array([1.0, -1.0, 1.0]), k=2), 4))
      [0.5774 0.5774]
    """
    kern = as_float_array(K, "K", ndim=2)
    targets = as_float_array(y, "y", ndim=1)
    k = check_count(k, "k")
    if kern.shape != (targets.size, targets.size):
        raise ValueError(f"K must be [P, P] with P = len(y) = {targets.size}; got {kern.shape}.")
    _, vecs = np.linalg.eigh(kern)
    top = vecs[:, ::-1][:, :k]
    return np.abs(top.T @ targets) / np.sqrt(targets.size)
