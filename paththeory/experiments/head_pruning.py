"""Fig. 3 (e, f) of the paper and App. H.2.3: head scores from the theory's order parameter, and
pruning of the trained network's heads, at a profile's scale.

The paper (§4.2, "Application: model reduction via head pruning") scores every head by the
entries of the theory's ``U`` (at small width) that involve a path through it, prunes single
heads of the network trained by gradient descent without retraining (Fig. 3e), then prunes heads
cumulatively in order of increasing score (Fig. 3f). This module does the same on the network,
data and theory of :mod:`paththeory.experiments.omniglot` (the chapter ``book/pruning.md``), and
adds tests of its own that the paper does not make (random and reverse pruning orders, the
cheapest pair of heads, the score's sensitivity to its width, temperature, rule and training set):

* :func:`scores_and_order` (the head scores of :func:`paththeory.pruning.head_scores` as lists, with
  the pruning order), :func:`head_parameter_fraction`;
* :func:`contributions`, :func:`pruned_accuracy`: the network's per-path contributions, from
  which every pruned network's accuracy follows (:mod:`paththeory.pruning`);
* :func:`pruning_study` (one split) and :func:`pruning_stage` (every split of :data:`PRUNING_SPLITS`);
* :func:`score_variants`, :func:`score_sensitivity`: what the score-drop correlation depends on;
* figures :func:`plot_head_scores` (Fig. 3e), :func:`plot_pruning` (Fig. 3f),
  :func:`plot_score_sensitivity` (re-exported from :mod:`paththeory.experiments.omniglot_figures`).

The head scores and the pruning rule (a pruned head's output set to zero, its layer's sum
rescaled by ``(H - d)^{-1/2}``) follow the authors' repository, where the paper's text leaves
them open.
"""

from __future__ import annotations

import itertools
import os
import warnings
from typing import Callable, Sequence

import jax
import numpy as np

from paththeory import pruning, training
from paththeory.experiments import stats
from paththeory.experiments.records import jsonable
from paththeory.experiments.omniglot_base import (
    Config,
    Sweep,
    _balanced_subset,
    score_splits,
    training_sequences,
)
from paththeory.experiments.omniglot_figures import plot_head_scores, plot_pruning, plot_score_sensitivity
from paththeory.model import path_contributions, path_features
from paththeory.solve import Theory

__all__ = [
    "PRUNING_SPLITS", "SCORE_VARIANTS", "contributions", "head_parameter_fraction", "scores_and_order",
    "plot_head_scores", "plot_pruning", "plot_score_sensitivity", "pruned_accuracy", "pruning_stage",
    "pruning_study", "score_sensitivity", "score_variants",
]

#: Splits on which heads are pruned: held-out characters, the evaluation alphabets and the two
#: out-of-distribution sets (Fashion-MNIST, the paper's Fig. 3f; MNIST, its appendix).
PRUNING_SPLITS = ("test", "one_shot_runs", "fashion", "mnist")

# --------------------------------------------------------------------------- heads and pruning


def scores_and_order(U, heads: Sequence[int]) -> dict:
    """Normalised head scores from ``U`` (§4.2 of the paper; the normalisation by the largest score as in
    Fig. 3e) and the pruning order (lowest score first)."""
    scores = pruning.head_scores(U, heads)
    return {"scores": [s.tolist() for s in scores], "order": [list(lh) for lh in pruning.score_order(scores)]}


def head_parameter_fraction(network: training.Checkpoint) -> float:
    """Fraction of the trained weights that one head owns: its ``V`` (``n x n``), ``Q`` and ``K`` (``G x N0``)."""
    arch, params = network.architecture, network.params
    q = arch.attention[0].query
    per_head = params["V"][0][0].size + 2 * q[0].size
    total = params["V0"].size + params["a"].size + sum(v.size for v in params["V"]) \
        + sum(2 * layer.query.size for layer in arch.attention)
    return per_head / total


