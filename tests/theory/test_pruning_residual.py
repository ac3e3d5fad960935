"""Head pruning with a residual stream: the path weights against the pruned finite network, and the head
scores against a loop over path pairs (oracles: :func:`paththeory.model.network_output` with a head mask,
and the definition of a head's score written out)."""

import itertools

import jax
import numpy as np
import pytest

import paththeory as pt
from paththeory.pruning import head_mask, head_scores, path_weights, pruned_accuracies
from paththeory.tasks.examples import model_problem


@pytest.fixture(scope="module")
def network():
    base, _, x = model_problem("mean")
    first, second = base.attention  # 3 and 2 heads
    arch = pt.Architecture((pt.Residual(first, 0.7, 1.3), pt.Residual(second)), readout="mean")
    params = pt.sample_prior(arch, 6, x.shape[2], jax.random.PRNGKey(2))
    return arch, params, x


@pytest.mark.parametrize("pruned", [[], [(0, 1)], [(0, 0), (1, 1)], [(1, 0), (1, 1)], [(0, 0), (0, 1), (0, 2)]])
def test_path_weights_give_the_pruned_network(network, pruned):
    """Pruning every head of a skip level leaves its skip: the output falls back on the skip paths."""
    arch, params, x = network
    contributions = np.asarray(pt.path_contributions(arch, params, pt.path_features(arch, x)))
    weights = path_weights(arch.heads, pruned, arch.skips)
    pruned_output = pt.network_output(arch, params, x, head_mask=head_mask(arch.heads, pruned))
    np.testing.assert_allclose(contributions @ weights, pruned_output, rtol=1e-12, atol=1e-12)
    acc = pruned_accuracies(contributions, np.array([1, -1, 1, -1]), arch.heads, [pruned], arch.skips)
    assert acc[0] == np.mean(np.sign(np.asarray(pruned_output)) == np.array([1, -1, 1, -1]))


def test_without_a_skip_a_layer_cannot_lose_every_head(network):
    with pytest.raises(ValueError, match="removes every head"):
        path_weights((3, 2), [(1, 0), (1, 1)])


def test_head_scores_count_the_path_pairs_through_each_head(network):
    arch = network[0]
    rng = np.random.default_rng(0)
    a = rng.normal(size=(arch.n_paths, arch.n_paths))
    U = a @ a.T
    scores = head_scores(U, arch.heads, normalise=False, skips=arch.skips)
    for l, h_l in enumerate(arch.heads):
        for h in range(h_l):
            through = [p[l] == h for p in arch.paths]  # a skip branch is None: never a head
            expected = sum(abs(U[i, j]) for i, j in itertools.product(range(arch.n_paths), repeat=2)
                           if through[i] or through[j])
            assert scores[l][h] == pytest.approx(expected, rel=1e-12)
