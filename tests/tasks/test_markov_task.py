"""Tests of the hidden-Markov-chain task (spec §6): data statistics and designed heads.

Oracles: binomial standard errors for the transition frequencies, chi-square standard errors
for the noise variances, and the spec's closed-form noise-free attention scores.
"""

import numpy as np
import pytest

import paththeory as pt
from paththeory.tasks import markov

NF, T = markov.N_FEATURES, markov.SEQ_LEN


def test_shapes_labels_bos_and_positions():
    d = markov.sample_task(6, seed=1)
    assert d.x.shape == (6, T + 1, 231) and d.states.shape == (6, T)
    np.testing.assert_array_equal(d.y, [1, 1, 1, -1, -1, -1])
    np.testing.assert_array_equal(d.x[:, 0, :NF], 0.0)  # noise-free bos
    np.testing.assert_array_equal(d.x[:, :, NF:], np.broadcast_to(np.eye(T + 1), (6, T + 1, T + 1)))
    np.testing.assert_array_equal(markov.sample_task(6, seed=1).x, d.x)  # seeded
    assert not np.array_equal(markov.sample_task(6, seed=2).x, d.x)


def test_transition_frequencies_match_flip_probabilities():
    d = markov.sample_task(2000, seed=3, sigma_u=0, sigma_w=0, sigma_perp=0)
    flips = d.states[:, 1:] != d.states[:, :-1]
    for cls, p in ((1.0, 0.3), (-1.0, 0.7)):
        f = flips[d.y == cls]
        se = np.sqrt(p * (1 - p) / f.size)
        assert abs(f.mean() - p) < 4 * se, (cls, f.mean())
    start = d.states[:, 0]
    assert abs(start.mean()) < 4 / np.sqrt(start.size)  # uniform first state
    # noise-free features are exactly v_sigma
    v_plus, v_minus = markov.signal_vectors()
    np.testing.assert_array_equal(d.x[:, 1:, :NF], np.where(d.states[..., None] > 0, v_plus, v_minus))


@pytest.mark.parametrize("sig", [(0.5, 2.0, 1.0), (1.0, 1.0, markov.NOISY_SIGMA_PERP)])
def test_noise_variance_along_u_w_and_out_of_plane(sig):
    sigma_u, sigma_w, sigma_perp = sig
    d = markov.sample_task(400, seed=5, sigma_u=sigma_u, sigma_w=sigma_w, sigma_perp=sigma_perp)
    v_plus, v_minus = markov.signal_vectors()
    eta = (d.x[:, 1:, :NF] - np.where(d.states[..., None] > 0, v_plus, v_minus)).reshape(-1, NF)
    u, w = markov.noise_directions()
    n = eta.shape[0]
    for comp, s in ((eta @ u, sigma_u), (eta @ w, sigma_w)):
        assert abs(np.mean(comp**2) / s**2 - 1) < 5 * np.sqrt(2 / n)
    perp = eta - np.outer(eta @ u, u) - np.outer(eta @ w, w)
    dof = n * (NF - 2)
    assert abs(np.sum(perp**2) / dof / sigma_perp**2 - 1) < 5 * np.sqrt(2 / dof)
    assert abs(np.mean((eta @ u) * (eta @ w))) < 5 * sigma_u * sigma_w / np.sqrt(n)


def _expected_same_token_attention(states: np.ndarray, beta: float) -> np.ndarray:
    """Softmax over keys of the spec's noise-free scores (spec §6.2), ``[P, key, query]``."""
    n, seq = states.shape
    s = np.concatenate([np.zeros((n, 1)), states], axis=1)  # bos has no state
    scores = beta * s[:, :, None] * s[:, None, :]  # feature part q.x_s q.x_t
    scores[:, 0, 1:] += 1.5 * beta
    idx = np.arange(1, seq)
    scores[:, idx, idx + 1] += beta
    scores -= scores.max(axis=1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)


def test_good_head_attends_previous_same_state_token_else_bos():
    d = markov.sample_task(40, seed=7, sigma_u=0, sigma_w=0, sigma_perp=0)
    arch = markov.four_paths()
    a = np.asarray(pt.attention_matrices(arch, d.x)[0][:, 0])  # [P, key, query]
    np.testing.assert_allclose(a, _expected_same_token_attention(d.states, markov.BETA), atol=1e-12)
    same = d.states[:, 1:] == d.states[:, :-1]  # query tokens 2..T
    q = np.arange(2, T + 1)
    prev = a[:, q - 1, q]  # [P, T-1]
    assert np.all(prev[same] > 0.99)
    assert np.all(a[:, :, q].argmax(axis=1)[~same] == 0)  # bos otherwise
    assert np.all(a[:, 0, q][~same] > 0.8)
    assert np.all(a[:, 0, 1] > 0.8)  # the first state always looks at bos


def test_uniform_and_blank_heads_are_exactly_uniform():
    d = markov.sample_task(4, seed=0)
    for arch, layer, head in ((markov.four_paths(), 1, 0), (markov.two_paths_noisy(), 0, 1)):
        a = np.asarray(pt.attention_matrices(arch, d.x)[layer][:, head])
        np.testing.assert_allclose(a, 1.0 / (T + 1), rtol=0, atol=1e-15)


def test_random_head_block_standard_deviations():
    w = markov.random_head(147) / markov.BETA
    blocks = {
        "features": (w[:NF, :NF], 1 / NF),
        "positions": (w[NF:, NF:], 1.0),
        "cross": (np.concatenate([w[:NF, NF:].ravel(), w[NF:, :NF].ravel()]), 1 / np.sqrt(NF)),
    }
    for name, (b, sd) in blocks.items():
        n = b.size
        assert abs(b.std() / sd - 1) < 5 / np.sqrt(2 * n), name
        assert abs(b.mean()) < 5 * sd / np.sqrt(n), name
    np.testing.assert_array_equal(markov.random_head(147), markov.random_head(147))
    assert not np.allclose(markov.random_head(147), markov.random_head(247))


def test_variants():
    four = markov.four_paths()
    assert four.heads == (2, 2) and four.readout == "last"
    assert len(markov.FOUR_PATH_NAMES) == four.n_paths
    np.testing.assert_array_equal(four.attention[0].w[0], markov.same_token_head())
    np.testing.assert_array_equal(four.attention[0].w[1], markov.random_head(147))
    np.testing.assert_array_equal(four.attention[1].w[1], markov.random_head(247))
    assert markov.good_path().heads == (1, 1)
    gd = markov.good_and_denoising()
    assert gd.heads == (2, 1) and len(markov.TWO_PATH_NAMES) == gd.n_paths
    np.testing.assert_array_equal(gd.attention[0].w[1], markov.random_head(147))
    np.testing.assert_array_equal(markov.two_paths_noisy().attention[0].w[1], 0.0)
    np.testing.assert_array_equal(markov.two_paths_noisy(denoising="random").attention[0].w[1], gd.attention[0].w[1])
    assert markov.four_paths(readout="first").readout == "first"
    assert [markov.FOUR_PATH_NAMES[i] for i in markov.DISPLAY_ORDER] == ["g", "d", "a1", "a2"]


def test_bad_input_raises():
    with pytest.raises(ValueError, match="even"):
        markov.sample_task(5)
    with pytest.raises(ValueError, match="sigma_perp"):
        markov.sample_task(4, sigma_perp=-1)
    with pytest.raises(ValueError, match="denoising"):
        markov.good_and_denoising(denoising="blank")
    with pytest.raises(ValueError, match="flip_prob"):
        markov.sample_task(4, flip_probs=(0.3, 1.5))
