r"""Head scores from the order parameter and pruning by paths (paper §4.2 and App. H.2.3).

A head's score is the total weight :math:`|U_{\pi\pi'}|` of the path pairs that run through it:

.. math::

    s_{\ell,h} = \sum_{(\pi,\pi'):\ \pi_\ell = h \text{ or } \pi'_\ell = h} |U_{\pi\pi'}|, \qquad
    \hat s = s / \max s .

Pruning a head zeroes its output and rescales its layer's sum over heads from ``H^{-1/2}`` to
``(H - d)^{-1/2}``. Since the network's output is a sum over paths
(:func:`paththeory.path_contributions`), a pruned network multiplies each path's contribution by
:func:`path_weights`: zero through a pruned head, ``prod_l sqrt(H_l / (H_l - d_l))`` otherwise. So
the accuracy of every pruned network, and of thousands of pruning orders, follows from one
``[P, n_paths]`` array of contributions (:func:`pruned_accuracies`, :func:`pruning_curves`).
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from paththeory._checks import as_float_array, check_count, check_order_parameter, require_finite


def head_scores(U, heads: Sequence[int], normalise: bool = True, absolute: bool = True) -> list[np.ndarray]:
    """Scores of every head: a list over layers of ``[H_l]`` arrays (normalised by the max if asked).

    ``absolute=False`` sums the signed entries ``U_{pi sigma}`` instead of their magnitudes (a variant
    the book compares with the paper's rule; anti-correlated paths then lower a head's score).
    ``U`` must be symmetric positive semi-definite, like every order parameter; normalising scores
    whose largest value is not positive (``U = 0``, or signed scores) raises a ValueError (pass
    ``normalise=False`` for the raw scores, all zero for ``U = 0``).

    Example:
      >>> U = np.diag([4.0, 1.0, 1.0, 1.0])  # paths (0,0), (0,1), (1,0), (1,1)
      >>> [s.round(2).tolist() for s in head_scores(U, (2, 2))]
      [[1.0, 0.4], [1.0, 0.4]]
    """
    heads = _check_heads(heads)
    u = check_order_parameter(U, "U", int(np.prod(heads)), semi=True)
    u = np.abs(u) if absolute else u
    tensor = u.reshape(tuple(heads) * 2)
    L = len(heads)
    scores = []
    for l, h_l in enumerate(heads):
        row = np.moveaxis(tensor, l, 0).reshape(h_l, -1).sum(axis=1)  # pairs with pi_l = h
        both = np.moveaxis(np.moveaxis(tensor, l, 0), L + l, 1)  # [h, h', ...]
        diag = np.einsum("hh...->h...", both).reshape(h_l, -1).sum(axis=1)  # pairs with pi_l = sigma_l = h
        scores.append(require_finite(2.0 * row - diag, "head_scores", "U is too large for float64; rescale it."))
    if normalise:
        top = max(float(s.max()) for s in scores)
        if not top > 0:
            raise ValueError(f"cannot normalise the scores of U by their largest value {top:.3g} <= 0 (U = 0, or "
                             "signed scores); pass normalise=False for the raw scores.")
        scores = [s / top for s in scores]
    return scores


def _check_heads(heads: Sequence[int]) -> tuple[int, ...]:
    """``heads`` as a non-empty tuple of whole numbers >= 1 (heads per layer)."""
    if np.ndim(heads) != 1 or len(heads) == 0:
        raise ValueError(f"heads must be a non-empty sequence of head counts per layer, e.g. (3, 3); got {heads!r}.")
    return tuple(check_count(h, f"heads[{l}]") for l, h in enumerate(heads))


def score_order(scores: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` sorted by increasing score (the pruning order).

    Example:
      >>> score_order([np.array([1.0, 0.2]), np.array([0.5, 0.7])])
      [(0, 1), (1, 0), (1, 1), (0, 0)]
    """
    flat = [(float(s), (l, h)) for l, layer in enumerate(scores) for h, s in enumerate(layer)]
    return [lh for _, lh in sorted(flat)]


def all_heads(heads: Sequence[int]) -> list[tuple[int, int]]:
    """Every head as ``(layer, head)``, layer by layer: the flat order of scores and drops.

    Example:
      >>> all_heads((2, 1))
      [(0, 0), (0, 1), (1, 0)]
    """
    return [(l, h) for l, n in enumerate(heads) for h in range(n)]