def pruned_accuracy(network: training.Checkpoint, x, y, pruned: Sequence[Sequence[int]]) -> float:
    """Accuracy of the trained network, evaluated layer by layer in float32 as in training, with the
    heads ``pruned`` zeroed and each layer's sum rescaled by ``(H - d)^{-1/2}`` (as in the authors' repository), no
    retraining. NaN when a layer has lost all its heads. (The pruning study computes the same from
    the path contributions, :func:`contributions`, for every pruned set at once.)"""
    masks = pruning.head_mask(network.architecture.heads, pruned)
    if any(m.sum() == 0 for m in masks):
        return float("nan")
    return training.evaluate(network, x, y, head_mask=masks)


def contributions(network: training.Checkpoint, features: dict, splits: Sequence[str] = PRUNING_SPLITS) -> dict:
    """Per-path contributions ``[P, n_paths]`` of the trained network on every split present, in float64."""
    params = jax.tree.map(lambda a: np.asarray(a, dtype=np.float64), network.params)
    return {s: np.asarray(path_contributions(network.architecture, params, features[s]))
            for s in splits if s in features}


def _area(curves: np.ndarray) -> np.ndarray:
    """Mean accuracy over ``k = 1..n_heads`` heads pruned, chance (0.5) where a layer is empty: ``[n_orders]``."""
    return np.nan_to_num(np.asarray(curves, dtype=float)[..., 1:], nan=0.5).mean(axis=-1)


def _against(value: float, null: np.ndarray) -> dict:
    """Monte Carlo p-values of ``value`` against draws ``null``: ``p_better`` (a null draw at least as
    large) and ``p_worse`` (at most as large), each ``(1 + k) / (1 + m)``."""
    p_better, p_worse = stats.tail_p_values(value, np.asarray(null), exact=False)
    return {"p_better": float(p_better), "p_worse": float(p_worse)}


def _lowest_cost(full: np.ndarray, right: Callable, order: Sequence, k: int, heads: Sequence[int]) -> dict | None:
    """The paired accuracy cost of pruning the ``k`` lowest-scored heads of ``order``; ``None`` when
    there are fewer heads or they would empty a layer."""
    low = [tuple(lh) for lh in order[:k]]
    if len(low) < k or any(sum(lh[0] == layer for lh in low) == n for layer, n in enumerate(heads)):
        return None
    return stats.paired_difference(full, right(low))


def pruning_study(heads: Sequence[int], contribution: np.ndarray, y: np.ndarray, scores: dict, n_random: int,
                  seed: int = 0) -> dict:
    """Single-head drops and cumulative pruning on one split, from the per-path contributions.

    Returns ``single_head_drop`` ``[layer][head]`` (unpruned minus pruned accuracy) with its paired
    standard errors ``single_head_se``; ``spearman`` (score against drop, :func:`paththeory.experiments.stats.spearman_test`);
    ``cumulative``: the curves (accuracy after ``k = 0..n_heads`` heads) of the theory's order
    (``score_ascending``), its reverse and the band of ``n_random`` random orders (mean, 5 and
    95 % quantiles); ``area``: each order's mean accuracy over ``k >= 1`` and the fraction of random
    orders as p-values (``ascending_vs_random``, ``descending_vs_random``: ``p_better``, ``p_worse``); ``two_lowest``,
    ``four_lowest``: the paired accuracy cost of pruning the two (four) lowest-scored heads; ``best_pair``: the cheapest pair
    of heads to prune, found by trying them all.
    """
    order = [tuple(lh) for lh in scores["order"]]
    c, yy = np.asarray(contribution, dtype=float), np.asarray(y, dtype=float)

    def right(pruned) -> np.ndarray:  # per-sequence correctness of one pruned network
        return c @ pruning.path_weights(heads, pruned) * yy > 0

    full = right([])
    drops = [stats.paired_difference(full, right([lh])) for lh in pruning.all_heads(heads)]
    drop = np.array([d["difference"] for d in drops])
    by_layer = np.cumsum([0, *heads])
    ordered = pruning.pruning_curves(c, yy, heads, [order, order[::-1]])
    rand = pruning.pruning_curves(c, yy, heads, pruning.random_orders(heads, n_random, seed))
    area, rand_area = _area(ordered), _area(rand)
    flat_scores = np.concatenate([np.asarray(s) for s in scores["scores"]])
    with warnings.catch_warnings():  # k past an emptied layer in every random order: all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        band = {"mean": np.nanmean(rand, axis=0), "q05": np.nanquantile(rand, 0.05, axis=0),
                "q95": np.nanquantile(rand, 0.95, axis=0), "n": int(n_random)}
    return {
        "single_head_drop": [drop[a:b] for a, b in zip(by_layer, by_layer[1:])],
        "single_head_se": [[d["se"] for d in drops[a:b]] for a, b in zip(by_layer, by_layer[1:])],
        "spearman": stats.spearman_test(flat_scores, drop, seed=seed),
        "cumulative": {"score_ascending": ordered[0], "score_descending": ordered[1], "random": band},
        "area": {"score_ascending": float(area[0]), "score_descending": float(area[1]),
                 "random_mean": float(rand_area.mean()), "random_sd": float(rand_area.std(ddof=1)),
                 "ascending_vs_random": _against(area[0], rand_area),
                 "descending_vs_random": _against(area[1], rand_area)},
        "two_lowest": stats.paired_difference(full, right(order[:2])) if len(order) >= 2 else None,
        "four_lowest": _lowest_cost(full, right, order, 4, heads),
        "best_pair": _best_pair(c, yy, heads),
    }


