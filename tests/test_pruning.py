"""Head scores (spec §5.1) against the definition evaluated pair by pair."""

from __future__ import annotations

import itertools

import numpy as np

from paththeory.pruning import head_scores, score_order


def test_head_scores_match_pairwise_definition(rng):
    heads = (3, 2, 2)
    paths = list(itertools.product(*(range(h) for h in heads)))
    A = rng.normal(size=(12, 12))
    U = A + A.T
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
