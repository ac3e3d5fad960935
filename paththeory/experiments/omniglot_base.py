"""The Omniglot experiment's foundations, shared by :mod:`paththeory.experiments.omniglot` (Fig. 3 b-d)
and :mod:`paththeory.experiments.head_pruning` (Fig. 3 e-f): the sizes of a profile (:class:`Config`), the
network's character split and fresh training sequences, the theory grid's results (:class:`Sweep`)
and the accuracy of the mean predictor on every evaluation split.

Both experiment modules import from here, so neither imports the other's stages to get them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from paththeory import training
from paththeory.tasks.data import load_omniglot
from paththeory.kernels import DEFAULT_MEMORY_BUDGET
from paththeory.predict import mean_predictor
from paththeory.tasks.omniglot import encode_images, icl_sequences, split_characters

PAPER_WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
PAPER_TEMPERATURES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
#: The GP temperatures the authors' repository searches (its Omniglot script); the paper's text gives
#: none. Here the GP is selected over these together with the theory's grid (:func:`gp_grid`), so
#: it gets at least as wide a search as the theory.
GP_TEMPERATURES = (0.25, 0.1, 0.075, 0.05, 0.025)
#: Evaluation splits: validation (temperature selection), held-out characters, the evaluation
#: alphabets (one-shot runs) and the out-of-distribution sets.
EVAL_SPLITS = ("validation", "test", "one_shot_runs", "fashion", "mnist")


def gp_grid(cfg: Config) -> tuple[float, ...]:
    """The GP's candidate temperatures, in increasing order: the theory's grid ``cfg.temperatures``
    together with ``cfg.gp_temperatures`` (the authors' shorter list). The GP needs no solve, so
    each extra temperature costs one predictor call.

    Example:
      >>> gp_grid(Config(n_train=4, n_validation=2, n_test=2, widths=(10,), temperatures=(0.5, 0.1),
      ...                sample_n_train=0, num_warmup=1, num_samples=1, num_chains=1, sample_time_limit=1.0,
      ...                demo_steps=0, gp_temperatures=(0.25, 0.1)))
      (0.1, 0.25, 0.5)
    """
    return tuple(sorted({float(t) for t in (*cfg.temperatures, *cfg.gp_temperatures)}))


@dataclass(frozen=True)
class Config:
    """Sizes of one profile.

    ``n_train``: theory training set ``P`` (balanced, ``+1`` then ``-1``); ``n_validation``,
    ``n_test``: sequences per evaluation set (MNIST/Fashion-MNIST take ``n_test / 2`` per class);
    ``widths`` x ``temperatures``: the theory grid; ``gp_temperatures``: the authors' GP list, searched
    by the GP together with the theory's grid (:func:`gp_grid`);
    ``score_width``: the width whose ``U`` scores the heads; ``sample_*``: NUTS at
    ``sample_width`` on the first ``sample_n_train / 2`` training sequences of each label
    (``sample_n_train = 0`` skips sampling), with ``sample_time_limit`` seconds as a fail-safe against a
    stuck run, far above an honest run's time (a run that reaches it fails,
    :class:`paththeory.sampling.results.TimeLimitReached`; :func:`paththeory.profiles.time_limit`);
    ``n_random_orders``: random pruning orders as a baseline; ``n_bootstrap``: resamples of the
    validation set for the temperature trend; ``score_resamples``: fresh training sets of size
    ``n_train`` whose ``U`` score the heads again, and ``score_train_sizes``: smaller training sets
    (the first half of each label's sequences), both in :func:`score_sensitivity`; ``retrain``:
    train a network here with the shipped checkpoint's configuration instead of loading it;
    ``demo_steps``: length of the chapter's training demonstration; ``tol``: solver tolerance on
    ``max |d(S/N)/dU|``; ``memory_budget``: bytes for precomputed Gram blocks (0 forces the
    factorised kernel; :func:`paththeory.kernels.kernel_operator` otherwise picks the faster form).
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
    demo_steps: int
    n_random_orders: int = 1000
    n_bootstrap: int = 1000
    score_resamples: int = 0
    score_train_sizes: tuple[int, ...] = ()
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
        if any(p % 2 or not 4 <= p <= self.n_train for p in self.score_train_sizes):
            raise ValueError(f"score_train_sizes must be even, >= 4 and <= n_train; got {self.score_train_sizes}.")
        if self.n_random_orders < 1 or self.n_bootstrap < 1 or self.score_resamples < 0:
            raise ValueError("n_random_orders and n_bootstrap must be >= 1 and score_resamples >= 0.")


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


def _characters(network: training.Checkpoint, root: str | os.PathLike | None):
    """The network's Omniglot characters: ``(characters, their image patches, its character split)``."""
    chars = load_omniglot(_omniglot_subset(network), root=root)
    return chars, encode_images(chars.images), character_split(network, chars.n_classes)


def training_sequences(network: training.Checkpoint, n: int, seed, *, characters: str = "train",
                       root: str | os.PathLike | None = None):
    """``n`` balanced sequences ``(x, y)`` drawn with ``seed`` (an int or a numpy ``Generator``) from
    the network's ``characters``: ``"train"`` (a fresh theory training set), ``"validation"`` or
    ``"test"`` (the held-out characters)."""
    if characters not in ("train", "validation", "test"):
        raise ValueError(f"characters must be 'train', 'validation' or 'test'; got {characters!r}.")
    chars, patches, split = _characters(network, root)
    return icl_sequences(patches, chars.labels, seed, n, characters=getattr(split, characters), balanced=True,
                         channels=network.channels)


@dataclass(frozen=True)
class Sweep:
    """The theory on a grid: ``U [n_T, n_N, n_paths, n_paths]``; ``correct {split: [n_T, n_N, n] bool}``,
    whether the mean predictor classifies each sequence correctly; the solver reports
    ``[n_T][n_N]``, the wall time of the computation and whether it was read from the cache."""

    widths: tuple[int, ...]
    temperatures: tuple[float, ...]
    U: np.ndarray
    correct: dict[str, np.ndarray]
    reports: list
    seconds: float
    cached: bool = False

    @property
    def accuracy(self) -> dict[str, np.ndarray]:
        """Accuracy ``{split: [n_T, n_N]}`` of the mean predictor."""
        return {s: c.mean(axis=-1) for s, c in self.correct.items()}


def _evaluation(features: dict[str, np.ndarray], y: dict[str, np.ndarray], splits: Sequence[str]):
    """Concatenate the evaluation splits once: ``(features, labels, [(name, start, stop)])``."""
    names = [s for s in splits if s in features]
    stops = np.cumsum([len(y[s]) for s in names])
    bounds = [(s, int(b - len(y[s])), int(b)) for s, b in zip(names, stops)]
    return np.concatenate([features[s] for s in names]), np.concatenate([y[s] for s in names]), bounds


def correctness(U, temperature: float, features: dict, y: dict, splits: Sequence[str] = EVAL_SPLITS) -> dict:
    """Whether the mean predictor ``k_*^T (K + T I)^{-1} y`` gets each sequence right: ``{split: [n] bool}`` (the paper's Eq. 29)."""
    f_eval, y_eval, bounds = _evaluation(features, y, splits)
    right = np.asarray(mean_predictor(U, features["train"], y["train"], f_eval, temperature)) * y_eval > 0
    return {s: right[a:b] for s, a, b in bounds}


def score_splits(U, temperature: float, features: dict, y: dict, splits: Sequence[str] = EVAL_SPLITS) -> dict:
    """Accuracy of the mean predictor on every split present (the paper's Eq. 29)."""
    return {s: float(c.mean()) for s, c in correctness(U, temperature, features, y, splits).items()}


def _balanced_subset(y: np.ndarray, n: int) -> np.ndarray:
    """Indices of the first ``n/2`` sequences of each label of a ``+1``-then-``-1`` set."""
    half = len(y) // 2
    return np.r_[0 : n // 2, half : half + n // 2]