def _best_pair(c: np.ndarray, y: np.ndarray, heads: Sequence[int]) -> dict | None:
    """The two heads whose joint pruning costs least, found by trying every pair: the best any
    score could do when it names two heads to prune."""
    pairs = [list(p) for p in itertools.combinations(pruning.all_heads(heads), 2)]
    pairs = [p for p in pairs if not any(heads[l] == 1 for l, _ in p)] if pairs else []
    if not pairs:
        return None
    acc = pruning.pruned_accuracies(c, y, heads, [[]] + pairs)
    costs = acc[0] - acc[1:]
    k = int(np.nanargmin(costs))
    return {"heads": pairs[k], "cost": float(costs[k]), "median_cost": float(np.nanmedian(costs)), "n_pairs": len(pairs)}


def pruning_stage(cfg: Config, network: training.Checkpoint, features: dict, y: dict, results: dict) -> dict:
    """``head_scores`` (from the theory ``U`` at ``score_width``) and ``pruning`` (:func:`pruning_study`)
    on every split of :data:`PRUNING_SPLITS` present."""
    width = str(cfg.score_width)
    U = np.asarray(results["order_parameter"]["theory_by_width"][width])
    heads = network.architecture.heads
    scores = {"width": cfg.score_width, "temperature": results["temperature"]["theory"][width], **scores_and_order(U, heads)}
    contrib = contributions(network, features)
    return jsonable({
        "head_scores": scores,
        "pruning": {s: pruning_study(heads, c, y[s], scores, cfg.n_random_orders, cfg.seed) for s, c in contrib.items()},
    })


# --------------------------------------------------------------------------- what the score depends on


#: The rules that score a head (:func:`score_variants`; in words: :data:`paththeory.reports.omniglot.SCORE_RULES`):
#: ``abs``, the paper's (§4.2), sums ``|U|`` over the path pairs through the head; ``diagonal`` sums ``U_pipi`` over its
#: paths; ``signed`` sums ``U`` over its pairs; ``silencing`` is the theory's validation accuracy lost when the head's
#: paths are pruned in ``U``.
SCORE_VARIANTS = ("abs", "diagonal", "signed", "silencing")


