"""A C-class hidden-Markov-chain task whose classes differ only in their transitions (the book's own).

**Data.** A hidden chain ``s_1..s_T`` of three states ``0, 1, 2`` starts uniformly and moves at each
step with the probabilities ``(p_same, p_forward, p_backward)`` of its class: stay, go to
``s + 1 mod 3``, go to ``s - 1 mod 3``. Every class's transition matrix is circulant, hence doubly
stochastic, so the uniform start is stationary: at every position each state has probability 1/3
in every class, and **state occupancies carry no class information**; only the transition counts
do. The ``C`` classes sit on a circle of radius ``strength / sqrt(6)`` around ``(1/3, 1/3, 1/3)`` in
the probability simplex (``strength`` in ``(0, 1)``, 1 being the circle inscribed in the simplex),
the first one pointing towards "stay". State ``s`` emits ``v_s + sigma eps`` in ``R^{N_f}`` with
``v_s = sqrt(3)`` on the ``s``-th third of the features (``|v_s|^2 = N_f``, orthogonal) and
``eps ~ N(0, I)``. Tokens are laid out as in the binary task (:mod:`paththeory.tasks.markov`): a
noise-free bos token, then the ``T`` emissions, each with a one-hot position appended.

**Heads.** Layer 1 holds two transition detectors, bilinear scores ``W = beta [[A, 0], [0, B]]``
with the position block ``B`` of the binary task's good head (the previous token scores 1, bos 3/2)
and a feature block that scores 1 when the previous token's state and the query's state form the
transition: ``A = sum_s v_s v_{s'}^T / N_f^2`` with ``s' = s`` ("same") or ``s' = s + 1 mod 3``
("forward"). A query attends to its previous token when the transition is of the head's type and to
bos otherwise. Layer 2 holds the uniform head and a random head of the binary task. Paths
``pi = 2 h_1 + h_2``: :data:`PATH_NAMES`.

**Labels.** Class ``c`` is coded as a row of ``[P, C]`` labels: ``"simplex"`` (default) the unit vectors
``sqrt(C / (C - 1)) (e_c - 1 / C)`` (pairwise overlap ``-1 / (C - 1)``), or ``"onehot"`` ``e_c``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from paththeory._checks import (
    as_float_array,
    check_allocation,
    check_count,
    check_finite,
    check_nonnegative,
    check_rng,
)
from paththeory.model import Architecture, Readout, ScoreAttention
from paththeory.tasks.markov import BETA, random_head, token_dim, uniform_head

N_STATES = 3
N_FEATURES = 60
SEQ_LEN = 20
N_CLASSES = 3
STRENGTH = 0.85
TRAIN_SEED, TEST_SEED, HEAD_SEED = 31, 67, 7
TRANSITIONS = ("same", "forward", "backward")
PATH_NAMES = ("same-unif", "same-rand", "fwd-unif", "fwd-rand")
Coding = Literal["simplex", "onehot"]


@dataclass(frozen=True)
class MulticlassData:
    """One data set: tokens ``x[P, T+1, N_f+T+1]``, labels ``y[P, C]``, classes ``[P]``, states ``[P, T]``."""

    x: np.ndarray
    y: np.ndarray
    classes: np.ndarray
    states: np.ndarray


def _check_sizes(n_features: int, seq_len: int) -> tuple[int, int]:
    """``(n_features, seq_len)`` as ints: a multiple of 6 (three state thirds, even halves) and >= 2 tokens."""
    n_features = check_count(n_features, "n_features", minimum=6)
    seq_len = check_count(seq_len, "seq_len", minimum=2)
    if n_features % 6:
        raise ValueError(f"n_features must be a multiple of 6 (one third per state, an even number for the "
                         f"binary task's heads); got {n_features}.")
    return n_features, seq_len


def _check_classes(n_classes: int) -> int:
    n_classes = check_count(n_classes, "n_classes", minimum=1)
    if n_classes < 2:
        raise ValueError(f"n_classes must be at least 2 (a classification task); got {n_classes}.")
    return n_classes


def transition_probs(n_classes: int = N_CLASSES, strength: float = STRENGTH) -> np.ndarray:
    """``[C, 3]`` probabilities ``(p_same, p_forward, p_backward)`` of each class.

    Class ``c`` is the point at angle ``2 pi c / C`` on the circle of radius ``strength / sqrt(6)``
    around the simplex centre, angle 0 pointing towards "same". Every row is positive and sums to 1.

    Example:
      >>> transition_probs(3).round(3).tolist()[0]
      [0.617, 0.192, 0.192]
    """
    n_classes = _check_classes(n_classes)
    strength = check_finite(strength, "strength")
    if not 0.0 < strength < 1.0:
        raise ValueError(f"strength must lie in (0, 1) (1 is the circle inscribed in the simplex); got {strength}.")
    e1 = np.array([2.0, -1.0, -1.0]) / math.sqrt(6.0)  # towards "same", unit length in the sum-zero plane
    e2 = np.array([0.0, 1.0, -1.0]) / math.sqrt(2.0)
    angles = 2.0 * math.pi * np.arange(n_classes) / n_classes
    radius = strength / math.sqrt(6.0)
    return 1.0 / 3.0 + radius * (np.cos(angles)[:, None] * e1 + np.sin(angles)[:, None] * e2)


def hidden_chains(n: int, probs, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` chains of ``seq_len`` states in ``{0, 1, 2}``: uniform start, steps ``0, +1, -1`` (mod 3)
    with probabilities ``probs = (p_same, p_forward, p_backward)``: ``[n, seq_len]`` ints."""
    p = as_float_array(probs, "probs", ndim=1)
    if p.shape != (3,) or np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, abs_tol=1e-12):
        raise ValueError(f"probs must be three probabilities (p_same, p_forward, p_backward) summing to 1; got {p}.")
    n, seq_len, rng = check_count(n, "n", minimum=0), check_count(seq_len, "seq_len"), check_rng(rng)
    check_allocation(16 * n * seq_len, f"n = {n} chains of {seq_len} states")
    start = rng.integers(0, N_STATES, size=(n, 1))
    steps = rng.choice(np.array([0, 1, -1]), size=(n, seq_len - 1), p=p)
    return (start + np.concatenate([np.zeros((n, 1), int), np.cumsum(steps, axis=1)], axis=1)) % N_STATES


