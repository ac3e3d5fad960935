"""The nonlinear MLP block between attention layers (the "path" heuristic): token-resolved features, the kernel
against a NumPy oracle, its reductions (identity: the linear theory; the GP point: the nonlinear network's GP, checked
against a Monte-Carlo prior of a wide network), ReLU homogeneity, the minimum and the predictor."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import action as act
from paththeory import nonlinear_theory as nl
from paththeory.kernels import kernel_matrix
from paththeory.kernel_maps import activation
from paththeory.solve import Theory
from tests.theory.test_nonlinear_theory import N0, data, numpy_map, qk, random_pd

jax.config.update("jax_enable_x64", True)


def between_arch(phi, seed=0, variances=(1.3, 0.8, 1.2, 1.5, 0.7)):
    """Attention (2 heads), the MLP block, attention (3 heads), last-token readout."""
    rng = np.random.default_rng(seed)
    return pt.Architecture((qk(rng, 2), pt.MLP(phi), qk(rng, 3)), readout="last", variances=variances)


def numpy_mean(phi, q):
    return np.sqrt(q / (2 * np.pi)) if phi == "relu" else np.zeros_like(q)


def numpy_kernel(phi, lower, upper, U, U_cut, lower_b=None, upper_b=None):
    """The path heuristic's kernel written here with NumPy, head pair by head pair (centred between heads)."""
    lower_b = lower if lower_b is None else lower_b
    upper_b = upper if upper_b is None else upper_b
    (P, G, T, _), (Pb, H) = lower.shape, upper_b.shape[:2]
    u, d = U.reshape(G, H, G, H), np.sqrt(np.diag(U_cut))

    def q_of(la, lb, h, k):
        ya, yb = la.transpose(1, 0, 2, 3).reshape(G, -1, N0), lb.transpose(1, 0, 2, 3).reshape(G, -1, N0)
        return sum(u[g, h, g2, k] * ya[g] @ yb[g2].T for g in range(G) for g2 in range(G)) / (d[h] * d[k])

    K = np.zeros((P, Pb))
    for h in range(H):
        for k in range(H):
            qa = np.diag(q_of(lower, lower, h, h))
            qb = np.diag(q_of(lower_b, lower_b, k, k))
            F = numpy_map(phi, q_of(lower, lower_b, h, k), qa, qb)
            if h != k:
                F = F - np.outer(numpy_mean(phi, qa), numpy_mean(phi, qb))
            K += d[h] * d[k] * np.einsum("ps,psqt,qt->pq", upper[:, h], F.reshape(P, T, Pb, T), upper_b[:, k])
    return K


def features(arch, n, seed=3):
    x, y = data(n, seed)
    tf = pt.token_features(arch, x)
    return x, y, pt.TokenFeatures(np.asarray(tf.lower), np.asarray(tf.upper))


def test_token_features_give_the_path_features():
    """Oracle: paththeory.path_features of the same network (sum over tokens of upper times lower)."""
    arch = between_arch("relu")
    x, _, tf = features(arch, 5)
    xi = np.einsum("bhs,bgsn->bghn", tf.upper, tf.lower).reshape(5, arch.n_paths, N0)
    # tolerance: 1e-13 relative
    np.testing.assert_allclose(xi, np.asarray(pt.path_features(arch, x)), rtol=1e-13, atol=1e-14)
    with pytest.raises(ValueError, match="one MLP block between attention layers"):
        pt.token_features(pt.Architecture((qk(np.random.default_rng(0), 2), pt.MLP("relu"))), x)


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_kernel_is_the_numpy_oracle_at_random_order_parameters(phi):
    arch = between_arch(phi)
    _, y, tf = features(arch, 6)
    theory = nl.NonlinearTheory(arch, tf, y)
    rng = np.random.default_rng(2)
    Us = [random_pd(rng, n, 1.4) for n in theory.sizes[:-1]]
    sol = nl.NonlinearSolution(Us, 0.9, arch.widths(8.0), 0.1)
    expected = numpy_kernel(phi, tf.lower, tf.upper, Us[0], Us[2])
    # tolerance: 1e-11 relative
    np.testing.assert_allclose(np.asarray(theory.kernel(sol)), expected, rtol=1e-11, atol=1e-13)


