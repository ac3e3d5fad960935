"""The steps of the derivation chapters that can be checked with numbers (book/derivation.md,
book/depth.md, book/order_parameter.md): the Gaussian and Gamma identities, the single-path closed
form and its AM-GM argument, the GP point as the unique minimum of the entropy, the Jacobian of the
congruence that rescales the Wishart overlap, the trace and log-det bookkeeping of the depth-l
entropy, the entropy as minus twice the log prior density of the overlaps (Result 2 by induction),
the matrix quadratic for U^(2) with its commuting root and the envelope argument for U_a, the
conditional overlap of the effective weights at two layers, the spectral form of the energy and
the invariance of the mean predictor under (U, T) -> (cU, cT)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special
from scipy import stats as st

import paththeory as pt
from paththeory import action as act
from paththeory.kernels import kernel_matrix
from paththeory.predict import predictor
from paththeory.solve import Theory


def _pd(d: int, rng: np.random.Generator) -> np.ndarray:
    B = rng.normal(size=(d, d))
    return B @ B.T / d + 0.3 * np.eye(d)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_single_path_entropy_is_a_sum_of_ratios_and_its_minimum_the_closed_form(depth):
    """One head per layer, equal widths, unit variances: S_ent / N = sum of the L + 1 ratios
    U_a, U^(L)/U_a, ..., U^(1)/U^(2) minus ln U; their product is U, so by AM-GM the minimum is
    (L + 1) U^{1/(L+1)} - ln U, reached where all ratios equal U^{1/(L+1)}."""
    rng = np.random.default_rng(depth)
    N, U = 7.0, 2.3
    widths, heads, variances = (N,) * (depth + 1), (1,) * depth, (1.0,) * (depth + 2)
    chain = [U] + list(np.exp(rng.normal(size=depth)))  # U^(1), ..., U^(L), U_a
    ent = act.entropy_with_readout([jnp.array([[c]]) for c in chain[:depth]], chain[-1], widths, heads, variances)
    ratios = [chain[k] / chain[k + 1] for k in range(depth)] + [chain[-1]]
    assert np.prod(ratios) == pytest.approx(U, rel=1e-12)
    assert float(ent) / N == pytest.approx(sum(ratios) - np.log(U), rel=1e-12)

    def per_width(logs):  # inner order parameters and U_a, as logarithms
        inner = [jnp.exp(v).reshape(1, 1) for v in logs[:-1]]
        return act.entropy_with_readout([jnp.array([[U]])] + inner, jnp.exp(logs[-1]), widths, heads, variances) / N

    equal = jnp.log(jnp.array([U ** ((depth + 1 - k) / (depth + 1)) for k in range(1, depth + 1)]))
    assert float(per_width(equal)) == pytest.approx(act.single_path_entropy_minimum(U, depth), rel=1e-12)
    assert float(jnp.max(jnp.abs(jax.grad(per_width)(equal)))) < 1e-12


def test_jacobian_of_a_congruence_on_symmetric_matrices():
    """S -> A S A^T on d x d symmetric matrices has Jacobian |det A|^{d+1}."""
    rng = np.random.default_rng(0)
    d = 4
    A = rng.normal(size=(d, d))
    iu = np.triu_indices(d)
    J = np.zeros((len(iu[0]), len(iu[0])))
    for k, (i, j) in enumerate(zip(*iu)):
        E = np.zeros((d, d))
        E[i, j] = E[j, i] = 1.0
        J[:, k] = (A @ E @ A.T)[iu]
    assert abs(np.linalg.det(J)) == pytest.approx(abs(np.linalg.det(A)) ** (d + 1), rel=1e-10)


def test_trace_and_log_det_of_the_kronecker_metric():
    """With M = I_{H_l} (x) U^(l+1): Tr[M^-1 U] = Tr[(U^(l+1))^-1 Tr_{h_l} U], ln det M = H_l ln det U^(l+1)."""
    rng = np.random.default_rng(1)
    H1, H2 = 2, 3
    U, U2 = _pd(H1 * H2, rng), _pd(H2, rng)
    M = np.kron(np.eye(H1), U2)
    traced = np.asarray(act.partial_trace(jnp.asarray(U), H1))
    assert np.trace(np.linalg.solve(M, U)) == pytest.approx(np.trace(np.linalg.solve(U2, traced)), rel=1e-12)
    assert np.linalg.slogdet(M)[1] == pytest.approx(H1 * np.linalg.slogdet(U2)[1], rel=1e-12)


def test_entropy_is_minus_twice_the_log_prior_density_of_the_overlaps():
    """At two layers, with unequal widths and variances: the entropy equals -2 ln of the chain of
    prior densities (Gamma for U_a, Wishart for U^(2) given U_a, Wishart for U given U^(2), with
    scale sigma_l^2 I (x) U^(l+1)), plus (d + 1) ln det for each d x d matrix and 2 ln U_a (the
    powers the large-width form drops), up to a constant that does not depend on the order parameters."""
    heads, widths, var = (2, 3), (11.0, 13.0, 17.0), (1.0, 0.7, 1.3, 1.6)
    n0, n1, n2 = widths

    def minus_two_log_prior(U1, U2, Ua):
        out = -2 * st.wishart.logpdf(U1, df=n0, scale=var[1] * np.kron(np.eye(heads[0]), U2) / n0)
        out += -2 * st.wishart.logpdf(U2, df=n1, scale=var[2] * Ua * np.eye(heads[1]) / n1)
        out += -2 * st.gamma.logpdf(Ua, a=n2 / 2, scale=2 * var[3] / n2)
        return out - (U1.shape[0] + 1) * np.linalg.slogdet(U1)[1] - (U2.shape[0] + 1) * np.linalg.slogdet(U2)[1] \
            - 2 * np.log(Ua)

    gaps = []
    for seed in range(3):
        rng = np.random.default_rng(10 + seed)
        U1, U2, Ua = _pd(6, rng), _pd(3, rng), float(np.exp(rng.normal()))
        ent = float(act.entropy_with_readout([jnp.asarray(U1), jnp.asarray(U2)], Ua, widths, heads, var))
        gaps.append(ent - minus_two_log_prior(U1, U2, Ua))
    assert np.ptp(gaps) < 1e-8 * abs(gaps[0])


@pytest.fixture(scope="module")
def two_layer_solution():
    rng = np.random.default_rng(0)
    layers = [pt.QKAttention(rng.normal(size=(2, 4, 10)), rng.normal(size=(2, 4, 10))) for _ in range(2)]
    arch = pt.Architecture(layers, readout="mean")
    x = rng.normal(size=(50, 6, 10))
    y = np.sign(x[:, 0, 0] + 0.5 * x[:, 1, 1])
    return arch, Theory(arch, pt.path_features(arch, x), y).solve(8, 0.05)


def test_inner_order_parameter_solves_the_matrix_quadratic_and_commutes(two_layer_solution):
    """U2^2 + beta_2 U2 - gamma_2 Tr_{h1}U = 0 with beta_2 = sigma_2^2 U_a (H1 n0 / n1 - 1) and
    gamma_2 = sigma_2^2 U_a n0 / (sigma_1^2 n1) (the a U2^2 + b U2 - c u form divided by
    a = n1 / (sigma_2^2 U_a)), at the solver's jointly optimised U^(2); the root commutes with Tr_{h1} U."""
    arch, sol = two_layer_solution
    U, U2 = np.asarray(sol.U), np.asarray(sol.inner[0])
    n0, n1, _ = sol.widths
    v = arch.variances
    u = np.asarray(act.partial_trace(jnp.asarray(U), arch.heads[0]))
    Ua = float(act.readout_order_parameter(np.trace(U2), sol.widths, arch.heads, v))
    beta2, gamma2 = v[2] * Ua * (arch.heads[0] * n0 / n1 - 1), v[2] * Ua * n0 / (v[1] * n1)
    scale = np.max(np.abs(gamma2 * u))
    assert np.max(np.abs(U2 @ U2 + beta2 * U2 - gamma2 * u)) < 1e-6 * scale
    a, b, c = n1 / (v[2] * Ua), n0 * arch.heads[0] - n1, n0 / v[1]  # the unnormalised form
    assert np.max(np.abs(a * U2 @ U2 + b * U2 - c * u)) < 1e-6 * np.max(np.abs(c * u))
    assert np.max(np.abs(U2 @ u - u @ U2)) < 1e-6 * np.max(np.abs(U2)) * np.max(np.abs(u))


