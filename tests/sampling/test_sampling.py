"""Tests of the NUTS posterior sampler (the paper's Eqs. 8 and 13, Appendix F).

Oracles: scipy's multivariate normal density, the closed-form Gaussian conditional of the
readout, the layer-by-layer forward pass, a sampler that samples the readout directly, and
the order-parameter theory (the paper's Sec. 3.1) at finite width.
"""

import math

import jax
import numpy as np
import pytest
from scipy.stats import multivariate_normal

import paththeory as pt
from paththeory import sampling
from tests.conftest import sampler_agreement_z


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


@pytest.fixture(scope="module")
def tiny_runs():
    arch, feats, y, test = _tiny_problem()
    common = dict(method="nuts", features_test=test, num_warmup=300, num_samples=1500, num_chains=2, progress_bar=False)
    integrated = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=3, **common)
    direct = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=4, integrate_readout=False,
                                       chain_method="vectorized", **common)
    return integrated, direct, (arch, feats, y, common)


def test_integrated_readout_targets_the_same_posterior(tiny_runs):
    integrated, direct, _ = tiny_runs
    for res in (integrated, direct):
        assert res.diagnostics["r_hat_max"] < 1.05 and all(c.completed for c in res.chains)
    assert integrated.diagnostics["divergences"] == 0  # sampling a directly gives a funnel and some divergences
    z = sampler_agreement_z(integrated, direct)
    assert z.max() < 4.5, z
    f = integrated.f_draws.reshape(-1, integrated.f_draws.shape[-1])
    np.testing.assert_allclose(integrated.mean, f.mean(0))
    np.testing.assert_allclose(integrated.var, f.var(0, ddof=1))
    np.testing.assert_allclose(integrated.U, integrated.U.T)
    assert "R-hat" in integrated.summary() and integrated.to_dict()["diagnostics"]["draws_used"] == 3000


def test_gibbs_and_nuts_agree_on_u_and_the_predictor(tiny_runs):
    """The exact blocked Gibbs sampler and NUTS target the same posterior: every entry of ``U``, the mean
    predictor and its second moment agree within 4.5 combined Monte Carlo standard errors (from each
    run's ESS)."""
    integrated, _, (arch, feats, y, common) = tiny_runs
    gibbs = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=5, **{
        **common, "method": "gibbs", "num_warmup": 100, "num_samples": 3000, "num_chains": 4})
    assert gibbs.diagnostics["r_hat_max"] < 1.02 and gibbs.complete
    z = sampler_agreement_z(integrated, gibbs)
    assert z.max() < 4.5, z


def test_same_seed_same_draws(tiny_runs):
    integrated, _, (arch, feats, y, common) = tiny_runs
    again = sampling.sample_posterior(arch, feats, y, 2, 0.5, seed=3, **common)
    np.testing.assert_array_equal(again.f_draws, integrated.f_draws)
    np.testing.assert_array_equal(again.U, integrated.U)


@pytest.mark.clock
def test_a_run_that_reaches_its_time_limit_raises_instead_of_returning():
    """The fail-safe never hands back a shortened run as if it were the result: it raises, names the
    limit and where the run stood, says how to raise the limit, and keeps the cut run apart."""
    arch, feats, y, test = _tiny_problem(p=4)
    with pytest.raises(sampling.TimeLimitReached,
                       match=r"time limit of 0\.001 s after \d+ s \(warmup, iteration 1 of 100\).*"
                             r"raise the limit \(sample_posterior\(\.\.\., time_limit=\.\.\.\).*on_time_limit='stop'") as err:
        sampling.sample_posterior(arch, feats, y, 2, 0.5, num_warmup=50, num_samples=50, num_chains=2,
                                  time_limit=1e-3, progress_bar=False)
    assert isinstance(err.value, RuntimeError) and not err.value.partial.complete
    with pytest.raises(ValueError, match="on_time_limit must be 'raise' or 'stop'"):
        sampling.sample_posterior(arch, feats, y, 2, 0.5, time_limit=1.0, on_time_limit="truncate")


@pytest.mark.clock
def test_a_budget_the_caller_asked_for_stops_cleanly_and_says_so():
    arch, feats, y, test = _tiny_problem(p=4)
    res = sampling.sample_posterior(arch, feats, y, 2, 0.5, method="nuts", num_warmup=50, num_samples=50, num_chains=2,
                                    time_limit=1e-3, on_time_limit="stop", progress_bar=False)
    assert res.stopped == {**res.stopped, "chain": 0, "phase": "warmup", "iteration": 1, "of": 100}
    assert len(res.chains) == 1 and not res.chains[0].completed and res.chains[0].warmup_done == 1
    assert np.all(np.isnan(res.U)) and "STOPPED" in res.summary()
    assert not res.complete and res.diagnostics["complete"] is False and res.diagnostics["draws_planned"] == 100
    line = sampling.diagnostics_summary(res.diagnostics)
    assert line.startswith("NUTS incomplete") and "not enough" in line and "R-hat" not in line and "\n" not in line
    assert res.settings["chain_method"] == ("vectorized" if jax.default_backend() == "gpu" else "sequential")  # auto


