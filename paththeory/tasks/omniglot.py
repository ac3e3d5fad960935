"""One-shot in-context image classification (§4.2 of the paper, Fig. 3a): Omniglot sequences, one-shot
runs, Fashion-MNIST and MNIST out-of-distribution sequences.

**Images.** The paper (§4.2) cuts each image into patches and adds label vectors and a sinusoidal
position code; the details below follow the authors' repository. Each image goes through
torchvision's ``Resize(32)`` on a PIL greyscale image (:func:`resize`: bilinear with antialiasing, 8-bit output), ``ToTensor`` (``/255``) and
``Normalize(mean, std)`` (Omniglot 0.922/0.084, MNIST 0.1307/0.3081, Fashion-MNIST 0.286/0.353),
is cut into 16 patches of 8 x 8 pixels in row-major order, and each patch goes through a frozen
``LayerNorm`` (weight 1, bias 0, eps 1e-5, biased variance). :func:`encode_images` does this once
per image and keeps one channel, ``[n, 16, 64]``: the authors repeat the image to 3 channels
before the LayerNorm, which leaves each patch's mean and biased variance unchanged, so their
normalised patch is exactly ours with every value repeated 3 times (features ordered
``(p1, p2, c)`` with ``c`` fastest), done in :func:`assemble_tokens`.

**Tokens.** A sequence is ``[context 1, context 2, query]``, 48 tokens, and token ``s`` is

    x_s = LN(patch_s) + pe_s + E_{label(s)},  in R^{N0},  N0 = 64 * channels (192 by default),

with ``pe`` the sinusoidal encoding of positions 0..47 globally standardised
(:func:`positional_encoding`), ``E_0, E_1, E_2`` the frozen label vectors with N(0, 1) entries
(:func:`label_vectors`, drawn from ``label_seed``), ``E_l`` on every token of a context image of
label ``l`` and ``E_2`` on the query's 16 tokens. The target is ``y = 2 l_query - 1``, with
``l_query`` the label of the context image of the query's class.

``channels=1`` gives ``N0 = 64``: the image part of a token is the 3-channel one without its
copies (inner products smaller by the factor 3), while ``pe`` and the label vectors are drawn in
64 dimensions; a cheaper variant of the same task, not a rescaling of the 192-dimensional one.

All outputs are float64 numpy arrays: tokens ``x[P, 48, N0]``, targets ``y[P]`` in ``{-1, +1}``.
Typical use::

    s = load_omniglot()  # paththeory.tasks.data; 242 characters offline
    patches = encode_images(s.images)  # once per data set
    split = split_characters(s.n_classes, validation=0.1, test=0.25, seed=0)
    x, y = icl_sequences(patches, s.labels, 0, 600, characters=split.train, balanced=True)
    x_test, y_test = icl_sequences(patches, s.labels, 1, 1000, characters=split.test,
                                   balanced=True)
    x_ood, y_ood = ood_sequences("fashion", None)  # Fig. 3; "mnist" for App. H.2.2
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from paththeory._checks import (
    as_float_array,
    check_allocation,
    check_count,
    check_flag,
    check_nonnegative,
    check_rng,
)
from paththeory.tasks.data import DataNotFoundError, OneShotRuns, load_mnist

IMAGE_SIZE = 32
PATCH_SIZE = 8
PATCHES_PER_IMAGE = (IMAGE_SIZE // PATCH_SIZE) ** 2  # 16
IMAGES_PER_SEQUENCE = 3
N_TOKENS = IMAGES_PER_SEQUENCE * PATCHES_PER_IMAGE  # 48
PIXELS_PER_PATCH = PATCH_SIZE * PATCH_SIZE  # 64
LAYERNORM_EPS = 1e-5
QUERY_LABEL = 2

#: ``Normalize(mean, std)`` of each data set (values from the authors' repository).
NORMALISATION: dict[str, tuple[float, float]] = {
    "omniglot": (0.922, 0.084),
    "mnist": (0.1307, 0.3081),
    "fashion": (0.286, 0.353),
}

Rng = np.random.Generator | int


# --------------------------------------------------------------------------- images


def resize(images: np.ndarray, size: int = IMAGE_SIZE) -> np.ndarray:
    """torchvision ``Resize(size)`` on PIL greyscale images: ``[n, H, H]`` uint8 -> ``[n, size, size]`` uint8.

    This is PIL's bilinear resampling with antialiasing (the filter widens by the shrink factor),
    computed in two 8-bit passes, horizontal then vertical, exactly what torchvision does to a PIL image.
    """
    from PIL import Image

    size = check_count(size, "size")
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1] != images.shape[2]:
        raise ValueError(f"images must be square uint8 greyscale images [n, H, H]; got {images.dtype} {images.shape}.")
    out = np.empty((len(images), size, size), dtype=np.uint8)
    for k, image in enumerate(images):
        out[k] = np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR))
    return out


def encode_images(images: np.ndarray, normalisation: str | tuple[float, float] = "omniglot") -> np.ndarray:
    """Resize, scale, normalise, patch and LayerNorm each image once: ``[n, H, H]`` uint8 -> ``[n, 16, 64]``.

    Args:
      images: square uint8 greyscale images (Omniglot 105 x 105, MNIST 28 x 28).
      normalisation: a key of :data:`NORMALISATION` or an explicit ``(mean, std)``.

    Returns:
      float64 ``[n, 16, 64]``: patches in row-major order, pixels ``(p1, p2)`` row-major, each patch
      ``(p - mean(p)) / sqrt(var(p) + 1e-5)`` (biased variance); a blank patch gives zeros.
    """
    if isinstance(normalisation, str) and normalisation not in NORMALISATION:
        raise ValueError(f"unknown normalisation {normalisation!r}; choose one of {sorted(NORMALISATION)} "
                         "or give (mean, std).")
    pair = as_float_array(NORMALISATION.get(normalisation) if isinstance(normalisation, str) else normalisation,
                          "normalisation", ndim=1, finite=False)
    if pair.shape != (2,):
        raise ValueError(f"normalisation must be a key of {sorted(NORMALISATION)} or a pair (mean, std); got "
                         f"{normalisation!r}.")
    mean, std = pair
    if not (np.isfinite(mean) and np.isfinite(std) and std > 0):
        raise ValueError(f"normalisation (mean, std) must be finite with std > 0; got ({mean}, {std}).")
    pixels = (resize(images).astype(np.float64) / 255.0 - mean) / std
    grid = IMAGE_SIZE // PATCH_SIZE
    patches = (
        pixels.reshape(len(pixels), grid, PATCH_SIZE, grid, PATCH_SIZE)
        .transpose(0, 1, 3, 2, 4)
        .reshape(len(pixels), PATCHES_PER_IMAGE, PIXELS_PER_PATCH)
    )
    centred = patches - patches.mean(axis=-1, keepdims=True)
    return centred / np.sqrt(np.mean(centred**2, axis=-1, keepdims=True) + LAYERNORM_EPS)


# --------------------------------------------------------------------------- tokens


def positional_encoding(
    n_positions: int = N_TOKENS, dim: int = 3 * PIXELS_PER_PATCH, *, standardise_over: int | None = None
) -> np.ndarray:
    """Sinusoidal encoding ``[n_positions, dim]``, globally standardised (as in the authors' repository).

    ``pe[p, 2i] = sin(p w_i)``, ``pe[p, 2i+1] = cos(p w_i)``, ``w_i = 10000^(-2i/dim)``, then
    ``(pe - mean) / (std + 1e-6)`` with mean and unbiased std over all entries, or over the first
    ``standardise_over`` positions only: ``positional_encoding(n, standardise_over=48)`` keeps the
    48 positions of the 2-way sequences exactly and continues the same sinusoids beyond them.
    """
    n_positions, dim = check_count(n_positions, "n_positions"), check_count(dim, "dim")
    check_allocation(24 * n_positions * dim, f"the encoding of n_positions = {n_positions} in dim = {dim}")
    if dim % 2:
        raise ValueError(f"dim must be even for the sin/cos pairs; got {dim}.")
    ref = n_positions if standardise_over is None else check_count(standardise_over, "standardise_over")
    if ref > n_positions:
        raise ValueError(f"standardise_over must be <= n_positions = {n_positions}; got {ref}.")
    angle = np.arange(n_positions)[:, None] * 10000.0 ** (-np.arange(0, dim, 2) / dim)
    pe = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(n_positions, dim)
    return (pe - pe[:ref].mean()) / (pe[:ref].std(ddof=1) + 1e-6)


def label_vectors(dim: int = 3 * PIXELS_PER_PATCH, seed: int = 0) -> np.ndarray:
    """The frozen label embedding ``[3, dim]``: rows ``E_0, E_1, E_2`` (query) with N(0, 1) entries."""
    dim, seed = check_count(dim, "dim"), check_count(seed, "seed", minimum=0)
    return np.random.default_rng(seed).standard_normal((3, dim))


@functools.lru_cache(maxsize=8)
def _embedding(dim: int, label_seed: int) -> tuple[np.ndarray, np.ndarray]:
    pe, label_vecs = positional_encoding(N_TOKENS, dim), label_vectors(dim, label_seed)
    pe.flags.writeable = label_vecs.flags.writeable = False  # shared by the cache
    return pe, label_vecs


def assemble_tokens(
    patches: np.ndarray, images: np.ndarray, image_labels: np.ndarray, *, channels: int = 3, label_seed: int = 0
) -> np.ndarray:
    """Tokens of sequences given by image indices: ``x[P, 48, 64 * channels]`` float64.

    Args:
      patches: ``[n, 16, 64]`` from :func:`encode_images`.
      images: ``[P, 3]`` indices into ``patches`` of context 1, context 2, query.
      image_labels: ``[P, 3]`` label id of each image (0 or 1 on contexts, 2 on the query).
      channels: copies of each pixel (3 as in the paper, 1 for ``N0 = 64``).
      label_seed: seed of the label vectors; keep it fixed across training, test and OOD data.
    """
    channels, label_seed = check_count(channels, "channels"), check_count(label_seed, "label_seed", minimum=0)
    patches = np.asarray(patches)
    if patches.ndim != 3 or patches.shape[1:] != (PATCHES_PER_IMAGE, PIXELS_PER_PATCH):
        raise ValueError(f"patches must be [n, 16, 64] (encode_images); got {patches.shape}.")
    images, image_labels = np.asarray(images), np.asarray(image_labels)
    if images.ndim != 2 or images.shape[1] != IMAGES_PER_SEQUENCE or image_labels.shape != images.shape:
        raise ValueError(f"images and image_labels must both be [P, 3]; got {images.shape} and {image_labels.shape}.")
    if not len(images):
        raise ValueError("images and image_labels hold no sequences (P = 0); pass at least one [context, context, "
                         "query] row.")
    if not (np.issubdtype(images.dtype, np.integer) and np.all((images >= 0) & (images < len(patches)))):
        raise ValueError(f"images must hold indices into patches, whole numbers in [0, {len(patches) - 1}].")
    if not (np.issubdtype(image_labels.dtype, np.integer) and np.all((image_labels >= 0) & (image_labels <= QUERY_LABEL))):
        raise ValueError(f"image_labels must hold label ids 0, 1 (contexts) or {QUERY_LABEL} (the query).")
    pe, label_vecs = _embedding(PIXELS_PER_PATCH * channels, label_seed)
    return _tokens(patches, images, image_labels, label_vecs, pe, channels)


def _tokens(patches, images, image_labels, label_vecs, pe, channels: int) -> np.ndarray:
    """``x[P, m 16, dim]`` of ``m`` images per sequence: patch pixels repeated ``channels`` times,
    plus the label vector ``label_vecs[image_labels]`` on each image's tokens, plus ``pe``."""
    x = np.repeat(patches[images], channels, axis=-1)  # [P, m, 16, dim], features (p1, p2, c)
    x += label_vecs[image_labels][:, :, None, :]
    x = x.reshape(len(images), images.shape[1] * PATCHES_PER_IMAGE, -1)
    x += pe
    return x


class SequenceIndex(NamedTuple):
    """Sequences as image indices: ``images[P, 3]`` (context 1, context 2, query), their label ids
    ``labels[P, 3]`` (0/1 on contexts, 2 on the query) and targets ``y[P]`` in ``{-1, +1}``."""

    images: np.ndarray
    labels: np.ndarray
    y: np.ndarray


def _arrange(
    match: np.ndarray, other: np.ndarray, query: np.ndarray, rng: np.random.Generator, balanced: bool
) -> SequenceIndex:
    """Random context order and label permutation of (matching context, other context, query) triples."""
    n = len(query)
    if balanced and n % 2:
        raise ValueError(f"balanced sequences need an even number; got {n}.")
    match_first = rng.integers(2, size=n).astype(bool)
    label_query = np.repeat([1, 0], n // 2) if balanced else rng.integers(2, size=n)
    first_label = np.where(match_first, label_query, 1 - label_query)
    images = np.stack([np.where(match_first, match, other), np.where(match_first, other, match), query], axis=1)
    labels = np.stack([first_label, 1 - first_label, np.full(n, QUERY_LABEL)], axis=1)
    return SequenceIndex(images, labels, 2.0 * label_query - 1.0)


# --------------------------------------------------------------------------- Omniglot sequences


@dataclass(frozen=True)
class CharacterSplit:
    """Disjoint sorted character ids: ``train``, ``validation`` (temperature/model selection), ``test``."""

    train: np.ndarray
    validation: np.ndarray
    test: np.ndarray


def split_characters(
    n_characters: int, *, validation: float = 0.1, test: float = 0.25, seed: int = 0
) -> CharacterSplit:
    """Split characters ``0..n_characters-1`` at random (by ``seed``) into train / validation / test.

    The validation and test sizes are ``round(fraction * n_characters)``; training keeps the rest.
    """
    n_characters, seed = check_count(n_characters, "n_characters"), check_count(seed, "seed", minimum=0)
    validation, test = check_nonnegative(validation, "validation"), check_nonnegative(test, "test")
    if not (validation < 1 and test < 1 and validation + test < 1):
        raise ValueError(f"validation and test must be fractions in [0, 1) with a sum < 1; got {validation}, {test}.")
    perm = np.random.default_rng(seed).permutation(n_characters)
    n_val, n_test = round(validation * n_characters), round(test * n_characters)
    if n_characters - n_val - n_test < 2:
        raise ValueError(f"{n_characters} characters leave fewer than 2 for training; lower validation or test.")
    return CharacterSplit(
        train=np.sort(perm[n_val + n_test :]),
        validation=np.sort(perm[:n_val]),
        test=np.sort(perm[n_val : n_val + n_test]),
    )


def _drawings_by_character(labels, characters) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(chars, members, counts, starts)``: the characters to draw from (``characters``, or every one
    in ``labels``), the indices of their images grouped by character (stable order), how many each has,
    and where each group starts in ``members``."""
    labels = np.asarray(labels)
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 1-d integer array of character ids; got {labels.dtype} {labels.shape}.")
    chars = np.unique(labels if characters is None else characters)
    if not np.all(np.isin(chars, labels)):
        raise ValueError(f"characters {np.setdiff1d(chars, labels)[:10]} have no images in labels.")
    members = np.flatnonzero(np.isin(labels, chars))
    members = members[np.argsort(labels[members], kind="stable")]
    counts = np.bincount(np.searchsorted(chars, labels[members]), minlength=len(chars))
    return chars, members, counts, np.cumsum(counts) - counts


def icl_indices(
    labels: np.ndarray, rng: Rng, n: int, *, characters: np.ndarray | None = None, balanced: bool = False
) -> SequenceIndex:
    """``n`` random 2-way 1-shot sequences as indices into the images that ``labels`` describes.

    Each sequence takes two distinct characters (a uniform pair), one context drawing of each, and
    a query that is another drawing of one of the two (either with probability 1/2); the context
    order and the label permutation are random (§4.2: labels assigned "in no particular order").

    Args:
      labels: ``[n_images]`` character id of each image.
      rng: a ``numpy.random.Generator`` or a seed.
      n: number of sequences.
      characters: ids of the characters to draw from (e.g. ``split_characters(...).test``); all if None.
      balanced: the first ``n/2`` sequences have ``y = +1``, the rest ``y = -1`` (as the authors' theory data).
    """
    chars, members, counts, starts = _drawings_by_character(labels, characters)
    n = check_count(n, "n")
    if len(chars) < 2 or counts.min() < 2:
        raise ValueError("sequences need at least 2 characters with at least 2 drawings each.")
    rng = check_rng(rng)
    c_query = rng.integers(len(chars), size=n)
    c_other = (c_query + rng.integers(1, len(chars), size=n)) % len(chars)
    j_match = rng.integers(counts[c_query])
    j_query = (j_match + rng.integers(1, counts[c_query])) % counts[c_query]
    j_other = rng.integers(counts[c_other])
    return _arrange(
        members[starts[c_query] + j_match], members[starts[c_other] + j_other], members[starts[c_query] + j_query],
        rng, balanced,
    )


def icl_sequences(
    patches: np.ndarray,
    labels: np.ndarray,
    rng: Rng,
    n: int,
    *,
    characters: np.ndarray | None = None,
    balanced: bool = False,
    channels: int = 3,
    label_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of :func:`icl_indices` sequences: ``x[n, 48, 64 * channels]``, ``y[n]``.

    ``patches`` ``[n_images, 16, 64]`` come from :func:`encode_images`, once per data set; the
    sequences are then built by indexing, fast enough for fresh gradient-descent batches.
    ``channels`` and ``label_seed``: see :func:`assemble_tokens`.
    """
    patches = np.asarray(patches)
    if patches.shape[1:] != (PATCHES_PER_IMAGE, PIXELS_PER_PATCH) or len(patches) != len(labels):
        raise ValueError(f"patches must be [len(labels), 16, 64]; got {patches.shape} for {len(labels)} labels.")
    index = icl_indices(labels, rng, n, characters=characters, balanced=balanced)
    return assemble_tokens(patches, index.images, index.labels, channels=channels, label_seed=label_seed), index.y


def one_shot_run_images(runs: OneShotRuns) -> np.ndarray:
    """All drawings of the runs, ``[2 R 20, H, W]``: the training drawings (run-major), then the test drawings."""
    size = runs.training.shape[-2:]
    return np.concatenate([runs.training.reshape(-1, *size), runs.test.reshape(-1, *size)])


def one_shot_run_indices(
    runs: OneShotRuns, rng: Rng, n: int | None = None, *, balanced: bool = False
) -> SequenceIndex:
    """Sequences from the one-shot runs (evaluation alphabets), as indices into :func:`one_shot_run_images`.

    A sequence takes two classes of one run: the contexts are their training drawings, the query
    the test item of one of them. All ``R * 20 * 19`` (run, test item, other class) choices are
    candidates; ``n=None`` takes them all, else ``n`` without replacement. Context order and label
    permutation are random, or ``balanced`` as in :func:`icl_indices`.
    """
    if not isinstance(runs, OneShotRuns):
        raise TypeError(f"runs must be a paththeory.tasks.data.OneShotRuns (load_one_shot_runs()); got {type(runs).__name__}.")
    n = None if n is None else check_count(n, "n")
    n_runs, n_classes = runs.answers.shape
    total = n_runs * n_classes * (n_classes - 1)
    if n is not None and not n <= total:
        raise ValueError(f"n must be between 1 and {total} (all candidate sequences); got {n}.")
    rng = check_rng(rng)
    pick = rng.permutation(total) if n is None else rng.choice(total, size=n, replace=False)
    run, item, other = np.unravel_index(pick, (n_runs, n_classes, n_classes - 1))
    answer = runs.answers[run, item]
    other = other + (other >= answer)  # skip the query's own class
    test_offset = n_runs * n_classes
    first = run * n_classes  # index of the run's first drawing
    return _arrange(first + answer, first + other, test_offset + first + item, rng, balanced)


def one_shot_run_sequences(
    runs: OneShotRuns, rng: Rng, n: int | None = None, *, balanced: bool = False, channels: int = 3, label_seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of :func:`one_shot_run_indices` sequences: ``x[n, 48, 64 * channels]``, ``y[n]``."""
    index = one_shot_run_indices(runs, rng, n, balanced=balanced)
    patches = encode_images(one_shot_run_images(runs))
    return assemble_tokens(patches, index.images, index.labels, channels=channels, label_seed=label_seed), index.y


# --------------------------------------------------------------------------- out of distribution


def ood_sequences(
    dataset: Literal["mnist", "fashion"] = "mnist",
    n_per_class: int | None = 500,
    *,
    context: Literal["auto", "train", "test"] = "auto",
    root: str | os.PathLike | None = None,
    download: bool = True,
    channels: int = 3,
    label_seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-distribution sequences: Fashion-MNIST T-shirt/top vs Trouser (the paper's OOD set of
    Fig. 3, §4.2) or MNIST 0 vs 1 (its App. H.2.2).

    The paper's text says only that the two context images come from two distinct classes of the
    data set; the two classes, the choice of images and the fixed context order below follow the
    authors' repository. Queries are the first ``n_per_class`` test images of class 0, then of
    class 1; targets are ``-1`` then ``+1``, so the labels are balanced. Every sequence is
    ``[class-0 context (label 0), class-1 context (label 1), query]`` in this fixed order (the
    Omniglot sequences have a random order). Images are resized 28 -> 32 and normalised with the
    data set's mean and std.

    Args:
      n_per_class: queries per class; ``None`` takes the most that the data allow: every test
        image of the smaller class with training-set contexts, or half of them with test-set
        contexts (the other half are the contexts, disjoint from the queries). With the shipped Fashion-MNIST
        subset (the first 4,443 of the 10,000 test images: 452 T-shirts, 429 trousers) and no
        training set, that is 214 per class.
      context: where the context images come from.
        ``"train"``: as the authors, query ``i`` (its position among all class-0 then all class-1
        test images) gets the ``i``-th class-0 and class-1 training images.
        ``"test"``: for offline use, where only the MNIST *test* set exists: the test images of each
        class are split, the first ``n_per_class`` are queries and the rest are contexts (cycled:
        query ``i`` gets the ``i mod m``-th of the ``m`` remaining images of each class), so context
        and query images are disjoint.
        ``"auto"``: ``"train"`` if the training set can be found or downloaded, else ``"test"``
        with a warning.
      root, download: see :func:`paththeory.tasks.data.locate`.
      channels, label_seed: see :func:`assemble_tokens`; use the values of the training data.

    Returns:
      ``x[2 n_per_class, 48, 64 * channels]``, ``y[2 n_per_class]``.
    """
    if dataset not in ("mnist", "fashion"):
        raise ValueError(f"dataset must be 'mnist' or 'fashion'; got {dataset!r}.")
    if context not in ("auto", "train", "test"):
        raise ValueError(f"context must be 'auto', 'train' or 'test'; got {context!r}.")
    n_per_class = None if n_per_class is None else check_count(n_per_class, "n_per_class")
    fashion = dataset == "fashion"
    test = load_mnist("test", fashion=fashion, root=root, download=download)
    queries = [np.flatnonzero(test.labels == c) for c in (0, 1)]
    train = None
    if context != "test":
        try:
            train = load_mnist("train", fashion=fashion, root=root, download=download)
        except DataNotFoundError as err:
            if context == "train":
                raise
            warnings.warn(f"{err} Using contexts from the test set instead (context='test').", stacklevel=2)
    smallest = min(len(q) for q in queries)
    most = smallest if train is not None else smallest - 1  # test contexts: keep >= 1 image for contexts
    if n_per_class is None:
        n_per_class = smallest if train is not None else smallest // 2
    if not 1 <= n_per_class <= most:
        raise ValueError(f"n_per_class must be between 1 and {most} for {dataset} with "
                         f"{'training' if train is not None else 'test'}-set contexts; got {n_per_class}.")
    if train is not None:
        source = train.images
        position = np.concatenate([np.arange(n_per_class), len(queries[0]) + np.arange(n_per_class)])
        contexts = [np.flatnonzero(train.labels == c)[position] for c in (0, 1)]
    else:
        source = test.images
        position = np.arange(2 * n_per_class)
        pools = [q[n_per_class:] for q in queries]
        contexts = [pool[position % len(pool)] for pool in pools]
    query_images = test.images[np.concatenate([q[:n_per_class] for q in queries])]
    patches = encode_images(np.concatenate([source[contexts[0]], source[contexts[1]], query_images]), dataset)
    n = 2 * n_per_class
    images = np.arange(3 * n).reshape(3, n).T  # [class-0 context, class-1 context, query]
    image_labels = np.broadcast_to(np.array([0, 1, QUERY_LABEL]), (n, 3))
    y = np.repeat([-1.0, 1.0], n_per_class)
    return assemble_tokens(patches, images, image_labels, channels=channels, label_seed=label_seed), y


# --------------------------------------------------------------------------- N-way sequences


class NWayIndex(NamedTuple):
    """``C``-way sequences as image indices: ``images[P, C + 1]`` (the ``C`` contexts, then the query),
    their label ids ``labels[P, C + 1]`` (a permutation of ``0..C-1`` on the contexts, ``C`` on the
    query) and ``classes[P]``, the label id of the context of the query's class (the target)."""

    images: np.ndarray
    labels: np.ndarray
    classes: np.ndarray


def _check_ways(n_ways: int, available: int, what: str) -> int:
    n_ways = check_count(n_ways, "n_ways")
    if n_ways < 2:
        raise ValueError(f"n_ways must be at least 2 (one class is no classification); got {n_ways}.")
    if n_ways > available:
        raise ValueError(f"n_ways = {n_ways} needs {n_ways} distinct classes, but {what} hold only {available}.")
    return n_ways


def nway_label_vectors(n_ways: int, dim: int = 3 * PIXELS_PER_PATCH, seed: int = 0, *,
                       fresh: bool = False) -> np.ndarray:
    """Label vectors ``[C + 1, dim]`` for ``C``-way sequences: rows ``0, 1`` and the query's row ``C``
    are the 2-way vectors ``E_0, E_1, E_2`` of :func:`label_vectors` (``seed``); rows ``2..C-1`` are
    fresh N(0, 1) vectors drawn like them from the generator seeded ``[seed, 1]`` (the same prefix for
    every ``C``). A network trained on 2-way sequences has never seen rows ``2..C-1``. With ``fresh``
    every context row ``0..C-1`` is new (generator ``[seed, 2]``) and only the query's ``E_2`` is kept:
    the control that changes the label vectors alone.

    Example:
      >>> E = label_vectors(); F = nway_label_vectors(2, fresh=True)
      >>> bool(np.allclose(F[2], E[2])), bool(np.allclose(F[:2], E[:2]))
      (True, False)
    """
    n_ways = _check_ways(n_ways, n_ways, "")
    base = label_vectors(dim, seed)
    seed = check_count(seed, "seed", minimum=0)
    if check_flag(fresh, "fresh"):
        return np.concatenate([np.random.default_rng([seed, 2]).standard_normal((n_ways, dim)), base[2:]])
    extra = np.random.default_rng([seed, 1]).standard_normal((n_ways - 2, dim))
    return np.concatenate([base[:2], extra, base[2:]])


def _arrange_nway(contexts: np.ndarray, query: np.ndarray, rng: np.random.Generator) -> NWayIndex:
    """Random context order and label permutation; ``contexts[:, 0]`` is of the query's class."""
    n, c = contexts.shape
    order = np.argsort(rng.random((n, c)), axis=1)  # column j shows context order[:, j]
    label_of = np.argsort(rng.random((n, c)), axis=1)  # label id of each (unshuffled) context
    images = np.concatenate([np.take_along_axis(contexts, order, 1), query[:, None]], axis=1)
    labels = np.concatenate([np.take_along_axis(label_of, order, 1), np.full((n, 1), c)], axis=1)
    return NWayIndex(images, labels, label_of[:, 0])


def nway_indices(
    labels: np.ndarray, rng: Rng, n: int, n_ways: int, *, characters: np.ndarray | None = None
) -> NWayIndex:
    """``n`` random ``C``-way 1-shot sequences (``C = n_ways``) as indices into the images ``labels``
    describes: ``C`` distinct characters, one context drawing of each, and a query that is another
    drawing of one of them (each equally likely); random context order and label permutation.
    ``n_ways = 2`` gives the sequences of :func:`icl_indices` (not balanced). Arguments as there."""
    chars, members, counts, starts = _drawings_by_character(labels, characters)
    n = check_count(n, "n")
    n_ways = _check_ways(n_ways, len(chars), "the characters given")
    if counts.min() < 2:
        raise ValueError("every character needs at least 2 drawings (a context and a query).")
    rng = check_rng(rng)
    picked = np.argsort(rng.random((n, len(chars))), axis=1)[:, :n_ways]  # column 0: the query's class
    drawing = rng.integers(counts[picked])
    query = (drawing[:, 0] + rng.integers(1, counts[picked[:, 0]])) % counts[picked[:, 0]]
    return _arrange_nway(members[starts[picked] + drawing], members[starts[picked[:, 0]] + query], rng)


def one_shot_run_nway_indices(runs: OneShotRuns, rng: Rng, n_ways: int, n: int | None = None) -> NWayIndex:
    """``C``-way sequences from the one-shot runs, as indices into :func:`one_shot_run_images`: the query
    is a run's test item, the contexts the training drawings of its class and of ``C - 1`` other
    classes of the run drawn at random. ``n=None`` takes every (run, test item) once (``R 20``
    sequences; at ``C = 20`` these are the official runs, each scored 20-way), else ``n`` of them
    without replacement. Random context order and label permutation."""
    if not isinstance(runs, OneShotRuns):
        raise TypeError(f"runs must be a paththeory.tasks.data.OneShotRuns (load_one_shot_runs()); got {type(runs).__name__}.")
    n_runs, n_classes = runs.answers.shape
    n_ways = _check_ways(n_ways, n_classes, "the one-shot runs")
    total = n_runs * n_classes
    n = total if n is None else check_count(n, "n")
    if n > total:
        raise ValueError(f"n must be between 1 and {total} (every run's test items); got {n}.")
    rng = check_rng(rng)
    run, item = np.unravel_index(rng.permutation(total)[:n], (n_runs, n_classes))
    answer = runs.answers[run, item]
    others = np.argsort(rng.random((n, n_classes - 1)), axis=1)[:, : n_ways - 1]
    others = others + (others >= answer[:, None])  # skip the query's own class
    first = run * n_classes  # index of the run's first drawing
    contexts = first[:, None] + np.concatenate([answer[:, None], others], axis=1)
    return _arrange_nway(contexts, total + first + item, rng)


def assemble_nway_tokens(
    patches: np.ndarray, index: NWayIndex, *, channels: int = 3, label_seed: int = 0, fresh_labels: bool = False,
    query_slot: int | None = None,
) -> np.ndarray:
    """Tokens of ``C``-way sequences: ``x[P, 16 (C + 1), 64 channels]``, built as :func:`assemble_tokens`
    with :func:`nway_label_vectors` and the sinusoidal positions continued beyond the 48 of the 2-way
    sequences (:func:`positional_encoding` standardised over those 48). At ``C = 2`` these are exactly
    the tokens of :func:`assemble_tokens`. Two controls change one thing each: ``fresh_labels`` gives
    every context fresh label vectors (``nway_label_vectors(fresh=True)``); ``query_slot = k >= C``
    moves the query's 16 tokens to the (0-based) positions ``16 k .. 16 k + 15`` of image slot ``k`` (at ``C = 2``,
    ``k = 5`` is where the query of a 5-way sequence sits), the contexts keeping theirs."""
    channels, label_seed = check_count(channels, "channels"), check_count(label_seed, "label_seed", minimum=0)
    patches = np.asarray(patches)
    if patches.ndim != 3 or patches.shape[1:] != (PATCHES_PER_IMAGE, PIXELS_PER_PATCH):
        raise ValueError(f"patches must be [n, 16, 64] (encode_images); got {patches.shape}.")
    images, image_labels = np.asarray(index.images), np.asarray(index.labels)
    if images.ndim != 2 or images.shape[1] < 3 or image_labels.shape != images.shape:
        raise ValueError(f"index.images and index.labels must both be [P, C + 1], C >= 2; got {images.shape} "
                         f"and {image_labels.shape}.")
    n_ways = images.shape[1] - 1
    if not (np.issubdtype(images.dtype, np.integer) and np.all((images >= 0) & (images < len(patches)))):
        raise ValueError(f"index.images must hold indices into patches, whole numbers in [0, {len(patches) - 1}].")
    if not (np.issubdtype(image_labels.dtype, np.integer) and np.all((image_labels >= 0) & (image_labels <= n_ways))):
        raise ValueError(f"index.labels must hold label ids 0..{n_ways - 1} (contexts) or {n_ways} (the query).")
    slot = n_ways if query_slot is None else check_count(query_slot, "query_slot", minimum=0)
    if slot < n_ways:
        raise ValueError(f"query_slot must be at least C = {n_ways} (the slots before it hold the contexts); "
                         f"got {slot}.")
    dim = PIXELS_PER_PATCH * channels
    pe = positional_encoding((slot + 1) * PATCHES_PER_IMAGE, dim, standardise_over=N_TOKENS)
    pe = np.concatenate([pe[: n_ways * PATCHES_PER_IMAGE], pe[slot * PATCHES_PER_IMAGE:]])
    vectors = nway_label_vectors(n_ways, dim, label_seed, fresh=fresh_labels)
    return _tokens(patches, images, image_labels, vectors, pe, channels)
