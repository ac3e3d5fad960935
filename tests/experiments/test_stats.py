"""The statistics behind the verdicts, against brute force, scipy and Monte Carlo oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import pearsonr, permutation_test, rankdata, spearmanr

from paththeory.experiments import stats


def _rank_correlation(a, b, axis=-1):
    """Spearman's rho along ``axis`` (vectorised, for scipy's permutation test)."""
    ra, rb = rankdata(a, axis=axis), rankdata(b, axis=axis)
    ra = ra - ra.mean(axis=axis, keepdims=True)
    rb = rb - rb.mean(axis=axis, keepdims=True)
    return (ra * rb).sum(axis=axis) / np.sqrt((ra**2).sum(axis=axis) * (rb**2).sum(axis=axis))


def _scipy_spearman_p(x, y, n_resamples):
    # one sample: only the order of y is permuted against x (n! arrangements, not (n!)^2)
    res = permutation_test((y,), lambda b, axis=-1: _rank_correlation(np.broadcast_to(x, b.shape), b, axis),
                           permutation_type="pairings", vectorized=True, n_resamples=n_resamples,
                           alternative="greater", random_state=0)
    return res.pvalue


@pytest.mark.parametrize("n", [5, 7, 8])
def test_spearman_exact_p_matches_scipy_enumeration(n, rng):
    x, y = rng.normal(size=n), rng.normal(size=n) + 0.8 * np.arange(n)
    y[1] = y[2]  # a tie: average ranks on both sides
    r = stats.spearman_test(x, y)
    assert r["exact"] and r["rho"] == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert r["p_greater"] == pytest.approx(_scipy_spearman_p(x, y, np.inf), abs=1e-9)
    r_rev = stats.spearman_test(x, -y)
    assert r_rev["p_less"] == pytest.approx(r["p_greater"], abs=1e-12)


def test_spearman_sampled_p_agrees_with_scipy_to_monte_carlo_error(rng):
    n = 16
    x = rng.normal(size=n)
    y = x + 1.5 * rng.normal(size=n)
    r = stats.spearman_test(x, y, n_permutations=40000)
    p_ref = _scipy_spearman_p(x, y, 40000)
    assert not r["exact"]
    assert abs(r["p_greater"] - p_ref) < 5 * math.sqrt(p_ref * (1 - p_ref) / 40000) + 1e-4


def test_spearman_constant_input_is_undefined():
    r = stats.spearman_test([1, 1, 1, 1], [1, 2, 3, 4])
    assert math.isnan(r["rho"]) and math.isnan(r["p_greater"])
    assert stats.verdict_from_p(r["p_greater"], r["p_less"]) == "within noise"
    with pytest.raises(ValueError, match="same length"):
        stats.spearman_test([1, 2, 3], [1, 2])


def test_mantel_matches_brute_force_over_all_relabellings(rng):
    n = 5
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    A, B = a @ a.T, b @ b.T + 0.5 * a @ a.T
    iu = np.triu_indices(n)
    observed = pearsonr(A[iu], B[iu]).statistic
    null = np.array([pearsonr(A[iu], B[np.ix_(p, p)][iu]).statistic for p in itertools.permutations(range(n))])
    r = stats.mantel_test(A, B)
    assert r["exact"] and r["r"] == pytest.approx(observed, abs=1e-12)
    assert r["p_greater"] == pytest.approx(np.mean(null >= observed - 1e-12), abs=1e-12)
    assert r["p_less"] == pytest.approx(np.mean(null <= observed + 1e-12), abs=1e-12)


def test_mantel_detects_shared_structure_and_not_independent_matrices(rng):
    n = 16
    block = np.kron(np.eye(4), np.ones((4, 4)))
    noisy = block + 0.3 * rng.normal(size=(n, n))
    assert stats.mantel_test(block + np.eye(n), (noisy + noisy.T) / 2)["p_greater"] < 0.01
    p = [stats.mantel_test(*(lambda m, k: (m @ m.T, k @ k.T))(rng.normal(size=(n, n)), rng.normal(size=(n, n))),
                           n_permutations=999, seed=s)["p_greater"] for s in range(40)]
    assert 0.02 < np.mean(np.array(p) < 0.25) < 0.5  # about a quarter of independent pairs below 0.25


def test_paired_difference_and_verdicts():
    a = np.array([1, 1, 1, 0, 1, 0, 1, 1])
    b = np.array([1, 0, 1, 0, 0, 0, 1, 0])
    d = stats.paired_difference(a, b)
    diff = a - b
    assert d["difference"] == pytest.approx(diff.mean())
    assert d["se"] == pytest.approx(np.std(diff, ddof=1) / np.sqrt(8))
    assert stats.verdict(0.1, 0.04) == "holds" and stats.verdict(0.1, 0.06) == "within noise"
    assert stats.verdict(-0.1, 0.04) == "fails" and stats.verdict(0.1, float("nan")) == "within noise"
    assert stats.verdict(0.3, 0.05, threshold=0.25) == "within noise"
    assert stats.verdict_from_p(0.049, 0.96) == "holds" and stats.verdict_from_p(0.96, 0.04) == "fails"
    assert stats.standard_error(0.5, 100) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        stats.paired_difference([1, 0], [1])


def test_a_distance_is_resolved_only_beyond_twice_its_noise_floor():
    assert stats.resolved(0.05, 0.02) and not stats.resolved(0.04, 0.02) and not stats.resolved(0.03, 0.02)
    for unknown in (None, float("nan"), float("inf")):
        assert not stats.resolved(1.0, unknown)


def test_batch_means_se_for_correlated_draws(rng):
    """AR(1) chains x_t = phi x_{t-1} + e_t: the variance of the mean is ~ 1 / ((1 - phi)^2 n)."""
    phi, n, chains = 0.8, 4000, 4
    e = rng.normal(size=(chains, n))
    x = np.zeros((chains, n))
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    se = float(stats.batch_means_se(x[:, :, None], n_batches=20)[0])
    expected = 1 / ((1 - phi) * math.sqrt(chains * n))
    assert 0.7 * expected < se < 1.3 * expected  # 80 batch means: their sd is known to ~8 %
    naive = x.std() / math.sqrt(chains * n)
    assert se > 2.5 * naive  # the naive error ignores the autocorrelation (factor 3 here)
