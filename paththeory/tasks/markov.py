"""Hidden-Markov-chain classification: the data, the designed attention heads, the variants (paper §4.1, App. G).

**Data (paper §4.1, App. G.1).** A hidden chain ``sigma_1..sigma_T`` of ``T = 30`` states ``+-1`` starts
uniformly and flips sign at each step with probability ``p``: ``p = 0.3`` for class ``y = +1``,
``p = 0.7`` for ``y = -1``. State ``sigma`` emits ``f_t = v_sigma + eta_t`` in ``R^200`` with
``v_+ = sqrt(2) (1_100, 0_100)``, ``v_- = sqrt(2) (0_100, 1_100)`` and noise::

    eta = sigma_u u u^T eps + sigma_w w w^T eps + sigma_perp (I - u u^T - w w^T) eps,
    eps ~ N(0, I_200),  u = (v_+ - v_-)/|v_+ - v_-|,  w = (v_+ + v_-)/|v_+ + v_-|.

Naming trap: the authors' code calls ``sigma_u`` "perpendicular" and ``sigma_w`` "parallel";
the paper's ``sigma_par`` covers both in-plane directions and its ``sigma_perp`` is the
out-of-plane strength (``out_of_plane_noise_strength`` in the code). A noise-free bos token
(features 0) is prepended and a one-hot position (31 of them, bos = 0) is appended to every
token, so tokens are ``x[P, 31, 231]``. The first half of a data set has ``y = +1``.

**Heads (paper App. G.2).** ``ScoreAttention`` matrices ``W[N0, N0]`` (row = key, column = query)
with hardness ``beta = 10`` multiplied in:

* layer-1 good head ("same_token"): attends to the previous token when it is in the same
  state as the query, to bos otherwise;
* layer-2 good head ("uniform_attention"): exactly uniform over all 31 tokens;
* random heads: Gaussian ``W`` with entry standard deviations ``beta/200`` (feature block),
  ``beta`` (position block) and ``beta/sqrt(200)`` (feature x position blocks);
* the "blank" head ``W = 0``, also exactly uniform attention.

**Paths of the four-path network** (``pi = 2 h_1 + h_2``): 0 = good "g" (good, uniform),
1 = adversarial "a1" (good, random), 2 = denoising "d" (random, uniform), 3 = adversarial
"a2" (random, random). Plots show them in the order g, d, a1, a2 (:data:`DISPLAY_ORDER`).

**Readout token.** Every variant reads out the **last** token by default, as the authors' code
does; the paper's text says the first token. Pass ``readout="first"`` to follow the text.

Random draws use ``numpy.random.default_rng`` with the authors' torch seeds (train 27,
test 59, random heads 147 and 247); torch's streams cannot be reproduced, so the draws
differ from the paper's while their distribution is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Literal

import numpy as np

from paththeory._checks import (
    check_allocation,
    check_count,
    check_finite,
    check_nonnegative,
    check_rng,
)
from paththeory.model import Architecture, Readout, ScoreAttention, path_features

N_FEATURES = 200
SEQ_LEN = 30
BETA = 10.0
FLIP_PROBS = (0.3, 0.7)  # flip probability of class y = +1 and of class y = -1
NOISY_SIGMA_PERP = 5.0  # out-of-plane noise of the two-path experiment (Fig. 2e)
TRAIN_SEED, TEST_SEED, HEAD_SEED = 27, 59, 7
FOUR_PATH_NAMES = ("g", "a1", "d", "a2")
TWO_PATH_NAMES = ("g", "d")
GOOD_PATH_NAMES = ("g",)
DISPLAY_ORDER = (0, 2, 1, 3)  # matrix indices of g, d, a1, a2


@dataclass(frozen=True)
class MarkovData:
    """One data set: tokens ``x[P, T+1, N_f+T+1]``, labels ``y[P]`` (+-1), hidden states ``[P, T]``."""

    x: np.ndarray
    y: np.ndarray
    states: np.ndarray


def token_dim(n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> int:
    """``N0 = N_f + T + 1`` (features plus one-hot position, bos included)."""
    return n_features + seq_len + 1


def _check_sizes(n_features: int, seq_len: int) -> tuple[int, int]:
    """``(n_features, seq_len)`` as ints: an even number of features >= 2 and at least 2 tokens."""
    n_features, seq_len = check_count(n_features, "n_features", minimum=2), check_count(seq_len, "seq_len", minimum=2)
    if n_features % 2:
        raise ValueError(f"n_features must be an even number >= 2 (v_+ and v_- split it in halves); got {n_features}.")
    return n_features, seq_len


def signal_vectors(n_features: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """``v_+ = sqrt(2) (1, 0)``, ``v_- = sqrt(2) (0, 1)`` in ``R^{N_f}``; ``|v_+-|^2 = N_f`` (paper §4.1)."""
    n_features, _ = _check_sizes(n_features, SEQ_LEN)
    half = n_features // 2
    v_plus = np.concatenate([np.full(half, math.sqrt(2.0)), np.zeros(half)])
    return v_plus, v_plus[::-1].copy()


def noise_directions(n_features: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors ``u = (v_+ - v_-)/|.|`` and ``w = (v_+ + v_-)/|.|``."""
    v_plus, v_minus = signal_vectors(n_features)
    u, w = v_plus - v_minus, v_plus + v_minus
    return u / np.linalg.norm(u), w / np.linalg.norm(w)


