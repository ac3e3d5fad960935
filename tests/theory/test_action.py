"""The action: gradients, the U_a root, closed forms and the GP point."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize, minimize_scalar

from paththeory import action as act
from tests.conftest import assert_gradient_matches_central_differences


def random_pd(rng, n, scale=1.0):
    a = rng.normal(size=(n, n))
    return scale * (a @ a.T / n + np.eye(n))


def random_order_parameters(rng, heads):
    return [random_pd(rng, s) for s in act.order_parameter_sizes(heads)]


@pytest.mark.parametrize("heads", [(3,), (2, 3), (2, 1, 2)])
def test_action_gradient_matches_finite_differences(heads, rng):
    widths = tuple(float(w) for w in range(7, 8 + len(heads)))
    variances = (1.0,) + tuple(0.8 + 0.1 * l for l in range(len(heads))) + (1.3,)
    Us = random_order_parameters(rng, heads)
    P = 10
    feats = rng.normal(size=(P, Us[0].shape[0], 4))
    y = rng.choice([-1.0, 1.0], size=P)

    def f(us):
        K = jnp.einsum("man,ab,qbn->mq", feats, us[0], feats)
        return act.action(us, K, jnp.asarray(y), 0.1, widths, heads, variances)

    assert_gradient_matches_central_differences(f, Us, rng, directions=4)


def test_readout_root_is_stationary(rng):
    heads, widths, variances = (2, 3), (5.0, 8.0, 11.0), (1.0, 0.9, 1.2, 1.4)
    Us = random_order_parameters(rng, heads)
    U_a = act.readout_order_parameter(jnp.trace(Us[-1]), widths, heads, variances)
    grad = jax.grad(lambda ua: act.entropy_with_readout(Us, ua, widths, heads, variances))(U_a)
    assert abs(float(grad)) < 1e-9
    # and it is the minimum over U_a (scipy, independent of the quadratic formula)
    best = minimize_scalar(
        lambda ua: float(act.entropy_with_readout(Us, ua, widths, heads, variances)), bounds=(1e-3, 50), method="bounded",
        options={"xatol": 1e-10},
    )
    assert abs(best.x - float(U_a)) < 1e-5


def test_l1_matches_explicit_formula(rng):
    """Spec §3.2: S/N for L = 1 with all widths N, written out by hand."""
    H, N = 3, 9.0
    U = random_pd(rng, H)
    var_a, var_1 = 1.3, 0.7
    U_a = 0.5 * (-var_a * (H - 1) + np.sqrt(var_a**2 * (H - 1) ** 2 + 4 * var_a * np.trace(U) / var_1))
    explicit = U_a / var_a - np.log(U_a) + np.trace(U) / (var_1 * U_a) - np.linalg.slogdet(U)[1] + H * np.log(U_a)
    ours = act.entropy([jnp.asarray(U)], (N, N), (H,), (1.0, var_1, var_a)) / N
    assert abs(float(ours) - explicit) < 1e-12


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_single_path_entropy_minimum_closed_form(depth):
    """One path at depth L: min over inner order parameters of S_ent/N = (L+1) U^{1/(L+1)} - ln U."""
    heads, widths, variances = (1,) * depth, (10.0,) * (depth + 1), (1.0,) * (depth + 2)
    for U in (0.3, 1.0, 4.7):
        def ent(log_inner):
            Us = [jnp.array([[U]])] + [jnp.exp(v).reshape(1, 1) for v in log_inner]
            return float(act.entropy(Us, widths, heads, variances)) / 10.0

        if depth == 1:
            value = ent([])
        else:
            value = minimize(ent, np.zeros(depth - 1), method="Nelder-Mead",
                             options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}).fun
        assert abs(value - act.single_path_entropy_minimum(U, depth)) < 1e-8


def test_gp_point_is_entropy_minimum_for_any_width_ratios():
    heads, widths, variances = (2, 3), (5.0, 7.0, 13.0), (1.0, 0.6, 1.7, 2.1)
    Us = [jnp.asarray(u) for u in act.gp_order_parameters(heads, variances)]
    grads = jax.grad(lambda us: act.entropy(us, widths, heads, variances))(Us)
    assert max(float(jnp.max(jnp.abs(g))) for g in grads) < 1e-12
    np.testing.assert_allclose(Us[0], 1.7 * 2.1 * 0.6 * np.eye(6))


def test_energy_matches_dense_linear_algebra(rng):
    K = random_pd(rng, 12)
    y = rng.normal(size=12)
    T = 0.3
    A = K + T * np.eye(12)
    expected = np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)
    assert abs(float(act.energy(jnp.asarray(K), jnp.asarray(y), T)) - expected) < 1e-10


def test_energy_gradient_matches_finite_differences(rng):
    """The hand-written reverse-mode gradient (in K, y and T) against central differences."""
    K, y, T = random_pd(rng, 10), rng.normal(size=10), 0.3
    gK, gy, gT = jax.grad(act.energy, argnums=(0, 1, 2))(jnp.asarray(K), jnp.asarray(y), T)
    E = lambda K, y, T: float(act.energy(jnp.asarray(K), jnp.asarray(y), T))  # noqa: E731
    h = 1e-6
    D = rng.normal(size=(10, 10))
    D = D + D.T  # symmetric direction: K stays symmetric
    fd_K = (E(K + h * D, y, T) - E(K - h * D, y, T)) / (2 * h)
    assert abs(float(jnp.sum(gK * D)) - fd_K) < 1e-6 * max(1.0, abs(fd_K))
    v = rng.normal(size=10)
    fd_y = (E(K, y + h * v, T) - E(K, y - h * v, T)) / (2 * h)
    assert abs(float(gy @ v) - fd_y) < 1e-6 * max(1.0, abs(fd_y))
    fd_T = (E(K, y, T + h) - E(K, y, T - h)) / (2 * h)
    assert abs(float(gT) - fd_T) < 1e-6 * max(1.0, abs(fd_T))


def test_partial_trace_sums_diagonal_blocks(rng):
    U = rng.normal(size=(6, 6))
    traced = np.asarray(act.partial_trace(jnp.asarray(U), 2))
    np.testing.assert_allclose(traced, U[:3, :3] + U[3:, 3:])


@pytest.mark.parametrize("size", [1, 2, 31, 33, 64, 101])  # around the recursion's base size 32
def test_inverse_upper_triangular_matches_numpy(size, rng):
    A = rng.normal(size=(size, size))
    R = np.linalg.cholesky(A @ A.T + size * np.eye(size)).T
    inv = np.asarray(act.inverse_upper_triangular(jnp.asarray(R)))
    np.testing.assert_allclose(inv, np.linalg.inv(R), rtol=1e-12, atol=1e-14)
    assert np.all(np.tril(inv, -1) == 0)
