"""The prior's fluctuations of the order parameter are block-structured by the first-layer head
(book/omniglot.md, "the order parameter", and book/depth.md, the conditional Wishart of the
change of variables).

Two layers, heads (H_1, H_2), widths (n_0, n_1, n_2), prior variances (sigma_0^2, sigma_1^2,
sigma_2^2, sigma_a^2). Paths pi = (h_1, h_2), first-layer head slowest (the package's order). From
weights drawn with ``paththeory.sample_prior``, the overlaps are formed as the NUTS sampler forms U
(``paththeory/sampling/nuts.py``: ``w @ w.T / n_0`` with ``w = paththeory.effective_weights``):

    U = w w^T / n_0,   U^(2) = u u^T / n_1 with u^{h_2} = (V^2_{h_2})^T a / sqrt(n_2),   U_a = |a|^2 / n_2.

**The oracle** (derived here, not computed by the package). Given a and V^2, the columns of V^1 are
independent Gaussians, so the n_0 vectors (w^pi_j)_pi, j = 1..n_0, are independent with covariance
Sigma = sigma_1^2 I_{H_1} (x) U^(2) (a Kronecker product, h_1 slowest): n_0 U is Wishart with n_0
degrees of freedom and scale Sigma, the conditional prior whose density is the layer-1 term of
book/depth.md. Likewise n_1 U^(2) given U_a is Wishart with scale sigma_2^2 U_a I_{H_2}, and
U_a = sigma_a^2 chi^2_{n_2} / n_2. Wishart moments (any integer degrees of freedom n, no density
needed): if n W ~ Wishart(n, S), then E W = S and Cov(W_ab, W_cd) = (S_ac S_bd + S_ad S_bc) / n.
Writing a = (a_1, a_2) for the path (h_1, h_2), s_2 = sigma_2^2 sigma_a^2 and kappa = 1 + 2/n_2
(the second moment of U_a / sigma_a^2):

    E[U2_ij U2_kl] = s_2^2 kappa [d_ij d_kl + (d_ik d_jl + d_il d_jk) / n_1],
    E[U_ab U_cd]   = sigma_1^4 { d_{a1 b1} d_{c1 d1} E[U2_{a2 b2} U2_{c2 d2}]
                     + (d_{a1 c1} d_{b1 d1} E[U2_{a2 c2} U2_{b2 d2}]
                        + d_{a1 d1} d_{b1 c1} E[U2_{a2 d2} U2_{b2 c2}]) / n_0 },
    E U = sigma_1^2 s_2 I  (the GP point),    Cov = E[U_ab U_cd] - E U_ab E U_cd.

What this says about blocks (the explanation the book gives in omniglot.md):

* the first term, which carries U^(2)'s own fluctuations, lives only on the diagonal blocks
  (a_1 = b_1, c_1 = d_1), the same for every h_1: two paths through the same first-layer head
  inherit U^(2)'s correlations, and every diagonal block inherits the same ones. The entry (x, y),
  x != y, of two different diagonal blocks has correlation n_0 / (n_0 + n_1 + 1): the shared
  U^(2) fluctuation, diluted only by layer 1's own 1/n_0 noise;
* an entry of an off-diagonal block (a_1 != b_1) has conditional mean zero whatever U^(2) is,
  fluctuates only by the 1/n_0 Wishart noise of layer 1 (variance sigma_1^4 s_2^2 kappa / n_0 for
  x != y, against sigma_1^4 s_2^2 kappa [1/n_1 + (1 + 1/n_1)/n_0] inside a diagonal block), and is
  uncorrelated with every entry of the diagonal blocks and of the other off-diagonal blocks.

Tolerance: the means of U are known exactly, so each covariance is estimated without bias by the
mean of the products of deviations from them; its standard error is the standard deviation of
those products over sqrt(draws). Every one of the covariances must be within 5 standard errors of
the closed form, and the three inherited correlations (standard error about 0.007) within 0.035
of n_0 / (n_0 + n_1 + 1) = 7/13 (seeded draws, so the test is deterministic). Measured at the seeds
below: largest deviation 2.7 standard errors over the 231 covariances; inherited correlations
0.540, 0.541, 0.536 against 0.538.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import paththeory as pt

HEADS = (3, 2)                      # (H_1, H_2): 6 paths, three first-layer blocks of two
WIDTHS = (7, 5, 4)                  # (n_0, n_1, n_2); n_0 > |Pi| - 1, so the Wishart density exists
VARIANCES = (1.0, 0.7, 1.3, 1.6)    # (sigma_0^2, sigma_1^2, sigma_2^2, sigma_a^2)
DRAWS = 200_000
Z_MAX = 5.0


def _architecture() -> pt.Architecture:
    """Any two-layer architecture with these heads: the prior of U does not see the attention."""
    layers = [pt.FixedAttention(np.full((1, h, 2, 2), 0.5)) for h in HEADS]
    return pt.Architecture(layers, variances=VARIANCES)


ARCH = _architecture()
PATHS = ARCH.paths                  # [(h_1, h_2)], h_1 slowest
N_PATHS = len(PATHS)
PAIRS = [(a, b) for a in range(N_PATHS) for b in range(a, N_PATHS)]  # the distinct entries of U


def _overlaps(params) -> jax.Array:
    w = pt.effective_weights(ARCH, params)
    return w @ w.T / WIDTHS[0]


def _prior_overlaps(key) -> jax.Array:
    return _overlaps(pt.sample_prior(ARCH, WIDTHS, 1, key))


def _upper2_second_moment(i, j, k, l) -> float:
    """E[U2_ij U2_kl] over the prior of U^(2) (with U_a integrated)."""
    n1, n2 = WIDTHS[1], WIDTHS[2]
    s2 = VARIANCES[2] * VARIANCES[3]
    d = lambda p, q: float(p == q)
    return s2**2 * (1 + 2 / n2) * (d(i, j) * d(k, l) + (d(i, k) * d(j, l) + d(i, l) * d(j, k)) / n1)


def _prior_covariance(ab, cd) -> float:
    """Cov(U_ab, U_cd) over the prior: the closed form of the module docstring."""
    (a1, a2), (b1, b2) = PATHS[ab[0]], PATHS[ab[1]]
    (c1, c2), (d1, d2) = PATHS[cd[0]], PATHS[cd[1]]
    n0, var1 = WIDTHS[0], VARIANCES[1]
    d = lambda p, q: float(p == q)
    second = var1**2 * (d(a1, b1) * d(c1, d1) * _upper2_second_moment(a2, b2, c2, d2)
                        + (d(a1, c1) * d(b1, d1) * _upper2_second_moment(a2, c2, b2, d2)
                           + d(a1, d1) * d(b1, c1) * _upper2_second_moment(a2, d2, b2, c2)) / n0)
    return second - _prior_mean()[ab] * _prior_mean()[cd]


def _prior_mean() -> np.ndarray:
    return ARCH.gp_scale * np.eye(N_PATHS)


def _conditional_covariance(sigma, ab, cd) -> float:
    """Cov(U_ab, U_cd | U^(2)) for n_0 U ~ Wishart(n_0, sigma)."""
    (a, b), (c, d) = ab, cd
    return (sigma[a, c] * sigma[b, d] + sigma[a, d] * sigma[b, c]) / WIDTHS[0]


def _covariances(U: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo Cov(U_ab, U_cd) for all pairs of distinct entries, from deviations off the exact
    mean, and their standard errors: ``[len(PAIRS), len(PAIRS)]`` each."""
    rows, cols = zip(*PAIRS)
    dev = U[:, rows, cols] - mean[rows, cols]               # [draws, entries]
    cov = np.einsum("di,dj->ij", dev, dev) / len(dev)     # einsum: no BLAS threads to start
    second = np.einsum("di,dj->ij", dev**2, dev**2) / len(dev)  # E[(dev_i dev_j)^2]
    return cov, np.sqrt(np.maximum(second - cov**2, 0.0) / len(dev))