@pytest.mark.clock
def test_the_claim_of_a_stopped_run_gets_no_number_and_no_verdict():
    from paththeory.experiments.claims import fig3_claims
    from paththeory.experiments.stats import NOT_ENOUGH_DRAWS

    arch, feats, y, _ = _tiny_problem(p=4)
    res = sampling.sample_posterior(arch, feats, y, 2, 0.5, num_warmup=20, num_samples=20, num_chains=1,
                                    time_limit=1e-3, on_time_limit="stop", progress_bar=False)
    mantel = {"r": 0.5, "p_greater": 0.01, "p_less": 0.99, "n": 2, "exact": True}
    comp = {"diagnostics": res.diagnostics, "agreement": {"theory_vs_sampled": None, "theory_vs_gd": mantel,
                                                          "block": {"theory": {"contrast": 2.0, "mantel": mantel}}}}
    row = {r.id: r for r in fig3_claims({"order_parameter_comparison": comp})}["u_sampled"]
    assert row.verdict == NOT_ENOUGH_DRAWS and row.value is None and row.evidence.kind == "not_enough_draws"
    assert row.evidence.diagnostics["complete"] is False


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
    with pytest.raises(TypeError, match=r"arch must be a paththeory.Architecture \(e.g. pt.Architecture"):
        sampling.sample_posterior("four_paths", feats, y, 2, 0.5)


def test_the_readout_likelihood_names_complex_nan_and_foreign_inputs_and_takes_lists():
    key = jax.random.PRNGKey(0)
    phi, y = np.eye(4, 2), np.array([1.0, -1.0, 1.0, -1.0])
    assert float(sampling.marginal_log_likelihood(phi.tolist(), y.tolist(), 0.1)) == pytest.approx(
        float(sampling.marginal_log_likelihood(phi, y, 0.1)), rel=1e-12)
    with pytest.raises(TypeError, match="phi must hold real numbers; got an array of complex numbers"):
        sampling.marginal_log_likelihood(phi + 1j, y, 0.1)
    with pytest.raises(TypeError, match="phi must hold real numbers"):
        sampling.draw_readout(jax.numpy.asarray(phi) + 1j, y, 0.1, key)
    with pytest.raises(ValueError, match="phi contains 1 NaN or infinite entries; clean the input"):
        sampling.marginal_log_likelihood(np.where(np.arange(8).reshape(4, 2) == 0, np.nan, phi), y, 0.1)
    with pytest.raises(TypeError, match="arch must be a paththeory.Architecture"):
        sampling.readout_design("arch", {"V0": np.ones((2, 2)), "V": ()}, np.ones((1, 1, 2)))


@pytest.mark.slow
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
    res = sampling.sample_posterior(arch, feats, train.y, 10, 0.01, method="nuts", features_test=feats_test,
                                    num_warmup=100, num_samples=100, num_chains=2, seed=0, progress_bar=False)
    assert res.diagnostics["r_hat_U_max"] < 1.1 and res.diagnostics["divergences"] <= 2
    assert abs(accuracy(res.mean, test.y) - accuracy(mean, test.y)) <= 0.04
    assert np.linalg.norm(res.U - sol.U) / np.linalg.norm(sol.U) < 0.2
    assert res.U[0, 2] < 0 and sol.U[0, 2] < 0  # good and denoising paths anti-correlated
    assert 0.7 < np.median(res.var / np.asarray(var)) < 1.4


# --------------------------------------------------------------------------- effective sample size


def _ar1(phi: float, chains: int, n: int, seed: int) -> np.ndarray:
    """Stationary AR(1) chains ``x_t = phi x_{t-1} + e_t`` ``[chains, n]`` (lag-k autocorrelation ``phi^k``)."""
    rng = np.random.default_rng(seed)
    x, e = np.empty((chains, n)), rng.normal(size=(chains, n))
    x[:, 0] = e[:, 0] / math.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