def state_vectors(n_features: int = N_FEATURES) -> np.ndarray:
    """``[3, N_f]``: ``v_s = sqrt(3)`` on the ``s``-th third of the features, 0 elsewhere (``|v_s|^2 = N_f``)."""
    n_features, _ = _check_sizes(n_features, SEQ_LEN)
    return math.sqrt(3.0) * np.kron(np.eye(N_STATES), np.ones(n_features // N_STATES))


def encode_labels(classes, n_classes: int, coding: Coding = "simplex") -> np.ndarray:
    """Class indices ``[P]`` as labels ``[P, C]``: simplex rows ``sqrt(C/(C-1)) (e_c - 1/C)`` or one-hot ``e_c``.

    Example:
      >>> encode_labels([0, 1], 2).round(3).tolist()
      [[0.707, -0.707], [-0.707, 0.707]]
    """
    n_classes = _check_classes(n_classes)
    if coding not in ("simplex", "onehot"):
        raise ValueError(f"coding must be 'simplex' or 'onehot'; got {coding!r}.")
    c = as_float_array(classes, "classes", ndim=1)
    if np.any(c != np.round(c)) or np.any(c < 0) or np.any(c >= n_classes):
        raise ValueError(f"classes must be whole numbers in 0..{n_classes - 1}; got values {np.unique(c)[:6]}.")
    onehot = np.eye(n_classes)[c.astype(int)]
    if coding == "onehot":
        return onehot
    return math.sqrt(n_classes / (n_classes - 1.0)) * (onehot - 1.0 / n_classes)


def correct(mean, classes) -> np.ndarray:
    """Whether ``argmax_c <f^c>`` (the decoding of :func:`encode_labels`, one-hot or simplex) is the true
    class, per sequence: ``[P]`` bool from outputs ``mean [P, C]`` and classes ``[P]``.

    Example:
      >>> correct(encode_labels(np.array([2, 0]), 3), np.array([2, 1])).tolist()
      [True, False]
    """
    m, c = as_float_array(mean, "mean", ndim=2), as_float_array(classes, "classes", ndim=1)
    if c.shape[0] != m.shape[0]:
        raise ValueError(f"mean [P, C] and classes [P] must hold the same P sequences; got {m.shape} and {c.shape}.")
    return np.argmax(m, axis=1) == c


def sample_task(
    n_examples: int,
    *,
    n_classes: int = N_CLASSES,
    seed: int = TRAIN_SEED,
    coding: Coding = "simplex",
    strength: float = STRENGTH,
    sigma: float = 1.0,
    seq_len: int = SEQ_LEN,
    n_features: int = N_FEATURES,
) -> MulticlassData:
    """Draw ``n_examples`` sequences, ``n_examples / C`` per class in class order.

    Args:
      n_examples: number of sequences ``P``, a multiple of ``n_classes``.
      n_classes: ``C >= 2``.
      seed: seed of ``numpy.random.default_rng``.
      coding: ``"simplex"`` or ``"onehot"`` labels (:func:`encode_labels`).
      strength: how far apart the classes' transition probabilities are (:func:`transition_probs`).
      sigma: standard deviation of the isotropic emission noise.
    Returns:
      :class:`MulticlassData` with ``x[P, seq_len+1, n_features+seq_len+1]`` float64.
    """
    n_features, seq_len = _check_sizes(n_features, seq_len)
    probs = transition_probs(n_classes, strength)
    n_examples, seed = check_count(n_examples, "n_examples", minimum=n_classes), check_count(seed, "seed", minimum=0)
    if n_examples % n_classes:
        raise ValueError(f"n_examples must be a multiple of n_classes = {n_classes} (as many per class); "
                         f"got {n_examples}.")
    check_allocation(8 * n_examples * (seq_len + 1) * (token_dim(n_features, seq_len) + n_features),
                     f"n_examples = {n_examples} sequences of {seq_len} tokens")
    sigma = check_nonnegative(sigma, "sigma")
    rng = np.random.default_rng(seed)
    per_class = n_examples // n_classes
    states = np.concatenate([hidden_chains(per_class, p, seq_len, rng) for p in probs])
    classes = np.repeat(np.arange(n_classes), per_class)
    emissions = state_vectors(n_features)[states] + sigma * rng.standard_normal((n_examples, seq_len, n_features))
    x = np.zeros((n_examples, seq_len + 1, token_dim(n_features, seq_len)))
    x[:, 1:, :n_features] = emissions  # token 0 is the noise-free bos
    x[:, np.arange(seq_len + 1), n_features + np.arange(seq_len + 1)] = 1.0
    return MulticlassData(x=x, y=encode_labels(classes, n_classes, coding), classes=classes, states=states)


def transition_counts(states) -> np.ndarray:
    """``[P, 3]`` counts of "same", "forward" and "backward" steps of each chain ``states [P, T]``."""
    s = as_float_array(states, "states", ndim=2)
    steps = np.diff(s, axis=1) % N_STATES  # 0 same, 1 forward, 2 backward
    return np.stack([(steps == k).sum(axis=1) for k in range(N_STATES)], axis=1)


# --------------------------------------------------------------------------- heads


def transition_head(
    kind: Literal["same", "forward"], *, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN
) -> np.ndarray:
    """Layer-1 detector ``W = beta [[A, 0], [0, B]]`` ``[N0, N0]`` of one transition type (row = key).

    ``A = sum_s v_s v_{s+k}^T / N_f^2`` (``k = 0`` "same", ``k = 1`` "forward"), so that the noise-free
    feature score of key state ``s`` and query state ``s'`` is 1 when ``s' = s + k mod 3`` and 0
    otherwise. ``B[a, a+1] = 1`` (previous token), ``B[0, b] = 3/2`` (bos). Noise-free scores of a query
    ``t >= 2``: previous key ``2 beta`` if the transition matches and ``beta`` if not, bos ``1.5 beta``,
    any other key at most ``beta``.
    """
    if kind not in ("same", "forward"):
        raise ValueError(f"kind must be 'same' or 'forward'; got {kind!r}.")
    n_features, seq_len = _check_sizes(n_features, seq_len)
    beta = check_finite(beta, "beta")
    v = state_vectors(n_features)
    shift = 0 if kind == "same" else 1
    pos = np.zeros((seq_len + 1, seq_len + 1))
    pos[np.arange(1, seq_len), np.arange(2, seq_len + 1)] = 1.0
    pos[0, 1:] = 1.5
    w = np.zeros((token_dim(n_features, seq_len),) * 2)
    w[:n_features, :n_features] = v.T @ np.roll(v, -shift, axis=0) / n_features**2
    w[n_features:, n_features:] = pos
    return beta * w


def four_paths(
    *,
    beta: float = BETA,
    head_seed: int = HEAD_SEED,
    readout: Readout = "last",
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
) -> Architecture:
    """Layer 1 = ["same", "forward"] detectors, layer 2 = [uniform, random]: paths :data:`PATH_NAMES`.

    The random head is the binary task's with seed ``240 + head_seed``.
    """
    sizes = dict(beta=beta, n_features=n_features, seq_len=seq_len)
    layer1 = np.stack([transition_head("same", **sizes), transition_head("forward", **sizes)])
    layer2 = np.stack([uniform_head(**sizes), random_head(240 + check_count(head_seed, "head_seed", 0), **sizes)])
    return Architecture((ScoreAttention(layer1), ScoreAttention(layer2)), readout=readout)
