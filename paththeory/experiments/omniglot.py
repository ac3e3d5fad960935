"""Fig. 3 of the paper, one-shot in-context learning on Omniglot, at a profile's scale (spec §5, §7).

A network trained by gradient descent (Q and K learned, :mod:`paththeory.training`) hands its
query/key weights to the Bayesian theory (spec §7.3); the theory is solved over widths and
temperatures, the temperature is chosen on a **validation** split, and the order parameter
``U`` at small width scores the heads, which are then pruned in the trained network (spec §5).

The steps, used by :func:`run` (and so by ``paththeory reproduce omniglot``) and by the
chapters ``book/omniglot.md`` and ``book/pruning.md``:

* :data:`SETTINGS` and :func:`settings`: sizes per profile;
* :func:`trained_network`: the shipped checkpoint, or a network retrained here;
* :func:`build_sequences`: training / validation / held-out test sequences on the checkpoint's
  character split, the one-shot runs (evaluation alphabets), MNIST and (when present)
  Fashion-MNIST; :func:`build_features`: their path features;
* :func:`theory_sweep` (cached on disk, :func:`cache_dir`) and :func:`gp_accuracies`;
* :func:`select_temperature`: the validation-best temperature per width;
* :func:`compare_order_parameters`: ``U`` from the theory, from NUTS and from the trained weights;
* :func:`head_scores`, :func:`single_head_drops`, :func:`cumulative_pruning`, :func:`pruning_orders`;
* figures :func:`plot_sequence`, :func:`plot_training`, :func:`plot_accuracy`,
  :func:`plot_temperature_grid`, :func:`plot_order_parameters`, :func:`plot_head_scores`,
  :func:`plot_pruning`.

Departures from the authors (spec §7, §10.13): the temperature is selected on validation
characters, not on the test set; offline, the data are the 242 characters of the two small
background splits (the paper trains on 1028), and the evaluation alphabets enter through the
20 official one-shot runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import jax
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from scipy.stats import spearmanr

import paththeory
from paththeory import action, hessian, kernels, predict, solve, training
from paththeory.data import DataNotFoundError, load_omniglot, load_one_shot_runs
from paththeory.experiments import jsonable
from paththeory.kernels import DEFAULT_MEMORY_BUDGET
from paththeory.model import Architecture, path_features
from paththeory.plots import matrix_heatmap, stamp_profile
from paththeory.predict import accuracy, predictor
from paththeory.profiles import choose, current_profile
from paththeory.pruning import head_scores as _head_scores
from paththeory.pruning import score_order
from paththeory.sampling import sample_posterior
from paththeory.solve import Theory
from paththeory.tasks.omniglot import (
    encode_images,
    icl_indices,
    icl_sequences,
    ood_sequences,
    one_shot_run_sequences,
    split_characters,
)

PAPER_WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
PAPER_TEMPERATURES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
GP_TEMPERATURES = (0.25, 0.1, 0.075, 0.05, 0.025)
#: Evaluation splits: validation (temperature selection), held-out characters, the evaluation
#: alphabets (one-shot runs) and the out-of-distribution sets.
EVAL_SPLITS = ("validation", "test", "one_shot_runs", "mnist", "fashion")
SPLIT_NAMES = {
    "validation": "validation characters",
    "test": "held-out characters (in distribution)",
    "one_shot_runs": "evaluation alphabets (one-shot runs)",
    "mnist": "MNIST 0 vs 1 (out of distribution)",
    "fashion": "Fashion-MNIST T-shirt vs trouser (out of distribution)",
}
FIGURES = ("accuracy", "temperature", "order_parameters", "head_scores", "pruning")


@dataclass(frozen=True)
class Config:
    """Sizes of one profile.

    ``n_train``: theory training set ``P`` (balanced, ``+1`` then ``-1``); ``n_validation``,
    ``n_test``: sequences per evaluation set (MNIST/Fashion-MNIST take ``n_test / 2`` per class);
    ``widths`` x ``temperatures``: the theory grid; ``gp_temperatures``: candidates for the GP;
    ``score_width``: the width whose ``U`` scores the heads; ``sample_*``: NUTS at
    ``sample_width`` on the first ``sample_n_train / 2`` training sequences of each label
    (``sample_n_train = 0`` skips sampling), stopped after ``sample_time_limit`` seconds;
    ``n_random_orders``: random pruning orders as a baseline; ``retrain``: train a network here
    with the shipped checkpoint's configuration instead of loading it; ``demo_steps``: length of
    the chapter's training demonstration; ``tol``: solver tolerance on ``max |d(S/N)/dU|``;
    ``memory_budget``: bytes for precomputed Gram blocks (0 forces the factorised kernel;
    :func:`paththeory.kernels.kernel_operator` otherwise picks the faster form itself).
    """

    n_train: int
    n_validation: int
    n_test: int
    widths: tuple[int, ...]
    temperatures: tuple[float, ...]
    sample_n_train: int
    num_warmup: int
    num_samples: int
    num_chains: int
    sample_time_limit: float
    n_random_orders: int
    demo_steps: int
    gp_temperatures: tuple[float, ...] = GP_TEMPERATURES
    score_width: int = 10
    sample_width: int = 10
    retrain: bool = False
    tol: float = 1e-6
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_train < 4 or self.n_train % 2 or self.n_validation % 2 or self.n_test % 2:
            raise ValueError("n_train (>= 4), n_validation and n_test must be even: the sets are balanced.")
        for name in ("score_width", "sample_width"):
            if getattr(self, name) not in self.widths:
                raise ValueError(f"{name} {getattr(self, name)} must be one of the widths {self.widths}.")
        if self.sample_n_train % 2 or self.sample_n_train > self.n_train:
            raise ValueError(f"sample_n_train must be even and <= n_train; got {self.sample_n_train}.")
        if min(self.temperatures) <= 0 or min(self.gp_temperatures) <= 0:
            raise ValueError("temperatures must be > 0.")


SETTINGS: dict[str, Config] = {
    "smoke": Config(600, 500, 1000, (10, 100, 1000), (0.1, 0.25, 0.5, 1.0),
                    sample_n_train=600, num_warmup=100, num_samples=100, num_chains=1, sample_time_limit=120.0,
                    n_random_orders=3, demo_steps=300),
    "colab": Config(600, 1000, 1000, PAPER_WIDTHS, PAPER_TEMPERATURES,
                    sample_n_train=600, num_warmup=200, num_samples=200, num_chains=4, sample_time_limit=420.0,
                    n_random_orders=10, demo_steps=1500),
    "paper": Config(600, 1000, 1000, PAPER_WIDTHS, PAPER_TEMPERATURES,
                    sample_n_train=600, num_warmup=100, num_samples=100, num_chains=10, sample_time_limit=4 * 3600.0,
                    n_random_orders=20, demo_steps=3000, retrain=True),
}


def settings(profile: str | None = None) -> Config:
    """The :class:`Config` of ``profile`` (default: the current profile)."""
    return choose(SETTINGS, profile)


# --------------------------------------------------------------------------- the trained network


def trained_network(retrain: bool = False, *, root: str | os.PathLike | None = None,
                    progress: bool = False) -> training.Checkpoint:
    """The gradient-descent network whose Q/K the theory uses.

    ``retrain=False``: the shipped checkpoint (:func:`paththeory.training.load_checkpoint`).
    ``retrain=True``: train afresh with the shipped checkpoint's configuration (no time limit) on the
    Omniglot data found here (the full background set where it can be downloaded); the metadata
    then says so.
    """
    shipped = training.load_checkpoint()
    if not retrain:
        return shipped
    config = dataclasses.replace(shipped.config, time_limit_minutes=None)
    data = training.omniglot_data(config, root)
    val = training.evaluation_sets(config, data, ("validation",), root=root)["validation"]
    result = training.train(config, training.omniglot_batches(config, data), val, progress=progress)
    metadata = {
        "config": asdict(config),
        "data": {"source": data.source,
                 "characters": {k: len(getattr(data.split, k)) for k in ("train", "validation", "test")}},
        "provenance": "retrained in this run with the shipped checkpoint's configuration",
        "steps_done": result.steps_done, "best_step": result.best_step, "wall_time_s": round(result.wall_time_s, 1),
        "history": result.history,
    }
    return training.Checkpoint(training.architecture(result.params), training.value_params(result.params), metadata)


def provenance(network: training.Checkpoint) -> dict:
    """What the chapters and results.json say about the network: configuration, data, training, accuracies."""
    meta = network.metadata
    keys = ("provenance", "command_line", "steps_done", "best_step", "wall_time_s", "device", "package_version",
            "accuracies")
    return {"config": meta["config"], "data": meta["data"], **{k: meta[k] for k in keys if k in meta}}


# --------------------------------------------------------------------------- data and features


@dataclass(frozen=True)
class Sequences:
    """Token sequences per split (``x[name] [P, 48, N0]``, ``y[name] [P]``) and where they came from.

    ``notes``: sets that are missing (e.g. Fashion-MNIST offline) or built differently from the
    authors (e.g. MNIST contexts from the test set); ``characters``: characters per split.
    """

    x: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    source: str
    characters: dict[str, int]
    notes: tuple[str, ...]


def _omniglot_subset(network: training.Checkpoint) -> str:
    """The Omniglot subset the network was trained on, from its metadata (``"omniglot:<subset>"``)."""
    source = network.metadata["data"]["source"]
    if not source.startswith("omniglot:"):
        raise ValueError(f"the checkpoint's data source must be 'omniglot:<subset>'; got {source!r}.")
    return source.split(":", 1)[1]


def character_split(network: training.Checkpoint, n_characters: int):
    """The network's train / validation / test characters (its ``split_seed`` and fractions)."""
    c = network.config
    return split_characters(n_characters, validation=c.validation, test=c.test, seed=c.split_seed)


