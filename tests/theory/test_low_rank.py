"""The feature-space (low-rank) backend: the energy ln det(K + T I) + y^T (K + T I)^{-1} y evaluated through the
n N0-dimensional feature space (matrix determinant lemma, Woodbury) agrees with the P x P form, and so does the
solver built on it.

Oracles: the energy from numpy's ``slogdet`` and ``solve`` of the P x P kernel built from the path-path kernels;
its gradient ``dE/dU_ab = Tr(G C^ab) - b^T C^ab b`` (``G = (K + T I)^{-1}``, ``b = G y``, symmetrised) in numpy;
its second derivative along symmetric directions from :func:`paththeory.hessian.energy_derivatives` (the P x P
form's own formula); the solver against the dense backends' solve.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import kernels
from paththeory.hessian import energy_derivatives
from paththeory.solve import Theory
from tests.conftest import random_qk_arch

jax.config.update("jax_enable_x64", True)  # the package import does this already; stated for the oracles


def _random_problem(rng, p, n, n0):
    feats = rng.normal(size=(p, n, n0)) / np.sqrt(n0)
    y = np.sign(feats[:, 0, 0] + 0.5 * rng.normal(size=p))
    A = rng.normal(size=(n, n))
    return feats, y, A @ A.T / n + 0.2 * np.eye(n)


def _dense_oracle(U, feats, y, temperature):
    """``(E, dE/dU)`` of the P x P form, in numpy."""
    paths = np.einsum("pan,qbn->abpq", feats, feats)
    K = np.einsum("ab,abpq->pq", U, paths) + temperature * np.eye(feats.shape[0])
    sign, logdet = np.linalg.slogdet(K)
    assert sign > 0
    b = np.linalg.solve(K, y)
    G = np.linalg.inv(K)
    grad = np.einsum("qp,abpq->ab", G, paths) - np.einsum("p,abpq,q->ab", b, paths, b)
    return logdet + y @ b, 0.5 * (grad + grad.T)


# P > n N0 (the backend's purpose: 60 > 12 and 200 > 40) and P < n N0 (forced: 30 < 60).
@pytest.mark.parametrize("p, n, n0, temperature", [(60, 2, 6, 0.3), (200, 4, 10, 0.05), (30, 3, 20, 0.7)])
def test_energy_and_gradient_match_the_dense_form(p, n, n0, temperature, rng):
    feats, y, U = _random_problem(rng, p, n, n0)
    op = kernels.kernel_operator(feats, backend="low_rank")
    assert isinstance(op, kernels.LowRankKernel) and op.gram.shape == (n * n0, n * n0)
    expected, expected_grad = _dense_oracle(U, feats, y, temperature)
    value = float(kernels.low_rank_energy(op, U, y, temperature))
    assert abs(value - expected) <= 1e-9 * abs(expected)
    grad = np.asarray(jax.grad(lambda u: kernels._low_rank_energy(op, u, jnp.asarray(y), temperature))(
        jnp.asarray(U)))
    grad = 0.5 * (grad + grad.T)  # the derivative along symmetric directions
    assert np.max(np.abs(grad - expected_grad)) <= 1e-9 * np.max(np.abs(expected_grad))


def test_second_derivative_along_symmetric_directions_matches_the_dense_formula(rng):
    """The solver's Hessian restart differentiates the feature-space energy twice (forward over reverse)."""
    feats, y, U = _random_problem(rng, 80, 3, 5)
    temperature = 0.2
    op = kernels.kernel_operator(feats, backend="low_rank")
    K = kernels.kernel_matrix(U, feats)
    _, H = energy_derivatives(jnp.asarray(feats), K, jnp.asarray(y), temperature)
    hess = jax.jit(jax.hessian(lambda u: kernels._low_rank_energy(op, u, jnp.asarray(y), temperature)))(jnp.asarray(U))
    for _ in range(3):
        D1, D2 = rng.normal(size=(2, 3, 3))
        D1, D2 = D1 + D1.T, D2 + D2.T
        expected = float(np.einsum("ab,abcd,cd->", D1, H, D2))
        got = float(jnp.einsum("ab,abcd,cd->", D1, hess, D2))
        assert abs(got - expected) <= 1e-8 * abs(expected)


def _small_markov_like(rng, p=150):
    arch = random_qk_arch((2, 2), n0=6, readout="mean", seed=2)  # 4 paths x N0 = 6: n N0 = 24 < P
    x = rng.normal(size=(p, 5, 6))
    y = np.sign(x[:, 0] @ rng.normal(size=6) + 0.3 * rng.normal(size=p))
    return arch, np.asarray(pt.path_features(arch, x)), y