def test_readout_order_parameter_drops_out_of_the_inner_stationarity(two_layer_solution):
    """Envelope theorem: with U_a at its root, dS_ent/dU^(2) is the same whether U_a follows U^(2)
    or is held fixed, at the solution and away from it."""
    arch, sol = two_layer_solution
    U = jnp.asarray(sol.U)
    rng = np.random.default_rng(3)
    for U2 in (np.asarray(sol.inner[0]), _pd(2, rng)):
        Ua = act.readout_order_parameter(np.trace(U2), sol.widths, arch.heads, arch.variances)
        g_follow = jax.grad(lambda m: act.entropy([U, m], sol.widths, arch.heads, arch.variances))(jnp.asarray(U2))
        g_fixed = jax.grad(lambda m: act.entropy_with_readout([U, m], Ua, sol.widths, arch.heads,
                                                              arch.variances))(jnp.asarray(U2))
        assert float(jnp.max(jnp.abs(g_follow - g_fixed))) < 1e-10


def test_conditional_overlap_of_effective_weights_at_two_layers(two_layer_solution):
    """Result 2's induction step: given a and V^2, the effective weights w^(h1, h2) are Gaussian with
    E[w^pi . w^pi' / n0] = sigma_1^2 delta_{h1 h1'} Uhat^(2)_{h2 h2'}, Uhat^(2) = w^h2 . w^h2' / n1."""
    arch, _ = two_layer_solution
    params = pt.sample_prior(arch, 6, 10, jax.random.PRNGKey(1))
    a, V2 = np.asarray(params["a"]), np.asarray(params["V"][1])
    w2 = np.einsum("j,hji->hi", a, V2) / np.sqrt(a.size)  # [H2, n1]
    target = arch.variances[1] * np.kron(np.eye(arch.heads[0]), w2 @ w2.T / w2.shape[1])

    def draw(key):
        v1 = jax.random.normal(key, params["V"][0].shape) * np.sqrt(arch.variances[1])
        return pt.effective_weights(arch, {**params, "V": (v1, params["V"][1])})

    ws = np.asarray(jax.vmap(draw)(jax.random.split(jax.random.PRNGKey(3), 20_000)))
    overlaps = np.einsum("dpi,dqi->dpq", ws, ws) / ws.shape[2]
    z = np.abs(overlaps.mean(0) - target) / (overlaps.std(0) / np.sqrt(len(overlaps)))
    assert z.max() < 5


