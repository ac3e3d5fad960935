"""Head scores from the order parameter (spec §5.1).

A head's score is the total weight ``|U_{pi sigma}|`` of the path pairs that run through it::

    s_{l,h} = sum_{(pi, sigma): pi_l = h or sigma_l = h} |U_{pi sigma}|,   s_hat = s / max s.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from paththeory._checks import as_float_array


def head_scores(U, heads: Sequence[int], normalise: bool = True) -> list[np.ndarray]:
    """Scores of every head: a list over layers of ``[H_l]`` arrays (normalised by the max if asked).

    Example:
      >>> U = np.diag([4.0, 1.0, 1.0, 1.0])  # paths (0,0), (0,1), (1,0), (1,1)
      >>> [s.round(2).tolist() for s in head_scores(U, (2, 2))]
      [[1.0, 0.4], [1.0, 0.4]]
    """
    u = np.abs(as_float_array(U, "U", ndim=2))
    n = int(np.prod(heads))
    if u.shape != (n, n):
        raise ValueError(f"U must be [{n}, {n}] for heads {tuple(heads)}; got {u.shape}.")
    tensor = u.reshape(tuple(heads) * 2)
    L = len(heads)
    scores = []
    for l, h_l in enumerate(heads):
        row = np.moveaxis(tensor, l, 0).reshape(h_l, -1).sum(axis=1)  # pairs with pi_l = h
        both = np.moveaxis(np.moveaxis(tensor, l, 0), L + l, 1)  # [h, h', ...]
        diag = np.einsum("hh...->h...", both).reshape(h_l, -1).sum(axis=1)  # pairs with pi_l = sigma_l = h
        scores.append(2.0 * row - diag)
    if normalise:
        top = max(float(s.max()) for s in scores)
        scores = [s / top for s in scores]
    return scores


def score_order(scores: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` sorted by increasing score (the pruning order).

    Example:
      >>> score_order([np.array([1.0, 0.2]), np.array([0.5, 0.7])])
      [(0, 1), (1, 0), (1, 1), (0, 0)]
    """
    flat = [(float(s), (l, h)) for l, layer in enumerate(scores) for h, s in enumerate(layer)]
    return [lh for _, lh in sorted(flat)]
