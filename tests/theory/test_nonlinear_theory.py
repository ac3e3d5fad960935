"""Nonlinear MLP blocks (the kernel maps and the heuristic theory of paththeory.nonlinear_theory) against oracles.

Every test states its oracle in its docstring and its tolerance in a comment: two-dimensional
Gauss-Hermite quadrature and closed forms for the kernel maps, finite differences for their derivatives,
the linear theory (Theory, action.action) for phi = identity, the GP point and a Monte-Carlo prior of the
finite network for the infinite-width limit, the forward pass for the samplers' path form.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import erf
from scipy.stats import norm

import paththeory as pt
from paththeory import action as act
from paththeory import kernel_maps as km
from paththeory import nonlinear_theory as nl
from paththeory.kernels import kernel_matrix
from paththeory.sampling.path_form import readout_design
from paththeory.solve import Theory

jax.config.update("jax_enable_x64", True)

N0, TOKENS = 6, 4
PHIS = {"relu": lambda u: np.maximum(u, 0.0), "erf": erf, "identity": lambda u: u}


def qk(rng, heads, g=3):
    return pt.QKAttention(rng.normal(size=(heads, g, N0)), rng.normal(size=(heads, g, N0)))


def top_arch(phi, seed=0, variances=(1.3, 0.8, 1.2, 1.5, 0.7)):
    """Two attention layers (2 and 3 heads), then the MLP block, last-token readout."""
    rng = np.random.default_rng(seed)
    return pt.Architecture((qk(rng, 2), qk(rng, 3), pt.MLP(phi)), readout="last", variances=variances)


def data(n_examples, seed=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_examples, TOKENS, N0)), rng.choice([-1.0, 1.0], size=n_examples)


def quadrature_moment(phi, q1, q2, q12):
    """E[phi(u) phi(v)] = E_a[phi(l11 a) E_b phi(l21 a + l22 b)] (Cholesky coordinates): the inner mean in closed form
    (ReLU: m Phi(m/s) + s phi(m/s); erf: erf(m / sqrt(1 + 2 s^2))), the outer one by adaptive quadrature."""
    l11 = np.sqrt(q1)
    l21 = q12 / l11
    l22 = np.sqrt(max(q2 - l21**2, 0.0))

    def inner(m):
        if phi == "relu":
            return m * norm.cdf(m / l22) + l22 * norm.pdf(m / l22) if l22 > 0 else max(m, 0.0)
        return erf(m / np.sqrt(1 + 2 * l22**2)) if phi == "erf" else m

    lower = 0.0 if phi == "relu" else -np.inf  # relu(l11 a) vanishes for a < 0
    return quad(lambda a: PHIS[phi](l11 * a) * inner(l21 * a) * norm.pdf(a), lower, np.inf, epsabs=1e-14,
                epsrel=1e-13, limit=200)[0]


def numpy_map(phi, Q, qa=None, qb=None):
    """F_phi entrywise, written here with NumPy (arccos and arcsin forms), for the independent kernels."""
    qa = np.diag(Q) if qa is None else qa
    qb = np.diag(Q) if qb is None else qb
    q1, q2 = qa[:, None], qb[None, :]
    if phi == "erf":
        return 2 / np.pi * np.arcsin(2 * Q / np.sqrt((1 + 2 * q1) * (1 + 2 * q2)))
    rho = np.clip(Q / np.sqrt(q1 * q2), -1, 1)
    return np.sqrt(q1 * q2) * (np.sqrt(1 - rho**2) + (np.pi - np.arccos(rho)) * rho) / (2 * np.pi)


# --------------------------------------------------------------------------- 1. kernel maps


@pytest.mark.parametrize("phi,q1,q2,q12,expected", [
    ("relu", 1.0, 2.0, 0.3, 0.305162611024345), ("relu", 0.5, 0.7, -0.4, 0.016642308921627),
    ("erf", 1.0, 2.0, 0.3, 0.099023532359132), ("erf", 1.0, 1.0, 1.0, 0.464559054397540)])
def test_kernel_maps_reference_values(phi, q1, q2, q12, expected):
    """Oracle: reference values computed independently by adaptive quadrature (to 6e-16)."""
    # tolerance: 1e-12 absolute
    assert abs(float(km.second_moment(phi, q1, q2, q12)) - expected) < 1e-12


def test_relu_centred_reference_and_diagonal():
    """Oracle: the reference value of the centred map and F_relu(q, q, q) = E[relu(u)^2] = q / 2."""
    assert abs(float(km.centred_moment("relu", 1.0, 2.0, 0.3)) - 0.080083531985069) < 1e-12
    q = np.array([0.3, 1.0, 7.5])
    # tolerance: 1e-15 relative (the angle is exact on the diagonal)
    np.testing.assert_allclose(np.asarray(km.second_moment("relu", q, q, q)), q / 2, rtol=1e-15)


@pytest.mark.parametrize("phi", ["relu", "erf"])
@pytest.mark.parametrize("q1,q2,rho", [(1.0, 2.0, 0.3), (0.4, 3.0, -0.8), (2.0, 2.0, 0.999), (1.5, 0.6, 0.0),
                                       (0.7, 0.7, 1.0)])
def test_kernel_maps_against_quadrature(phi, q1, q2, rho):
    """Oracle: E[phi(u) phi(v)] and E[phi(u)] by adaptive quadrature (quadrature_moment)."""
    q12 = rho * np.sqrt(q1 * q2)
    # tolerance: 1e-11 absolute
    assert abs(float(km.second_moment(phi, q1, q2, q12)) - quadrature_moment(phi, q1, q2, q12)) < 1e-11
    mean = quad(lambda a: PHIS[phi](np.sqrt(q1) * a) * norm.pdf(a), -np.inf, np.inf, epsabs=1e-14)[0]
    assert abs(float(km.mean(phi, q1)) - mean) < 1e-11


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_kernel_map_derivatives_match_finite_differences_and_are_finite_on_the_diagonal(phi):
    """Oracle: central finite differences of sum(W * F[Q]) along random symmetric directions; the diagonal has
    rho = 1 exactly, where automatic differentiation of the bare formula would return NaN."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3))
    Q = a @ a.T + 0.1 * np.eye(5)
    W = rng.normal(size=(5, 5))
    f = jax.jit(lambda Q: jnp.sum(jnp.asarray(W) * km.kernel_map(phi, Q)))
    grad, hess = jax.grad(f)(jnp.asarray(Q)), jax.hessian(f)(jnp.asarray(Q))
    assert np.all(np.isfinite(np.asarray(hess)))
    for _ in range(3):
        d = rng.normal(size=(5, 5))
        d = d + d.T
        h = 1e-5
        fd = (float(f(Q + h * d)) - float(f(Q - h * d))) / (2 * h)
        # tolerance: 1e-7 relative to the directional derivative's scale (central differences, h = 1e-5)
        assert abs(fd - float(jnp.sum(grad * d))) < 1e-7 * max(1.0, abs(fd))
        g_plus, g_minus = jax.grad(f)(Q + h * d), jax.grad(f)(Q - h * d)
        fd2 = np.asarray((g_plus - g_minus) / (2 * h))
        exact = np.einsum("ijkl,kl->ij", np.asarray(hess), d)
        # tolerance: 1e-5 of the Hessian-vector product's scale
        assert np.max(np.abs(fd2 - exact)) < 1e-5 * max(1.0, np.max(np.abs(exact)))