def _blocks(ab) -> tuple[int, int]:
    """The unordered pair of first-layer heads of the entry ``ab``: its block of U."""
    return tuple(sorted((PATHS[ab[0]][0], PATHS[ab[1]][0])))


def _block_kind(ab) -> str:
    (a1, _), (b1, _) = PATHS[ab[0]], PATHS[ab[1]]
    return "diagonal block" if a1 == b1 else "off-diagonal block"


@pytest.fixture(scope="module")
def prior_draws() -> np.ndarray:
    keys = jax.random.split(jax.random.PRNGKey(20240), DRAWS)
    return np.asarray(jax.jit(jax.vmap(_prior_overlaps))(keys))


def test_the_sampler_forms_U_from_the_effective_weights_as_in_nuts():
    """One prior draw: w w^T / n_0 from ``effective_weights`` equals the chain V^1, V^2, a written out."""
    params = pt.sample_prior(ARCH, WIDTHS, 1, jax.random.PRNGKey(3))
    a, (V1, V2) = np.asarray(params["a"]), (np.asarray(v) for v in params["V"])
    u = np.einsum("j,hji->hi", a, V2) / np.sqrt(WIDTHS[2])               # [H_2, n_1]
    w = np.einsum("gi,hik->hgk", u, V1).reshape(N_PATHS, -1) / np.sqrt(WIDTHS[1])  # h_1 slowest
    np.testing.assert_allclose(np.asarray(_overlaps(params)), w @ w.T / WIDTHS[0], rtol=1e-12, atol=1e-12)


