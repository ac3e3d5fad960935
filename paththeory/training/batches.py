"""The Omniglot training data: encoded drawings, the character split, the augmented training pool,
fresh training batches and the fixed evaluation sequences.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
from paththeory.training.trainable import AUGMENTATIONS, TrainConfig



EVAL_SETS = ("train", "validation", "test", "one_shot_runs", "mnist")


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class OmniglotData:
    """Encoded drawings and the character split of one training run.

    Attributes:
      patches: ``[n_images, 16, 64]`` encoded drawings (:func:`~paththeory.tasks.omniglot.encode_images`); ``labels`` their characters.
      split: train / validation / test character ids.
      pool_patches, pool_labels: the training pool, training characters only, augmented (each
        transform of a character is a new class id).
      source: the data set's ``source`` string, e.g. ``"omniglot:background_small"``.
    """

    patches: np.ndarray
    labels: np.ndarray
    split: object
    pool_patches: np.ndarray
    pool_labels: np.ndarray
    source: str


def omniglot_data(config: TrainConfig, root: str | os.PathLike | None = None) -> OmniglotData:
    """Load Omniglot, split its characters (``config.split_seed``) and build the augmented training pool."""
    from paththeory.tasks.data import load_omniglot
    from paththeory.tasks.omniglot import encode_images, split_characters

    chars = load_omniglot(root=root)
    split = split_characters(chars.n_classes, validation=config.validation, test=config.test, seed=config.split_seed)
    patches = encode_images(chars.images)
    train_images = np.isin(chars.labels, split.train)
    pool_patches, pool_labels = [], []
    for i, (k, flip) in enumerate(AUGMENTATIONS[config.augment]):
        images = np.rot90(chars.images[train_images], k, axes=(1, 2))
        images = np.ascontiguousarray(images[:, :, ::-1] if flip else images)
        pool_patches.append(patches[train_images] if i == 0 else encode_images(images))
        pool_labels.append(chars.labels[train_images] + i * chars.n_classes)
    return OmniglotData(
        patches, np.asarray(chars.labels), split, np.concatenate(pool_patches), np.concatenate(pool_labels), chars.source
    )


def default_mnist_context(root: str | os.PathLike | None = None) -> str:
    """``"train"`` where the MNIST training set is on disk (the authors' contexts), else ``"test"``."""
    from paththeory.tasks.data import DataNotFoundError, load_mnist

    try:
        load_mnist("train", root=root, download=False)
        return "train"
    except DataNotFoundError:
        return "test"


def evaluation_sets(
    config: TrainConfig,
    data: OmniglotData,
    names: Sequence[str] = EVAL_SETS,
    *,
    root: str | os.PathLike | None = None,
    mnist_context: str | None = None,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fixed, balanced evaluation sequences ``{name: (x, y)}`` of ``config.n_eval`` sequences each.

    ``train``/``validation``/``test``: Omniglot sequences of those characters (no augmentation);
    ``one_shot_runs``: the 20 runs of the evaluation alphabets; ``mnist``: MNIST 0 vs 1 (the paper's Appendix H.2.2),
    contexts from ``mnist_context`` (default: the training set if present, else the test set).
    Seeds are fixed (``10_000 + index in EVAL_SETS``), so a checkpoint's numbers can be rebuilt.
    """
    from paththeory.tasks.data import load_one_shot_runs
    from paththeory.tasks.omniglot import icl_sequences, ood_sequences, one_shot_run_sequences

    unknown = set(names) - set(EVAL_SETS)
    if unknown:
        raise ValueError(f"unknown evaluation sets {sorted(unknown)}; choose from {EVAL_SETS}.")
    n, ch = config.n_eval, config.channels
    out = {}
    for name in names:
        seed = 10_000 + EVAL_SETS.index(name)
        if name in ("train", "validation", "test"):
            chars = getattr(data.split, name)
            out[name] = icl_sequences(data.patches, data.labels, seed, n, characters=chars, balanced=True, channels=ch)
        elif name == "one_shot_runs":
            out[name] = one_shot_run_sequences(load_one_shot_runs(root=root), seed, n, balanced=True, channels=ch)
        else:
            context = mnist_context or default_mnist_context(root)
            out[name] = ood_sequences("mnist", n // 2, context=context, root=root, channels=ch)
    return out




def omniglot_batches(config: TrainConfig, data: OmniglotData) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Endless fresh training sequences from the (augmented) training pool, seeded by ``config.seed``."""
    from paththeory.tasks.omniglot import icl_sequences

    rng = np.random.default_rng(config.seed)
    while True:
        yield icl_sequences(data.pool_patches, data.pool_labels, rng, config.batch_size, channels=config.channels)
