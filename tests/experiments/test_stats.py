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


def test_a_debiased_distance_carries_its_error_and_an_unresolved_one_an_upper_limit():
    """Oracle: the formulas. Resolved: sqrt(d^2 - s^2) and s d / sqrt(d^2 - s^2), 15 % above s at d = 2 s, widened
    through s's own relative error 1 / sqrt(2 (B - 1)); unresolved: d + 2 s (Student's t quantile of the same
    confidence with an estimated floor) and the censoring limit sqrt(3) s with error 2 s / sqrt(3)."""
    r = stats.debiased_distance(0.05, 0.01)
    assert r["resolved"] and r["value"] == pytest.approx(math.sqrt(0.0024)) and r["upper_limit"] is None
    assert r["se"] == pytest.approx(0.01 * 0.05 / math.sqrt(0.0024))
    at_threshold = stats.debiased_distance(2.0 + 1e-12, 1.0)
    assert at_threshold["se"] == pytest.approx(2 / math.sqrt(3))  # 1.155 s: 15 % above the floor
    assert stats.floor_relative_sd(20) == pytest.approx(1 / math.sqrt(38))
    widened = stats.debiased_distance(0.05, 0.01, batch_means=20)
    assert widened["se"] == pytest.approx(0.01 * math.sqrt(0.05**2 + 0.01**2 / 38) / math.sqrt(0.0024))
    low = stats.debiased_distance(0.015, 0.01)
    assert not low["resolved"] and low["value"] is None and low["se"] is None
    assert low["upper_limit"] == pytest.approx(0.035) and low["limit"] == pytest.approx(math.sqrt(3) * 0.01)
    assert low["limit_se"] == pytest.approx(0.02 / math.sqrt(3))
    from scipy.stats import norm, t

    q = t.isf(norm.sf(2), 19)
    assert stats.debiased_distance(0.015, 0.01, batch_means=20)["upper_limit"] == pytest.approx(0.015 + q * 0.01)
    for d, s in ((0.05, None), (0.05, float("nan")), (0.05, 0.0), (-0.1, 0.01), (float("inf"), 0.01)):
        with pytest.raises(ValueError):
            stats.debiased_distance(d, s)
    with pytest.raises(ValueError):
        stats.debiased_distance(0.05, 0.01, batch_means=1)


def test_the_sidak_threshold_and_the_agreement_test_follow_their_formulas():
    """Oracle: Phi^-1 and Student's t quantiles, and the family-wise p-value 1 - (1 - p_min)^k."""
    from scipy.stats import norm, t

    assert stats.sidak_threshold(1) == pytest.approx(1.959964, abs=1e-6)
    alpha = 1 - 0.95 ** (1 / 666)
    assert stats.sidak_threshold(666) == pytest.approx(norm.isf(alpha / 2))
    assert stats.sidak_threshold(666, dof=19) == pytest.approx(t.isf(alpha / 2, 19))
    z = np.array([0.3, -4.28, 1.0] + [0.0] * 663)
    test = stats.agreement_test(z)
    p = 2 * norm.sf(4.28)
    assert test["index"] == 1 and test["max_z"] == pytest.approx(4.28) and test["k"] == 666
    assert test["p_family"] == pytest.approx(1 - (1 - p) ** 666) and not test["agree"]  # 0.012: the number
    with_dof = stats.agreement_test(z, dof=45.0)  # the residual chapter's N = 30 point, errors from batch means
    assert with_dof["agree"] and with_dof["p_family"] == pytest.approx(1 - (1 - 2 * t.sf(4.28, 45)) ** 666)
    assert with_dof["threshold"] == pytest.approx(stats.sidak_threshold(666, dof=45.0))
    # per-entry degrees of freedom: the worst entry is the one of smallest p, not of largest |z|
    mixed = stats.agreement_test([3.0, 2.9], dof=[1000.0, 3.0])
    assert mixed["index"] == 0
    assert not stats.agreement_test([0.1, float("inf")])["agree"]
    with pytest.raises(ValueError, match="NaN"):
        stats.agreement_test([0.1, float("nan")])
    with pytest.raises(ValueError, match="dof"):
        stats.agreement_test([0.1, 0.2], dof=[1.0, -1.0])
    with pytest.raises(ValueError):
        stats.sidak_threshold(0)


