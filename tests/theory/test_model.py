"""The finite network, its path expansion and the GP kernel as its prior covariance."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory.kernels import gp_kernel
from tests.conftest import random_qk_arch


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
@pytest.mark.parametrize("heads", [(3,), (2, 3), (3, 1, 2)])
@pytest.mark.parametrize("readout", ["first", "last", "mean"])
def test_network_equals_path_expansion(heads, readout, rng):
    arch = random_qk_arch(heads, readout=readout, variances=(1.3,) + (0.8,) * len(heads) + (1.7,))
    x = rng.normal(size=(5, 7, 12))
    widths = tuple(range(4, 5 + len(heads)))  # unequal widths n_0..n_L
    params = pt.sample_prior(arch, widths, 12, jax.random.PRNGKey(len(heads)))
    f_net = np.asarray(pt.network_output(arch, params, x))
    f_paths = np.asarray(pt.path_expansion_output(arch, params, x))
    assert np.max(np.abs(f_net - f_paths)) < 1e-10
    assert np.std(f_net) > 1e-3  # not trivially zero


def test_path_attention_is_product_of_attention_matrices(rng):
    arch = random_qk_arch((2, 3), readout="last")
    x = rng.normal(size=(3, 5, 12))
    a1, a2 = (np.asarray(a) for a in pt.attention_matrices(arch, x))
    alpha = np.asarray(pt.path_attention(arch, x))
    r = np.zeros(5)
    r[-1] = 1.0
    for pi, (h1, h2) in enumerate(arch.paths):
        assert pi == h1 * 3 + h2
        expected = np.einsum("bst,btu,u->bs", a1[:, h1], a2[:, h2], r)
        np.testing.assert_allclose(alpha[:, pi], expected, atol=1e-13)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(a1.sum(axis=2), 1.0, atol=1e-12)  # softmax over keys


def test_score_and_fixed_attention_agree_with_qk(rng):
    arch_qk = random_qk_arch((2,), readout="first")
    layer = arch_qk.attention[0]
    w = np.einsum("hgn,hgm->hnm", layer.key, layer.query) / np.sqrt(layer.query.shape[1])
    x = rng.normal(size=(4, 6, 12))
    arch_w = pt.Architecture((pt.ScoreAttention(w),), readout="first")
    a_qk = np.asarray(pt.attention_matrices(arch_qk, x)[0])
    np.testing.assert_allclose(np.asarray(pt.attention_matrices(arch_w, x)[0]), a_qk, atol=1e-12)
    arch_fixed = pt.Architecture((pt.FixedAttention(a_qk),), readout="first")
    np.testing.assert_allclose(pt.path_features(arch_fixed, x), pt.path_features(arch_qk, x), atol=1e-13)


def test_gp_kernel_is_prior_covariance_of_network(rng):
    """Monte Carlo over prior weights: E[f(x) f(x')] equals K_GP at any width (linear network)."""
    arch = random_qk_arch((2, 2), readout="mean", variances=(1.5, 0.7, 1.2, 0.9))
    x = rng.normal(size=(3, 5, 12))
    attn = pt.attention_matrices(arch, x)
    xj = jnp.asarray(x)
    n_samples = 40000

    def draw(key):
        return pt.network_output(arch, pt.sample_prior(arch, 6, 12, key), xj, attn=attn)

    f = np.asarray(jax.lax.map(draw, jax.random.split(jax.random.PRNGKey(0), n_samples), batch_size=4000))
    products = f[:, :, None] * f[:, None, :]
    estimate = products.mean(0)
    stderr = products.std(0) / np.sqrt(n_samples)
    K = np.asarray(gp_kernel(arch, pt.path_features(arch, x)))
    assert np.all(np.abs(estimate - K) < 5 * stderr), (estimate, K, stderr)
    # A missing 1/sqrt(H) would double K: far outside the Monte-Carlo error.
    assert np.all(np.abs(estimate - 2 * K) > 5 * stderr)


def test_effective_weights_shape_and_order():
    arch = random_qk_arch((2, 3))
    params = pt.sample_prior(arch, (4, 5, 6), 12, jax.random.PRNGKey(0))
    w = np.asarray(pt.effective_weights(arch, params))
    assert w.shape == (6, 4)
    v1, v2, a = (np.asarray(params["V"][0]), np.asarray(params["V"][1]), np.asarray(params["a"]))
    for pi, (h1, h2) in enumerate(arch.paths):
        expected = v1[h1].T @ v2[h2].T @ a / np.sqrt(6 * 5)
        np.testing.assert_allclose(w[pi], expected, atol=1e-12)


def test_bad_inputs_raise_clear_errors(rng):
    arch = random_qk_arch((2, 2))
    with pytest.raises(ValueError, match="features"):
        pt.path_features(arch, rng.normal(size=(3, 5, 11)))
    with pytest.raises(ValueError, match="dimensions"):
        pt.path_features(arch, rng.normal(size=(5, 12)))
    bad = rng.normal(size=(3, 5, 12))
    bad[1, 2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        pt.path_features(arch, bad)
    params = pt.sample_prior(arch, 4, 12, jax.random.PRNGKey(0))
    params["V"] = (params["V"][0], jnp.zeros((2, 4, 5)))
    with pytest.raises(ValueError, match="mismatched widths"):
        pt.network_output(arch, params, rng.normal(size=(3, 5, 12)))
    with pytest.raises(ValueError, match="L \\+ 1"):
        arch.widths((4, 5))
    with pytest.raises(ValueError, match="readout"):
        pt.Architecture(arch.attention, readout="cls")
    with pytest.raises(ValueError, match="same shape"):
        pt.QKAttention(np.zeros((2, 3, 4)), np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="column-stochastic"):
        pt.FixedAttention(np.ones((1, 1, 3, 3)))


def test_head_mask_prunes_heads_and_rescales(rng):
    """Pruning head h of layer l equals the smaller network without it, rescaled by (H - d)^{-1/2}."""
    arch = random_qk_arch((3, 2), readout="mean")
    x = rng.normal(size=(4, 5, 12))
    params = pt.sample_prior(arch, 5, 12, jax.random.PRNGKey(3))
    pruned = pt.network_output(arch, params, x, head_mask=[np.array([1.0, 0.0, 1.0]), np.ones(2)])
    l1 = arch.attention[0]
    small = pt.Architecture((pt.QKAttention(l1.query[[0, 2]], l1.key[[0, 2]]), arch.attention[1]), readout="mean")
    small_params = {"V0": params["V0"], "V": (params["V"][0][np.array([0, 2])], params["V"][1]), "a": params["a"]}
    np.testing.assert_allclose(pruned, pt.network_output(small, small_params, x), atol=1e-12)
    with pytest.raises(ValueError, match="head_mask"):
        pt.network_output(arch, params, x, head_mask=[np.ones(3)])