def test_prior_covariance_of_U_matches_the_closed_form_of_the_conditional_wishart(prior_draws):
    """All 231 covariances of the 21 distinct entries of U (six paths) over 200,000 prior draws
    against the closed form of the module docstring, each within 5 standard errors; then the
    block statements read off them."""
    mean = _prior_mean()
    assert np.max(np.abs(prior_draws.mean(0) - mean)) < Z_MAX * np.max(prior_draws.std(0)) / np.sqrt(DRAWS)
    cov, err = _covariances(prior_draws, mean)
    exact = np.array([[_prior_covariance(p, q) for q in PAIRS] for p in PAIRS])
    z = np.abs(cov - exact) / err
    assert z.max() < Z_MAX, f"largest deviation {z.max():.1f} standard errors"

    # The block structure, in closed form and measured.
    n0, n1 = WIDTHS[:2]
    index = {p: k for k, p in enumerate(PAIRS)}
    inherited = [(index[(a, b)], index[(c, d)]) for (a, b), (c, d) in itertools.combinations(PAIRS, 2)
                 if a != b and _block_kind((a, b)) == _block_kind((c, d)) == "diagonal block"
                 and PATHS[a][0] != PATHS[c][0]
                 and (PATHS[a][1], PATHS[b][1]) == (PATHS[c][1], PATHS[d][1])]
    assert len(inherited) == 3                            # entry (0, 1) of the blocks h_1 = 0, 1, 2, pairwise
    corr = lambda m, i, j: m[i, j] / np.sqrt(m[i, i] * m[j, j])
    for i, j in inherited:                                # measured: standard error about 0.007
        assert corr(exact, i, j) == pytest.approx(n0 / (n0 + n1 + 1), rel=1e-12)
        assert abs(corr(cov, i, j) - n0 / (n0 + n1 + 1)) < 0.035
    unrelated = [(index[p], index[q]) for p, q in itertools.product(PAIRS, PAIRS)
                 if _block_kind(p) == "off-diagonal block" and _blocks(p) != _blocks(q)]
    assert len(unrelated) == 12 * (21 - 4)                # 12 cross-block entries, 4 in each of 3 blocks
    rows, cols = zip(*unrelated)
    assert np.all(exact[rows, cols] == 0)                 # a cross-block entry: no shared source
    assert np.max(np.abs(cov[rows, cols]) / err[rows, cols]) < Z_MAX
    s = (VARIANCES[1] * VARIANCES[2] * VARIANCES[3]) ** 2 * (1 + 2 / WIDTHS[2])
    for k, (a, b) in enumerate(PAIRS):                    # variances of the entries with h_2 != h_2'
        if PATHS[a][1] != PATHS[b][1]:
            within = _block_kind((a, b)) == "diagonal block"
            expected = s * (1 / n1 + (1 + 1 / n1) / n0) if within else s / n0
            assert exact[k, k] == pytest.approx(expected, rel=1e-12)
            assert abs(cov[k, k] - expected) < Z_MAX * err[k, k]


def test_given_U2_the_cross_block_entries_are_pure_layer_one_noise():
    """Fix a and V^2 (so U^(2) is fixed) and redraw V^1 from its prior 200,000 times: the mean of U is
    sigma_1^2 I (x) U^(2) (zero off the diagonal blocks), and the covariances are the conditional
    Wishart's (Sigma_ac Sigma_bd + Sigma_ad Sigma_bc) / n_0, each within 5 standard errors: an entry
    of the block (h_1, h_1') co-fluctuates only with entries of the same block."""
    fixed = pt.sample_prior(ARCH, WIDTHS, 1, jax.random.PRNGKey(7))
    u = np.einsum("j,hji->hi", np.asarray(fixed["a"]), np.asarray(fixed["V"][1])) / np.sqrt(WIDTHS[2])
    sigma = VARIANCES[1] * np.kron(np.eye(HEADS[0]), u @ u.T / WIDTHS[1])

    def draw(key):
        params = pt.sample_prior(ARCH, WIDTHS, 1, key)
        return _overlaps({**fixed, "V": (params["V"][0], fixed["V"][1])})

    U = np.asarray(jax.jit(jax.vmap(draw))(jax.random.split(jax.random.PRNGKey(11), DRAWS)))
    cov, err = _covariances(U, sigma)
    exact = np.array([[_conditional_covariance(sigma, p, q) for q in PAIRS] for p in PAIRS])
    assert (np.abs(U.mean(0) - sigma) / (U.std(0) / np.sqrt(DRAWS))).max() < Z_MAX
    assert (np.abs(cov - exact) / err).max() < Z_MAX
    for p, q in itertools.product(PAIRS, PAIRS):
        if _block_kind(p) == "off-diagonal block" and _blocks(p) != _blocks(q):
            assert exact[PAIRS.index(p), PAIRS.index(q)] == 0