def test_a_weighted_mean_inflates_its_error_by_the_scatter():
    m = stats.weighted_mean([1.0, 1.0], [0.1, 0.2])
    assert m["mean"] == 1.0 and m["chi2_nu"] == 0.0 and m["se"] == m["se_stat"] == pytest.approx(1 / math.sqrt(125))
    m = stats.weighted_mean([1.0, 2.0], [0.1, 0.1])
    assert m["chi2_nu"] == pytest.approx(50.0) and m["se"] == pytest.approx(m["se_stat"] * math.sqrt(50.0))
    assert stats.weighted_mean([3.0], [0.5])["chi2_nu"] is None
    with pytest.raises(ValueError):
        stats.weighted_mean([1.0, 2.0], [0.1, 0.0])


def test_the_power_law_fit_recovers_an_exact_law_and_says_when_it_cannot():
    """Oracle: an exact power law (b and the level to round-off, chi^2 zero), weighted least squares without
    limits, a limit far above the law that changes nothing, one far below that steepens it, and the errors inflated
    by sqrt(chi^2 / nu) when the points scatter beyond their errors."""
    x = np.array([10.0, 30.0, 100.0, 300.0])
    y = 0.3 * x**-1.0
    fit = stats.power_law_fit(x, y, 0.1 * y)
    assert fit["determined"] and fit["b"] == pytest.approx(1.0, abs=1e-8)
    assert fit["chi2_nu"] == pytest.approx(0, abs=1e-12)
    assert fit["ln_a"] == pytest.approx(math.log(0.3), abs=1e-8) and fit["inflation"] == 1.0
    assert fit["x_ref"] == pytest.approx(np.exp(np.log(x).mean())) and fit["y_ref"] == pytest.approx(0.3 / fit["x_ref"])
    # the error: weighted least squares of ln y on ln x with sd 0.1
    assert fit["b_se"] == pytest.approx(0.1 / np.sqrt(np.sum((np.log(x) - np.log(x).mean()) ** 2)))
    above = stats.power_law_fit(np.append(x, 1000.0), np.append(y, 1.0), np.append(0.1 * y, 0.01), [0, 0, 0, 0, 1])
    assert above["b"] == pytest.approx(1.0, abs=1e-6) and above["n_censored"] == 1
    below = stats.power_law_fit(np.append(x, 1000.0), np.append(y, 1e-5), np.append(0.1 * y, 1e-5), [0, 0, 0, 0, 1])
    assert below["b"] > 1.05
    scattered = stats.power_law_fit(x, y * np.array([1.3, 0.7, 1.3, 0.7]), 0.01 * y)
    assert scattered["chi2_nu"] > 1 and scattered["b_se"] == pytest.approx(
        scattered["b_se_stat"] * math.sqrt(scattered["chi2_nu"]))
    none = stats.power_law_fit([10, 30, 10], [0.1, 0.03, 0.12], [0.01, 0.01, 0.01], [False, True, False])
    assert not none["determined"] and none["b"] is None and none["n_measured"] == 2 and none["n_censored"] == 1
    with pytest.raises(ValueError, match="power_law_fit"):
        stats.power_law_fit([10, 30], [0.1, -0.03], [0.01, 0.01])


def test_batch_count_is_the_number_of_means_behind_batch_means_se(rng):
    draws = rng.normal(size=(2, 400, 1))
    b = stats.batch_count(2, 400)
    means = draws.reshape(2, b // 2, -1, 1).mean(axis=2).reshape(b, 1)
    assert b == 20 and stats.batch_means_se(draws)[0] == pytest.approx(means.std(ddof=1) / math.sqrt(b))
    assert stats.batch_count(4, 6) == 12  # short chains: 3 batches of 2 draws each


def test_the_covariance_noise_floor_is_batch_means_of_the_per_draw_products(rng):
    """Oracle: :func:`stats.batch_means_se` of the per-draw outer products, held at once (small sizes only)."""
    from paththeory.experiments import multiclass

    f = rng.normal(size=(2, 40, 7, 3))
    dev = f - f.reshape(-1, 7, 3).mean(axis=0)
    brute = np.linalg.norm(stats.batch_means_se(dev[..., :, None] * dev[..., None, :]))
    assert multiclass._covariance_se(f) == pytest.approx(brute, rel=1e-12)