def head_mask(heads: Sequence[int], pruned: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """0/1 masks, a list over layers of ``[H_l]``, with the ``(layer, head)`` pairs in ``pruned`` set to 0
    (the ``head_mask`` of :func:`paththeory.network_output`).

    Example:
      >>> [m.tolist() for m in head_mask((2, 3), [(1, 0)])]
      [[1.0, 1.0], [0.0, 1.0, 1.0]]
    """
    heads = _check_heads(heads)
    masks = [np.ones(h) for h in heads]
    for layer, head in pruned:
        if not (0 <= layer < len(heads) and 0 <= head < heads[layer]):
            raise ValueError(f"head ({layer}, {head}) does not exist in a network with heads {tuple(heads)}.")
        masks[layer][head] = 0.0
    return masks


def path_weights(heads: Sequence[int], pruned: Sequence[Sequence[int]]) -> np.ndarray:
    """Factor of each path's contribution ``[n_paths]`` once the heads ``pruned`` are removed (paper §4.2).

    ``prod_l m_l[pi_l] sqrt(H_l / sum m_l)`` with the masks of :func:`head_mask`: zero for a path
    through a pruned head, the layers' rescaling otherwise. Raises ``ValueError`` when a layer
    loses all its heads (the network's output is then identically zero).

    Example:
      >>> path_weights((2, 2), [(0, 1)]).round(3).tolist()  # paths (0,0), (0,1), (1,0), (1,1)
      [1.414, 1.414, 0.0, 0.0]
    """
    weights = _path_weights(heads, head_mask(heads, pruned))
    if weights is None:
        raise ValueError(f"pruning {sorted(tuple(p) for p in pruned)} removes every head of a layer.")
    return weights


def _path_weights(heads: Sequence[int], masks: list[np.ndarray]) -> np.ndarray | None:
    """:func:`path_weights` from the masks; ``None`` when a layer has no head left."""
    if any(m.sum() == 0 for m in masks):
        return None
    paths = np.array(list(itertools.product(*(range(h) for h in heads))))  # [n_paths, L], h_1 slowest
    return np.prod([m[paths[:, l]] * np.sqrt(m.size / m.sum()) for l, m in enumerate(masks)], axis=0)


def _check_contributions(contributions, y, heads: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    c, yy = as_float_array(contributions, "contributions"), as_float_array(y, "y")
    n_paths = int(np.prod(heads))
    if c.ndim != 2 or c.shape[1] != n_paths or yy.shape != (c.shape[0],):
        raise ValueError(f"contributions must be [P, n_paths={n_paths}] (paththeory.path_contributions) and "
                         f"y [P]; got {c.shape} and {yy.shape}.")
    return c, yy


def pruned_accuracies(contributions, y, heads: Sequence[int], pruned_sets: Sequence) -> np.ndarray:
    """Accuracy ``mean(sign f == y)`` of the network with each set of heads in ``pruned_sets`` removed.

    Args:
      contributions: ``[P, n_paths]`` from :func:`paththeory.path_contributions`.
      y: targets ``[P]`` in ``{-1, +1}``.
      pruned_sets: a sequence of lists of ``(layer, head)`` pairs.
    Returns:
      ``[len(pruned_sets)]``, NaN for a set that empties a layer.

    Example:
      >>> c = np.array([[1.0, 0.5, -0.2, 0.1], [-1.0, 0.2, 0.3, -0.4]])
      >>> pruned_accuracies(c, [1, -1], (2, 2), [[], [(0, 0)], [(0, 0), (0, 1)]]).tolist()
      [1.0, 0.5, nan]
    """
    c, yy = _check_contributions(contributions, y, heads)
    weights = [_path_weights(heads, head_mask(heads, pruned)) for pruned in pruned_sets]
    f = c @ np.array([np.full(c.shape[1], np.nan) if w is None else w for w in weights]).T  # [P, M]
    acc = np.mean(np.sign(f) == yy[:, None], axis=0)
    return np.where(np.isnan(f).any(axis=0), np.nan, acc)


def pruning_curves(contributions, y, heads: Sequence[int], orders) -> np.ndarray:
    """Accuracy after pruning the first ``k`` heads of each order, ``k = 0..n_heads``: ``[n_orders, n_heads + 1]``.

    ``orders``: ``[n_orders, n_heads, 2]`` (or a list of lists of ``(layer, head)``). Entries past the
    point where a layer has lost all its heads are NaN.
    """
    orders = [[tuple(int(v) for v in lh) for lh in o] for o in orders]
    sets = [o[:k] for o in orders for k in range(len(o) + 1)]
    return pruned_accuracies(contributions, y, heads, sets).reshape(len(orders), -1)


def random_orders(heads: Sequence[int], n: int, seed: int = 0) -> np.ndarray:
    """``n`` uniformly random orders of all heads: ``[n, n_heads, 2]`` of ``(layer, head)``."""
    n = check_count(n, "n", minimum=0)
    every = np.array(all_heads(heads))
    rng = np.random.default_rng(seed)
    return every[np.argsort(rng.random((n, len(every))), axis=1)]