def test_identity_action_is_the_linear_action():
    """Oracle: action.action of the linear theory on the path features, at random positive-definite U."""
    arch = between_arch("identity")
    x, y, tf = features(arch, 8)
    theory = nl.NonlinearTheory(arch, tf, y)
    feats = pt.path_features(arch, x)
    rng = np.random.default_rng(4)
    for width in (7.0, (9.0, 11.0, 13.0, 8.0)):
        Us = [random_pd(rng, n, 1.0) for n in theory.sizes[:-1]]
        ours = theory.action(Us, 1.7, width, 0.2)
        linear = float(act.action([jnp.asarray(u) for u in Us], kernel_matrix(Us[0], feats), jnp.asarray(y), 0.2,
                                  arch.widths(width), arch.heads, arch.variances, U_a=1.7))
        # tolerance: 1e-12 relative
        assert abs(ours - linear) < 1e-12 * abs(linear)


def test_identity_minimum_is_the_linear_theory():
    """Oracle: the linear Theory's minimum (U_a in closed form) on the same network's path features."""
    arch = between_arch("identity")
    x, y, tf = features(arch, 8)
    ours = nl.NonlinearTheory(arch, tf, y).solve(6.0, 0.1)
    linear = Theory(arch, pt.path_features(arch, x), y).solve(6.0, 0.1, tol=1e-11)
    assert ours.report["converged"]
    for a, b in zip(ours.order_parameters, linear.order_parameters):
        # tolerance: 1e-7 (both minimised to gradients below 1e-10)
        np.testing.assert_allclose(a, b, atol=1e-7 * np.max(np.abs(b)))


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_gp_point_gives_the_gp_kernel(phi):
    """Oracle: the NNGP recursion written here with NumPy, c_up sum_h upper_h^T F[c_lo sum_g S_gg] upper_h; the
    off-diagonal (h != k) blocks of the centred map vanish there."""
    arch = between_arch(phi)
    _, y, tf = features(arch, 6)
    theory = nl.NonlinearTheory(arch, tf, y)
    v = arch.variances
    c_lo, c_up = v[1] * v[2], v[3] * v[4]
    Y = tf.lower.transpose(1, 0, 2, 3).reshape(2, -1, N0)
    S = c_lo * (Y[0] @ Y[0].T + Y[1] @ Y[1].T)
    F = numpy_map(phi, S).reshape(6, 4, 6, 4)
    expected = c_up * np.einsum("phs,psqt,qht->pq", tf.upper, F, tf.upper)
    # tolerance: 1e-11 relative
    np.testing.assert_allclose(np.asarray(theory.kernel(theory.gp_solution(10, 0.1))), expected, rtol=1e-11,
                               atol=1e-13)
    np.testing.assert_allclose(np.asarray(nl.gp_kernel(arch, tf)), expected, rtol=1e-11, atol=1e-13)


def _pooled(arch, params, x):
    """The readout token's last-layer vectors [B, n_L] of the network, forward pass written here."""
    attn = pt.attention_matrices(arch, x)
    n0, n1 = params["V0"].shape[0], params["V"][0].shape[1]
    z = jnp.einsum("in,btn->bti", params["V0"], x) / np.sqrt(N0)
    z = jnp.einsum("hji,bhsi,bhst->btj", params["V"][0], z[:, None], attn[0]) / np.sqrt(2 * n0)
    z = activation(arch.nonlinearities[1], jnp.einsum("ji,bti->btj", params["V"][1][0], z) / np.sqrt(n1))
    z = jnp.einsum("hji,bhsi,bhst->btj", params["V"][2], z[:, None], attn[2]) / np.sqrt(3 * z.shape[-1])
    return z[:, -1]


@pytest.mark.parametrize("phi", ["relu", pytest.param("erf", marks=pytest.mark.slow)])
def test_gp_kernel_is_monte_carlo_prior_of_a_wide_network(phi):
    """Oracle: E[f(x) f(x')] over 48 prior draws of the network at width 1,000 (its forward pass written here and
    checked against pt.network_output), the readout averaged exactly: E_a[f f'] = sigma_a^2 z . z' / n."""
    arch = between_arch(phi)
    x, _ = data(3)
    params = pt.sample_prior(arch, 50, N0, jax.random.PRNGKey(1))
    z = _pooled(arch, params, jnp.asarray(x))
    # tolerance: 1e-12 (the same network written twice)
    np.testing.assert_allclose(z @ params["a"] / np.sqrt(50), pt.network_output(arch, params, x), rtol=1e-12,
                               atol=1e-13)

    def draw(key):
        z = _pooled(arch, pt.sample_prior(arch, 1000, N0, key), jnp.asarray(x))
        return arch.variances[-1] * z @ z.T / 1000

    draws = np.asarray(jax.lax.map(jax.jit(draw), jax.random.split(jax.random.PRNGKey(0), 48)))
    estimate, stderr = draws.mean(0), draws.std(0, ddof=1) / np.sqrt(draws.shape[0])
    K = np.asarray(nl.gp_kernel(arch, pt.TokenFeatures(*map(np.asarray, pt.token_features(arch, x)))))
    # tolerance: 5 Monte-Carlo standard errors per entry, plus 2/n of the scale for the O(1/n) bias
    slack = 5 * stderr + 2e-3 * np.max(np.abs(K))
    assert np.all(np.abs(estimate - K) < slack), (estimate, K, stderr)
    K_lin = np.asarray(pt.kernels.gp_kernel(nl.linear_counterpart(arch), pt.path_features(arch, x)))
    assert np.any(np.abs(estimate - K_lin) > 10 * slack)  # the test has power: phi ignored is far outside


