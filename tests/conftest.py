"""Shared fixtures: small random architectures and data."""

from __future__ import annotations

import numpy as np
import pytest

import paththeory as pt


def random_qk_arch(heads, n0=12, g=4, readout="mean", seed=0, variances=None):
    """A random QK architecture with ``heads[l]`` heads in layer ``l``."""
    rng = np.random.default_rng(seed)
    layers = [pt.QKAttention(rng.normal(size=(h, g, n0)), rng.normal(size=(h, g, n0))) for h in heads]
    return pt.Architecture(layers, readout=readout, variances=variances)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def small_problem():
    """L = 2, H = (2, 2), P = 60 random tokens with labels from a random teacher."""
    rng = np.random.default_rng(7)
    arch = random_qk_arch((2, 2), n0=16, readout="mean", seed=3)
    x = rng.normal(size=(90, 6, 16))
    teacher = rng.normal(size=16)
    y = np.sign(x[:, 0, :] @ teacher + 0.3 * x[:, 1, :] @ teacher)
    feats = np.asarray(pt.path_features(arch, x))
    return arch, feats[:60], y[:60], feats[60:], y[60:]