#: (phi, chains, draws, seed) -> ArviZ 0.23.4 (numpy 2, scipy 1.x, Python 3.11) on ``_ar1(phi, chains, draws, seed)``:
#: ``az.ess(x, method="bulk")``, the plain ``arviz.stats.diagnostics._ess(x)`` and, for several chains,
#: ``az.rhat(x, method="z_scale")``. Computed once in a throwaway virtual environment (pip install arviz).
ARVIZ = {
    (0.5, 4, 1000, 1): (1364.6528041662784, 1367.6184271343948, 1.00415163127208),
    (0.9, 2, 2000, 2): (135.050822068667, 129.74338343023305, 1.0353792024665365),
    (-0.5, 1, 1000, 3): (2667.616999628721, 2581.1269161973123, None),
    (0.7, 1, 36, 4): (7.579998287781761, 18.369537079536276, None),  # short chains: 36 draws
    (0.3, 4, 36, 5): (34.940207011232765, 31.960175074059332, 1.1068984440216494),
    (-0.9, 1, 36, 6): (56.02689002762234, 56.02689002762234, None),  # antithetic: the 36 log10(36) cap
}


@pytest.mark.parametrize("case", sorted(ARVIZ))
def test_ess_and_rhat_agree_with_arviz(case):
    x = _ar1(*case)
    bulk, plain, rhat = ARVIZ[case]
    r_hat, ess = sampling.rank_rhat_ess(x[..., None])
    np.testing.assert_allclose(ess[0], bulk, rtol=1e-10)
    np.testing.assert_allclose(sampling.effective_sample_size(x), plain, rtol=1e-10)
    if rhat is not None:
        np.testing.assert_allclose(r_hat[0], rhat, rtol=1e-10)


@pytest.mark.parametrize("phi", [0.3, 0.5, 0.8])
def test_ess_of_ar1_chains_matches_the_closed_form(phi):
    """ESS of AR(1) is ``n (1 - phi) / (1 + phi)``; over 20 seeds the estimate at 4 x 5000 draws was
    within 14 % of it (median within 2 %), hence the 15 % tolerance."""
    x = _ar1(phi, 4, 5000, seed=0)
    expected = x.size * (1 - phi) / (1 + phi)
    assert abs(float(sampling.effective_sample_size(x)) / expected - 1) < 0.15


def test_ess_of_short_chains_is_positive_and_bounded():
    """numpyro's estimator gave -166 for the rank-normalised antithetic chain of 36 draws (seed 6)."""
    short = np.stack([_ar1(phi, 1, 36, seed)[0] for seed, phi in enumerate((-0.9, -0.5, 0.0, 0.5, 0.95))])
    _, ess = sampling.rank_rhat_ess(short.T[None])
    assert np.all(ess > 0) and np.all(ess <= 36 * math.log10(36) + 1e-9)
    assert sampling.effective_sample_size(np.ones((2, 10))) == 20
    assert np.isnan(sampling.effective_sample_size(np.array([[0.0, 1.0, np.nan, 2.0]])))
    with pytest.raises(ValueError, match="draws >= 2"):
        sampling.effective_sample_size(np.ones((2, 1)))


SAME_SHAPES_PROGRAM = """
import json, sys
import jax
import numpy as np
from paththeory import sampling
from tests.sampling.test_sampling import _tiny_problem

arch, feats, y, test = _tiny_problem(seed=5)


def run(temperature, labels, seed):
    return sampling.sample_posterior(arch, feats, labels, 2, temperature, method=sys.argv[1], features_test=test,
                                     num_warmup=3, num_samples=3, num_chains=1, target_ess=None, progress_bar=False,
                                     seed=seed)


run(0.5, y, 0)
events = []
jax.monitoring.register_event_listener(lambda event, **_: events.append(event))
second = run(0.3, -y, 1)
print(json.dumps({"uses": events.count("/jax/compilation_cache/compile_requests_use_cache"),
                  "misses": events.count("/jax/compilation_cache/cache_misses"),
                  "finite": bool(np.all(np.isfinite(second.U))), "temperature": second.settings["temperature"]}))
"""


@pytest.mark.slow  # JAX's event listeners and the persistent cache of this jax
@pytest.mark.parametrize("method", ["gibbs", "nuts"])
def test_another_run_of_the_same_shapes_compiles_nothing(method, tmp_path):
    """The data (features, labels, test features, temperature) enter the samplers' compiled programs as arguments,
    not as constants: in a fresh process with an empty persistent cache, a second run with other labels and another
    temperature, same shapes, finds every program it compiles in the cache that the first run wrote (no miss). With
    the data as constants (the code before) each of its programs missed."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATHTHEORY_", "JAX_"))}
    env.update(PATHTHEORY_COMPILATION_CACHE=str(tmp_path / "jax"), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    root = Path(__file__).resolve().parents[2]  # the checkout, for tests.sampling
    out = subprocess.run([sys.executable, "-c", SAME_SHAPES_PROGRAM, method], env=env, cwd=root, capture_output=True,
                         text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["finite"] and seen["temperature"] == 0.3, seen
    assert seen["uses"] >= 2 and seen["misses"] == 0, seen