def hidden_chains(n: int, flip_prob: float, seq_len: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` chains of ``seq_len`` states +-1: uniform start, each step flips with ``flip_prob``: ``[n, seq_len]``."""
    if not 0.0 <= check_finite(flip_prob, "flip_prob") <= 1.0:
        raise ValueError(f"flip_prob must lie in [0, 1]; got {flip_prob}.")
    n, seq_len, rng = check_count(n, "n", minimum=0), check_count(seq_len, "seq_len"), check_rng(rng)
    check_allocation(16 * n * seq_len, f"n = {n} chains of {seq_len} states")
    start = rng.choice([-1.0, 1.0], size=(n, 1))
    flips = np.where(rng.random((n, seq_len - 1)) < flip_prob, -1.0, 1.0)
    return start * np.cumprod(np.concatenate([np.ones((n, 1)), flips], axis=1), axis=1)


def sample_task(
    n_examples: int,
    *,
    seed: int = TRAIN_SEED,
    seq_len: int = SEQ_LEN,
    n_features: int = N_FEATURES,
    flip_probs: tuple[float, float] = FLIP_PROBS,
    sigma_u: float = 1.0,
    sigma_w: float = 1.0,
    sigma_perp: float = 1.0,
) -> MarkovData:
    """Draw ``n_examples`` sequences, the first half of class ``y = +1`` (paper §4.1, App. G.1).

    Args:
      n_examples: even number of sequences ``P``.
      seed: seed of ``numpy.random.default_rng`` (authors' seeds: train 27, test 59).
      flip_probs: flip probability of class +1 and of class -1.
      sigma_u, sigma_w, sigma_perp: noise strengths along ``u``, along ``w`` and out of plane.
    Returns:
      :class:`MarkovData` with ``x[P, seq_len+1, n_features+seq_len+1]`` float64.
    """
    n_features, seq_len = _check_sizes(n_features, seq_len)
    n_examples, seed = check_count(n_examples, "n_examples", minimum=2), check_count(seed, "seed", minimum=0)
    if n_examples % 2:
        raise ValueError(f"n_examples must be an even number >= 2 (half per class); got {n_examples}.")
    check_allocation(8 * n_examples * (seq_len + 1) * (token_dim(n_features, seq_len) + 2 * n_features),
                     f"n_examples = {n_examples} sequences of {seq_len} tokens")
    sigma_u, sigma_w = check_nonnegative(sigma_u, "sigma_u"), check_nonnegative(sigma_w, "sigma_w")
    sigma_perp = check_nonnegative(sigma_perp, "sigma_perp")
    if not isinstance(flip_probs, (list, tuple)) or len(flip_probs) != 2:
        raise ValueError(f"flip_probs must be a pair (class +1, class -1) of probabilities; got {flip_probs!r}.")
    rng = np.random.default_rng(seed)
    half = n_examples // 2
    states = np.concatenate([hidden_chains(half, flip_probs[0], seq_len, rng),
                             hidden_chains(half, flip_probs[1], seq_len, rng)])
    y = np.concatenate([np.ones(half), -np.ones(half)])

    v_plus, v_minus = signal_vectors(n_features)
    u, w = noise_directions(n_features)
    eps = rng.standard_normal((n_examples, seq_len, n_features))
    eta = (sigma_perp * eps
           + (sigma_u - sigma_perp) * (eps @ u)[..., None] * u
           + (sigma_w - sigma_perp) * (eps @ w)[..., None] * w)
    features = np.where(states[..., None] > 0, v_plus, v_minus) + eta

    x = np.zeros((n_examples, seq_len + 1, token_dim(n_features, seq_len)))
    x[:, 1:, :n_features] = features  # token 0 is the noise-free bos
    x[:, np.arange(seq_len + 1), n_features + np.arange(seq_len + 1)] = 1.0
    return MarkovData(x=x, y=y, states=states)


# --------------------------------------------------------------------------- heads


def same_token_head(*, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> np.ndarray:
    """Layer-1 good head ``W = beta [[q q^T, 0], [0, B]]`` with ``q = (v_+ - v_-)/N_f`` (paper App. G.2.1).

    ``B[key, query]``: ``B[a, a+1] = 1`` for ``a = 1..T-1`` and ``B[0, b] = 3/2`` for ``b = 1..T``.
    Noise-free scores for a query ``t >= 2``: previous key ``beta (sigma_{t-1} sigma_t + 1)``,
    bos ``1.5 beta``, any other key ``beta sigma_s sigma_t``. Returns ``[N0, N0]``.
    """
    n_features, seq_len = _check_sizes(n_features, seq_len)
    beta = check_finite(beta, "beta")
    v_plus, v_minus = signal_vectors(n_features)
    q = (v_plus - v_minus) / n_features
    pos = np.zeros((seq_len + 1, seq_len + 1))
    pos[np.arange(1, seq_len), np.arange(2, seq_len + 1)] = 1.0
    pos[0, 1:] = 1.5
    w = np.zeros((token_dim(n_features, seq_len),) * 2)
    w[:n_features, :n_features] = np.outer(q, q)
    w[n_features:, n_features:] = pos
    return beta * w


def uniform_head(*, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> np.ndarray:
    """Layer-2 good head ``W = beta [[0, 0], [0, 1 1^T]]``: every score is ``beta``, attention is uniform."""
    n_features, seq_len = _check_sizes(n_features, seq_len)
    beta = check_finite(beta, "beta")
    w = np.zeros((token_dim(n_features, seq_len),) * 2)
    w[n_features:, n_features:] = 1.0
    return beta * w


def blank_head(*, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> np.ndarray:
    """The "blank" head ``W = 0``: exactly uniform attention (the authors' code's choice for the denoising head)."""
    n_features, seq_len = _check_sizes(n_features, seq_len)
    return np.zeros((token_dim(n_features, seq_len),) * 2)


def random_head(
    seed: int, *, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN
) -> np.ndarray:
    """Random head ``W = beta [blockdiag(Z_ff/N_f, Z_pp) + M o Z/sqrt(N_f)]`` (paper App. G.2.2).

    ``Z_ff [N_f, N_f]``, ``Z_pp [T+1, T+1]`` and ``Z [N0, N0]`` are i.i.d. standard normal,
    drawn in that order from ``default_rng(seed)``; ``M`` masks the feature x position blocks.
    Entry standard deviations: ``beta/N_f``, ``beta`` and ``beta/sqrt(N_f)``. Returns ``[N0, N0]``.
    """
    n_features, seq_len = _check_sizes(n_features, seq_len)
    beta, seed = check_finite(beta, "beta"), check_count(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    n_pos = seq_len + 1
    z_ff = rng.standard_normal((n_features, n_features))
    z_pp = rng.standard_normal((n_pos, n_pos))
    z = rng.standard_normal((n_features + n_pos,) * 2) / math.sqrt(n_features)
    w = np.zeros_like(z)
    w[:n_features, :n_features] = z_ff / n_features
    w[n_features:, n_features:] = z_pp
    w[:n_features, n_features:] = z[:n_features, n_features:]
    w[n_features:, :n_features] = z[n_features:, :n_features]
    return beta * w


# --------------------------------------------------------------------------- variants


def four_paths(
    *,
    beta: float = BETA,
    head_seed: int = HEAD_SEED,
    readout: Readout = "last",
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
) -> Architecture:
    """Layer 1 = [good, random], layer 2 = [uniform, random]: paths g, a1, d, a2 (:data:`FOUR_PATH_NAMES`).

    The random heads use seeds ``140 + head_seed`` and ``240 + head_seed``. ``readout`` defaults
    to the last token as in the authors' code (the paper's text says first).
    """
    sizes = dict(beta=beta, n_features=n_features, seq_len=seq_len)
    layer1 = np.stack([same_token_head(**sizes), random_head(140 + head_seed, **sizes)])
    layer2 = np.stack([uniform_head(**sizes), random_head(240 + head_seed, **sizes)])
    return Architecture((ScoreAttention(layer1), ScoreAttention(layer2)), readout=readout)


def good_path(
    *, beta: float = BETA, readout: Readout = "last", n_features: int = N_FEATURES, seq_len: int = SEQ_LEN
) -> Architecture:
    """The good path alone: layer 1 = [good], layer 2 = [uniform] (:data:`GOOD_PATH_NAMES`)."""
    sizes = dict(beta=beta, n_features=n_features, seq_len=seq_len)
    return Architecture(
        (ScoreAttention(same_token_head(**sizes)[None]), ScoreAttention(uniform_head(**sizes)[None])),
        readout=readout,
    )


def good_and_denoising(
    *,
    denoising: Literal["random", "uniform"] = "random",
    beta: float = BETA,
    head_seed: int = HEAD_SEED,
    readout: Readout = "last",
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
) -> Architecture:
    """Paths g and d (:data:`TWO_PATH_NAMES`): layer 1 = [good, denoising head], layer 2 = [uniform].

    ``denoising="random"``: the random head with seed ``140 + head_seed`` (the dotted GP line of
    Fig. 2c); ``"uniform"``: the blank head ``W = 0`` (exactly uniform attention).
    """
    if denoising not in ("random", "uniform"):
        raise ValueError(f"denoising must be 'random' or 'uniform'; got {denoising!r}.")
    sizes = dict(beta=beta, n_features=n_features, seq_len=seq_len)
    second = (random_head(140 + head_seed, **sizes) if denoising == "random"
              else blank_head(n_features=n_features, seq_len=seq_len))
    return Architecture(
        (ScoreAttention(np.stack([same_token_head(**sizes), second])), ScoreAttention(uniform_head(**sizes)[None])),
        readout=readout,
    )


def two_paths_noisy(
    *,
    denoising: Literal["random", "uniform"] = "uniform",
    beta: float = BETA,
    head_seed: int = HEAD_SEED,
    readout: Readout = "last",
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
) -> Architecture:
    """The network of the noisier two-path experiment (Fig. 2e, data with ``sigma_perp = 5``).

    Same as :func:`good_and_denoising` but with a uniform (blank) denoising head by default,
    as in the authors' repository; pair it with ``sample_task(..., sigma_perp=NOISY_SIGMA_PERP)``.
    """
    return good_and_denoising(
        denoising=denoising, beta=beta, head_seed=head_seed, readout=readout, n_features=n_features, seq_len=seq_len
    )


@dataclass(frozen=True)
class ChapterProblem:
    """One network's path features ``[P, n_paths, N0]`` of the paper's Fig. 2 data (read-only arrays): the problem
    the chapters beyond the paper that reuse this task solve and sample, ``name`` the network's in its chapter."""

    name: str
    arch: Architecture
    train: np.ndarray
    y_train: np.ndarray
    test: np.ndarray
    y_test: np.ndarray


@lru_cache(maxsize=32)
def chapter_problem(build: Callable[[str], Architecture], name: str, n_train: int, n_test: int) -> ChapterProblem:
    """The paper's Fig. 2 data (training seed :data:`TRAIN_SEED`, test seed :data:`TEST_SEED`) through the paths of
    ``build(name)``, cached per builder, name and data size, so that every caller shares one.

    Example:
      >>> prob = chapter_problem(lambda name: four_paths(), "four", 4, 2)
      >>> prob.train.shape, prob.test.shape, prob.train.flags.writeable
      ((4, 4, 231), (2, 4, 231), False)
    """
    arch = build(name)
    train = sample_task(n_train, seed=TRAIN_SEED)
    test = sample_task(n_test, seed=TEST_SEED)
    arrays = [np.array(a) for a in (path_features(arch, train.x), train.y, path_features(arch, test.x), test.y)]
    for a in arrays:
        a.flags.writeable = False
    return ChapterProblem(name, arch, *arrays)