def build_sequences(cfg: Config, network: training.Checkpoint, *, root: str | os.PathLike | None = None) -> Sequences:
    """Balanced sequences (first half ``y = +1``) for the theory and every evaluation split.

    Omniglot splits use the network's own character split, so the held-out test characters were
    never seen in training; tokens have the network's ``channels`` (``N0 = 64 * channels``).
    Fashion-MNIST is skipped, with a note, when it cannot be found or downloaded.
    """
    channels = network.channels
    chars = load_omniglot(_omniglot_subset(network), root=root)
    patches = encode_images(chars.images)
    split = character_split(network, chars.n_classes)
    rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(4)]
    x, y, notes = {}, {}, []
    for rng, (name, ids, n) in zip(rngs, (("train", split.train, cfg.n_train),
                                          ("validation", split.validation, cfg.n_validation),
                                          ("test", split.test, cfg.n_test))):
        x[name], y[name] = icl_sequences(patches, chars.labels, rng, n, characters=ids, balanced=True,
                                         channels=channels)
    x["one_shot_runs"], y["one_shot_runs"] = one_shot_run_sequences(
        load_one_shot_runs(root=root), rngs[3], cfg.n_test, balanced=True, channels=channels)
    for name in ("mnist", "fashion"):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                x[name], y[name] = ood_sequences(name, cfg.n_test // 2, root=root, channels=channels)
            if any("context" in str(w.message) for w in caught):  # MNIST training images missing
                notes.append(f"{name}: the training set is not available here, so the context images come from "
                             "the test set (disjoint from the queries), not from the training set as the authors'.")
        except DataNotFoundError as err:
            notes.append(f"{name}: skipped, the data are not available here ({str(err).split(':')[0]}).")
    counts = {k: int(len(getattr(split, k))) for k in ("train", "validation", "test")}
    return Sequences(x, y, chars.source, counts, tuple(notes))


def build_features(arch: Architecture, seqs: Sequences) -> dict[str, np.ndarray]:
    """Path features ``[P, n_paths, N0]`` of every split (spec §2.2)."""
    return {name: np.asarray(path_features(arch, x)) for name, x in seqs.x.items()}


# --------------------------------------------------------------------------- theory


@dataclass(frozen=True)
class Sweep:
    """The theory on a grid: ``U [n_T, n_N, n_paths, n_paths]``, accuracies ``{split: [n_T, n_N]}``
    of the mean predictor, the solver reports ``[n_T][n_N]``, the wall time of the computation and
    whether this result was read from the cache."""

    widths: tuple[int, ...]
    temperatures: tuple[float, ...]
    U: np.ndarray
    accuracy: dict[str, np.ndarray]
    reports: list
    seconds: float
    cached: bool = False


def _evaluation(features: dict[str, np.ndarray], y: dict[str, np.ndarray], splits: Sequence[str]):
    """Concatenate the evaluation splits once: ``(features, labels, [(name, start, stop)])``."""
    names = [s for s in splits if s in features]
    stops = np.cumsum([len(y[s]) for s in names])
    bounds = [(s, int(b - len(y[s])), int(b)) for s, b in zip(names, stops)]
    return np.concatenate([features[s] for s in names]), np.concatenate([y[s] for s in names]), bounds


def score_splits(U, temperature: float, features: dict, y: dict, splits: Sequence[str] = EVAL_SPLITS) -> dict:
    """Accuracy of the mean predictor ``k_*^T (K + T I)^{-1} y`` on every split present (spec §4)."""
    f_eval, y_eval, bounds = _evaluation(features, y, splits)
    mean, _ = predictor(U, features["train"], y["train"], f_eval, temperature)
    mean = np.asarray(mean)
    return {s: accuracy(mean[a:b], y_eval[a:b]) for s, a, b in bounds}


def cache_dir() -> Path:
    """Where sweeps are cached: ``$PATHTHEORY_CACHE`` or ``<tmp>/paththeory-cache``, subfolder ``omniglot``."""
    return Path(os.environ.get("PATHTHEORY_CACHE") or Path(tempfile.gettempdir()) / "paththeory-cache") / "omniglot"


def _digest(arrays: Sequence[np.ndarray], params: dict) -> str:
    """A hash of the arrays, the parameters and the source of the theory's modules."""
    h = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for module in (action, hessian, kernels, predict, solve):
        h.update(Path(module.__file__).read_bytes())
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:24]