def score_variants(U, heads: Sequence[int], temperature: float, features: dict, y: dict) -> dict[str, np.ndarray]:
    """Flat head scores ``[n_heads]`` (layer by layer) by each rule of :data:`SCORE_VARIANTS`.

    ``silencing`` prunes the head in the theory exactly as in the network: path ``pi``'s
    features are multiplied by :func:`paththeory.pruning.path_weights` ``w`` (the same kernel as
    ``U * w w^T`` on the unscaled features; scaling the features keeps ``U`` positive definite);
    the score is the validation accuracy of the mean predictor that this loses.
    """
    U = np.asarray(U, dtype=float)
    flat = lambda scores: np.concatenate(scores)  # noqa: E731
    base = score_splits(U, temperature, features, y, ("validation",))["validation"]
    silenced = []
    for lh in pruning.all_heads(heads):
        w = pruning.path_weights(heads, [lh])
        scaled = {s: np.asarray(features[s]) * w[None, :, None] for s in ("train", "validation")}
        silenced.append(base - score_splits(U, temperature, scaled, y, ("validation",))["validation"])
    return {"abs": flat(pruning.head_scores(U, heads)),
            "diagonal": flat(pruning.head_scores(np.diag(np.diag(U)), heads)),
            "signed": flat(pruning.head_scores(U, heads, normalise=False, absolute=False)),
            "silencing": np.array(silenced)}


def score_sensitivity(cfg: Config, network: training.Checkpoint, features: dict, y: dict, sweep: Sweep,
                      results: dict, *, split: str = "test", root: str | os.PathLike | None = None) -> dict:
    """How the rank correlation between head score and single-head drop (on ``split``) depends on
    the choices behind the score.

    * ``grid``: Spearman's rho for the paper's score from ``U`` at every (T, N) of the sweep;
    * ``variants``: the rules of :data:`SCORE_VARIANTS` at the score's width and selected temperature;
    * ``train_sizes``: the paper's score from smaller training sets (the first ``P/2`` sequences of
      each label of the training set);
    * ``resamples``: the paper's score from ``cfg.score_resamples`` fresh training sets of the same
      size ``P`` (new sequences of the training characters): the score's own sampling noise.

    Every entry holds :func:`paththeory.experiments.stats.spearman_test` output, and the ``scores``.
    """
    arch, heads = network.architecture, network.architecture.heads
    drops = np.concatenate([np.asarray(d, dtype=float) for d in results["pruning"][split]["single_head_drop"]])
    width = cfg.score_width
    temperature = float(results["temperature"]["theory"][str(width)])

    def test(scores) -> dict:
        return {**stats.spearman_test(scores, drops, seed=cfg.seed), "scores": np.asarray(scores).tolist()}

    def flat_abs(U) -> np.ndarray:
        return np.concatenate(pruning.head_scores(U, heads))

    grid = [[stats.spearman_test(flat_abs(sweep.U[i, j]), drops, seed=cfg.seed)["rho"]
             for j in range(len(sweep.widths))] for i in range(len(sweep.temperatures))]
    U = np.asarray(results["order_parameter"]["theory_by_width"][str(width)])
    variants = {k: test(v) for k, v in score_variants(U, heads, temperature, features, y).items()}
    sizes = {}
    for p in cfg.score_train_sizes:
        idx = _balanced_subset(y["train"], p)
        sol = Theory(arch, features["train"][idx], y["train"][idx], cfg.memory_budget).solve(width, temperature,
                                                                                             tol=cfg.tol)
        sizes[str(p)] = test(flat_abs(sol.U))
    sizes[str(len(y["train"]))] = variants["abs"]
    resamples = []
    for r in range(cfg.score_resamples):
        x_r, y_r = training_sequences(network, cfg.n_train, np.random.default_rng([cfg.seed, 1000 + r]), root=root)
        sol = Theory(arch, np.asarray(path_features(arch, x_r)), y_r, cfg.memory_budget).solve(width, temperature,
                                                                                               tol=cfg.tol)
        resamples.append(test(flat_abs(sol.U)))
    return jsonable({"split": split, "width": width, "temperature": temperature, "drops": drops,
                     "grid": {"widths": list(sweep.widths), "temperatures": list(sweep.temperatures), "rho": grid},
                     "variants": variants, "train_sizes": sizes, "resamples": resamples})

