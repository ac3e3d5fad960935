"""Head scores (paper §4.2) against their definition; pruning by paths against the pruned forward pass."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import paththeory as pt
from paththeory.pruning import (
    head_mask,
    head_scores,
    path_weights,
    pruned_accuracies,
    pruning_curves,
    random_orders,
    score_order,
)
from tests.conftest import random_qk_arch


def test_head_scores_match_pairwise_definition(rng):
    heads = (3, 2, 2)
    paths = list(itertools.product(*(range(h) for h in heads)))
    A = rng.normal(size=(12, 12))
    U = A @ A.T  # an order parameter: symmetric positive definite
    scores = head_scores(U, heads, normalise=False)
    for l, h_l in enumerate(heads):
        for h in range(h_l):
            expected = sum(abs(U[i, j]) for i, p in enumerate(paths) for j, q in enumerate(paths)
                           if p[l] == h or q[l] == h)
            assert abs(scores[l][h] - expected) < 1e-10
    normalised = head_scores(U, heads)
    assert max(s.max() for s in normalised) == 1.0
    order = score_order(normalised)
    flat = [normalised[l][h] for l, h in order]
    assert flat == sorted(flat) and len(order) == 7


def _network(heads, rng, n=5, n0=6):
    arch = random_qk_arch(heads, n0=n0, g=3, readout="mean", seed=int(rng.integers(100)))
    params = pt.sample_prior(arch, n, n0, jax.random.PRNGKey(int(rng.integers(100))))
    return arch, jax.tree.map(np.asarray, params)


@pytest.mark.slow
@pytest.mark.parametrize("heads", [(2, 3), (3, 2, 2)])
def test_path_weights_reproduce_the_pruned_forward_pass(heads, rng):
    """Pruning by paths (contributions times path_weights) against the layer-by-layer network with a
    head mask (paper §4.2), for every pruned set of one and two heads that keeps a head per layer."""
    arch, params = _network(heads, rng)
    x = rng.normal(size=(30, 5, 6))
    c = np.asarray(pt.path_contributions(arch, params, pt.path_features(arch, x)))
    np.testing.assert_allclose(c.sum(axis=1), pt.network_output(arch, params, x), rtol=1e-10, atol=1e-12)
    every = [(l, h) for l, n in enumerate(heads) for h in range(n)]
    sets = [[lh] for lh in every] + [list(p) for p in itertools.combinations(every, 2)]
    y = np.sign(rng.normal(size=30))
    checked = 0
    for pruned in sets:
        masks = head_mask(heads, pruned)
        if any(m.sum() == 0 for m in masks):
            with pytest.raises(ValueError, match="every head"):
                path_weights(heads, pruned)
            assert np.isnan(pruned_accuracies(c, y, heads, [pruned])[0])
            continue
        f = np.asarray(pt.network_output(arch, params, x, head_mask=masks))
        np.testing.assert_allclose(c @ path_weights(heads, pruned), f, rtol=1e-10, atol=1e-12)
        assert pruned_accuracies(c, y, heads, [pruned])[0] == np.mean(f * y > 0)
        checked += 1
    assert checked >= len(every)


def test_pruning_curves_and_random_orders(rng):
    heads = (2, 3)
    c = rng.normal(size=(50, 6))
    y = np.sign(rng.normal(size=50))
    orders = random_orders(heads, 20, seed=3)
    assert orders.shape == (20, 5, 2)
    every = sorted((l, h) for l, n in enumerate(heads) for h in range(n))
    assert all(sorted(map(tuple, o.tolist())) == every for o in orders)
    curves = pruning_curves(c, y, heads, orders)
    assert curves.shape == (20, 6)
    for o, curve in zip(orders, curves):
        for k in range(6):
            expected = pruned_accuracies(c, y, heads, [[tuple(v) for v in o[:k]]])[0]
            assert np.array_equal(curve[k], expected, equal_nan=True)
        assert np.isnan(curve[-1])  # all heads gone
    with pytest.raises(ValueError, match="contributions"):
        pruned_accuracies(c[:, :4], y, heads, [[]])
    with pytest.raises(ValueError, match="does not exist"):
        path_weights(heads, [(0, 2)])


def test_signed_scores_and_diagonal_rule(rng):
    heads = (2, 2)
    A = rng.normal(size=(4, 4))
    U = A @ A.T
    signed = head_scores(U, heads, normalise=False, absolute=False)
    paths = list(itertools.product(range(2), range(2)))
    for l in range(2):
        for h in range(2):
            expected = sum(U[i, j] for i, p in enumerate(paths) for j, q in enumerate(paths) if p[l] == h or q[l] == h)
            assert abs(signed[l][h] - expected) < 1e-12
    diag = head_scores(np.diag(np.diag(U)), heads, normalise=False)
    assert abs(diag[0][1] - (abs(U[2, 2]) + abs(U[3, 3]))) < 1e-12
