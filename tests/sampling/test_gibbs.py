"""Tests of the exact blocked Gibbs sampler (:mod:`paththeory.sampling.gibbs`).

Oracles: each block's dense Gaussian conditional in precision form (its Jacobian taken by autodiff of
:func:`paththeory.sampling.readout_design`, an independent code path), the prior's order parameter
when the labels carry no information, and the diagnostics' own functions. Agreement with NUTS on the
same posterior is in ``test_sampling.py`` (it reuses that file's NUTS runs).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import sampling
from paththeory.sampling.gibbs import block_draw, block_layout, left_factors
from paththeory.tasks.examples import model_problem


def test_block_layout_follows_the_path_order():
    assert block_layout((3, 2)) == [(1, 1, 6), (1, 3, 2), (3, 2, 1)]
    assert block_layout((2, 1, 3)) == [(1, 1, 6), (1, 2, 3), (2, 1, 3), (2, 3, 1)]
    rng = np.random.default_rng(0)
    layers = tuple(pt.ScoreAttention(rng.normal(size=(h, 3, 3))) for h in (2, 1, 3))
    arch = pt.Architecture(layers, readout="mean")
    names = [n.strip("()").split(",") for n in arch.path_names()]  # '(h1,h2,h3)', layer 1's head slowest
    for layer, (a, h, b) in enumerate(block_layout(arch.heads)[1:]):
        heads_in_layout = np.broadcast_to(np.arange(h)[None, :, None], (a, h, b)).reshape(-1)
        assert [int(n[layer]) for n in names] == heads_in_layout.tolist()


@pytest.mark.slow
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_each_block_draw_matches_its_dense_gaussian_conditional(n_outputs):
    """Mean and covariance of 20,000 draws of every block against ``Sigma = (I / s2 + J^T J / T)^{-1}``,
    ``mu = Sigma J^T y / T``. Tolerance: 5 Monte Carlo standard errors per entry (an entry's sample
    covariance has standard error ``sqrt((S_ii S_jj + S_ij^2) / M)``)."""
    arch, _, x = model_problem("mean")  # two layers of 3 and 2 heads: 6 paths
    arch = pt.Architecture(arch.attention, readout="mean", variances=(0.7, 1.3, 0.9, 1.6))
    xi = jnp.asarray(pt.path_features(arch, x))
    p, temperature, widths, m = xi.shape[0], 0.3, (3, 2, 3), 20000
    prior = pt.sample_prior(arch, widths, xi.shape[2], jax.random.PRNGKey(1))
    b = jax.random.normal(jax.random.PRNGKey(2), (widths[-1], n_outputs))
    y = jax.random.normal(jax.random.PRNGKey(3), (p, n_outputs))
    layout = block_layout(arch.heads)
    lefts = left_factors(prior["V"], b, layout)
    scale = math.sqrt(arch.variances[-1] / (arch.variances[0] * math.prod(widths)))
    blocks = (prior["V0"][None],) + tuple(prior["V"])
    right = xi
    for l, w in enumerate(blocks):
        def outputs(theta, l=l, w=w):
            ws = list(blocks)
            ws[l] = theta.reshape(w.shape)
            return (sampling.readout_design(arch, {"V0": ws[0][0], "V": tuple(ws[1:])}, xi) @ b).reshape(-1)

        jac = jax.jit(jax.jacfwd(outputs))(w.reshape(-1))  # one program, not hundreds of eager operations
        s2 = arch.variances[l]
        cov = jnp.linalg.inv(jnp.eye(w.size) / s2 + jac.T @ jac / temperature)
        mean = cov @ jac.T @ y.reshape(-1) / temperature
        r = right.reshape((p,) + layout[l] + (right.shape[-1],))
        keys = jax.random.split(jax.random.PRNGKey(10 + l), m)
        draws = jax.jit(jax.vmap(lambda k: block_draw(w, lefts[l], r, y, scale, s2, temperature, k).reshape(-1)))(keys)
        sd = jnp.sqrt(jnp.diag(cov))
        assert float(jnp.max(jnp.abs(draws.mean(0) - mean) / (sd / math.sqrt(m)))) < 5, l
        cov_se = jnp.sqrt((jnp.outer(sd**2, sd**2) + cov**2) / m)
        assert float(jnp.max(jnp.abs(jnp.cov(draws.T) - cov) / cov_se)) < 5, l
        right = jnp.einsum("hij,mahbj->mahbi", w, r).reshape(p, xi.shape[1], -1)


@pytest.mark.slow
def test_a_block_smaller_than_the_outputs_is_drawn_without_dividing_by_t():
    """Blocks with fewer entries than ``P`` use the precision form: at T = 1e-6 the draws match the dense
    conditional (5 standard errors), and at T = 1e-14 they stay finite and their mean is the stable
    least-squares solution ``(T I / s2 + J^T J)^{-1} J^T y`` (to 1e-6 relative)."""
    rng = np.random.default_rng(0)
    arch = pt.Architecture((pt.ScoreAttention(rng.normal(size=(2, 3, 3))),), readout="mean", variances=(1.0, 0.8, 1.5))
    xi = jnp.asarray(pt.path_features(arch, rng.normal(size=(30, 2, 3))))  # P = 30; V0 has 3 entries, V1 2
    y = jnp.asarray(rng.normal(size=(30, 1)))
    widths = (1, 1)
    prior = pt.sample_prior(arch, widths, 3, jax.random.PRNGKey(1))
    b = jnp.ones((1, 1))
    layout = block_layout(arch.heads)
    lefts = left_factors(prior["V"], b, layout)
    scale = math.sqrt(arch.variances[-1] / (arch.variances[0] * math.prod(widths)))
    w, r = prior["V0"][None], xi.reshape((30,) + layout[0] + (3,))

    def outputs(theta):
        return (sampling.readout_design(arch, {"V0": theta.reshape(1, 3), "V": prior["V"]}, xi) @ b).reshape(-1)

    jac = jax.jacfwd(outputs)(w.reshape(-1))
    for temperature, m in ((1e-6, 20000), (1e-14, 2000)):
        prec = temperature * jnp.eye(3) / arch.variances[0] + jac.T @ jac
        mean, cov = jnp.linalg.solve(prec, jac.T @ y.reshape(-1)), temperature * jnp.linalg.inv(prec)
        keys = jax.random.split(jax.random.PRNGKey(2), m)
        draws = jax.vmap(lambda k: block_draw(w, lefts[0], r, y, scale, arch.variances[0], temperature, k).reshape(-1))(keys)
        assert bool(jnp.all(jnp.isfinite(draws)))
        sd = jnp.sqrt(jnp.diag(cov))
        assert float(jnp.max(jnp.abs(draws.mean(0) - mean) / (sd / math.sqrt(m)))) < 5
    np.testing.assert_allclose(draws.mean(0), mean, rtol=1e-6)  # at T = 1e-14 the spread is about 1e-7


def test_labels_without_information_give_the_prior():
    """At T = 1e8 the likelihood is flat: ``U`` is the prior's, ``sigma_a^2 prod_l sigma_l^2 I``
    (paths through different heads are uncorrelated), within 5 Monte Carlo standard errors."""
    arch, _, x = model_problem("mean")
    arch = pt.Architecture(arch.attention, readout="mean", variances=(1.0, 1.5, 0.8, 1.25))
    feats = pt.path_features(arch, x)
    res = sampling.sample_posterior(arch, feats, np.array([1.0, -1.0, 1.0, -1.0]), 5, 1e8, method="gibbs",
                                    num_warmup=0, num_samples=800, num_chains=4, progress_bar=False)
    gp = 1.5 * 0.8 * 1.25 * np.eye(arch.n_paths)
    iu = np.triu_indices(arch.n_paths)
    draws = res.U_draws[:, :, iu[0], iu[1]]
    se = draws.reshape(-1, len(iu[0])).std(0) / np.sqrt(sampling.effective_sample_size(draws))
    assert np.max(np.abs(res.U[iu] - gp[iu]) / se) < 5
    assert res.diagnostics["r_hat_U_max"] < 1.02


@pytest.mark.slow
def test_diagnostics_are_those_of_the_draws_and_say_gibbs():
    arch, _, x = model_problem("mean")
    feats = pt.path_features(arch, x)
    y = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])  # two outputs
    res = sampling.sample_posterior(arch, feats, y, 4, 0.1, method="gibbs", num_warmup=5, num_samples=30,
                                    num_chains=3, seed=2, progress_bar=False)
    assert res.U.shape == (12, 12) and res.mean.shape == (4, 2) and res.var.shape == (4, 2, 2)
    assert res.f_draws.shape == (3, 30, 4, 2) and res.settings["method"] == "gibbs"
    iu = np.triu_indices(12)
    summaries = np.concatenate([res.U_draws[:, :, iu[0], iu[1]], res.f_draws.reshape(3, 30, -1)], axis=2)
    r_hat, ess = sampling.rank_rhat_ess(summaries)
    assert res.diagnostics["r_hat_max"] == pytest.approx(float(np.max(r_hat)))
    assert res.diagnostics["ess_bulk_min"] == pytest.approx(float(np.min(ess)))
    line = sampling.diagnostics_summary(res.diagnostics)
    assert line.startswith("Gibbs: 90 draws") and "divergences" not in line and "E-BFMI" not in line
    assert "Gibbs posterior" in res.summary() and "sweeps" in res.summary()
    again = sampling.sample_posterior(arch, feats, y, 4, 0.1, method="gibbs", num_warmup=5, num_samples=30,
                                      num_chains=3, seed=2, progress_bar=False)
    np.testing.assert_array_equal(again.U_draws, res.U_draws)
    other = "vectorized" if res.settings["chain_method"] == "sequential" else "sequential"
    batched = sampling.sample_posterior(arch, feats, y, 4, 0.1, method="gibbs", num_warmup=5, num_samples=30,
                                        num_chains=3, seed=2, chain_method=other, progress_bar=False)
    np.testing.assert_allclose(batched.U_draws, res.U_draws, rtol=1e-9, atol=1e-12)  # same keys, same draws


@pytest.mark.slow
@pytest.mark.clock
def test_an_interrupted_run_claims_nothing_and_bad_options_are_named():
    arch, _, x = model_problem("mean")
    feats, y = pt.path_features(arch, x), np.array([1.0, -1.0, 1.0, -1.0])
    with pytest.raises(sampling.TimeLimitReached, match=r"^Gibbs reached its time limit of 1e-09 s") as err:
        sampling.sample_posterior(arch, feats, y, 3, 0.1, method="gibbs", num_warmup=5, num_samples=5,
                                  time_limit=1e-9, progress_bar=False)
    partial = err.value.partial
    assert not partial.complete and partial.stopped["iteration"] == 1 and partial.diagnostics["complete"] is False
    assert not any(c.completed for c in partial.chains)
    cut = sampling.sample_posterior(arch, feats, y, 3, 0.1, method="gibbs", num_warmup=0, num_samples=5,
                                    num_chains=3, time_limit=1e-9, on_time_limit="stop", progress_bar=False)
    assert cut.f_draws.shape[:2] == (3, 1) and cut.diagnostics["draws_used"] == 3  # every chain, cut alike
    with pytest.raises(ValueError, match=r"posterior draws hold NaN or infinite values.*raise the temperature"):
        sampling.sample_posterior(arch, 1e200 * np.asarray(feats), y, 3, 0.1, method="gibbs", num_warmup=0,
                                  num_samples=2, num_chains=1, progress_bar=False)
    with pytest.raises(ValueError, match=r"method must be 'auto' or one of \['gibbs', 'nuts'\]; got 'hmc'"):
        sampling.sample_posterior(arch, feats, y, 3, 0.1, method="hmc")
    with pytest.raises(TypeError, match=r"method='gibbs'\) does not take max_tree_depth \(options of method='nuts'\)"):
        sampling.sample_posterior(arch, feats, y, 3, 0.1, method="gibbs", max_tree_depth=8)
    with pytest.raises(ValueError, match="temperature"):
        sampling.sample_posterior(arch, feats, y, 3, -1.0, method="gibbs")
    with pytest.raises(ValueError, match="n_paths"):
        sampling.sample_posterior(arch, feats[:, :2], y, 3, 0.1, method="gibbs")