def theory_sweep(arch: Architecture, features: dict, y: dict, widths: Sequence[int], temperatures: Sequence[float],
                 *, tol: float = 1e-6, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 splits: Sequence[str] = EVAL_SPLITS, cache: Path | None = None) -> Sweep:
    """Solve the action on ``temperatures x widths`` and score every split.

    :meth:`paththeory.solve.Theory.sweep` solves all widths of one temperature together and
    warm-starts each temperature from the previous one. With ``cache`` (a folder), the
    result is stored under a hash of every input (features, labels, grid, tolerance, and the
    source of the theory's modules) and reused when the same sweep is asked for again, e.g. by
    the pruning chapter.
    """
    widths, temperatures = tuple(int(w) for w in widths), tuple(float(t) for t in temperatures)
    names = sorted(s for s in splits if s in features)
    key = _digest([features["train"], y["train"], *(features[s] for s in names), *(y[s] for s in names)],
                  {"widths": widths, "temperatures": temperatures, "tol": tol, "splits": names,
                   "heads": arch.heads, "variances": arch.variances})
    path = None if cache is None else Path(cache) / f"sweep-{key}.npz"
    if path is not None and path.is_file():
        with np.load(path, allow_pickle=False) as f:
            return Sweep(widths, temperatures, f["U"], {s: f[f"acc_{s}"] for s in names},
                         json.loads(str(f["reports"])), float(f["seconds"]), cached=True)
    start = time.perf_counter()
    grid = Theory(arch, features["train"], y["train"], memory_budget).sweep(list(widths), list(temperatures), tol=tol)
    U = np.array([[sol.U for sol in row] for row in grid])
    acc = {s: np.zeros((len(temperatures), len(widths))) for s in names}
    for i, (t, row) in enumerate(zip(temperatures, grid)):
        for j, sol in enumerate(row):
            for s, a in score_splits(sol.U, t, features, y, names).items():
                acc[s][i, j] = a
    reports = [[sol.report for sol in row] for row in grid]
    sweep = Sweep(widths, temperatures, U, acc, reports, time.perf_counter() - start)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, U=U, reports=json.dumps(reports), seconds=sweep.seconds, **{f"acc_{s}": acc[s] for s in names})
        tmp.replace(path)
    return sweep


def gp_accuracies(arch: Architecture, features: dict, y: dict, temperatures: Sequence[float],
                  splits: Sequence[str] = EVAL_SPLITS) -> dict[str, np.ndarray]:
    """GP (infinite-width, ``U = sigma_a^2 prod sigma_l^2 I``) accuracy ``{split: [n_T]}`` (spec §3.4)."""
    U = arch.gp_scale * np.eye(arch.n_paths)
    rows = [score_splits(U, t, features, y, splits) for t in temperatures]
    return {s: np.array([r[s] for r in rows]) for s in rows[0]}


