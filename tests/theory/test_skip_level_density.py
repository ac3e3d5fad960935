"""The skip level of the residual chapter (book: "The residual stream", lemma lem-skip-level) against oracles.

1. The package's entropy term of a level with a skip is -2 ln of the exact prior of its free blocks (a matrix-normal
   cross block and a Wishart Schur complement, ``scipy.stats``) against the invariant measure: the difference is one
   constant over random order parameters, and it is not with ``H_l`` in place of ``H_l + 1``.
2. At a solved minimum the blocks of such a level satisfy the chapter's stationarity equations with the symmetric
   gradient F of the energy: ``U_hh|s = [M^{-1} / sigma^2 + F_hh]^{-1}`` and ``U_sh = -U^(l+1) F_sh U_hh|s``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import paththeory as pt
from paththeory.action import energy, entropy_with_readout
from paththeory.solve import Theory


def skip_level_gaps(n: int, heads: int, size: int, variance: float, seed: int = 0, draws: int = 5):
    """Per random point: (package term - exact, package term with H_l instead of H_l + 1 - exact)."""
    rng = np.random.default_rng(seed)
    variances = (1.0, variance, 0.7, 1.3)  # sigma_0^2 (unused by the entropy), sigma_1^2, sigma_2^2, sigma_a^2
    gaps, gaps_h = [], []
    for _ in range(draws):
        z = rng.normal(size=((heads + 1) * size + 4, (heads + 1) * size))
        U = z.T @ z / len(z)  # a joint Gram matrix, skip branch first
        U_ss, U_sh, U_hh = U[:size, :size], U[:size, size:], U[size:, size:]
        cov = variance * np.kron(np.eye(heads), U_ss)  # sigma_l^2 M: the covariance of a row of the heads' weights
        schur = U_hh - U_sh.T @ np.linalg.solve(U_ss, U_sh)
        exact = -2 * (stats.matrix_normal.logpdf(U_sh, rowcov=U_ss / n, colcov=cov)
                      + stats.wishart.logpdf(schur, df=n - size, scale=cov / n))
        logdet, logdet_ss = np.linalg.slogdet(U)[1], np.linalg.slogdet(U_ss)[1]
        exact -= ((heads + 1) * size + 1) * logdet - (size + 1) * logdet_ss  # against the invariant measure
        both = entropy_with_readout([U, U_ss], 1.7, (n,) * 3, (heads, size), variances, (True, False))
        above = entropy_with_readout([U_ss], 1.7, (n,) * 2, (size,), variances[1:])
        level = float(both - above)
        gaps.append(level - exact)
        gaps_h.append(level - n * logdet_ss - exact)
    return np.array(gaps), np.array(gaps_h)


@pytest.mark.parametrize("n, heads, size, variance", [(50, 2, 3, 1.0), (23, 1, 2, 0.6), (40, 3, 2, 1.9)])
def test_skip_level_entropy_is_the_exact_conditional_density(n, heads, size, variance):
    """Oracle: scipy's matrix-normal and Wishart log-densities (lemma lem-skip-level)."""
    gaps, gaps_h = skip_level_gaps(n, heads, size, variance)
    # tolerance: 1e-8 absolute on terms of size ~1e2-1e3 (float64 log-determinants and traces)
    assert np.ptp(gaps) < 1e-8, gaps
    # with H_l the difference moves by n ln det U^(l+1), which varies by order one between the points
    assert np.ptp(gaps_h) > 1.0, gaps_h


def test_skip_level_minimum_reads_as_schur_complement_and_regression():
    """Oracle: the energy's symmetric gradient by JAX autodiff, at a minimum found by the solver."""
    rng = np.random.default_rng(4)
    qk = pt.QKAttention(rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 3, 6)))
    qk2 = pt.QKAttention(rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 3, 6)))
    variances = (1.2, 0.8, 1.3, 0.9)
    arch = pt.Architecture((pt.Residual(qk, 1.0, 1.0), qk2), readout="last", variances=variances)
    x = rng.normal(size=(10, 4, 6))
    y = rng.choice([-1.0, 1.0], size=10)
    features = pt.path_features(arch, x)
    n, temperature = 12.0, 0.1
    sol = Theory(arch, features, y).solve(n, temperature, tol=1e-11)
    assert sol.report["converged"]
    U, U_above = np.asarray(sol.U), np.asarray(sol.inner[0])
    size = U_above.shape[0]
    kernels = jnp.einsum("api,bqi->pqab", features, features)  # C^{pi pi'}_{mu nu}
    F = np.asarray(jax.grad(lambda u: energy(jnp.einsum("pq,pqab->ab", u, kernels), jnp.asarray(y),
                                            temperature))(jnp.asarray(U))) / n
    assert np.allclose(F, F.T, atol=1e-12)  # the symmetric gradient
    U_ss, U_sh, U_hh = U[:size, :size], U[:size, size:], U[size:, size:]
    np.testing.assert_allclose(U_ss, U_above, atol=1e-12)  # the tie
    M = np.kron(np.eye(2), U_above)
    schur = U_hh - U_sh.T @ np.linalg.solve(U_ss, U_sh)
    F_sh, F_hh = F[:size, size:], F[size:, size:]
    # tolerance: 1e-6 relative (solver's gradient tolerance 1e-11)
    np.testing.assert_allclose(schur, np.linalg.inv(np.linalg.inv(M) / variances[1] + F_hh), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(U_sh, -U_above @ F_sh @ schur, rtol=1e-6, atol=1e-9)
    # a gradient on the free entries (off-diagonal blocks doubled) would double the cross block
    assert np.max(np.abs(U_sh)) > 1e-3 and not np.allclose(U_sh, -U_above @ (2 * F_sh) @ schur, rtol=1e-2)
