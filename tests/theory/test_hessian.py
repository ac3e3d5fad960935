"""Second derivatives for the solver's Hessian restart, against autodiff and finite differences."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import solve as slv
from paththeory.hessian import energy_derivatives
from paththeory.kernels import kernel_matrix, kernel_operator
from tests.conftest import random_qk_arch


def plain_energy(features, y, temperature):
    """``E(sym U)`` with slogdet and a linear solve: no Cholesky, no hand-written derivative."""

    def energy(U):
        K = kernel_matrix(0.5 * (U + U.T), features) + temperature * jnp.eye(features.shape[0])
        return jnp.linalg.slogdet(K)[1] + y @ jnp.linalg.solve(K, y)

    return energy


@pytest.mark.parametrize("shape", [(40, 3, 5), (10, 3, 8)])  # n N0 below and above P
def test_energy_derivatives_match_autodiff(shape, rng):
    feats = jnp.asarray(rng.normal(size=shape))
    n = shape[1]
    A = rng.normal(size=(n, n))
    U = jnp.asarray(A @ A.T / n + 0.5 * np.eye(n))
    y = jnp.asarray(rng.normal(size=shape[0]))
    grad, hess = jax.jit(energy_derivatives)(feats, kernel_matrix(U, feats), y, 0.2)
    energy = plain_energy(feats, y, 0.2)
    # d/dU of E(sym U) is the symmetrised gradient; its Hessian is H symmetrised in (a,b) and in (c,d).
    np.testing.assert_allclose(0.5 * (grad + grad.T), jax.jit(jax.grad(energy))(U), rtol=1e-9, atol=1e-11)
    sym = 0.25 * (hess + hess.transpose(1, 0, 2, 3) + hess.transpose(0, 1, 3, 2) + hess.transpose(1, 0, 3, 2))
    np.testing.assert_allclose(sym, jax.jit(jax.hessian(energy))(U), rtol=1e-9, atol=1e-11)


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
@pytest.mark.parametrize("heads", [(2, 2), (2, 1, 2)])
def test_theta_hessian_matches_finite_differences(heads, rng):
    """The solver's Hessian in its Cholesky coordinates (all layers) against central differences of its gradient."""
    arch = random_qk_arch(heads, n0=10, readout="mean", seed=2)
    x = rng.normal(size=(30, 5, 10))
    feats = jnp.asarray(pt.path_features(arch, x))
    y = jnp.asarray(np.sign(x[:, 0, 0]))
    theory = slv.Theory(arch, feats, y, precision="double")
    widths = jnp.asarray(arch.widths((6.0, 9.0, 12.0)[: len(heads)] + (15.0,)))
    data = slv._Data(kernel_operator(feats), y, jnp.asarray(0.1), widths, feats)
    opts = dict(sizes=theory.sizes, scales=theory.scales, heads=arch.heads, variances=arch.variances, skips=arch.skips)
    theta = jnp.asarray(0.3 * rng.normal(size=sum(s * (s + 1) // 2 for s in theory.sizes)))
    H = jax.jit(slv._hessian, static_argnames=tuple(opts))(theta, data, **opts)  # as the solver runs it
    grad = jax.jit(lambda t: slv._objective_and_grads(t, data, **opts)[1])
    h = 1e-5
    fd = np.stack([(grad(theta.at[k].add(h)) - grad(theta.at[k].add(-h))) / (2 * h) for k in range(theta.size)])
    # central differences: truncation O(h^2) ~ 1e-10, round-off ~ 1e-16 |g| / h ~ 1e-11
    assert np.max(np.abs(H - fd)) <= 1e-6 * max(1.0, float(np.max(np.abs(H)))), np.max(np.abs(H - fd))


def test_inverse_hessian_flips_negative_curvature_and_survives_nan():
    H = jnp.asarray([[2.0, 0.0], [0.0, -4.0]])
    np.testing.assert_allclose(slv._inverse_hessian(H), np.diag([0.5, 0.25]), atol=1e-15)
    np.testing.assert_array_equal(slv._inverse_hessian(jnp.full((2, 2), jnp.nan)), np.eye(2))


def test_factored_inverse_is_the_inverse_shifts_negative_curvature_and_survives_nan():
    """Positive definite: the inverse (round-off); indefinite: the inverse of ``H + tau I`` with the first shift of
    ``1e-6 h, 1e-5 h, ...`` (``h = max |H_kk|``) that is positive definite, here ``tau = 10 h``; NaN: the identity."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(6, 6))
    H, x = jnp.asarray(A @ A.T + np.eye(6)), jnp.asarray(rng.normal(size=(6, 2)))
    np.testing.assert_allclose(slv._factored_inverse(H) @ x, np.linalg.solve(H, x), rtol=1e-12)
    H = jnp.asarray([[2.0, 0.0], [0.0, -4.0]])
    np.testing.assert_allclose(slv._factored_inverse(H) @ jnp.eye(2), np.diag([1 / 42, 1 / 36]), rtol=1e-14)
    np.testing.assert_array_equal(slv._factored_inverse(jnp.full((2, 2), jnp.nan)) @ x[:2], x[:2])


def test_factored_inverse_reads_only_the_upper_triangle():
    """The streamed C > 1 Hessian is exact in its upper triangle only: what lies below the diagonal is ignored."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    H, x = A @ A.T + np.eye(6), jnp.asarray(rng.normal(size=(6, 2)))
    junk = np.triu(H) + np.tril(rng.normal(size=(6, 6)) * 50, -1)
    np.testing.assert_allclose(slv._factored_inverse(jnp.asarray(junk)) @ x, np.linalg.solve(H, x), rtol=1e-12)


def test_factored_inverse_holds_one_trial_factor_beside_the_hessian():
    """The shift search factors one trial at a time, each in a single buffer beside ``H`` (the diagonal added to
    ``H``'s transpose in place, then LAPACK's in-place factor): XLA's own memory analysis counts at most one
    ``D x D`` temporary. Measured (D = 1000, float32): 1.005 buffers; adding to ``H`` before transposing it held
    2.004 (a shifted copy and its transposed copy; at C = 10, 1.5 GB of the solve's 3.04 GB peak)."""
    d = 1000
    factor = jax.jit(lambda H: slv._factored_inverse(H).upper)
    analysis = factor.lower(jnp.zeros((d, d), jnp.float32)).compile().memory_analysis()
    assert analysis.temp_size_in_bytes < 1.5 * d * d * 4, analysis.temp_size_in_bytes / (d * d * 4)


def test_solver_with_and_without_hessian_reaches_the_same_minimum(small_problem):
    arch, feats, y, *_ = small_problem
    plain = slv.Theory(arch, feats, y, hessian=False)
    restarted = slv.Theory(arch, feats, y, hessian=True)
    for width in (5, 50):
        a, b = plain.solve(width, 0.05), restarted.solve(width, 0.05)
        assert a.report["converged"] and b.report["converged"]
        assert not a.report["hessian"] and b.report["hessian"]
        assert b.report["grad_norm"] <= 1e-9
        np.testing.assert_allclose(b.U, a.U, atol=1e-7)
        np.testing.assert_allclose(b.inner[0], a.inner[0], atol=1e-7)
    # a tolerance above the switch point never computes the Hessian
    assert not restarted.solve(5, 0.05, tol=0.1).report["hessian"]