def test_gaussian_integral_with_a_complex_linear_term():
    """Lemma (Gaussian integral) at P = 1 with b = -y + i t k: the real and imaginary parts of
    int dtau exp(-K tau^2 / 2 + i tau b) against sqrt(2 pi / K) exp(-b^2 / 2K)."""
    K, y, t, k = 1.7, 0.6, 0.4, 0.9
    b = -y + 1j * t * k
    f = lambda tau: np.exp(-K * tau**2 / 2 + 1j * tau * b)
    re = integrate.quad(lambda tau: f(tau).real, -np.inf, np.inf, epsabs=1e-13)[0]
    im = integrate.quad(lambda tau: f(tau).imag, -np.inf, np.inf, epsabs=1e-13)[0]
    exact = np.sqrt(2 * np.pi / K) * np.exp(-b**2 / (2 * K))
    assert abs(re + 1j * im - exact) < 1e-10


@pytest.mark.parametrize("n,q", [(3.0, 0.5), (10.0, 7.0), (41.0, 120.0)])
def test_gamma_identity(n, q):
    """Lemma (Gamma identity), in logs: (1 + s q / n)^(-n/2) against the normalised integral of
    U^(n/2 - 1) exp(-n U / 2 s - U q / 2) over U > 0."""
    s = 1.3
    rate = n / (2 * s) + q / 2
    peak = (n / 2 - 1) / rate
    f = lambda u: u ** (n / 2 - 1) * np.exp(-rate * u)
    integral = sum(integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-12, limit=200)[0]
                   for lo, hi in ((0, peak), (peak, np.inf)))
    rhs = n / 2 * np.log(n / (2 * s)) - special.gammaln(n / 2) + np.log(integral)
    assert abs(rhs - (-n / 2 * np.log1p(s * q / n))) < 1e-9