def test_relu_kernel_does_not_depend_on_the_cut_scale():
    """ReLU's positive homogeneity: the kernel is unchanged when D = sqrt(diag U_cut) is any positive diagonal."""
    arch = between_arch("relu")
    _, y, tf = features(arch, 5)
    grams = nl.TokenGrams(nl.token_grams(tf), jnp.asarray(tf.upper))
    U = random_pd(np.random.default_rng(8), 6, 1.0)
    base = nl.between_kernel("relu", grams, jnp.asarray(U), jnp.eye(3))
    for cut in (np.diag([0.3, 2.0, 5.0]), random_pd(np.random.default_rng(9), 3, 2.0)):
        # tolerance: 1e-12 relative
        np.testing.assert_allclose(nl.between_kernel("relu", grams, jnp.asarray(U), jnp.asarray(cut)), base,
                                   rtol=1e-12, atol=1e-14)
    erf = nl.between_kernel("erf", grams, jnp.asarray(U), jnp.eye(3))
    assert not np.allclose(nl.between_kernel("erf", grams, jnp.asarray(U), 4.0 * jnp.eye(3)), erf)


@pytest.mark.parametrize("phi", ["relu", pytest.param("erf", marks=pytest.mark.slow)])
def test_minimum_is_a_minimum_and_the_predictor_is_regression_with_its_kernel(phi):
    """Oracles: the action at nearby positive-definite points is not lower; the mean and variance are GP regression
    written here with the NumPy kernel on the joint (train + test) set at the solved U."""
    arch = between_arch(phi)
    _, y, tf = features(arch, 20)
    train = pt.TokenFeatures(tf.lower[:12], tf.upper[:12])
    test = pt.TokenFeatures(tf.lower[12:], tf.upper[12:])
    theory = nl.NonlinearTheory(arch, train, y[:12])
    sol = theory.solve(6.0, 0.1)
    assert sol.report["converged"] and sol.report["grad_norm"] <= 1e-10 and sol.report["hessian_min_eig"] > 0
    s0 = theory.action(sol.order_parameters, sol.U_a, 6.0, 0.1)
    rng = np.random.default_rng(6)
    for _ in range(3):
        Us = [u + 1e-3 * (lambda e: e + e.T)(rng.normal(size=u.shape)) for u in sol.order_parameters]
        assert theory.action(Us, sol.U_a * (1 + 1e-3 * rng.normal()), 6.0, 0.1) >= s0 - 1e-13
    mean, var = theory.predictor(sol, test)  # 8 test examples: one padded chunk
    K = numpy_kernel(phi, tf.lower, tf.upper, sol.U, sol.order_parameters[2])
    A = K[:12, :12] + 0.1 * np.eye(12)
    # tolerance: 1e-9 relative
    np.testing.assert_allclose(np.asarray(mean), K[12:, :12] @ np.linalg.solve(A, y[:12]), rtol=1e-9, atol=1e-12)
    expected_var = np.diag(K[12:, 12:] - K[12:, :12] @ np.linalg.solve(A, K[:12, 12:]))
    np.testing.assert_allclose(np.asarray(var), expected_var, rtol=1e-9, atol=1e-12)


