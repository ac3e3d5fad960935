"""Tests of the toy needle task: data statistics, the designed heads and their paths.

Oracles: the generative model's closed-form means and variances (with standard errors), and
the path attention vectors the head design implies (needle, uniform, blind to the needle).
"""

import numpy as np
import pytest

import paththeory as pt
from paththeory.tasks import toy

D, T, K = 6, 5, 1  # small sizes for the tests


def test_shapes_labels_positions_and_seeds():
    d = toy.sample_task(6, seed=1, n_features=D, seq_len=T, needle=K)
    assert d.x.shape == (6, T, D + T) == (6, T, toy.token_dim(D, T))
    np.testing.assert_array_equal(d.y, [1, 1, 1, -1, -1, -1])
    np.testing.assert_array_equal(d.x[:, :, D:], np.broadcast_to(np.eye(T), (6, T, T)))
    np.testing.assert_array_equal(toy.sample_task(6, seed=1, n_features=D, seq_len=T, needle=K).x, d.x)
    assert not np.array_equal(toy.sample_task(6, seed=2, n_features=D, seq_len=T, needle=K).x, d.x)


def test_only_the_needle_token_carries_the_label():
    s, noise, n = 1.5, 2.0, 4000
    d = toy.sample_task(n, seed=3, signal=s, noise=noise, n_features=D, seq_len=T, needle=K)
    u = toy.signal_direction(D)
    assert np.isclose(np.linalg.norm(u), 1.0)
    g = d.x[:, :, :D]
    along = g @ u  # [n, T]
    se = 1 / np.sqrt(n)
    assert abs(np.mean(along[:, K] * d.y) - s) < 5 * se  # needle: s y + N(0, 1)
    assert abs(np.var(along[:, K] - s * d.y) - 1) < 5 * np.sqrt(2 / n)
    others = np.delete(g, K, axis=1)  # [n, T-1, D]: N(0, noise^2), independent of y
    assert abs(np.mean(others**2) / noise**2 - 1) < 5 * np.sqrt(2 / others.size)
    assert np.max(np.abs(np.mean(others * d.y[:, None, None], axis=0))) < 5 * noise * se


def test_path_attention_matches_the_design():
    arch = toy.architecture(n_features=D, seq_len=T, needle=K)
    assert arch.heads == (2, 2) and len(toy.PATH_NAMES) == arch.n_paths
    x = toy.sample_task(4, seed=5, n_features=D, seq_len=T, needle=K).x
    alpha = np.asarray(pt.path_attention(arch, x))  # [4, paths, T]
    np.testing.assert_allclose(alpha, np.broadcast_to(alpha[0], alpha.shape), atol=1e-12)  # positions only
    good, mean, decoy, blur = alpha[0]
    softmax_leak = (T - 1) * np.exp(-toy.BETA)
    np.testing.assert_allclose(good, np.eye(T)[K], atol=3 * softmax_leak)
    np.testing.assert_allclose(mean, np.full(T, 1 / T), atol=3 * softmax_leak)
    assert decoy[K] < 1e-6 and blur[K] < 1e-6  # the scramble head never reads the needle
    assert not np.allclose(blur, np.full(T, 1 / (T - 1)) * (np.arange(T) != K), atol=1e-3)  # not uniform


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_examples=5), "even"),
        (dict(n_examples=4, needle=T), "needle"),
        (dict(n_examples=4, signal=-1.0), "signal"),
        (dict(n_examples=4, noise=-1.0), "noise"),
        (dict(n_examples=4, seq_len=1, needle=0), "seq_len"),
    ],
)
def test_invalid_arguments(kwargs, match):
    sizes = dict(n_features=D, seq_len=T, needle=K) | kwargs
    with pytest.raises(ValueError, match=match):
        toy.sample_task(**sizes)
