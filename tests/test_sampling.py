"""Tests of the NUTS posterior sampler (spec §1.4, §2.4, §8).

Oracles: scipy's multivariate normal density, the closed-form Gaussian conditional of the
readout, the layer-by-layer forward pass, a sampler that samples the readout directly, and
the order-parameter theory (spec §3) at finite width.
"""

import math

import jax
import numpy as np
import pytest
from numpyro.diagnostics import effective_sample_size
from scipy.stats import multivariate_normal

import paththeory as pt
from paththeory import sampling


def _tiny_problem(seed: int = 0, p: int = 5, n_test: int = 3):
    """One layer, two random bilinear heads, 3 features, 2 tokens: 16 weights at N = 2."""
    rng = np.random.default_rng(seed)
    arch = pt.Architecture((pt.ScoreAttention(rng.normal(size=(2, 3, 3))),), readout="mean",
                           variances=(1.0, 0.8, 1.5))
    x = rng.normal(size=(p + n_test, 2, 3))
    feats = np.asarray(pt.path_features(arch, x))
    y = np.where(rng.random(p) < 0.5, 1.0, -1.0)
    return arch, feats[:p], y, feats[p:]


@pytest.mark.parametrize("n", [3, 9])  # Woodbury (n_L <= P) and direct (n_L > P) branches
def test_marginal_likelihood_and_readout_conditional(n):
    rng = np.random.default_rng(n)
    p, temp = 6, 0.3
    phi, y = rng.normal(size=(p, n)), rng.normal(size=p)
    cov = temp * np.eye(p) + phi @ phi.T
    expected = multivariate_normal(np.zeros(p), cov).logpdf(y)
    np.testing.assert_allclose(float(sampling.marginal_log_likelihood(phi, y, temp)), expected, rtol=1e-12)

    # Monte Carlo of Matheron draws vs the closed-form conditional N(M^-1 Phi^T y, T M^-1)
    m = temp * np.eye(n) + phi.T @ phi
    mean, covb = np.linalg.solve(m, phi.T @ y), temp * np.linalg.inv(m)
    draws = np.asarray(jax.vmap(lambda k: sampling.draw_readout(phi, y, temp, k))(
        jax.random.split(jax.random.PRNGKey(1), 40000)))
    sd = np.sqrt(np.diag(covb))
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * sd / math.sqrt(len(draws)))
    np.testing.assert_allclose(np.cov(draws.T), covb, atol=5 * np.outer(sd, sd).max() * math.sqrt(2 / len(draws)))


def test_readout_design_matches_layer_by_layer_forward_pass():
    from paththeory.tasks import markov

    arch = pt.Architecture(markov.four_paths().attention, readout="last", variances=(0.5, 2.0, 1.5, 0.7))
    x = markov.sample_task(4, seed=3).x
    params = pt.sample_prior(arch, (5, 4, 3), x.shape[2], jax.random.PRNGKey(0))
    phi = sampling.readout_design(arch, params, pt.path_features(arch, x))  # f = Phi a / sigma_a
    assert phi.shape == (4, 3)
    np.testing.assert_allclose(phi @ params["a"] / math.sqrt(0.7), pt.network_output(arch, params, x),
                               rtol=1e-10, atol=1e-12)


def _moments(res):
    """Per-quantity posterior means and Monte Carlo standard errors (from the chains' ESS)."""
    iu = np.triu_indices(res.U.shape[0])
    draws = np.concatenate([res.U_draws[:, :, iu[0], iu[1]], res.f_draws, res.f_draws**2], axis=2)
    ess = np.asarray(effective_sample_size(draws))
    flat = draws.reshape(-1, draws.shape[-1])
    return flat.mean(0), flat.std(0) / np.sqrt(ess)


@pytest.fixture(scope="module")
def tiny_runs():
    arch, feats, y, test = _tiny_problem()
    common = dict(features_test=test, num_warmup=300, num_samples=1500, num_chains=2, progress_bar=False)
    integrated = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=3, **common)
    direct = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=4, integrate_readout=False,
                                       chain_method="vectorized", **common)
    return integrated, direct, (arch, feats, y, common)


