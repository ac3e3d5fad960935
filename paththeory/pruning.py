r"""Head scores from the order parameter and pruning by paths (paper §4.2 and App. H.2.3).

A head's score is the total weight :math:`|U_{\pi\pi'}|` of the path pairs that run through it:

.. math::

    s_{\ell,h} = \sum_{(\pi,\pi'):\ \pi_\ell = h \text{ or } \pi'_\ell = h} |U_{\pi\pi'}|, \qquad
    \hat s = s / \max s .

Pruning a head zeroes its output and rescales its layer's sum over heads from ``H^{-1/2}`` to
``(H - d)^{-1/2}``. Since the network's output is a sum over paths
(:func:`paththeory.model.path_contributions`), a pruned network multiplies each path's contribution by
:func:`path_weights`: zero through a pruned head, ``prod_l sqrt(H_l / (H_l - d_l))`` otherwise. So
the accuracy of every pruned network, and of thousands of pruning orders, follows from one
``[P, n_paths]`` array of contributions (:func:`pruned_accuracies`, :func:`pruning_curves`).
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from paththeory.action import check_skips
from paththeory._checks import (
    as_float_array,
    check_allocation,
    check_count,
    check_flag,
    check_heads,
    check_order_parameter,
    check_sign_labels,
    is_sequence,
    require_finite,
)


def head_scores(U, heads: Sequence[int], normalise: bool = True, absolute: bool = True,
                skips: Sequence[bool] | None = None) -> list[np.ndarray]:
    """Scores of every head: a list over layers of ``[H_l]`` arrays (normalised by the max if asked).

    ``absolute=False`` sums the signed entries ``U_{pi sigma}`` instead of their magnitudes (a variant
    the book compares with the paper's rule; anti-correlated paths then lower a head's score).
    With ``C`` outputs, ``U`` is ``C n_paths`` square (blocks ``U^{cc'}``, output index slowest, as the
    theory and :func:`paththeory.sampling.posterior.sample_posterior` return it) and a pair of paths counts the
    entries of every output block, ``sum_{cc'} |U^{cc'}_{pi sigma}|`` (or the signed sum).
    ``U`` must be symmetric positive semi-definite, like every order parameter; normalising scores
    whose largest value is not positive (``U = 0``, or signed scores) raises a ValueError (pass
    ``normalise=False`` for the raw scores, all zero for ``U = 0``). ``skips``: the levels inside a skip
    connection (``Architecture.skips``), whose paths also choose the skip branch; a skip is no head and gets
    no score.

    Book: Head scores (https://paththeory.github.io/paththeory/book/pruning.html#pruning-head-scores)

    Example:
      >>> U = np.diag([4.0, 1.0, 1.0, 1.0])  # paths (0,0), (0,1), (1,0), (1,1)
      >>> [s.round(2).tolist() for s in head_scores(U, (2, 2))]
      [[1.0, 0.4], [1.0, 0.4]]
    """
    heads = check_heads(heads)
    normalise, absolute = check_flag(normalise, "normalise"), check_flag(absolute, "absolute")
    skips = check_skips(skips, len(heads))
    branches = tuple(h + s for h, s in zip(heads, skips))
    n_paths = int(np.prod(branches))
    if np.ndim(U) == 2 and (np.shape(U)[0] % n_paths or np.shape(U)[0] == 0):
        raise ValueError(f"U must be [{n_paths}, {n_paths}] (n_paths = {n_paths} for heads {heads}), or C n_paths "
                         f"square ([{n_paths} C, {n_paths} C]) for C outputs; got shape {np.shape(U)}.")
    n_outputs = np.shape(U)[0] // n_paths if np.ndim(U) == 2 else 1
    u = check_order_parameter(U, "U", n_outputs * n_paths, semi=True)
    u = np.abs(u) if absolute else u
    u = u.reshape(n_outputs, n_paths, n_outputs, n_paths).sum(axis=(0, 2))  # summed over output blocks
    tensor = u.reshape(branches * 2)
    L = len(heads)
    scores = []
    for l, b_l in enumerate(branches):
        row = np.moveaxis(tensor, l, 0).reshape(b_l, -1).sum(axis=1)[skips[l]:]  # pairs with pi_l = h
        both = np.moveaxis(np.moveaxis(tensor, l, 0), L + l, 1)  # [b, b', ...]
        diag = np.einsum("hh...->h...", both).reshape(b_l, -1).sum(axis=1)[skips[l]:]  # pi_l = sigma_l = h
        scores.append(require_finite(2.0 * row - diag, "head_scores", "U is too large for float64; rescale it."))
    if normalise:
        top = max(float(s.max()) for s in scores)
        if not top > 0:
            raise ValueError(f"cannot normalise the scores of U by their largest value {top:.3g} <= 0 (U = 0, or "
                             "signed scores); pass normalise=False for the raw scores.")
        scores = [s / top for s in scores]
    return scores


def _check_pruned(heads: tuple[int, ...], pruned, name: str = "pruned") -> list[tuple[int, int]]:
    """``pruned`` as a list of existing ``(layer, head)`` pairs of whole numbers, or raise naming ``name``."""
    if not is_sequence(pruned):
        raise TypeError(f"{name} must be a list of (layer, head) pairs, e.g. [(0, 1)]; got {type(pruned).__name__} "
                        f"{pruned!r}.")
    pairs = []
    for i, pair in enumerate(pruned):
        if not is_sequence(pair) or len(pair) != 2:
            raise ValueError(f"{name}[{i}] must be a (layer, head) pair of whole numbers; got {pair!r}.")
        layer, head = (check_count(v, f"{name}[{i}][{j}]", minimum=0) for j, v in enumerate(pair))
        if not (layer < len(heads) and head < heads[layer]):
            raise ValueError(f"head ({layer}, {head}) does not exist in a network with heads {tuple(heads)}.")
        pairs.append((layer, head))
    return pairs


def score_order(scores: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """Heads ``(layer, head)`` sorted by increasing score (the pruning order).

    Book: Pruning heads in order of score (Fig. 3f)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-cumulative)

    Example:
      >>> score_order([np.array([1.0, 0.2]), np.array([0.5, 0.7])])
      [(0, 1), (1, 0), (1, 1), (0, 0)]
    """
    if not isinstance(scores, (list, tuple)) or len(scores) == 0:
        raise ValueError("scores must be a non-empty list over layers of [H_l] score arrays (head_scores(U, heads)).")
    layers = [as_float_array(layer, f"scores[{l}]", ndim=1) for l, layer in enumerate(scores)]
    flat = [(float(s), (l, h)) for l, layer in enumerate(layers) for h, s in enumerate(layer)]
    return [lh for _, lh in sorted(flat)]


def all_heads(heads: Sequence[int]) -> list[tuple[int, int]]:
    """Every head as ``(layer, head)``, layer by layer: the flat order of scores and drops.

    Book: Pruning heads in order of score (Fig. 3f)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-cumulative)

    Example:
      >>> all_heads((2, 1))
      [(0, 0), (0, 1), (1, 0)]
    """
    return [(l, h) for l, n in enumerate(check_heads(heads)) for h in range(n)]


def head_mask(heads: Sequence[int], pruned: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """0/1 masks, a list over layers of ``[H_l]``, with the ``(layer, head)`` pairs in ``pruned`` set to 0
    (the ``head_mask`` of :func:`paththeory.model.network_output`).

    Book: Pruning one head at a time (Fig. 3e)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-single-heads)

    Example:
      >>> [m.tolist() for m in head_mask((2, 3), [(1, 0)])]
      [[1.0, 1.0], [0.0, 1.0, 1.0]]
    """
    heads = check_heads(heads)
    return _masks(heads, _check_pruned(heads, pruned))


def _masks(heads: tuple[int, ...], pairs: list[tuple[int, int]]) -> list[np.ndarray]:
    """:func:`head_mask` of checked ``heads`` and ``(layer, head)`` pairs."""
    masks = [np.ones(h) for h in heads]
    for layer, head in pairs:
        masks[layer][head] = 0.0
    return masks


def path_weights(heads: Sequence[int], pruned: Sequence[Sequence[int]], skips: Sequence[bool] | None = None
                 ) -> np.ndarray:
    """Factor of each path's contribution ``[n_paths]`` once the heads ``pruned`` are removed (paper §4.2).

    ``prod_l m_l[pi_l] sqrt(H_l / sum m_l)`` with the masks of :func:`head_mask`: zero for a path
    through a pruned head, the layers' rescaling otherwise. Raises ``ValueError`` when a layer
    loses all its heads (the network's output is then identically zero). At a level inside a skip
    connection (``skips``) the skip branch keeps its weight 1, and pruning every head leaves the skip alone:
    a pruned head's paths fall back on the skip.

    Book: Pruning one head at a time (Fig. 3e)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-single-heads)

    Example:
      >>> path_weights((2, 2), [(0, 1)]).round(3).tolist()  # paths (0,0), (0,1), (1,0), (1,1)
      [1.414, 1.414, 0.0, 0.0]
    """
    skips = check_skips(skips, len(check_heads(heads)))
    weights = _path_weights(heads, head_mask(heads, pruned), skips)
    if weights is None:
        raise ValueError(f"pruning {sorted(tuple(p) for p in pruned)} removes every head of a layer.")
    return weights


def _path_weights(heads: Sequence[int], masks: list[np.ndarray], skips: tuple[bool, ...] | None = None
                  ) -> np.ndarray | None:
    """:func:`path_weights` from the masks; ``None`` when a level without a skip has no head left."""
    skips = skips or (False,) * len(masks)
    if any(m.sum() == 0 and not s for m, s in zip(masks, skips)):
        return None
    factors = []  # per level and branch (the skip first): 1 for the skip, m_h sqrt(H / sum m) for a head
    for m, s in zip(masks, skips):
        rescaled = m * np.sqrt(m.size / m.sum()) if m.sum() > 0 else np.zeros_like(m)
        factors.append(np.concatenate([np.ones(1), rescaled]) if s else rescaled)
    paths = np.array(list(itertools.product(*(range(f.size) for f in factors))))  # first level slowest
    return np.prod([f[paths[:, l]] for l, f in enumerate(factors)], axis=0)


def _check_contributions(contributions, y, heads: Sequence[int], skips: tuple[bool, ...] | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    c, yy = as_float_array(contributions, "contributions"), check_sign_labels(y, "y")
    n_paths = int(np.prod([h + s for h, s in zip(check_heads(heads), skips or (False,) * len(heads))]))
    if c.ndim != 2 or c.shape[1] != n_paths or yy.shape != (c.shape[0],):
        raise ValueError(f"contributions must be [P, n_paths={n_paths}] (paththeory.path_contributions) and "
                         f"y [P]; got {c.shape} and {yy.shape}.")
    return c, yy


def pruned_accuracies(contributions, y, heads: Sequence[int], pruned_sets: Sequence,
                      skips: Sequence[bool] | None = None) -> np.ndarray:
    """Accuracy ``mean(sign f == y)`` of the network with each set of heads in ``pruned_sets`` removed.

    Book: Pruning one head at a time (Fig. 3e)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-single-heads)

    Args:
      contributions: ``[P, n_paths]`` from :func:`paththeory.model.path_contributions`.
      y: targets ``[P]`` in ``{-1, +1}``.
      pruned_sets: a sequence of lists of ``(layer, head)`` pairs.
      skips: the levels inside a skip connection (``Architecture.skips``; :func:`path_weights`).
    Returns:
      ``[len(pruned_sets)]``, NaN for a set that empties a layer without a skip.

    Example:
      >>> c = np.array([[1.0, 0.5, -0.2, 0.1], [-1.0, 0.2, 0.3, -0.4]])
      >>> pruned_accuracies(c, [1, -1], (2, 2), [[], [(0, 0)], [(0, 0), (0, 1)]]).tolist()
      [1.0, 0.5, nan]
    """
    skips = check_skips(skips, len(check_heads(heads)))
    c, yy = _check_contributions(contributions, y, heads, skips)
    heads = check_heads(heads)
    if not is_sequence(pruned_sets) or not len(pruned_sets):
        raise ValueError(f"pruned_sets must be a non-empty list of lists of (layer, head) pairs, e.g. [[], [(0, 1)]]; "
                         f"got {pruned_sets!r}.")
    return _accuracies(c, yy, heads, [_check_pruned(heads, p, f"pruned_sets[{i}]") for i, p in enumerate(pruned_sets)],
                       skips)


def _accuracies(c: np.ndarray, yy: np.ndarray, heads: tuple[int, ...], sets: list,
                skips: tuple[bool, ...] | None = None) -> np.ndarray:
    """:func:`pruned_accuracies` of checked arguments."""
    weights = [_path_weights(heads, _masks(heads, pruned), skips) for pruned in sets]
    f = c @ np.array([np.full(c.shape[1], np.nan) if w is None else w for w in weights]).T  # [P, M]
    acc = np.mean(np.sign(f) == yy[:, None], axis=0)
    return np.where(np.isnan(f).any(axis=0), np.nan, acc)


def pruning_curves(contributions, y, heads: Sequence[int], orders, skips: Sequence[bool] | None = None) -> np.ndarray:
    """Accuracy after pruning the first ``k`` heads of each order, ``k = 0..n_heads``: ``[n_orders, n_heads + 1]``.

    ``orders``: ``[n_orders, n_heads, 2]`` (or a list of lists of ``(layer, head)``). Entries past the
    point where a layer without a skip has lost all its heads are NaN; ``skips`` as in :func:`pruned_accuracies`.

    Book: Pruning heads in order of score (Fig. 3f)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-cumulative)
    """
    skips = check_skips(skips, len(check_heads(heads)))
    c, yy = _check_contributions(contributions, y, heads, skips)
    heads = check_heads(heads)
    if not is_sequence(orders) or not len(orders):
        raise ValueError(f"orders must be a non-empty list of orders, each a list of (layer, head) pairs; got {orders!r}.")
    orders = [_check_pruned(heads, o, f"orders[{i}]") for i, o in enumerate(orders)]
    for i, order in enumerate(orders):
        repeated = sorted({pair for pair in order if order.count(pair) > 1})
        if repeated:
            raise ValueError(f"orders[{i}] prunes the heads {repeated} more than once; an order lists each head at most "
                             "once (e.g. paththeory.pruning.random_orders or score_order).")
    if len({len(o) for o in orders}) > 1:
        raise ValueError(f"every order must have the same length; got lengths {sorted({len(o) for o in orders})}.")
    sets = [o[:k] for o in orders for k in range(len(o) + 1)]
    return _accuracies(c, yy, heads, sets, skips).reshape(len(orders), -1)


def random_orders(heads: Sequence[int], n: int, seed: int = 0) -> np.ndarray:
    """``n`` uniformly random orders of all heads: ``[n, n_heads, 2]`` of ``(layer, head)``.

    Book: Pruning heads in order of score (Fig. 3f)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-cumulative)
    """
    n, seed = check_count(n, "n", minimum=0), check_count(seed, "seed", minimum=0)
    every = np.array(all_heads(heads))
    check_allocation(24 * n * len(every), f"n = {n} orders of {len(every)} heads")
    rng = np.random.default_rng(seed)
    return every[np.argsort(rng.random((n, len(every))), axis=1)]