def test_relu_hessian_is_homogeneous_at_any_scale():
    """Oracle: positive homogeneity, F(cQ) = c F(Q), so the Hessian of sum(W * F[Q]) at cQ is the one at Q over c;
    the capped slope inside it is relative to q1 q2, so this holds down to c = 1e-8."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 3))
    Q = a @ a.T + 0.1 * np.eye(4)
    W = jnp.asarray(rng.normal(size=(4, 4)))
    hess = jax.jit(jax.hessian(lambda Q: jnp.sum(W * km.kernel_map("relu", Q))))
    base = np.asarray(hess(jnp.asarray(Q)))
    for c in (1e-4, 1e-8):
        # tolerance: 1e-9 relative to the Hessian's scale
        np.testing.assert_allclose(c * np.asarray(hess(jnp.asarray(c * Q))), base, atol=1e-9 * np.max(np.abs(base)))


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_kernel_map_is_positive_semi_definite(phi):
    """Oracle: the eigenvalues of F[Q] and F^c[Q] for a random covariance of rank 2 in 6 points (a second-moment
    matrix and a covariance matrix)."""
    a = np.random.default_rng(1).normal(size=(6, 2))
    Q = jnp.asarray(a @ a.T)
    for centred in (False, True):
        ev = np.linalg.eigvalsh(np.asarray(km.kernel_map(phi, Q, centred=centred)))
        # tolerance: -1e-12 of the largest eigenvalue
        assert ev[0] > -1e-12 * ev[-1]


def test_kernel_maps_refuse_bad_input():
    with pytest.raises(ValueError, match="nonlinearity must be one of"):
        km.second_moment("tanh", 1.0, 1.0, 0.5)
    with pytest.raises(ValueError, match="positive, finite variances"):
        km.second_moment("relu", 0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="positive, finite variances"):
        km.mean("relu", -1.0)
    with pytest.raises(ValueError, match="nonlinearity must be one of"):
        pt.MLP("tanh")
    with pytest.raises(ValueError, match="not a covariance"):
        km.second_moment("relu", 1.0, 1.0, 3.0)
    with pytest.raises(ValueError, match="q12 contains 1 NaN"):
        km.second_moment("erf", 1.0, 1.0, np.nan)
    with pytest.raises(ValueError, match="broadcast"):
        km.second_moment("relu", np.ones(2), np.ones(3), np.zeros(2))
    with pytest.raises(ValueError, match="U_a"):
        nl.top_kernel("relu", jnp.eye(2), 0.0)


# --------------------------------------------------------------------------- 2. the finite network


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_samplers_path_form_equals_forward_pass(phi):
    """Oracle: the layer-by-layer forward pass (network_output) against the samplers' path form
    f = readout_design(...) a / sigma_a, for a random draw of a network of unequal widths."""
    arch = top_arch(phi)
    x, _ = data(5)
    widths = (4, 5, 3, 6)
    params = pt.sample_prior(arch, widths, N0, jax.random.PRNGKey(2))
    f_net = np.asarray(pt.network_output(arch, params, x))
    design = readout_design(arch, params, pt.path_features(arch, x))
    f_path = np.asarray(design @ params["a"]) / np.sqrt(arch.variances[-1])
    # tolerance: 1e-12 relative (two orders of summation)
    np.testing.assert_allclose(f_path, f_net, rtol=1e-12, atol=1e-12)
    # and the nonlinearity matters: the linear network differs
    linear = nl.linear_counterpart(arch)
    assert np.max(np.abs(np.asarray(pt.network_output(linear, params, x)) - f_net)) > 1e-2


@pytest.mark.parametrize("phi", ["relu", pytest.param("erf", marks=pytest.mark.slow)])
def test_gp_kernel_is_monte_carlo_prior_of_a_wide_network(phi):
    """Oracle: E[f(x) f(x')] over 48 prior draws of the finite network at width 1,000, the readout averaged
    exactly (E_a[f f'] = Phi Phi^T); the nonlinear network's prior kernel tends to the GP kernel as O(1/n)."""
    arch = top_arch(phi)
    x, _ = data(3)
    feats = pt.path_features(arch, x)

    def draw(key):
        params = pt.sample_prior(arch, 1000, N0, key)
        phi_design = readout_design(arch, params, feats)
        return phi_design @ phi_design.T

    draws = np.asarray(jax.lax.map(jax.jit(draw), jax.random.split(jax.random.PRNGKey(0), 48)))
    estimate, stderr = draws.mean(0), draws.std(0, ddof=1) / np.sqrt(draws.shape[0])
    K = np.asarray(nl.gp_kernel(arch, feats))
    # tolerance: 5 Monte-Carlo standard errors per entry, plus 2/n of the scale for the O(1/n) bias
    slack = 5 * stderr + 2e-3 * np.max(np.abs(K))
    assert np.all(np.abs(estimate - K) < slack), (estimate, K, stderr)
    # and the test has power: the linear network's GP kernel (phi ignored) is far outside it
    K_lin = np.asarray(pt.kernels.gp_kernel(nl.linear_counterpart(arch), feats))
    assert np.any(np.abs(estimate - K_lin) > 10 * slack)


# --------------------------------------------------------------------------- 3. the theory's reductions


def random_pd(rng, n, scale):
    a = rng.normal(size=(n, n))
    return scale * (a @ a.T / n + 0.5 * np.eye(n))


def test_identity_action_is_the_linear_action():
    """Oracle: action.action of the linear theory (explicit U_a) at random positive-definite order parameters."""
    arch = top_arch("identity")
    x, y = data(12)
    feats = pt.path_features(arch, x)
    theory = nl.NonlinearTheory(arch, feats, y)
    rng = np.random.default_rng(4)
    for width in (7.0, (9.0, 11.0, 13.0, 8.0)):
        Us = [random_pd(rng, n, 1.0) for n in theory.sizes[:-1]]
        U_a = 1.7
        ours = theory.action(Us, U_a, width, 0.2)
        K = kernel_matrix(Us[0], feats)
        widths = arch.widths(width)
        linear = float(act.action([jnp.asarray(u) for u in Us], K, jnp.asarray(y), 0.2, widths, arch.heads,
                                  arch.variances, U_a=U_a))
        # tolerance: 1e-12 relative
        assert abs(ours - linear) < 1e-12 * abs(linear)


def test_identity_minimum_is_the_linear_theory():
    """Oracle: the linear Theory's minimum (U_a eliminated in closed form) on the same network."""
    arch = top_arch("identity")
    x, y = data(12)
    feats = pt.path_features(arch, x)
    for width in (5.0, 30.0):
        ours = nl.NonlinearTheory(arch, feats, y).solve(width, 0.1)
        linear = Theory(arch, feats, y).solve(width, 0.1, tol=1e-11)
        assert ours.report["converged"] and ours.report["hessian_min_eig"] > 0
        for a, b in zip(ours.order_parameters, linear.order_parameters):
            # tolerance: 1e-7 (both minimised to gradients below 1e-10)
            np.testing.assert_allclose(a, b, atol=1e-7 * np.max(np.abs(b)))
        assert abs(ours.U_a - float(linear.U_a)) < 1e-7 * float(linear.U_a)


@pytest.mark.parametrize("phi", [pytest.param("relu", marks=pytest.mark.slow), "erf"])
def test_large_width_tends_to_the_gp_kernel(phi):
    """Oracle: the GP point and the GP kernel sigma_a^2 F_phi[sigma_M^2 Q_GP] written here from the path features;
    the minimum's distance from the GP point shrinks like 1/N."""
    arch = top_arch(phi)
    x, y = data(10)
    feats = np.asarray(pt.path_features(arch, x))
    theory = nl.NonlinearTheory(arch, feats, y)
    v = arch.variances
    scale_paths = v[1] * v[2]  # prod of the attention levels' sigma_l^2
    q = scale_paths * v[3] * np.einsum("man,qan->mq", feats, feats)  # sigma_M^2 Q_GP
    d = np.diag(q)
    expected = v[-1] * np.array([[quadrature_moment(phi, d[i], d[j], q[i, j]) for j in range(10)] for i in range(10)])
    gp = theory.gp_solution(10, 0.1)
    # tolerance: 1e-10 of the scale
    np.testing.assert_allclose(np.asarray(theory.kernel(gp)), expected, atol=1e-10 * np.max(np.abs(expected)))
    np.testing.assert_allclose(np.asarray(nl.gp_kernel(arch, feats)), np.asarray(theory.kernel(gp)), rtol=1e-12)
    distances = []
    for width in (1e4, 1e5):
        sol = theory.solve(width, 0.1)
        gp_mats = theory.gp_order_parameters()
        distances.append(max(np.max(np.abs(a - b)) for a, b in zip([*sol.order_parameters, [[sol.U_a]]], gp_mats)))
    # tolerance: the ratio of distances within 20 % of the width ratio 10 (first order in 1/N)
    assert 8 < distances[0] / distances[1] < 12, distances


def test_relu_kernel_does_not_depend_on_the_readout_order_parameter():
    """Oracle: positive homogeneity of the arc-cosine kernel, F(cQ) = c F(Q)."""
    K_lin = jnp.asarray(random_pd(np.random.default_rng(5), 6, 2.0))
    base = np.asarray(nl.top_kernel("relu", K_lin, 1.0))
    for U_a in (0.3, 4.0):
        # tolerance: 1e-13 relative
        np.testing.assert_allclose(np.asarray(nl.top_kernel("relu", K_lin, U_a)), base, rtol=1e-13)
    assert np.max(np.abs(np.asarray(nl.top_kernel("erf", K_lin, 4.0)) - np.asarray(nl.top_kernel("erf", K_lin, 1.0))
                         )) > 1e-2  # erf is not homogeneous: U_a matters there


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_minimum_is_a_minimum(phi):
    """Oracle: the action at random nearby points (positive definite perturbations) is not lower; the Hessian's
    smallest eigenvalue is positive; the gradient is below the tolerance."""
    arch = top_arch(phi)
    x, y = data(12)
    theory = nl.NonlinearTheory(arch, pt.path_features(arch, x), y)
    sol = theory.solve(8.0, 0.05)
    assert sol.report["converged"] and sol.report["grad_norm"] <= 1e-10 and sol.report["hessian_min_eig"] > 0
    s0 = theory.action(sol.order_parameters, sol.U_a, 8.0, 0.05)
    rng = np.random.default_rng(6)
    for _ in range(5):
        Us = [u + 1e-3 * (lambda e: e + e.T)(rng.normal(size=u.shape)) for u in sol.order_parameters]
        assert theory.action(Us, sol.U_a * (1 + 1e-3 * rng.normal()), 8.0, 0.05) >= s0 - 1e-13


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_predictor_at_the_gp_point_is_gp_regression(phi):
    """Oracle: GP regression written here with the GP kernel on the joint (train + test) set."""
    arch = top_arch(phi)
    x, y = data(14)
    feats = np.asarray(pt.path_features(arch, x))
    train, test = feats[:10], feats[10:]
    theory = nl.NonlinearTheory(arch, train, y[:10])
    mean, var = theory.predictor(theory.gp_solution(10, 0.2), test)
    K = np.asarray(nl.gp_kernel(arch, feats))
    A = K[:10, :10] + 0.2 * np.eye(10)
    expected_mean = K[10:, :10] @ np.linalg.solve(A, y[:10])
    expected_var = np.diag(K[10:, 10:] - K[10:, :10] @ np.linalg.solve(A, K[:10, 10:]))
    # tolerance: 1e-10 relative
    np.testing.assert_allclose(np.asarray(mean), expected_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(var), expected_var, rtol=1e-10, atol=1e-12)


def test_erf_action_away_from_the_gp_point_uses_u_a_in_the_kernel():
    """Oracle: the linear entropy (action.entropy_with_readout) plus the energy of U_a F_erf[K_U / U_a], the kernel and
    the map written here with NumPy, at random positive-definite order parameters and U_a far from sigma_a^2."""
    arch = top_arch("erf")
    x, y = data(12)
    feats = np.asarray(pt.path_features(arch, x))
    theory = nl.NonlinearTheory(arch, feats, y)
    rng = np.random.default_rng(7)
    Us = [random_pd(rng, n, 1.5) for n in theory.sizes[:-1]]
    for U_a in (0.4, 3.0):
        K_U = np.einsum("man,ab,qbn->mq", feats, Us[0], feats)
        K = U_a * numpy_map("erf", K_U / U_a) + 0.3 * np.eye(12)
        energy = np.linalg.slogdet(K)[1] + y @ np.linalg.solve(K, y)
        widths = arch.widths(9.0)
        entropy = float(act.entropy_with_readout([jnp.asarray(u) for u in Us], U_a, widths, arch.heads,
                                                 arch.variances))
        # tolerance: 1e-12 relative
        assert theory.action(Us, U_a, 9.0, 0.3) == pytest.approx((entropy + energy) / 9.0, rel=1e-12)


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_predictor_at_a_minimum_is_regression_with_the_heuristic_kernel(phi):
    """Oracle: GP regression written here with U_a F[K_U / U_a] on the joint (train + test) set, K_U and the map in
    NumPy, at the solved minimum (away from the GP point, where the test points' variances come from U)."""
    arch = top_arch(phi)
    x, y = data(16)
    feats = np.asarray(pt.path_features(arch, x))
    theory = nl.NonlinearTheory(arch, feats[:12], y[:12])
    sol = theory.solve(6.0, 0.1)
    mean, var = theory.predictor(sol, feats[12:])
    K_U = np.einsum("man,ab,qbn->mq", feats, sol.U, feats)
    K = sol.U_a * numpy_map(phi, K_U / sol.U_a)
    A = K[:12, :12] + 0.1 * np.eye(12)
    # tolerance: 1e-9 relative
    np.testing.assert_allclose(np.asarray(mean), K[12:, :12] @ np.linalg.solve(A, y[:12]), rtol=1e-9, atol=1e-12)
    expected_var = np.diag(K[12:, 12:] - K[12:, :12] @ np.linalg.solve(A, K[:12, 12:]))
    np.testing.assert_allclose(np.asarray(var), expected_var, rtol=1e-9, atol=1e-12)


def test_gp_kernel_between_two_sets_is_the_joint_kernels_block():
    """Oracle: the off-diagonal block of the GP kernel of the joint set."""
    arch = top_arch("relu")
    x, _ = data(9)
    feats = np.asarray(pt.path_features(arch, x))
    joint = np.asarray(nl.gp_kernel(arch, feats))
    # tolerance: 1e-13 relative
    np.testing.assert_allclose(np.asarray(nl.gp_kernel(arch, feats[:4], feats[4:])), joint[:4, 4:], rtol=1e-13)


def test_nuts_samples_a_network_with_a_nonlinear_top_block():
    """Oracle: the sampler's own record shapes; the order parameters it measures are the linear back-propagation's
    (positive definite), and its predictor is finite."""
    arch = top_arch("relu")
    x, y = data(8)
    feats = pt.path_features(arch, x)
    out = pt.sample_posterior(arch, feats, y, 4, 0.1, method="nuts", num_warmup=3, num_samples=3, num_chains=1,
                              progress_bar=False)
    assert out.U.shape == (6, 6) and np.all(np.isfinite(out.mean))
    assert [np.shape(u) for u in out.inner] == [(3, 3), (1, 1), (1, 1)]


# --------------------------------------------------------------------------- 4. bad input


def test_bad_input_says_what_is_supported():
    rng = np.random.default_rng(0)
    x, y = data(6)
    below = pt.Architecture((qk(rng, 2), pt.MLP("relu"), qk(rng, 2)), readout="last")
    with pytest.raises(TypeError, match="between attention layers needs token-resolved features"):
        nl.NonlinearTheory(below, pt.path_features(below, x), y)
    with pytest.raises(ValueError, match="below every attention layer"):
        nl.placement(pt.Architecture((pt.MLP("relu"), qk(rng, 2)), readout="last"))
    mean_readout = pt.Architecture((qk(rng, 2), pt.MLP("relu")), readout="mean")
    with pytest.raises(ValueError, match="averages the tokens"):
        nl.placement(mean_readout)
    skip = pt.Architecture((pt.Residual(qk(rng, 2)), pt.MLP("relu")), readout="last")
    with pytest.raises(ValueError, match="skip connections"):
        nl.placement(skip)
    arch = top_arch("relu")
    feats = pt.path_features(arch, x)
    with pytest.raises(ValueError, match="NonlinearTheory"):
        Theory(arch, feats, y)
    with pytest.raises(ValueError, match="exact Gibbs sampler"):
        pt.sample_posterior(arch, feats, y, 4, 0.1, method="gibbs", num_warmup=2, num_samples=2, num_chains=1,
                            progress_bar=False)
    with pytest.raises(ValueError, match="sum over paths"):
        pt.path_expansion_output(arch, pt.sample_prior(arch, 3, N0, jax.random.PRNGKey(0)), x)
    with pytest.raises(ValueError, match="one output"):
        nl.NonlinearTheory(arch, feats, np.eye(6)[:, :2])
    theory = nl.NonlinearTheory(arch, feats, y)
    with pytest.raises(ValueError, match="temperature"):
        theory.solve(10, 0.0)
    with pytest.raises(TypeError, match="NonlinearSolution"):
        theory.predictor(Theory(nl.linear_counterpart(arch), feats, y).solve(10, 0.1), feats)
    with pytest.raises(TypeError, match="NonlinearSolution"):
        theory.solve(10, 0.1, init={"U": 1})
    other = pt.Architecture((qk(rng, 2), pt.MLP("relu")), readout="last")
    foreign = nl.NonlinearTheory(other, pt.path_features(other, x), y).solve(10, 0.1)
    with pytest.raises(ValueError, match="another architecture"):
        theory.solve(10, 0.1, init=foreign)
    with pytest.raises(ValueError, match="another architecture"):
        theory.predictor(foreign, feats)
    with pytest.raises(ValueError, match="nonlinear_theory.gp_kernel"):
        pt.kernels.gp_kernel(arch, feats)
    zero = np.asarray(feats).copy()
    zero[2] = 0.0
    with pytest.raises(ValueError, match=r"training examples \[2\] have zero path features"):
        nl.NonlinearTheory(arch, zero, y)
    with pytest.warns(pt.ConvergenceWarning, match="did not converge"):
        assert not theory.solve(10, 0.1, max_iter=2, newton_steps=0).report["converged"]
    for refused in (pt.Architecture((pt.Residual(qk(rng, 2)), pt.Residual(pt.MLP("relu"))), readout="last"),
                    pt.Architecture((qk(rng, 2), pt.MLP("relu"), pt.MLP()), readout="last"),
                    mean_readout, below):
        with pytest.raises(ValueError, match="the samplers take a nonlinear MLP block only as the top level"):
            pt.sample_posterior(refused, pt.path_features(refused, x), y, 4, 0.1, method="nuts", num_warmup=2,
                                num_samples=2, num_chains=1, progress_bar=False)


def test_linear_counterpart_replaces_every_nonlinearity():
    """Oracle: the levels' nonlinearities, a block inside a skip connection included."""
    rng = np.random.default_rng(1)
    arch = pt.Architecture((qk(rng, 2), pt.Residual(pt.MLP("relu"), 0.5, 2.0), pt.MLP("erf")), readout="last")
    linear = nl.linear_counterpart(arch)
    assert linear.linear and linear.nonlinearities == ("identity",) * 3
    assert linear.attention[1].gains() == (0.5, 2.0) and linear.variances == arch.variances