def test_integrated_readout_targets_the_same_posterior(tiny_runs):
    integrated, direct, _ = tiny_runs
    for res in (integrated, direct):
        assert res.diagnostics["r_hat_max"] < 1.05 and all(c.completed for c in res.chains)
    assert integrated.diagnostics["divergences"] == 0  # sampling a directly gives a funnel and some divergences
    (m1, se1), (m2, se2) = _moments(integrated), _moments(direct)
    z = np.abs(m1 - m2) / np.sqrt(se1**2 + se2**2)
    assert z.max() < 4.5, z
    f = integrated.f_draws.reshape(-1, integrated.f_draws.shape[-1])
    np.testing.assert_allclose(integrated.mean, f.mean(0))
    np.testing.assert_allclose(integrated.var, f.var(0, ddof=1))
    np.testing.assert_allclose(integrated.U, integrated.U.T)
    assert "R-hat" in integrated.summary() and integrated.to_dict()["diagnostics"]["draws_used"] == 3000


def test_same_seed_same_draws(tiny_runs):
    integrated, _, (arch, feats, y, common) = tiny_runs
    again = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=3, **common)
    np.testing.assert_array_equal(again.f_draws, integrated.f_draws)
    np.testing.assert_array_equal(again.U, integrated.U)


def test_time_limit_stops_cleanly():
    arch, feats, y, test = _tiny_problem(p=4)
    res = sampling.sample_posterior(arch, feats, y, 2, 0.5, num_warmup=50, num_samples=50, num_chains=2,
                                    time_limit=1e-3, progress_bar=False)
    assert res.stopped == {**res.stopped, "chain": 0, "phase": "warmup", "iteration": 1, "of": 100}
    assert len(res.chains) == 1 and not res.chains[0].completed and res.chains[0].warmup_done == 1
    assert np.all(np.isnan(res.U)) and "STOPPED" in res.summary()
    assert res.settings["chain_method"] == ("vectorized" if jax.default_backend() == "gpu" else "sequential")  # auto


def test_bad_input_raises():
    arch, feats, y, _ = _tiny_problem()
    with pytest.raises(ValueError, match="n_paths"):
        sampling.sample_posterior(arch, feats[:, :1], y, 2, 0.5)
    with pytest.raises(ValueError, match="labels"):
        sampling.sample_posterior(arch, feats, y[:-1], 2, 0.5)
    with pytest.raises(ValueError, match="chain_method"):
        sampling.sample_posterior(arch, feats, y, 2, 0.5, chain_method="parallel")
    with pytest.raises(ValueError, match="temperature"):
        sampling.sample_posterior(arch, feats, y, 2, 0.0)


def test_nuts_agrees_with_theory_on_markov_task():
    """At N = 10 the theory is a saddle point with O(1/N) corrections: U within 20 % (Frobenius)."""
    from paththeory.predict import accuracy, predictor
    from paththeory.solve import solve
    from paththeory.tasks import markov

    arch = markov.four_paths()
    train, test = markov.sample_task(40, seed=27), markov.sample_task(200, seed=59)
    feats, feats_test = pt.path_features(arch, train.x), pt.path_features(arch, test.x)
    sol = solve(arch, feats, train.y, 10, 0.01)
    mean, var = predictor(sol.U, feats, train.y, feats_test, 0.01)
    res = sampling.sample_posterior(arch, feats, train.y, 10, 0.01, features_test=feats_test, num_warmup=100,
                                    num_samples=100, num_chains=2, seed=0, progress_bar=False)
    assert res.diagnostics["r_hat_U_max"] < 1.1 and res.diagnostics["divergences"] <= 2
    assert abs(accuracy(res.mean, test.y) - accuracy(mean, test.y)) <= 0.04
    assert np.linalg.norm(res.U - sol.U) / np.linalg.norm(sol.U) < 0.2
    assert res.U[0, 2] < 0 and sol.U[0, 2] < 0  # good and denoising paths anti-correlated
    assert 0.7 < np.median(res.var / np.asarray(var)) < 1.4