def test_bad_input_names_the_token_features():
    arch = between_arch("relu")
    x, y, tf = features(arch, 6)
    with pytest.raises(TypeError, match=r"token-resolved features: features must be paththeory.token_features"):
        nl.NonlinearTheory(arch, pt.path_features(arch, x), y)
    with pytest.raises(ValueError, match=r"lower \[P, 2, T, N0\] and upper \[P, 3, T\]"):
        nl.NonlinearTheory(arch, pt.TokenFeatures(tf.lower[:, :1], tf.upper), y)
    zero = np.array(tf.lower)
    zero[4, :, 2] = 0.0
    with pytest.raises(ValueError, match=r"training examples \[4\] have tokens with zero features"):
        nl.NonlinearTheory(arch, pt.TokenFeatures(zero, tf.upper), y)
    theory = nl.NonlinearTheory(arch, tf, y)
    with pytest.raises(ValueError, match="features_test must hold lower"):
        theory.predictor(theory.gp_solution(5, 0.1), pt.TokenFeatures(tf.lower[:, :, :2], tf.upper[:, :, :2]))
    huge = pt.TokenFeatures(tf.lower * 1e155, tf.upper)
    with pytest.raises(ValueError, match="features are too large for float64"):
        nl.NonlinearTheory(arch, huge, y)
    with pytest.raises(ValueError, match="features_test are too large for float64"):
        theory.predictor(theory.gp_solution(5, 0.1), huge)
    with pytest.raises(ValueError, match="predictor is not finite"):
        theory.predictor(theory.gp_solution(5, 0.1), pt.TokenFeatures(tf.lower * 1e100, tf.upper))
    with pytest.raises(ValueError, match="features_b must have N0 = 6"):
        nl.gp_kernel(arch, tf, pt.TokenFeatures(tf.lower[..., :5], tf.upper))
    with pytest.raises(TypeError, match="features.lower must hold real numbers"):
        nl.NonlinearTheory(arch, pt.TokenFeatures(tf.lower + 1j, tf.upper), y)
    top = pt.Architecture((qk(np.random.default_rng(0), 2), qk(np.random.default_rng(1), 3), pt.MLP("relu")),
                          readout="last")
    with pytest.raises(TypeError, match="block is on top: features must be paththeory.path_features"):
        nl.NonlinearTheory(top, tf, y)
    with pytest.raises(TypeError, match="block is on top: features_b must be paththeory.path_features"):
        nl.gp_kernel(top, pt.path_features(top, x), tf)
    other = pt.Architecture((qk(np.random.default_rng(2), 4), pt.MLP("relu"), qk(np.random.default_rng(3), 3)),
                            readout="last")
    with pytest.raises(ValueError, match=r"lower \[P, 2, T, N0\] and upper \[P, 3, T\] .* heads \(2, 1, 3\)"):
        pt.sample_posterior(arch, pt.token_features(other, x), y, 3, 0.1, method="nuts")  # would drop paths silently


@pytest.mark.parametrize("phi", ["relu", "erf"])
def test_samplers_token_design_is_the_forward_pass(phi):
    """Oracle: pt.network_output, at unequal widths and non-unit variances."""
    from paththeory.sampling.path_form import readout_design

    arch = between_arch(phi)
    x, _, tf = features(arch, 6)
    params = pt.sample_prior(arch, (5, 4, 7, 3), N0, jax.random.PRNGKey(2))
    f = readout_design(arch, params, tf) @ params["a"] / np.sqrt(arch.variances[-1])
    # tolerance: 1e-12 relative
    np.testing.assert_allclose(f, pt.network_output(arch, params, x), rtol=1e-12, atol=1e-13)


def test_nuts_samples_a_network_with_a_block_between_layers_and_refuses_mixed_features():
    arch = between_arch("relu")
    x, y, tf = features(arch, 6)
    res = pt.sample_posterior(arch, tf, y, 3, 0.1, features_test=pt.TokenFeatures(tf.lower[:2], tf.upper[:2]),
                              method="nuts", num_warmup=10, num_samples=10, num_chains=1, progress_bar=False)
    assert res.U.shape == (6, 6) and res.mean.shape == (2,) and [u.shape for u in res.inner] == [(3, 3), (3, 3), (1, 1)]
    auto = pt.sample_posterior(arch, tf, y, 3, 0.1, num_warmup=5, num_samples=5, num_chains=1, target_ess=None,
                               progress_bar=False)
    assert auto.settings["auto"]["method"] == "nuts" and "nonlinear MLP block (relu)" in auto.settings["auto"]["reason"]
    with pytest.raises(TypeError, match="features_test must be paththeory.token_features"):
        pt.sample_posterior(arch, tf, y, 3, 0.1, features_test=pt.path_features(arch, x), method="nuts")
    with pytest.raises(ValueError, match="a block between attention layers takes paththeory.token_features"):
        pt.sample_posterior(arch, pt.path_features(arch, x), y, 3, 0.1, method="nuts")
    with pytest.raises(ValueError, match="exact Gibbs sampler"):
        pt.sample_posterior(arch, tf, y, 3, 0.1, method="gibbs")
    top = pt.Architecture((qk(np.random.default_rng(0), 2), pt.MLP("relu")), readout="last")
    with pytest.raises(ValueError, match="one MLP block between attention layers"):
        pt.sample_posterior(top, tf, y, 3, 0.1, method="nuts")
