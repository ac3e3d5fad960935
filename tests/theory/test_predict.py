"""Predictor statistics against weight-space Bayesian linear regression."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory import predict


def test_predictor_equals_weight_space_posterior(rng):
    """K_U is the kernel of f(x) = w . xi(x), w ~ N(0, U kron I): the posterior mean/variance in weight space."""
    P, n, d, Pt = 15, 3, 4, 6
    ftr, fte = rng.normal(size=(P, n, d)), rng.normal(size=(Pt, n, d))
    y = rng.normal(size=P)
    A = rng.normal(size=(n, n))
    U = A @ A.T + 0.5 * np.eye(n)
    T = 0.2
    prior = np.kron(U, np.eye(d))  # index (path, feature) matches reshape of [P, n, d]
    phi, phit = ftr.reshape(P, -1), fte.reshape(Pt, -1)
    post_cov = np.linalg.inv(phi.T @ phi / T + np.linalg.inv(prior))
    mean_w = post_cov @ phi.T @ y / T
    mean, var = predict.predictor(U, ftr, y, fte, T, batch_size=4)
    np.testing.assert_allclose(mean, phit @ mean_w, atol=1e-10)
    np.testing.assert_allclose(var, np.einsum("pi,ij,pj->p", phit, post_cov, phit), atol=1e-10)


@pytest.mark.parametrize("outputs", [None, 1, 3])
def test_mean_predictor_equals_dense_kernel_regression(outputs, rng):
    """The mean computed in weight space (:func:`predict.mean_predictor`, and :func:`predict.predictor`'s
    mean) against ``k_*^T (K + T I)^{-1} vec(Y)`` from the dense path-path kernels, labels ``[P]`` and ``[P, C]``."""
    P, n, d, Pt = 12, 3, 4, 7
    c = outputs or 1
    ftr, fte = rng.normal(size=(P, n, d)), rng.normal(size=(Pt, n, d))
    y = rng.normal(size=P) if outputs is None else rng.normal(size=(P, c))
    A = rng.normal(size=(c * n, c * n))
    U = A @ A.T + 0.5 * np.eye(c * n)
    T = 0.3
    paths = lambda fa, fb: np.einsum("man,qbn->maqb", fa, fb)  # C^{ab}(x, x'), no package code
    blocks = U.reshape(c, n, c, n)
    kernel = lambda fa, fb: np.einsum("cadb,maqb->cmdq", blocks, paths(fa, fb)).reshape(c * len(fa), c * len(fb))
    alpha = np.linalg.solve(kernel(ftr, ftr) + T * np.eye(c * P), np.asarray(y).T.reshape(-1))
    expected = (kernel(ftr, fte).T @ alpha).reshape(c, Pt).T
    expected = expected[:, 0] if outputs is None else expected
    np.testing.assert_allclose(predict.mean_predictor(U, ftr, y, fte, T), expected, atol=1e-10)
    np.testing.assert_allclose(predict.predictor(U, ftr, y, fte, T, batch_size=3)[0], expected, atol=1e-10)
    with pytest.raises(ValueError, match="features_test"):
        predict.mean_predictor(U, ftr, y, fte[:, :2], T)


def test_accuracies_and_overlap(rng):
    y = np.array([1.0, -1.0, 1.0, -1.0])
    assert predict.accuracy([0.5, -0.1, -0.2, -3.0], y) == 0.75
    assert abs(predict.soft_accuracy([0.0, 0.0, 0.0, 0.0], [1, 1, 1, 1], y) - 0.5) < 1e-15
    assert predict.soft_accuracy([10.0, -10.0, 10.0, -10.0], [1, 1, 1, 1], y) > 0.999
    labels = rng.choice([-1.0, 1.0], size=40)
    K = 5 * np.outer(labels, labels) + 0.01 * np.eye(40)
    overlap = predict.pc_label_overlap(K, labels, k=5)
    assert abs(overlap[0] - 1.0) < 1e-10 and np.all(overlap[1:] < 1e-8)


def test_predictor_bad_inputs(rng):
    f = rng.normal(size=(5, 2, 3))
    with pytest.raises(ValueError, match="labels"):
        predict.predictor(np.eye(2), f, np.ones(4), f, 0.1)
    with pytest.raises(ValueError, match="temperature"):
        predict.predictor(np.eye(2), f, np.ones(5), f, -1.0)
    with pytest.raises(ValueError, match="same shape"):
        predict.accuracy([1.0, 2.0], [1.0])