def test_solve_agrees_with_the_dense_solve(rng):
    """Both backends converge to max |dS/dU| <= 1e-9 and agree on U* to 1e-7 (at T = 0.05 the Hessian's smallest
    eigenvalue keeps the gradient tolerance's U error near 1e-8), and on the action at U* to 1e-10."""
    arch, feats, y = _small_markov_like(rng)
    low = Theory(arch, feats, y, backend="low_rank")
    dense = Theory(arch, feats, y, backend="dense", precision="double")
    assert isinstance(low.operator, kernels.LowRankKernel) and not isinstance(dense.operator, kernels.LowRankKernel)
    assert low.precision == "double" and not low.hessian
    a, b = low.solve(8, 0.05), dense.solve(8, 0.05)
    assert a.report["converged"] and b.report["converged"]
    assert a.report["kernel_backend"] == "LowRankKernel" and b.report["kernel_backend"] != "LowRankKernel"
    np.testing.assert_allclose(a.U, b.U, atol=1e-7)
    for u, v in zip(a.inner, b.inner):
        np.testing.assert_allclose(u, v, atol=1e-7)
    assert abs(low.action(b.order_parameters, 8, 0.05) - dense.action(b.order_parameters, 8, 0.05)) <= 1e-10 * abs(
        dense.action(b.order_parameters, 8, 0.05))
    forced = Theory(arch, feats, y, backend="low_rank", hessian=True).solve(8, 0.05)  # the autodiff Hessian restart
    assert forced.report["converged"] and forced.report["hessian"]
    np.testing.assert_allclose(forced.U, b.U, atol=1e-7)


@pytest.mark.slow
def test_solve_with_skip_connections_agrees_with_the_dense_solve(rng):
    """A skip level ties blocks of U^(1) but leaves it positive definite: the feature-space energy serves it."""
    from tests.theory.test_residual import data, skip_arch

    arch = skip_arch()
    x, y = data(150)
    feats = np.asarray(pt.path_features(arch, x))  # 9 paths x N0 = 6: n N0 = 54 < P = 150
    a = Theory(arch, feats, y, backend="low_rank").solve(5, 0.1)
    b = Theory(arch, feats, y, backend="dense", precision="double").solve(5, 0.1)
    assert a.report["converged"] and b.report["converged"]
    np.testing.assert_allclose(a.U, b.U, atol=1e-7)
    np.testing.assert_allclose(a.U_a, b.U_a, atol=1e-7)


def test_auto_chooses_the_feature_space_where_it_pays():
    n, n0 = 2, 3
    big = np.zeros((kernels.LOW_RANK_MIN_EXAMPLES, n, n0))
    assert kernels.low_rank_pays(*big.shape)
    assert isinstance(kernels.kernel_operator(big), kernels.LowRankKernel)
    assert not isinstance(kernels.kernel_operator(big, backend="dense"), kernels.LowRankKernel)
    assert not isinstance(kernels.kernel_operator(big, memory_budget=0), kernels.LowRankKernel)  # budget
    assert not isinstance(kernels.kernel_operator(big[:-1]), kernels.LowRankKernel)  # too few examples
    assert not kernels.low_rank_pays(kernels.LOW_RANK_MIN_EXAMPLES, 100, 20)  # P < n N0
    assert not isinstance(kernels.kernel_operator(big, n_outputs=2), kernels.LowRankKernel)  # one output only
    with pytest.warns(UserWarning, match="serves one output"):
        fallback = kernels.kernel_operator(big[:20], n_outputs=2, backend="low_rank")
    assert isinstance(fallback, (kernels.GramBlocks, kernels.FeatureKernel))


def test_many_outputs_fall_back_to_the_dense_form(rng):
    arch, feats, y = _small_markov_like(rng, 40)
    labels = np.eye(2)[(y > 0).astype(int)]
    with pytest.warns(UserWarning, match="serves one output"):
        theory = Theory(arch, feats, labels, backend="low_rank")
    assert not isinstance(theory.operator, kernels.LowRankKernel)


def test_bad_input_gets_a_clear_error(rng):
    feats, y, U = _random_problem(rng, 20, 2, 3)
    op = kernels.kernel_operator(feats, backend="low_rank")
    with pytest.raises(ValueError, match="backend must be one of"):
        kernels.kernel_operator(feats, backend="woodbury")
    with pytest.raises(ValueError, match="needs T > 0"):
        kernels.low_rank_energy(op, U, y, 0.0)
    with pytest.raises(ValueError, match="positive definite"):
        kernels.low_rank_energy(op, -U, y, 0.5)
    with pytest.raises(ValueError, match=r"U must be \[2, 2\]"):
        kernels.low_rank_energy(op, np.eye(3), y, 0.5)
    with pytest.raises(ValueError, match="P = 20 targets"):
        kernels.low_rank_energy(op, U, y[:-1], 0.5)
    with pytest.raises(TypeError, match="LowRankKernel"):
        kernels.low_rank_energy(kernels.kernel_operator(feats, backend="dense"), U, y, 0.5)
    arch, feats, y = _small_markov_like(rng, 40)
    with pytest.raises(ValueError, match="backend must be one of"):
        Theory(arch, feats, y, backend=None)
    with pytest.raises(ValueError, match="T = 0 is outside the low-rank backend"):
        Theory(arch, feats, y, backend="low_rank").solve(8, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one output: no fallback warning
        Theory(arch, feats, y, backend="low_rank")
