"""The order parameters of every level from a draw of the weights, with MLP blocks and skip connections.

Oracles: the effective weights of :func:`paththeory.model.effective_weights` (the first level), the
readout itself (``U_a``), the exact tie of a skip level's skip block to the level above, and the prior
mean of every level, the GP point of :func:`paththeory.action.gp_order_parameters` (Monte Carlo).
"""

import jax
import numpy as np

import paththeory as pt
from paththeory.action import gp_order_parameters, skip_block
from paththeory.sampling.path_form import level_order_parameters
from paththeory.tasks.examples import model_problem


def _arch():
    base, _, x = model_problem("mean")
    first, second = base.attention
    levels = (pt.Residual(first, 0.8, 1.2), pt.MLP(), pt.Residual(second), pt.Residual(pt.MLP(), 0.5, 1.0))
    return pt.Architecture(levels, readout="mean", variances=(1.0, 0.7, 1.3, 0.9, 1.1, 1.4)), x


def test_every_level_from_one_draw_and_the_ties_hold_exactly():
    arch, x = _arch()
    params = pt.sample_prior(arch, 7, x.shape[2], jax.random.PRNGKey(3))
    b = params["a"] / np.sqrt(arch.variances[-1])
    levels = [np.asarray(u) for u in level_order_parameters(arch, params, b)]
    w = np.asarray(pt.effective_weights(arch, params))
    np.testing.assert_allclose(levels[0], w @ w.T / 7, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(levels[-1], [[params["a"] @ params["a"] / 7]], rtol=1e-12)
    for l, (skip, h) in enumerate(zip(arch.skips, arch.heads)):
        if skip:  # the skip's copies are the level above's weights: equal to round-off, draw by draw
            np.testing.assert_allclose(skip_block(levels[l], h + 1), levels[l + 1], rtol=1e-13, atol=1e-13)


def test_the_prior_mean_of_every_level_is_the_gp_point():
    """E[U^(l)] = the GP point at any width for a linear network; 4,000 draws, 5 standard errors."""
    arch, x = _arch()
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)

    def one(key):
        params = pt.sample_prior(arch, 5, x.shape[2], key)
        return level_order_parameters(arch, params, params["a"] / np.sqrt(arch.variances[-1]))

    draws = jax.vmap(one)(keys)
    gp = gp_order_parameters(arch.heads, arch.variances, skips=arch.skips) + [np.array([[arch.variances[-1]]])]
    for d, g in zip(draws, gp):
        d = np.asarray(d)
        se = d.std(axis=0) / np.sqrt(d.shape[0])
        assert np.all(np.abs(d.mean(axis=0) - g) <= 5 * se + 1e-12)


def test_nuts_reports_every_level():
    arch, x = _arch()
    out = pt.sample_posterior(arch, pt.path_features(arch, x), np.array([1.0, -1, 1, -1]), 5, 0.1, method="nuts",
                              num_warmup=5, num_samples=5, num_chains=1, progress_bar=False)
    sizes = [u.shape[0] for u in out.inner]
    assert out.U.shape == (arch.n_paths, arch.n_paths) and sizes == [6, 6, 2, 1]  # U^(2) = 1 x 3 x 2, U^(3) = 3 x 2, U^(4) = 2, U_a
