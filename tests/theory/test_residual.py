"""Linear MLP blocks and skip connections (blocks-spec.md) against independent oracles.

Every test states its oracle in its docstring and its tolerance in a comment; none of the oracles
calls the code it checks (the forward pass, a token-covariance recursion written here, Monte Carlo
over the prior, finite differences, closed forms from the spec solved here with SciPy).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq, minimize, minimize_scalar

import paththeory as pt
from paththeory import action as act
from paththeory.kernels import gp_kernel, kernel_operator
from paththeory.solve import (
    Theory,
    _Data,
    _gradients,
    parameter_count,
    theta_to_matrices,
)

jax.config.update("jax_enable_x64", True)  # the package import does this already; stated for the oracles

N0, TOKENS = 6, 4


def qk(rng, heads, n0=N0, g=3):
    return pt.QKAttention(rng.normal(size=(heads, g, n0)), rng.normal(size=(heads, g, n0)))


def mixed_stack(seed=0):
    """Attention (2 heads, skip), MLP, Residual(MLP), attention (3 heads): every kind of level."""
    rng = np.random.default_rng(seed)
    levels = (pt.Residual(qk(rng, 2), 0.8, 1.3), pt.MLP(), pt.Residual(pt.MLP(), 1.1, 0.6), qk(rng, 3))
    return pt.Architecture(levels, readout="mean", variances=(1.3, 0.7, 1.6, 0.9, 1.2, 0.8))


def skip_arch(seed=1, gains=((1.0, 1.0), (0.9, 1.2)), variances=(1.2, 0.8, 1.3, 0.9), readout="last"):
    """Two attention levels, both inside a skip (the top one ties U_a): 9 paths."""
    rng = np.random.default_rng(seed)
    (s1, a1), (s2, a2) = gains
    return pt.Architecture((pt.Residual(qk(rng, 2), s1, a1), pt.Residual(qk(rng, 2), s2, a2)), readout=readout,
                           variances=variances)


def data(n_examples, seed=3, n_outputs=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_examples, TOKENS, N0))
    shape = (n_examples,) if n_outputs is None else (n_examples, n_outputs)
    return x, rng.choice([-1.0, 1.0], size=shape)


def readout_r(readout, t):
    r = np.zeros(t)
    if readout == "mean":
        r[:] = 1.0 / t
    else:
        r[0 if readout == "first" else -1] = 1.0
    return r


# --------------------------------------------------------------------------- 1. forward pass


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_pass_equals_path_expansion(seed):
    """Oracle: the explicit layer-by-layer forward pass (network_output) vs the sum over paths."""
    arch = mixed_stack(seed)
    assert arch.n_paths == 3 * 1 * 2 * 3 and arch.paths[0] == (None, 0, None, 0)
    x, _ = data(5, seed)
    # widths equal around every skip (n0 = n1, n2 = n3), unequal elsewhere
    params = pt.sample_prior(arch, (5, 5, 7, 7, 6), N0, jax.random.PRNGKey(seed))
    f_net = np.asarray(pt.network_output(arch, params, x))
    f_paths = np.asarray(pt.path_expansion_output(arch, params, x))
    # tolerance: 1e-12 relative to max |f| (float64 round-off of a few hundred products)
    assert np.max(np.abs(f_net - f_paths)) < 1e-12 * np.max(np.abs(f_net))
    assert np.std(f_net) > 1e-2  # not trivially zero


# --------------------------------------------------------------------------- 2. GP kernel


def covariance_recursion(arch, x):
    """E[f(x) f(x')] from the forward-pass definition, token covariance level by level (no path code):
    Sigma^0 = s0^2 x x^T / N0, Sigma^l = g_s^2 Sigma + g_a^2 s_l^2 / H sum_h A_h^T Sigma A_h, f: s_a^2 r^T Sigma r."""
    t, n0 = x.shape[1:]
    var = arch.variances
    attn = [np.asarray(a) for a in pt.attention_matrices(arch, x)]  # [B, H, key, query] (identity for an MLP)
    sigma = var[0] * np.einsum("asn,btn->asbt", x, x) / n0  # [B, T, B, T]
    for l, (layer, a) in enumerate(zip(arch.attention, attn)):
        g_s, g_a = (layer.skip_gain, layer.branch_gain) if isinstance(layer, pt.Residual) else (0.0, 1.0)
        h = a.shape[1]
        mixed = np.einsum("ahst,asbu,bhuv->atbv", a, sigma, a)  # sum_h A_h^(a)T Sigma^(ab) A_h^(b)
        sigma = g_s**2 * sigma + g_a**2 * var[l + 1] / h * mixed
    r = readout_r(arch.readout, t)
    return var[-1] * np.einsum("s,asbt,t->ab", r, sigma, r)


def test_recursion_normalisation_matches_forward_pass():
    """Oracle for the recursion's normalisation: network_output vs the forward pass written out by hand
    (z^1 = g_s z^0 + g_a (H n)^{-1/2} sum_h V_h z^0 A_h) for a one-level skip network at given weights."""
    rng = np.random.default_rng(5)
    layer = qk(rng, 2)
    arch = pt.Architecture((pt.Residual(layer, 0.7, 1.4),), readout="last", variances=(1.0, 1.0, 1.0))
    x, _ = data(2, 5)
    n = 3
    params = {"V0": rng.normal(size=(n, N0)), "V": (rng.normal(size=(2, n, n)),), "a": rng.normal(size=n)}
    a = np.asarray(pt.attention_matrices(arch, x)[0])
    z0 = np.einsum("in,btn->bti", params["V0"], x) / np.sqrt(N0)
    heads = sum(np.einsum("ji,bsi,bst->btj", params["V"][0][h], z0, a[:, h]) for h in range(2))
    z1 = 0.7 * z0 + 1.4 * heads / np.sqrt(2 * n)
    f = z1[:, -1] @ params["a"] / np.sqrt(n)
    # tolerance: 1e-13 relative (a handful of products)
    np.testing.assert_allclose(np.asarray(pt.network_output(arch, params, x)), f, rtol=1e-13)


@pytest.mark.parametrize("which", ["mixed", "skip"])
def test_gp_kernel_equals_covariance_recursion(which):
    """Oracle: the token-covariance recursion of the forward pass (written here, no paths)."""
    arch = mixed_stack(2) if which == "mixed" else skip_arch(readout="first")
    x, _ = data(6, 4)
    K = np.asarray(gp_kernel(arch, pt.path_features(arch, x)))
    K_ref = covariance_recursion(arch, x)
    # tolerance: 1e-12 relative to max |K| (round-off only)
    assert np.max(np.abs(K - K_ref)) < 1e-12 * np.max(np.abs(K_ref)), np.max(np.abs(K - K_ref))


def test_gp_kernel_is_monte_carlo_prior_covariance():
    """Oracle: E[f(x) f(x')] over 40,000 prior draws of the finite network (width 4) with skips and an MLP."""
    rng = np.random.default_rng(6)
    arch = pt.Architecture((pt.Residual(qk(rng, 2), 0.8, 1.2), pt.Residual(pt.MLP(), 1.0, 0.7)), readout="mean",
                           variances=(1.3, 0.9, 1.4, 0.8))
    x, _ = data(3, 6)
    attn = pt.attention_matrices(arch, x)
    xj = jnp.asarray(x)
    n_samples = 40_000

    def draw(key):
        return pt.network_output(arch, pt.sample_prior(arch, 4, N0, key), xj, attn=attn)

    f = np.asarray(jax.lax.map(draw, jax.random.split(jax.random.PRNGKey(0), n_samples), batch_size=5000))
    products = f[:, :, None] * f[:, None, :]
    estimate, stderr = products.mean(0), products.std(0) / np.sqrt(n_samples)
    K = np.asarray(gp_kernel(arch, pt.path_features(arch, x)))
    # tolerance: 5 Monte-Carlo standard errors per entry (linear network: E = K_GP exactly at any width)
    assert np.all(np.abs(estimate - K) < 5 * stderr), (estimate, K, stderr)
    # and the test has power: the kernel without the skip connections is far outside that
    no_skip = pt.Architecture([level.layer for level in arch.attention], readout="mean", variances=arch.variances)
    K_no_skip = np.asarray(gp_kernel(no_skip, pt.path_features(no_skip, x)))
    assert np.any(np.abs(estimate - K_no_skip) > 5 * stderr)


# --------------------------------------------------------------------------- 3. gradient


def own_kernel(U, feats, n_outputs):
    """K^{cd}_{mu nu} = sum_ab U^{cd}_ab xi^a_mu . xi^b_nu, output index slowest (written here)."""
    p, n, _ = feats.shape
    k = jnp.einsum("man,cadb,qbn->cmdq", feats, U.reshape(n_outputs, n, n_outputs, n), feats)
    return k.reshape(n_outputs * p, n_outputs * p)


@pytest.mark.parametrize("n_outputs", [None, 2])
def test_action_gradient_in_solver_parametrisation_matches_finite_differences(n_outputs):
    """Oracle: central finite differences of S/N(theta) (theta_to_matrices + action) on every coordinate."""
    arch = skip_arch()
    x, y = data(7, 8, n_outputs)
    feats = pt.path_features(arch, x)
    theory = Theory(arch, feats, y)
    c = 1 if n_outputs is None else n_outputs
    assert theory.sizes == (9 * c, 3 * c, c) and theory.skips == (True, True)
    L, widths, temp = 2, (5.0, 5.0, 5.0), 0.2
    yvec = jnp.asarray(np.asarray(y).T.reshape(-1))  # vec(Y), output index slowest

    def objective(theta):
        Us = theta_to_matrices(theta, theory.sizes, theory.scales, theory.skips, c)
        K = own_kernel(Us[0], feats, c)
        return act.action(Us[:L], K, yvec, temp, widths, arch.heads, arch.variances, arch.skips, U_a=Us[L])

    d = parameter_count(theory.sizes, theory.skips)
    theta = 0.3 * np.random.default_rng(9).normal(size=d)
    f = jax.jit(objective)
    grad = np.asarray(jax.jit(jax.grad(objective))(jnp.asarray(theta)))
    h = 1e-6
    fd = np.empty(d)
    for k in range(d):  # every coordinate
        e = np.zeros(d)
        e[k] = h
        fd[k] = (float(f(theta + e)) - float(f(theta - e))) / (2 * h)
    # tolerance: 1e-6 relative to max |grad| (truncation O(h^2) ~ 1e-12, round-off ~ 1e-16 |S/N| / h ~ 1e-9)
    assert np.max(np.abs(grad - fd)) < 1e-6 * max(1.0, np.max(np.abs(grad))), np.max(np.abs(grad - fd))
    # the solver's own gradient routine (package kernel operator) gives the same
    op_data = _Data(kernel_operator(feats, n_outputs=c), yvec, jnp.asarray(temp), jnp.asarray(widths))
    f_s, g_s, _ = jax.jit(lambda t: _gradients(t, op_data, theory.sizes, theory.scales, arch.heads, arch.variances,
                                               theory.skips))(jnp.asarray(theta))
    assert abs(float(f_s) - float(f(theta))) < 1e-12 * abs(float(f_s))  # round-off
    assert np.max(np.abs(np.asarray(g_s) - fd)) < 1e-6 * max(1.0, np.max(np.abs(grad)))


# --------------------------------------------------------------------------- 4. ties


def own_skip_block(U, branches, n_outputs):
    m = U.shape[0] // (n_outputs * branches)
    return np.asarray(U).reshape(n_outputs, branches, m, n_outputs, branches, m)[:, 0, :, :, 0, :].reshape(
        n_outputs * m, n_outputs * m)


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_theta_to_matrices_ties_skip_blocks(n_outputs):
    """Oracle: the definition U^(l)_{00} = U^(l+1) (skip block extracted here), and check_ties on a broken tie."""
    rng = np.random.default_rng(10)
    arch = pt.Architecture((pt.Residual(qk(rng, 2)), pt.MLP(), pt.Residual(qk(rng, 3))), variances=(1, 0.8, 1.3, 0.7, 1.1))
    x, y = data(5, 11, None if n_outputs == 1 else n_outputs)
    theory = Theory(arch, pt.path_features(arch, x), y)
    sizes, skips = theory.sizes, theory.skips
    assert sizes == tuple(n_outputs * s for s in (12, 4, 4, 1))
    for _ in range(3):
        theta = 0.3 * rng.normal(size=parameter_count(sizes, skips))  # moderate: U well conditioned
        Us = [np.asarray(u) for u in theta_to_matrices(theta, sizes, theory.scales, skips, n_outputs)]
        for l in (0, 2):
            block, upper = own_skip_block(Us[l], arch.branches[l], n_outputs), Us[l + 1]
            # tolerance: 1e-14 relative (the tie is built in; only round-off of the permutation)
            assert np.max(np.abs(block - upper)) <= 1e-14 * np.max(np.abs(upper))
        for U in Us:
            assert np.linalg.eigvalsh(U)[0] > 0
    readout = jnp.asarray(Us[-1])
    act.check_ties([jnp.asarray(u) for u in Us[:3]], readout, arch.heads, arch.skips)  # passes
    bad = Us[2].copy()
    bad[0, 0] += 1e-6 * np.max(np.abs(bad))
    with pytest.raises(ValueError, match="skip block of U\\^\\(3\\) must equal U_a"):
        act.check_ties([jnp.asarray(Us[0]), jnp.asarray(Us[1]), jnp.asarray(bad)], readout, arch.heads, arch.skips)
    with pytest.raises(ValueError, match="ties U_a to U\\^\\(L\\): pass U_a"):
        act.check_ties([jnp.asarray(u) for u in Us[:3]], None, arch.heads, arch.skips)
    # without a skip at the top no U_a is needed, and a broken lower tie is still found
    lower = (True, False, False)
    act.check_ties([jnp.asarray(u) for u in Us[:3]], None, arch.heads, lower, n_outputs)
    broken = Us[1].copy()
    broken[0, 0] *= 1.01
    with pytest.raises(ValueError, match="skip block of U\\^\\(1\\) must equal U\\^\\(2\\)"):
        act.check_ties([jnp.asarray(Us[0]), jnp.asarray(broken), jnp.asarray(Us[2])], None, arch.heads, lower,
                       n_outputs)


# --------------------------------------------------------------------------- 5. g_s = 0


@pytest.mark.parametrize("inner", ["attention", pytest.param("mlp", marks=pytest.mark.slow)])  # slow: 2 solver compiles
def test_zero_skip_gain_reduces_to_plain_architecture(inner):
    """Oracle: the plain architecture (no Residual) solved separately (spec §3 special case 2)."""
    rng = np.random.default_rng(12)
    l1, l2 = qk(rng, 2), (pt.MLP() if inner == "mlp" else qk(rng, 2))
    variances = (1.1, 0.9, 1.3, 0.8)
    plain = pt.Architecture((l1, l2), readout="last", variances=variances)
    skip = pt.Architecture((pt.Residual(l1, 0.0, 1.0), pt.Residual(l2, 0.0, 1.0)), readout="last",
                           variances=variances)
    x, y = data(8, 13)
    width, temp = 4, 0.1
    sol_plain = Theory(plain, pt.path_features(plain, x), y).solve(width, temp, tol=1e-10)
    sol_skip = Theory(skip, pt.path_features(skip, x), y).solve(width, temp, tol=1e-10)
    assert sol_plain.report["converged"] and sol_skip.report["converged"]
    heads = np.array([None not in p for p in skip.paths])
    U_heads = sol_skip.U[np.ix_(heads, heads)]
    assert U_heads.shape == sol_plain.U.shape
    assert np.max(np.abs(sol_plain.U - np.diag(np.diag(sol_plain.U)))) > 1e-3  # the test has power: U is not GP
    # tolerance: 1e-6 relative (solver tolerance 1e-10 on the gradient of S/N)
    assert np.max(np.abs(U_heads - sol_plain.U)) < 1e-6 * np.max(np.abs(sol_plain.U)), np.max(np.abs(U_heads - sol_plain.U))
    assert abs(sol_skip.U_a - sol_plain.U_a) < 1e-6 * sol_plain.U_a
    U2_heads = sol_skip.inner[0][1:, 1:]  # level 2: skip first, then the head(s)
    assert np.max(np.abs(U2_heads - sol_plain.inner[0])) < 1e-6 * np.max(np.abs(sol_plain.inner[0]))


# --------------------------------------------------------------------------- 6. g_a = 0


def test_zero_branch_gain_leaves_the_all_skip_path():
    """Oracle: the one-level scalar equation n(1 - 1/U) + E'(U) = 0 solved with brentq (spec special case 3)."""
    rng = np.random.default_rng(14)
    arch = pt.Architecture((pt.Residual(qk(rng, 2), 1.0, 0.0), pt.Residual(pt.MLP(), 1.0, 0.0)), readout="last")
    x, y = data(8, 15)
    width, temp = 5.0, 0.1
    sol = Theory(arch, pt.path_features(arch, x), y).solve(width, temp, tol=1e-10)
    assert sol.report["converged"]
    assert arch.paths[0] == (None, None)
    xr = x[:, -1, :]  # all-skip path: alpha = r (last token), c_pi = 1
    K0 = xr @ xr.T / N0

    def dS(u):
        G = np.linalg.inv(u * K0 + temp * np.eye(len(y)))
        lam = G @ y
        return width * (1 - 1 / u) + np.trace(G @ K0) - lam @ K0 @ lam

    u_ref = brentq(dS, 1e-3, 1e3, xtol=1e-14, rtol=1e-14)
    assert abs(u_ref - 1) > 1e-2  # the test has power: not the GP value
    # tolerance: 1e-7 relative (solver gradient tolerance 1e-10, curvature O(1))
    assert abs(sol.U[0, 0] - u_ref) < 1e-7 * u_ref, (sol.U[0, 0], u_ref)
    assert abs(sol.U_a - u_ref) < 1e-7 * u_ref


# --------------------------------------------------------------------------- 7. non-central chi^2


def chi2_rate_side(u, g_s, g_a):
    """min_{U_a}[U_a - ln U_a - 1 + 2 sup_theta(theta u - Lambda(theta))], the sup in closed form."""

    def rate(U_a):
        # Lambda'(theta) = g_a^2 U_a w + g_s^2 U_a w^2 with w = 1 / (1 - 2 theta g_a^2 U_a) > 0
        w = (-g_a**2 * U_a + np.sqrt(g_a**4 * U_a**2 + 4 * g_s**2 * U_a * u)) / (2 * g_s**2 * U_a)
        theta = (1 - 1 / w) / (2 * g_a**2 * U_a)
        lam = 0.5 * np.log(w) + theta * g_s**2 * U_a * w
        return U_a - np.log(U_a) - 1 + 2 * (theta * u - lam)

    res = minimize_scalar(lambda t: rate(np.exp(t)), bounds=(-8.0, 8.0), method="bounded",
                          options={"xatol": 1e-11})
    assert -7.9 < res.x < 7.9  # an interior minimum
    return res.fun


def test_one_head_skip_entropy_is_noncentral_chi2_rate():
    """Oracle: the large-deviation rate of the non-central chi^2 law of u (spec §3, one layer, one head)."""
    n = 10.0

    def ent(Ua, c, q):
        return act.entropy_with_readout([jnp.array([[Ua, c], [c, q]])], Ua, (n, n), (1,), (1.0, 1.0, 1.0),
                                        skips=(True,)) / n

    # the constant: the minimum over everything is the GP point (U_a = q = 1, c = 0), S_ent / n = 2
    assert abs(float(ent(1.0, 0.0, 1.0)) - 2.0) < 1e-14

    def at_fixed_u(p, u, g_s, g_a):  # S_ent / n - 2 over (ln U_a, c), q from u = g_s^2 U_a + 2 g_s g_a c + g_a^2 q
        Ua, c = jnp.exp(p[0]), p[1]
        return ent(Ua, c, (u - g_s**2 * Ua - 2 * g_s * g_a * c) / g_a**2) - 2.0

    fun, grad = jax.jit(at_fixed_u), jax.jit(jax.grad(at_fixed_u))
    errors = []
    for g_s, g_a in [(1.0, 1.0), (0.7, 1.3)]:
        for u in (0.3, 0.8, 1.5, 2.0, 3.0, 5.0):
            args = (u, g_s, g_a)
            start = np.array([np.log(u / (g_s**2 + g_a**2)), 0.0])  # feasible: q - c^2 / U_a = U_a > 0
            # Nelder-Mead (robust to the infeasible region, where the entropy is NaN), then a BFGS polish
            rough = minimize(lambda p, *a: float(np.nan_to_num(fun(p, *a), nan=np.inf)), start, args=args,
                             method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-14, "maxiter": 4000})
            res = minimize(lambda p, *a: float(fun(p, *a)), rough.x, args=args,
                           jac=lambda p, *a: np.asarray(grad(p, *a)), method="BFGS", options={"gtol": 1e-11})
            assert np.isfinite(res.fun) and res.fun <= rough.fun + 1e-15
            errors.append(abs(res.fun - chi2_rate_side(u, g_s, g_a)))
    # tolerance: 1e-8 (both sides minimised numerically; the spec's own check reached 4e-16)
    assert max(errors) < 1e-8, errors


# --------------------------------------------------------------------------- 8. deep-linear closed form


def single_path_arch(k):
    eye = np.broadcast_to(np.eye(TOKENS), (6, 1, TOKENS, TOKENS))
    return pt.Architecture((pt.FixedAttention(eye),) + (pt.MLP(),) * (k - 1), readout="last")


@pytest.mark.parametrize("k", [2, 3])
def test_single_path_entropy_with_mlp_blocks_is_deep_linear(k):
    """Oracle: min over inner order parameters = (k+1) U^{1/(k+1)} - ln U (spec §3), numeric minimisation."""
    n = 7.0
    widths, heads, variances = (n,) * (k + 1), (1,) * k, (1.0,) * (k + 2)

    def ent(log_inner, U):  # inner = (U^(2), ..., U^(k), U_a)
        inner = jnp.exp(log_inner)
        Us = [jnp.array([[U]])] + [jnp.array([[v]]) for v in inner[:-1]]
        return act.entropy_with_readout(Us, inner[-1], widths, heads, variances) / n

    fun, grad = jax.jit(ent), jax.jit(jax.grad(ent))
    for U in (0.2, 1.0, 3.7):
        res = minimize(lambda p, u: float(fun(p, u)), np.zeros(k), args=(U,),
                       jac=lambda p, u: np.asarray(grad(p, u)), method="BFGS", options={"gtol": 1e-12})
        own = (k + 1) * U ** (1 / (k + 1)) - np.log(U)
        # tolerance: 1e-10 (smooth minimum, BFGS to gradient 1e-12)
        assert abs(res.fun - own) < 1e-10, (res.fun, own)
        assert abs(float(act.single_path_entropy_minimum(U, depth=k)) - own) < 1e-13
        # equal ratios: U^(l) = U^{(k+2-l)/(k+1)}
        np.testing.assert_allclose(np.exp(res.x), [U ** ((k + 1 - j) / (k + 1)) for j in range(1, k + 1)], rtol=1e-6)


@pytest.mark.parametrize("k", [2, 3])
def test_single_path_solver_with_mlp_blocks_solves_deep_linear_equation(k):
    """Oracle: U^{1/(k+1)} = 1 - (U/n) E'(U) solved by brentq (spec §3), plus its T -> 0 form at P < n."""
    arch = single_path_arch(k)
    x, y = data(6, 16)
    n, temp = 10.0, 0.05
    theory = Theory(arch, pt.path_features(arch, x), y)
    sol = theory.solve(n, temp, tol=1e-11)
    assert sol.report["converged"]
    xr = x[:, -1, :]
    K0 = xr @ xr.T / N0

    def stationarity(u):
        G = np.linalg.inv(u * K0 + temp * np.eye(len(y)))
        lam = G @ y
        return u ** (1 / (k + 1)) - 1 + u / n * (np.trace(G @ K0) - lam @ K0 @ lam)

    u_ref = brentq(stationarity, 1e-4, 1e4, xtol=1e-15, rtol=1e-15)
    # tolerance: 1e-7 relative (solver gradient tolerance 1e-11)
    assert abs(sol.U[0, 0] - u_ref) < 1e-7 * u_ref, (sol.U[0, 0], u_ref)
    # T -> 0 with P = 6 < n: U^{1/(k+1)} = 1 - alpha + alpha r0 / U
    sol0 = theory.solve(n, 1e-9, tol=1e-11)
    alpha, r0 = len(y) / n, y @ np.linalg.solve(K0, y) / len(y)
    u0 = brentq(lambda u: u ** (1 / (k + 1)) - 1 + alpha - alpha * r0 / u, 1e-4, 1e4, xtol=1e-15)
    # tolerance: 1e-6 relative (O(T) = 1e-9 corrections times the kernel's condition)
    assert abs(sol0.U[0, 0] - u0) < 1e-6 * u0, (sol0.U[0, 0], u0)


# --------------------------------------------------------------------------- 9. GP limit


def test_gp_point_is_the_large_width_limit():
    """Oracle: the GP point of spec §0 (blockdiag, skips add no variance); |U - U_GP| = O(1/N)."""
    arch = skip_arch(variances=(1.0, 0.8, 1.3, 0.9))
    x, y = data(8, 17)
    theory = Theory(arch, pt.path_features(arch, x), y)
    gp_diag = np.array([0.9 * np.prod([v for v, b in zip((0.8, 1.3), p) if b is not None]) for p in arch.paths])
    devs = []
    for n in (1e3, 1e4, 1e5):
        sol = theory.solve(n, 0.05, tol=1e-12)
        assert sol.report["converged"]
        devs.append(max(np.max(np.abs(sol.U - np.diag(gp_diag))), abs(sol.U_a - 0.9)))
    devs = np.array(devs)
    # tolerance: successive ratios within 15 % of 10 (O(1/N^2) corrections ~ 1e-3 relative at N = 1e3)
    ratios = devs[:-1] / devs[1:]
    assert np.all(np.abs(ratios / 10 - 1) < 0.15), (devs, ratios)


# --------------------------------------------------------------------------- 10. bad inputs


def test_bad_inputs_raise_clear_errors():
    """Oracle: the documented contract (message names the problem)."""
    rng = np.random.default_rng(18)
    layer = qk(rng, 2)
    arch = pt.Architecture((pt.Residual(layer), layer))
    with pytest.raises(ValueError, match="widths must be equal"):
        arch.widths((10, 12, 12))
    with pytest.raises(ValueError, match="skip_gain must be a finite number >= 0"):
        pt.Residual(layer, -0.5, 1.0)
    with pytest.raises(ValueError, match="branch_gain must be a finite number >= 0"):
        pt.Residual(layer, 1.0, -1.0)
    with pytest.raises(ValueError, match="outputs zero"):
        pt.Residual(layer, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"variances\[2\]"):
        pt.Architecture((layer, pt.MLP()), variances=(1.0, 1.0, 0.0, 1.0))
    with pytest.raises(TypeError, match="skip around a skip"):
        pt.Residual(pt.Residual(layer))


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
def test_three_outputs_with_skips_match_the_exact_sampler():
    """Three classes with a skip around each attention layer (9 paths, C |Pi| = 27), P = 24, N = 100,
    T = 0.1: the theory against the exact Gibbs sampler, 4 chains x 400 sweeps.

    Measured (seed 0): U 1.7 % from the samples (Monte Carlo noise 1.6 %), the GP point 23 % away; the
    mean predictor 6.7 %, its covariance 5.8 %; the output-output blocks of U correlated 0.98; U^(2) and
    U_a 1.1 % and 0.9 %. The bounds, about three times those: U within 6 % and within a fifth of the GP's
    distance, mean and covariance within 15 %, the blocks' correlation above 0.9, the inner levels within 5 %."""
    from paththeory import sampling
    from paththeory.predict import predictor
    from paththeory.tasks import multiclass as mc

    kw = dict(n_features=12, seq_len=6)
    first, second = mc.four_paths(**kw).attention
    arch = pt.Architecture((pt.Residual(first), pt.Residual(second)), readout="last")
    train, test = mc.sample_task(24, seed=1, **kw), mc.sample_task(30, seed=2, **kw)
    ft, fe = np.asarray(pt.path_features(arch, train.x)), np.asarray(pt.path_features(arch, test.x))
    sol = Theory(arch, ft, train.y).solve(100, 0.1)
    mean, cov = predictor(sol.U, ft, train.y, fe, 0.1)
    res = sampling.sample_posterior(arch, ft, train.y, 100, 0.1, features_test=fe, method="gibbs", num_warmup=100,
                                    num_samples=400, num_chains=4, seed=0, progress_bar=False)
    assert res.diagnostics["r_hat_max"] < 1.05 and res.U.shape == (27, 27) and res.var.shape == (30, 3, 3)

    def err(a, b):
        return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b))

    gp = np.diag(np.tile(arch.gp_path_variances(), 3))
    assert err(res.U, sol.U) < min(0.06, err(gp, sol.U) / 5)
    assert err(res.mean, mean) < 0.15 and err(res.var, cov) < 0.15
    off = ~np.kron(np.eye(3, dtype=bool), np.ones((9, 9), bool))
    assert np.corrcoef(res.U[off], sol.U[off])[0, 1] > 0.9
    for sampled, theory in zip(res.inner, sol.inner + [np.atleast_2d(sol.U_a)]):
        assert err(sampled, theory) < 0.05
