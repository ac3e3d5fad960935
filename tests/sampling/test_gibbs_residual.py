"""The exact blocked Gibbs sampler (:mod:`paththeory.sampling.gibbs`) on architectures with skip connections.

Oracles: each block's dense Gaussian conditional, with its Jacobian and offset taken by autodiff and
evaluation of :func:`paththeory.network_output` (the layer-by-layer forward pass, an independent code
path); the GP point of :func:`paththeory.action.gp_order_parameters` when the labels carry no
information; and NUTS on the same posterior.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import sampling
from paththeory.action import gp_order_parameters
from paththeory.sampling.gibbs import conditional_draw
from paththeory.sampling.path_form import level_order_parameters
from paththeory.tasks.examples import model_problem
from tests.conftest import sampler_agreement_z


def _skip_architecture(readout="mean", variances=(0.7, 1.3, 0.9, 1.1, 1.6)):
    """Residual(3 heads, gains 0.8 / 1.2), MLP, Residual(2 heads): 4 x 1 x 3 = 12 paths."""
    arch, _, x = model_problem(readout)
    layer1, layer2 = arch.attention
    arch = pt.Architecture([pt.Residual(layer1, 0.8, 1.2), pt.MLP(), pt.Residual(layer2)], readout=readout,
                           variances=variances)
    return arch, x


@pytest.mark.slow
@pytest.mark.parametrize("n_outputs", [1, 2])
def test_each_block_draw_matches_its_dense_gaussian_conditional(n_outputs):
    """Every block of a skip architecture (``V^0``, the three levels' ``V^l``) against the dense conditional
    ``N(mu, Sigma)``, ``Sigma = (I / s2 + J^T J / T)^{-1}``, ``mu = Sigma J^T (y - f(0)) / T``, with ``J`` and the
    offset ``f(0)`` of the forward pass :func:`paththeory.network_output` as a function of that block alone.

    Exact part: the draw is affine in the labels with the same key, ``draw(y) - draw(y') = Sigma J^T (y - y') / T``
    (to 1e-8 relative). Monte Carlo part (covers the offset and the noise): mean and covariance of 4,000
    draws within 5 standard errors per entry (an entry's sample covariance has standard error
    ``sqrt((S_ii S_jj + S_ij^2) / M)``)."""
    arch, x = _skip_architecture()
    xi = jnp.asarray(pt.path_features(arch, x))
    p, temperature, widths, m = xi.shape[0], 0.3, (3, 3, 2, 2), 4000
    prior = pt.sample_prior(arch, widths, xi.shape[2], jax.random.PRNGKey(1))
    b = jax.random.normal(jax.random.PRNGKey(2), (widths[-1], n_outputs))
    y = jax.random.normal(jax.random.PRNGKey(3), (p, n_outputs))
    y_other = jax.random.normal(jax.random.PRNGKey(4), (p, n_outputs))
    state = {"V0": prior["V0"], "V": prior["V"], "b": b}
    sd_a = math.sqrt(arch.variances[-1])
    blocks = [prior["V0"]] + list(prior["V"])
    for l, w in enumerate(blocks):
        def outputs(theta, l=l, w=w):
            ws = list(blocks)
            ws[l] = theta.reshape(w.shape)
            params = {"V0": ws[0], "V": tuple(ws[1:])}
            return jnp.stack([pt.network_output(arch, {**params, "a": sd_a * b[:, c]}, x)
                              for c in range(n_outputs)], axis=1).reshape(-1)

        theta = w.reshape(-1)
        outputs = jax.jit(outputs)  # one program per block, not hundreds of eager operations
        jac = jax.jit(jax.jacfwd(outputs))(theta)
        offset = outputs(jnp.zeros_like(theta))
        np.testing.assert_allclose(outputs(theta), jac @ theta + offset, rtol=1e-9, atol=1e-10)  # affine
        assert (float(jnp.max(jnp.abs(offset))) > 0.1) == (l in (1, 3))  # only skip levels have an offset
        s2 = arch.variances[l]
        cov = jnp.linalg.inv(jnp.eye(w.size) / s2 + jac.T @ jac / temperature)
        mean = cov @ jac.T @ (y.reshape(-1) - offset) / temperature

        @jax.jit
        def draw(k, labels, l=l):
            return conditional_draw(arch, xi, labels, temperature, state, l, k).reshape(-1)

        k = jax.random.PRNGKey(20 + l)
        np.testing.assert_allclose(draw(k, y) - draw(k, y_other),
                                   cov @ jac.T @ (y - y_other).reshape(-1) / temperature, rtol=1e-8, atol=1e-10)
        draws = jax.jit(jax.vmap(lambda k: draw(k, y)))(jax.random.split(jax.random.PRNGKey(10 + l), m))
        sd = jnp.sqrt(jnp.diag(cov))
        z_mean = float(jnp.max(jnp.abs(draws.mean(0) - mean) / (sd / math.sqrt(m))))
        cov_se = jnp.sqrt((jnp.outer(sd**2, sd**2) + cov**2) / m)
        z_cov = float(jnp.max(jnp.abs(jnp.cov(draws.T) - cov) / cov_se))
        print(f"block {l}: {w.size} entries, max z mean {z_mean:.2f}, max z cov {z_cov:.2f}")
        assert z_mean < 5 and z_cov < 5, (l, z_mean, z_cov)


def test_a_sweep_without_skips_is_unchanged():
    """Without skips ``conditional_draw`` of ``V^0`` and the sweep's own ``V^0`` draw (same key) coincide."""
    arch, _, x = model_problem("mean")
    xi = jnp.asarray(pt.path_features(arch, x))
    prior = pt.sample_prior(arch, (3, 2, 3), xi.shape[2], jax.random.PRNGKey(1))
    state = {"V0": prior["V0"], "V": prior["V"], "b": jnp.ones((3, 1))}
    y = jnp.ones((xi.shape[0], 1))
    key = jax.random.PRNGKey(5)
    swept = sampling.gibbs.gibbs_sweep(arch, xi, y, 0.3, state, key)
    first = conditional_draw(arch, xi, y, 0.3, state, 0, jax.random.split(key, arch.n_layers + 2)[0])
    np.testing.assert_array_equal(swept["V0"], first)


@pytest.mark.slow
def test_labels_without_information_give_the_prior():
    """At T = 1e8 the likelihood is flat: ``U`` and the levels above (``inner``: ``U^(2)``, ``U^(3)``, ``U_a``) are
    the prior's mean, the GP point ``gp_order_parameters(heads, variances, skips=skips)`` (a skip adds no
    variance) and ``U_a = sigma_a^2``, within 5 Monte Carlo standard errors per entry."""
    arch, x = _skip_architecture()
    feats = pt.path_features(arch, x)
    res = sampling.sample_posterior(arch, feats, np.array([1.0, -1.0, 1.0, -1.0]), 4, 1e8, method="gibbs",
                                    num_warmup=0, num_samples=800, num_chains=4, progress_bar=False)
    gp = gp_order_parameters(arch.heads, arch.variances, skips=arch.skips)
    np.testing.assert_allclose(np.diag(gp[0]), arch.gp_path_variances())
    iu = np.triu_indices(arch.n_paths)
    draws = res.U_draws[:, :, iu[0], iu[1]]
    se = draws.reshape(-1, len(iu[0])).std(0) / np.sqrt(sampling.effective_sample_size(draws))
    z_u = np.abs(res.U[iu] - gp[0][iu]) / se
    print(f"U: max z {z_u.max():.2f} over {len(z_u)} entries")
    assert np.max(z_u) < 5
    assert res.diagnostics["r_hat_U_max"] < 1.02
    # the levels above: at T = 1e8 each sweep redraws every block from (nearly) its prior, so the 3,200 kept
    # draws are independent; each entry's per-draw spread is measured on 20,000 direct prior draws
    assert len(res.inner) == 3
    widths = arch.network_widths(4)

    def prior_levels(key):
        params = pt.sample_prior(arch, widths, feats.shape[2], key)
        return level_order_parameters(arch, params, params["a"] / math.sqrt(arch.variances[-1]))[1:]

    spread = [np.asarray(v).std(0) for v in jax.vmap(prior_levels)(jax.random.split(jax.random.PRNGKey(7), 20000))]
    for got, want, sd in zip(res.inner, gp[1:] + [np.array([[arch.variances[-1]]])], spread):
        assert got.shape == want.shape
        z = np.abs(got - want) / (sd / math.sqrt(3200))
        print(f"inner {got.shape}: max z {z.max():.2f}")
        assert np.max(z) < 5, z


@pytest.mark.slow
def test_gibbs_and_nuts_agree_on_u_and_the_predictor():
    """A small skip architecture (Residual(2 heads) then MLP, widths 2): Gibbs and NUTS agree on every
    entry of ``U``, the test predictor and its second moment within 4.5 combined Monte Carlo standard
    errors (from each run's ESS)."""
    rng = np.random.default_rng(0)
    arch = pt.Architecture([pt.Residual(pt.ScoreAttention(rng.normal(size=(2, 3, 3))), 0.9, 1.1), pt.MLP()],
                           readout="mean", variances=(1.0, 0.8, 1.2, 1.5))
    p, n_test = 5, 3
    feats = np.asarray(pt.path_features(arch, rng.normal(size=(p + n_test, 2, 3))))
    y = np.where(rng.random(p) < 0.5, 1.0, -1.0)
    common = {"features_test": feats[p:], "progress_bar": False}
    nuts = sampling.sample_posterior(arch, feats[:p], y, 2, 0.5, method="nuts", seed=3, num_warmup=300, num_samples=1500,
                                     num_chains=2, **common)
    gibbs = sampling.sample_posterior(arch, feats[:p], y, 2, 0.5, method="gibbs", seed=5, num_warmup=100,
                                      num_samples=3000, num_chains=4, **common)
    assert gibbs.diagnostics["r_hat_max"] < 1.02 and gibbs.complete
    assert nuts.diagnostics["r_hat_max"] < 1.05

    z = sampler_agreement_z(nuts, gibbs)
    print("max z", z.max())
    assert z.max() < 4.5, z