def select_temperature(val_accuracy, temperatures: Sequence[float]) -> np.ndarray:
    """The temperature of best validation accuracy, per column: ``[n_T, ...] -> [...]``.

    Ties go to the larger temperature (the smoother predictor).
    """
    acc = np.asarray(val_accuracy, dtype=float)
    temps = np.asarray(temperatures, dtype=float)
    if acc.ndim < 1 or acc.shape[0] != temps.size:
        raise ValueError(f"val_accuracy must be [n_T={temps.size}, ...]; got shape {acc.shape}.")
    best = acc >= acc.max(axis=0, keepdims=True)
    ranked = np.where(best, temps.reshape((-1,) + (1,) * (acc.ndim - 1)), -np.inf)
    return ranked.max(axis=0)


def selected(table, temperatures: Sequence[float], chosen: Sequence[float]) -> np.ndarray:
    """Entries of ``table [n_T, n_N]`` at the chosen temperature of each column ``[n_N]``."""
    rows = [list(temperatures).index(float(t)) for t in chosen]
    return np.asarray(table)[rows, np.arange(len(rows))]


# --------------------------------------------------------------------------- order parameters


def _balanced_subset(y: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first ``n/2`` sequences of each label of a ``+1``-then-``-1`` set."""
    half = len(y) // 2
    return np.r_[0 : n // 2, half : half + n // 2]


def compare_order_parameters(cfg: Config, network: training.Checkpoint, features: dict, y: dict,
                             temperature: float, *, theory_U=None, progress: bool = False) -> dict:
    """``U`` at ``cfg.sample_width`` from the theory and from NUTS on the same training sequences
    (the first ``cfg.sample_n_train / 2`` of each label, all when that is 0), and the
    gradient-descent ``U`` of the trained weights (spec §2.4, §8).

    ``theory_U``: the theory's ``U`` on the full training set at this width and temperature,
    reused instead of solving again when the sampled set is the full set. Returns ``theory``,
    ``sampled`` (``None`` when ``sample_n_train = 0`` or the run stopped before a draw), the NUTS
    ``diagnostics`` and ``stopped`` record, ``gd``, ``n_train``, ``width`` and ``temperature``.
    """
    arch = network.architecture
    n = cfg.sample_n_train or len(y["train"])
    idx = _balanced_subset(y["train"], n)
    f_sub, y_sub = features["train"][idx], y["train"][idx]
    if theory_U is None or n != len(y["train"]):
        theory_U = Theory(arch, f_sub, y_sub, cfg.memory_budget).solve(cfg.sample_width, temperature, tol=cfg.tol).U
    out = {"width": cfg.sample_width, "temperature": float(temperature), "n_train": n,
           "theory": np.asarray(theory_U), "gd": training.gd_order_parameter(arch, network.params),
           "sampled": None, "diagnostics": None, "stopped": None}
    if cfg.sample_n_train:
        res = sample_posterior(arch, f_sub, y_sub, cfg.sample_width, temperature, num_warmup=cfg.num_warmup,
                               num_samples=cfg.num_samples, num_chains=cfg.num_chains,
                               time_limit=cfg.sample_time_limit, seed=cfg.seed, progress_bar=progress)
        out["sampled"] = res.U if np.all(np.isfinite(res.U)) else None
        out["diagnostics"], out["stopped"] = res.diagnostics, res.stopped
    out["block_contrast"] = {k: None if out[k] is None else block_contrast(out[k], arch.heads)
                             for k in ("theory", "sampled", "gd")}
    return out


def block_contrast(U, heads: Sequence[int]) -> float:
    """Mean ``|U_{pi sigma}|`` over distinct paths with the same first-layer head, divided by the mean
    over paths through different first-layer heads: above 1 when ``U`` is block-structured by ``h_1``."""
    u = np.abs(np.asarray(U, dtype=float))
    first = np.array([p[0] for p in itertools.product(*(range(h) for h in heads))])
    if u.shape != (first.size, first.size) or heads[0] < 2:
        raise ValueError(f"U must be [{first.size}, {first.size}] for heads {tuple(heads)} with H_1 >= 2.")
    same = (first[:, None] == first[None, :]) & ~np.eye(first.size, dtype=bool)
    within, between = u[same].mean(), u[first[:, None] != first[None, :]].mean()
    if between == 0:  # e.g. the GP point U = I: no off-diagonal weight at all
        return float("inf") if within > 0 else float("nan")
    return float(within / between)


# --------------------------------------------------------------------------- heads and pruning


def head_scores(U, heads: Sequence[int]) -> dict:
    """Normalised head scores from ``U`` (spec §5.1) and the pruning order (lowest score first)."""
    scores = _head_scores(U, heads)
    return {"scores": [s.tolist() for s in scores], "order": [list(lh) for lh in score_order(scores)]}


def head_mask(heads: Sequence[int], pruned: Sequence[Sequence[int]]) -> list[np.ndarray]:
    """0/1 masks, a list over layers of ``[H_l]``, with the ``(layer, head)`` pairs in ``pruned`` set to 0."""
    masks = [np.ones(h) for h in heads]
    for layer, head in pruned:
        if not (0 <= layer < len(heads) and 0 <= head < heads[layer]):
            raise ValueError(f"head ({layer}, {head}) does not exist in a network with heads {tuple(heads)}.")
        masks[layer][head] = 0.0
    return masks


def pruned_accuracy(network: training.Checkpoint, x, y, pruned: Sequence[Sequence[int]]) -> float:
    """Accuracy of the trained network with the heads ``pruned`` zeroed and each layer's sum rescaled
    by ``(H - d)^{-1/2}`` (spec §5.2), no retraining. NaN when a layer has lost all its heads."""
    masks = head_mask(network.architecture.heads, pruned)
    if any(m.sum() == 0 for m in masks):
        return float("nan")
    return training.evaluate(network, x, y, head_mask=masks)


def _memoised(network: training.Checkpoint, x, y, memo: dict | None):
    """``pruned -> accuracy``, evaluating each distinct set of pruned heads once (``memo`` is shared)."""
    memo = {} if memo is None else memo

    def acc(pruned: Sequence[Sequence[int]]) -> float:
        key = frozenset(tuple(lh) for lh in pruned)
        if key not in memo:
            memo[key] = pruned_accuracy(network, x, y, sorted(key))
        return memo[key]

    return acc


def single_head_drops(network: training.Checkpoint, x, y, memo: dict | None = None) -> list[list[float]]:
    """Accuracy lost by pruning each head alone: ``[layer][head]`` (unpruned minus pruned)."""
    acc = _memoised(network, x, y, memo)
    full = acc([])
    return [[full - acc([(l, h)]) for h in range(n)] for l, n in enumerate(network.architecture.heads)]


def cumulative_pruning(network: training.Checkpoint, x, y, order: Sequence[Sequence[int]],
                       memo: dict | None = None) -> list[float]:
    """Accuracy after pruning the first ``k`` heads of ``order``, ``k = 0..len(order)`` (NaN past an empty layer)."""
    acc = _memoised(network, x, y, memo)
    return [acc(order[:k]) for k in range(len(order) + 1)]


def pruning_orders(order: Sequence[Sequence[int]], n_random: int, seed: int = 0) -> dict[str, list]:
    """``score_ascending`` (the theory's order), ``score_descending`` and ``n_random`` random orders."""
    order = [tuple(lh) for lh in order]
    rng = np.random.default_rng(seed)
    orders = {"score_ascending": order, "score_descending": order[::-1]}
    orders.update({f"random_{i}": [order[j] for j in rng.permutation(len(order))] for i in range(n_random)})
    return {k: [list(lh) for lh in v] for k, v in orders.items()}


def rank_correlation(a, b) -> dict:
    """Spearman's ``rho`` and its p-value; NaN when either input is constant (e.g. no head matters)."""
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"rho": float("nan"), "p_value": float("nan")}
    res = spearmanr(a, b)
    return {"rho": float(res.statistic), "p_value": float(res.pvalue)}


def pruning_study(network: training.Checkpoint, seqs: Sequences, scores: dict, n_random: int, seed: int = 0,
                  splits: Sequence[str] = ("test", "mnist", "fashion")) -> dict:
    """Single-head drops, cumulative curves for every order, and the rank correlation between
    score and drop, on every split present."""
    orders = pruning_orders(scores["order"], n_random, seed)
    flat_scores = np.concatenate([np.asarray(s) for s in scores["scores"]])
    out = {"orders": orders, "single_head_drop": {}, "cumulative": {}, "spearman": {}}
    for s in (s for s in splits if s in seqs.x):
        x, y, memo = seqs.x[s], seqs.y[s], {}
        drops = single_head_drops(network, x, y, memo)
        out["single_head_drop"][s] = drops
        out["spearman"][s] = rank_correlation(flat_scores, np.concatenate([np.asarray(d) for d in drops]))
        out["cumulative"][s] = {name: cumulative_pruning(network, x, y, o, memo) for name, o in orders.items()}
    return out


# --------------------------------------------------------------------------- the pipeline


def header(cfg: Config, network: training.Checkpoint, seqs: Sequences, profile: str | None = None) -> dict:
    """The part of ``results.json`` that describes the run: profile, sizes, splits, network and data."""
    splits = [s for s in EVAL_SPLITS if s in seqs.x]
    arch = network.architecture
    return jsonable({
        "profile": current_profile(profile),
        "config": asdict(cfg),
        "widths": list(cfg.widths),
        "temperatures": list(cfg.temperatures),
        "splits": splits,
        "split_names": {s: SPLIT_NAMES[s] for s in splits},
        "heads": list(arch.heads),
        "paths": arch.path_names(),
        "network": provenance(network),
        "data": {"source": seqs.source, "characters": seqs.characters, "notes": list(seqs.notes),
                 "n": {s: int(len(y)) for s, y in seqs.y.items()}},
    })


def theory_stage(cfg: Config, arch: Architecture, features: dict, y: dict, *, cache: Path | None = None) -> dict:
    """Sweep the theory, select temperatures on the validation split, score every split at them.

    Returns the ``accuracy`` (theory per split and width at the selected T; GP per split at its
    selected T), ``accuracy_grid``, ``temperature``, ``order_parameter`` (``theory_by_width`` at
    the selected T) and ``solver`` entries of ``results.json``.
    """
    sweep = theory_sweep(arch, features, y, cfg.widths, cfg.temperatures, tol=cfg.tol,
                         memory_budget=cfg.memory_budget, cache=cache)
    gp = gp_accuracies(arch, features, y, cfg.gp_temperatures)
    t_theory = select_temperature(sweep.accuracy["validation"], cfg.temperatures)
    t_gp = float(select_temperature(gp["validation"], cfg.gp_temperatures))
    rows = [cfg.temperatures.index(float(t)) for t in t_theory]
    return jsonable({
        "accuracy": {
            "theory": {s: dict(zip(map(str, cfg.widths), selected(a, cfg.temperatures, t_theory)))
                       for s, a in sweep.accuracy.items()},
            "gp": {s: a[cfg.gp_temperatures.index(t_gp)] for s, a in gp.items()},
        },
        "accuracy_grid": {"theory": sweep.accuracy, "gp": gp},
        "temperature": {"theory": dict(zip(map(str, cfg.widths), t_theory)), "gp": t_gp, "selected_on": "validation"},
        "order_parameter": {"theory_by_width": {str(w): sweep.U[i, j]
                                                for j, (w, i) in enumerate(zip(cfg.widths, rows))}},
        "solver": {"reports": sweep.reports, "seconds": sweep.seconds, "cached": sweep.cached},
    })


def comparison_stage(cfg: Config, network: training.Checkpoint, features: dict, y: dict, results: dict,
                     *, progress: bool = False) -> dict:
    """``order_parameter_comparison``: theory, NUTS and gradient-descent ``U`` (at the validation-selected T)."""
    width = str(cfg.sample_width)
    comp = compare_order_parameters(cfg, network, features, y, results["temperature"]["theory"][width],
                                    theory_U=results["order_parameter"]["theory_by_width"][width], progress=progress)
    return jsonable({"order_parameter_comparison": comp})


def pruning_stage(cfg: Config, network: training.Checkpoint, seqs: Sequences, results: dict) -> dict:
    """``head_scores`` (from the theory ``U`` at ``score_width``), ``pruning`` and ``gd_accuracy``."""
    width = str(cfg.score_width)
    U = np.asarray(results["order_parameter"]["theory_by_width"][width])
    scores = {"width": cfg.score_width, "temperature": results["temperature"]["theory"][width],
              **head_scores(U, network.architecture.heads)}
    return jsonable({
        "head_scores": scores,
        "pruning": pruning_study(network, seqs, scores, cfg.n_random_orders, cfg.seed),
        "gd_accuracy": gd_accuracies(network, seqs),
    })


def gd_accuracies(network: training.Checkpoint, seqs: Sequences) -> dict[str, float]:
    """Accuracy of the trained network itself on every evaluation split."""
    return {s: training.evaluate(network, seqs.x[s], seqs.y[s]) for s in EVAL_SPLITS if s in seqs.x}


def head_parameter_fraction(network: training.Checkpoint) -> float:
    """Fraction of the trained weights that one head owns: its ``V`` (``n x n``), ``Q`` and ``K`` (``G x N0``)."""
    arch, params = network.architecture, network.params
    q = arch.attention[0].query
    per_head = params["V"][0][0].size + 2 * q[0].size
    total = params["V0"].size + params["a"].size + sum(v.size for v in params["V"]) \
        + sum(2 * layer.query.size for layer in arch.attention)
    return per_head / total


def standard_error(p: float, n: int) -> float:
    """Binomial standard error of an accuracy ``p`` measured on ``n`` sequences."""
    return float(np.sqrt(max(p * (1 - p), 1e-12) / n))


def _verdict(diff: float, noise: float, expected_sign: int) -> str:
    if abs(diff) <= 2 * noise:
        return "within noise (|difference| <= 2 standard errors)"
    return "agrees" if np.sign(diff) == expected_sign else "differs"


def paper_expectations(results: dict, parts: Sequence[str] = ("accuracy", "order_parameter", "pruning")) -> list[str]:
    """The paper's qualitative findings next to what was measured here, one line each, for the
    ``parts`` present in ``results``: ``accuracy`` (finite width, at the smallest width, vs the GP in
    and out of distribution), ``order_parameter`` (block structure of ``U`` by first-layer head) and
    ``pruning`` (the cost of pruning the two lowest-scoring heads)."""
    lines = []
    n = results["data"]["n"]
    if "accuracy" in parts and "accuracy" in results:
        small = str(min(results["widths"]))
        for s in (s for s in results["splits"] if s != "validation"):
            a, g = results["accuracy"]["theory"][s][small], results["accuracy"]["gp"][s]
            noise = np.sqrt(2) * standard_error(max(a, g), n[s])
            lines.append(f"finite width (N = {small}) beats the GP on {SPLIT_NAMES[s]}: "
                         f"{100 * (a - g):+.1f} points -> {_verdict(a - g, noise, +1)}")
    if "order_parameter" in parts and "order_parameter_comparison" in results:
        bc = results["order_parameter_comparison"]["block_contrast"]
        values = {k: v for k, v in bc.items() if v is not None}  # None: not computed, or NaN in JSON
        measured = ", ".join(f"{k} {v:.1f}" for k, v in values.items())
        verdict = "agrees" if values and all(v > 1.5 for v in values.values()) else "differs"
        lines.append(f"U is block-structured by first-layer head (contrast > 1): {measured} -> {verdict}")
    if "pruning" in parts and "pruning" in results:
        for s, curves in results["pruning"]["cumulative"].items():
            low, high = curves["score_ascending"], curves["score_descending"]
            cost, reverse = low[0] - low[2], high[0] - high[2]
            noise = np.sqrt(2) * standard_error(low[0], n[s])
            verdict = "agrees" if cost <= 0.02 else _verdict(cost - 0.02, noise, -1)
            lines.append(f"pruning the 2 lowest-scoring heads costs only 1-2 points on {SPLIT_NAMES[s]}: "
                         f"{100 * cost:+.1f} points (highest-scoring first: {100 * reverse:+.1f}) -> {verdict}")
    return lines


def accuracy_table(results: dict) -> str:
    """A text table: theory accuracy per width (with its selected T), the GP and the trained network, per split."""
    splits = [s for s in results["splits"] if s != "validation"]
    lines = [f"{'':>12}" + "".join(f"{s:>15}" for s in splits)]
    for w in results["widths"]:
        t = results["temperature"]["theory"][str(w)]
        lines.append(f"N={w:<5} T={t:<4g}" + "".join(f"{results['accuracy']['theory'][s][str(w)]:>15.3f}"
                                                       for s in splits))
    lines.append(f"GP     T={results['temperature']['gp']:<4g}" + "".join(f"{results['accuracy']['gp'][s]:>15.3f}"
                                                                        for s in splits))
    if "gd_accuracy" in results:
        lines.append(f"{'trained net':<12}" + "".join(f"{results['gd_accuracy'][s]:>15.3f}" for s in splits))
    return "\n".join(lines)


def run(profile: str | None = None, out_dir: str | Path | None = None, *, config: Config | None = None,
        network: training.Checkpoint | None = None, root: str | os.PathLike | None = None,
        cache: Path | None | bool = True, progress: bool = True) -> dict:
    """Reproduce Fig. 3 (b-f) at the profile's scale; write ``results.json``, ``features.npz`` and PNGs.

    Args:
      profile: ``smoke``, ``colab`` or ``paper`` (default: :func:`paththeory.profiles.current_profile`).
      out_dir: output folder (created); nothing is written when ``None``.
      config: sizes overriding the profile's :data:`SETTINGS` entry.
      network: the trained network (default: :func:`trained_network` with ``config.retrain``).
      root: data folder (see :mod:`paththeory.data`).
      cache: folder for the theory sweep (``True``: :func:`cache_dir`; ``False``/``None``: no cache).
      progress: print the time of each stage and show the NUTS bar.
    Returns:
      the content of ``results.json``: :func:`header`, :func:`theory_stage`, :func:`comparison_stage`
      and :func:`pruning_stage` merged, plus ``timings`` and ``environment``.
    """
    name = current_profile(profile)
    cfg = config or settings(name)
    cache_path = cache_dir() if cache is True else (cache or None)
    timings: dict[str, float] = {}
    start = t = time.perf_counter()

    def lap(key: str) -> None:
        nonlocal t
        timings[key] = time.perf_counter() - t
        if progress:
            print(f"[omniglot] {key}: {timings[key]:.1f} s", flush=True)
        t = time.perf_counter()

    network = network or trained_network(cfg.retrain, root=root, progress=progress)
    seqs = build_sequences(cfg, network, root=root)
    features = build_features(network.architecture, seqs)
    results = header(cfg, network, seqs, name)
    lap("data_and_features")
    results.update(theory_stage(cfg, network.architecture, features, seqs.y, cache=cache_path))
    lap("theory")
    results.update(comparison_stage(cfg, network, features, seqs.y, results, progress=progress))
    lap("order_parameters")
    results.update(pruning_stage(cfg, network, seqs, results))
    lap("pruning")
    timings["total"] = time.perf_counter() - start
    results["timings"] = timings
    results["environment"] = {"paththeory": paththeory.__version__, "jax": jax.__version__,
                              "backend": jax.default_backend(), "device": str(jax.devices()[0])}
    if out_dir is not None:
        write_outputs(results, features, seqs, Path(out_dir))
    return results


def write_outputs(results: dict, features: dict, seqs: Sequences, out_dir: Path) -> list[Path]:
    """``results.json``, ``features.npz`` (the theory's inputs per split) and one PNG per :data:`FIGURES` entry."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=1))
    np.savez_compressed(out_dir / "features.npz", paths=np.array(results["paths"]),
                        **{f"features_{s}": f for s, f in features.items()}, **{f"y_{s}": y for s, y in seqs.y.items()})
    figures = {"accuracy": plot_accuracy(results), "temperature": plot_temperature_grid(results),
               "order_parameters": plot_order_parameters(results), "head_scores": plot_head_scores(results),
               "pruning": plot_pruning(results)}
    paths = [out_dir / "results.json", out_dir / "features.npz"]
    for key, fig in figures.items():
        paths.append(out_dir / f"{key}.png")
        fig.savefig(paths[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return paths


# --------------------------------------------------------------------------- figures


def plot_sequence(network: training.Checkpoint, seed: int = 0, *, root: str | os.PathLike | None = None,
                  profile: str | None = None) -> Figure:
    """The three drawings of one training sequence: two labelled contexts and the query (spec §7.1)."""
    chars = load_omniglot(_omniglot_subset(network), root=root)
    split = character_split(network, chars.n_classes)
    index = icl_indices(chars.labels, seed, 1, characters=split.train)
    fig, axes = plt.subplots(1, 3, figsize=(6.6, 2.6))
    for ax, image, label, title in zip(axes, index.images[0], index.labels[0], ("context 1", "context 2", "query")):
        ax.imshow(chars.images[image], cmap="gray")
        ax.set_title(f"{title}\n{'label ' + str(label) if label < 2 else 'label unknown'}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[2].set_xlabel(f"target y = {int(index.y[0]):+d}")
    fig.suptitle(f"query character: {chars.classes[chars.labels[index.images[0, 2]]]}", fontsize=8, y=0.02,
                 va="bottom")
    stamp_profile(fig, profile)
    return fig


def plot_training(history: dict, profile: str | None = None) -> Figure:
    """Training loss and validation accuracy against the step (``history`` of :func:`paththeory.training.train`)."""
    steps = np.asarray(history["step"])
    loss = np.array([np.nan if v is None else v for v in history["loss"]], dtype=float)
    fig, (ax_l, ax_a) = plt.subplots(1, 2, figsize=(9, 3.2))
    ax_l.plot(steps, loss, "o-", ms=3)
    ax_l.set_xlabel("step")
    ax_l.set_ylabel("training loss (MSE, mean since last point)")
    ax_a.plot(steps, history["val_accuracy"], "o-", ms=3, color="C1")
    ax_a.axhline(0.5, color="0.6", ls=":", label="chance")
    ax_a.set_xlabel("step")
    ax_a.set_ylabel("validation accuracy")
    ax_a.legend(fontsize=8)
    fig.tight_layout()
    stamp_profile(fig, profile)
    return fig


def _curve(d: dict) -> tuple[np.ndarray, np.ndarray]:
    items = sorted((int(k), np.nan if v is None else v) for k, v in d.items())
    return np.array([k for k, _ in items]), np.array([v for _, v in items], dtype=float)


def plot_accuracy(results: dict, splits: Sequence[str] | None = None) -> Figure:
    """Fig. 3b: theory accuracy (validation-selected T per N) against N, with the GP and the trained network."""
    splits = [s for s in (splits or results["splits"]) if s != "validation"]
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.6), squeeze=False)
    for ax, s in zip(axes[0], splits):
        widths, acc = _curve(results["accuracy"]["theory"][s])
        temps = [results["temperature"]["theory"][str(w)] for w in widths]
        ax.semilogx(widths, acc, "o-", color="C0", label="theory (renormalised kernel)")
        for w, a, tt in zip(widths, acc, temps):
            ax.annotate(f"T={tt:g}", (w, a), textcoords="offset points", xytext=(0, 6), fontsize=6, ha="center")
        ax.axhline(results["accuracy"]["gp"][s], color="0.4", ls="--",
                   label=f"GP (T={results['temperature']['gp']:g})")
        if "gd_accuracy" in results:
            ax.axhline(results["gd_accuracy"][s], color="C2", ls=":", label="trained network (GD)")
        ax.set_xlabel("width $N$")
        ax.set_ylabel("accuracy")
        ax.set_title(results["split_names"][s], fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    stamp_profile(fig, results["profile"])
    return fig


def plot_temperature_grid(results: dict) -> Figure:
    """Validation accuracy of the theory on the (T, N) grid; the selected temperature per N is boxed."""
    grid = np.asarray(results["accuracy_grid"]["theory"]["validation"], dtype=float)
    widths, temps = results["widths"], results["temperatures"]
    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 + 0.6 * len(widths)), max(3.2, 1.2 + 0.4 * len(temps))))
    image = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    for j, w in enumerate(widths):
        i = temps.index(results["temperature"]["theory"][str(w)])
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="w", lw=2))
    ax.set_xticks(range(len(widths)), [str(w) for w in widths])
    ax.set_yticks(range(len(temps)), [f"{t:g}" for t in temps])
    ax.set_xlabel("width $N$")
    ax.set_ylabel("temperature $T$")
    ax.set_title("validation accuracy (selected T boxed)", fontsize=9)
    fig.colorbar(image, ax=ax, label="accuracy")
    stamp_profile(fig, results["profile"])
    return fig


def plot_order_parameters(results: dict) -> Figure:
    """Fig. 3c: ``U`` from the theory, from NUTS and from gradient descent, paths grouped by first-layer head."""
    comp = results["order_parameter_comparison"]
    heads = results["heads"]
    labels = [f"$h_1$={h}" for h in range(heads[0])]
    w = comp["width"]
    panels = [(comp["theory"], f"theory, N = {w}, P = {comp['n_train']}"),
              (comp["sampled"], f"NUTS, N = {w}, P = {comp['n_train']}"),
              (comp["gd"], "gradient descent ($w^\\pi\\cdot w^\\sigma$)")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9))
    for ax, (U, title) in zip(axes, panels):
        if U is None:
            ax.text(0.5, 0.5, "not computed in this profile", ha="center", va="center")
            ax.set_axis_off()
            continue
        matrix_heatmap(ax, U, labels, title, xlabel="path $\\sigma$ (by $h_1$)", ylabel="path $\\pi$ (by $h_1$)")
    fig.tight_layout()
    stamp_profile(fig, results["profile"])
    return fig


def _flat(per_layer) -> np.ndarray:
    return np.concatenate([np.asarray(v, dtype=float) for v in per_layer])


def plot_head_scores(results: dict, splits: Sequence[str] = ("test", "mnist")) -> Figure:
    """Fig. 3e: accuracy drop when pruning one head against its theory score (with Spearman's rho)."""
    hs, pr = results["head_scores"], results["pruning"]
    scores = _flat(hs["scores"])
    names = [f"({l},{h})" for l, n in enumerate(results["heads"]) for h in range(n)]
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    for k, s in enumerate(s for s in splits if s in pr["single_head_drop"]):
        drops = 100 * _flat(pr["single_head_drop"][s])
        rho = pr["spearman"][s]["rho"]
        rho_text = "undefined" if rho is None else f"{rho:.2f}"
        ax.plot(scores, drops, "os"[k % 2], color=f"C{k}", label=f"{results['split_names'][s]}, $\\rho$ = {rho_text}")
        if k == 0:
            for x_, y_, n in zip(scores, drops, names):
                ax.annotate(n, (x_, y_), textcoords="offset points", xytext=(4, 3), fontsize=7)
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set_xlabel(f"head score (theory, N = {hs['width']}, T = {hs['temperature']:g})")
    ax.set_ylabel("accuracy drop when pruned (points)")
    ax.legend(fontsize=7)
    stamp_profile(fig, results["profile"])
    return fig


def plot_pruning(results: dict, splits: Sequence[str] = ("test", "mnist")) -> Figure:
    """Fig. 3f: accuracy against the number of heads pruned, theory order vs reverse and random orders."""
    cum = results["pruning"]["cumulative"]
    splits = [s for s in splits if s in cum]
    fig, axes = plt.subplots(1, len(splits), figsize=(4.8 * len(splits), 3.7), squeeze=False)
    for ax, s in zip(axes[0], splits):
        curves = {k: np.array([np.nan if v is None else v for v in c], dtype=float) for k, c in cum[s].items()}
        k = np.arange(len(curves["score_ascending"]))
        rand = np.array([c for n, c in curves.items() if n.startswith("random")])
        if len(rand):
            with warnings.catch_warnings():  # k past an emptied layer: all NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                low, mid, high = np.nanmin(rand, 0), np.nanmean(rand, 0), np.nanmax(rand, 0)
            ax.fill_between(k, low, high, color="0.85", label="random orders (range)")
            ax.plot(k, mid, color="0.5", lw=1, label="random orders (mean)")
        ax.plot(k, curves["score_ascending"], "o-", color="C0", label="lowest score first (theory)")
        ax.plot(k, curves["score_descending"], "s--", color="C3", label="highest score first")
        ax.axhline(0.5, color="0.6", ls=":", lw=0.8)
        ax.set_xlabel("heads pruned")
        ax.set_ylabel("accuracy")
        ax.set_title(results["split_names"][s], fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    stamp_profile(fig, results["profile"])
    return fig