def test_gp_point_is_the_unique_minimum_of_the_entropy():
    """Corollary (the GP point): at unequal widths and variances the entropy, with U_a at its
    root, is higher at random positive-definite points and at small perturbations of the GP
    point than at the GP point."""
    heads, widths, variances = (2, 3), (5.0, 7.0, 13.0), (1.0, 0.6, 1.7, 2.1)
    gp = [jnp.asarray(u) for u in act.gp_order_parameters(heads, variances)]
    at_gp = float(act.entropy(gp, widths, heads, variances))
    rng = np.random.default_rng(4)
    for _ in range(20):
        far = [jnp.asarray(_pd(6, rng)), jnp.asarray(_pd(3, rng))]
        assert float(act.entropy(far, widths, heads, variances)) > at_gp
        near = []
        for u in gp:
            d = rng.normal(size=u.shape) * 1e-2
            near.append(u + jnp.asarray(d + d.T))
        assert float(act.entropy(near, widths, heads, variances)) > at_gp


def test_energy_in_the_eigenbasis_of_the_kernel(two_layer_solution):
    """E(U) = sum_i [ln(eta_i + T) + (phi_i . y)^2 / (eta_i + T)] for K_U = sum_i eta_i phi_i phi_i^T."""
    arch, _ = two_layer_solution
    rng = np.random.default_rng(5)
    x = rng.normal(size=(30, 6, 10))
    y = np.sign(x[:, 0, 0])
    K = np.asarray(kernel_matrix(_pd(4, rng), pt.path_features(arch, x)))
    eta, phi = np.linalg.eigh(K)
    for T in (1e-3, 0.05, 2.0):
        spectral = np.sum(np.log(eta + T) + (phi.T @ y) ** 2 / (eta + T))
        assert abs(float(act.energy(K, y, T)) - spectral) < 1e-9 * abs(spectral)


@pytest.mark.parametrize("c", [0.01, 7.0])
def test_mean_predictor_is_invariant_under_scaling_u_and_t_together(two_layer_solution, c):
    """Corollary (scaling U and T): mean(cU, cT) = mean(U, T) and var(cU, cT) = c var(U, T)."""
    arch, _ = two_layer_solution
    rng = np.random.default_rng(6)
    x = rng.normal(size=(25, 6, 10))
    y = np.sign(x[:, 0, 0])
    f = np.asarray(pt.path_features(arch, x))
    U, T = _pd(4, rng), 0.1
    mean, var = predictor(U, f[:20], y[:20], f[20:], T)
    mean_c, var_c = predictor(c * U, f[:20], y[:20], f[20:], c * T)
    np.testing.assert_allclose(mean_c, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(var_c, c * np.asarray(var), rtol=1e-8, atol=1e-12)
