"""A toy "needle" task: one attention path reads the label, the others only add noise.

**Data.** A sequence has ``T`` tokens ``x_t = (g_t; e_t)``: a feature part ``g_t`` in ``R^d``
and a one-hot position ``e_t`` in ``R^T``, so tokens are ``x[P, T, d + T]``. The label
``y = +-1`` is written into the token at one fixed *needle* position ``k`` only:

    g_k = s y u + eps_k,   eps_k ~ N(0, I_d),     g_t ~ N(0, sigma^2 I_d)  (t != k),

with a unit signal direction ``u`` (fixed by ``signal_seed``, shared by all data sets) and a
signal strength ``s``. The other tokens are noise of standard deviation ``sigma`` (3 by
default, so that it dominates the path kernels that read them) and carry no information
about the label. Knowing ``u``, the best possible accuracy is ``Phi(s)``.

**Heads.** Two layers of two ``ScoreAttention`` heads whose scores depend on positions only,
so every example has the same attention matrices (``W`` is ``[N0, N0]``, row = key,
column = query, hardness ``beta`` multiplied in):

* layer 1, head 0, "self": every query attends to itself (``W_pos = beta I``);
* layer 1, head 1, "scramble": random positional scores ``beta Z`` (``Z`` standard normal),
  except that the needle key scores ``2 beta`` below every other key: it never reads the needle;
* layer 2, head 0, "needle": every query attends to the needle key ``k``;
* layer 2, head 1, "uniform": ``W = 0``, exactly uniform attention.

**Paths** (``pi = 2 h_1 + h_2``, :data:`PATH_NAMES`):

* 0 = (self, needle) "good": reads ``x_k``, the only informative token;
* 1 = (self, uniform) "mean": reads the mean of all tokens, a weak signal ``g_k / T`` in noise;
* 2 = (scramble, needle) "decoy": reads the tokens the scrambling head sends query ``k`` to,
  which are independent of the label (adversarial);
* 3 = (scramble, uniform) "blur": a fixed non-uniform mixture of the non-needle tokens (noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paththeory._checks import (
    check_allocation,
    check_count,
    check_finite,
    check_nonnegative,
)
from paththeory.model import Architecture, Readout, ScoreAttention

N_FEATURES = 40
SEQ_LEN = 8
NEEDLE = 2
SIGNAL = 2.0
NOISE = 3.0
BETA = 10.0
SIGNAL_SEED, TRAIN_SEED, TEST_SEED, HEAD_SEED = 0, 1, 2, 3
PATH_NAMES = ("good", "mean", "decoy", "blur")


@dataclass(frozen=True)
class NeedleData:
    """One data set: tokens ``x[P, T, d + T]`` and labels ``y[P]`` (+-1)."""

    x: np.ndarray
    y: np.ndarray


def _check_sizes(n_features: int, seq_len: int, needle: int) -> tuple[int, int, int]:
    """``(n_features, seq_len, needle)`` as ints: >= 1 feature, >= 2 tokens, a needle position among them."""
    n_features, seq_len = check_count(n_features, "n_features"), check_count(seq_len, "seq_len", minimum=2)
    needle = check_count(needle, "needle", minimum=0)
    if needle >= seq_len:
        raise ValueError(f"needle must be a token position in [0, {seq_len - 1}]; got {needle}.")
    return n_features, seq_len, needle


def token_dim(n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> int:
    """``N0 = d + T`` (features plus one-hot position)."""
    return n_features + seq_len


def signal_direction(n_features: int = N_FEATURES, seed: int = SIGNAL_SEED) -> np.ndarray:
    """The unit signal direction ``u``, uniform on the sphere: ``[d]``."""
    n_features, seed = check_count(n_features, "n_features"), check_count(seed, "seed", minimum=0)
    u = np.random.default_rng(seed).standard_normal(n_features)
    return u / np.linalg.norm(u)


def sample_task(
    n_examples: int,
    *,
    seed: int = TRAIN_SEED,
    signal: float = SIGNAL,
    noise: float = NOISE,
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
    needle: int = NEEDLE,
    signal_seed: int = SIGNAL_SEED,
) -> NeedleData:
    """Draw ``n_examples`` sequences, the first half of class ``y = +1``.

    Args:
      n_examples: even number of sequences ``P``.
      seed: seed of the noise (use different seeds for training and test sets).
      signal: strength ``s`` of the label in the needle token.
      noise: standard deviation ``sigma`` of the features of the other tokens.
      needle: position ``k`` of the informative token.
      signal_seed: seed of the direction ``u``; keep it fixed across training and test sets.
    Returns:
      :class:`NeedleData` with ``x[P, seq_len, n_features + seq_len]`` float64.
    """
    n_features, seq_len, needle = _check_sizes(n_features, seq_len, needle)
    n_examples, seed = check_count(n_examples, "n_examples", minimum=2), check_count(seed, "seed", minimum=0)
    if n_examples % 2:
        raise ValueError(f"n_examples must be an even number >= 2 (half per class); got {n_examples}.")
    signal, noise = check_nonnegative(signal, "signal"), check_nonnegative(noise, "noise")
    check_allocation(16 * n_examples * seq_len * token_dim(n_features, seq_len),
                     f"n_examples = {n_examples} sequences of {seq_len} tokens")
    half = n_examples // 2
    y = np.concatenate([np.ones(half), -np.ones(half)])
    scale = np.full((seq_len, 1), float(noise))
    scale[needle] = 1.0
    g = scale * np.random.default_rng(seed).standard_normal((n_examples, seq_len, n_features))
    g[:, needle] += signal * y[:, None] * signal_direction(n_features, signal_seed)
    x = np.concatenate([g, np.broadcast_to(np.eye(seq_len), (n_examples, seq_len, seq_len))], axis=2)
    return NeedleData(x=x, y=y)


# --------------------------------------------------------------------------- heads


def _positional_head(position_scores: np.ndarray, n_features: int) -> np.ndarray:
    """``W[N0, N0]`` with the ``[key, query]`` position block ``position_scores`` and zeros elsewhere."""
    seq_len = position_scores.shape[0]
    w = np.zeros((token_dim(n_features, seq_len),) * 2)
    w[n_features:, n_features:] = position_scores
    return w


def self_head(*, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN) -> np.ndarray:
    """Every query attends to its own position: position block ``beta I``."""
    n_features, seq_len, _ = _check_sizes(n_features, seq_len, 0)
    return _positional_head(check_finite(beta, "beta") * np.eye(seq_len), n_features)


def needle_head(
    *, beta: float = BETA, n_features: int = N_FEATURES, seq_len: int = SEQ_LEN, needle: int = NEEDLE
) -> np.ndarray:
    """Every query attends to the needle key: position block ``beta`` on row ``needle``."""
    n_features, seq_len, needle = _check_sizes(n_features, seq_len, needle)
    scores = np.zeros((seq_len, seq_len))
    scores[needle] = check_finite(beta, "beta")
    return _positional_head(scores, n_features)


def scramble_head(
    seed: int = HEAD_SEED,
    *,
    beta: float = BETA,
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
    needle: int = NEEDLE,
) -> np.ndarray:
    """Random positional scores ``beta Z`` (``Z`` standard normal) for every key but the needle.

    The needle key scores ``2 beta`` below the lowest other score, so every query gives it a
    weight below ``exp(-2 beta)``: the head is blind to the needle.
    """
    n_features, seq_len, needle = _check_sizes(n_features, seq_len, needle)
    beta, seed = check_finite(beta, "beta"), check_count(seed, "seed", minimum=0)
    scores = beta * np.random.default_rng(seed).standard_normal((seq_len, seq_len))
    scores[needle] = np.delete(scores, needle, axis=0).min() - 2 * beta
    return _positional_head(scores, n_features)


def architecture(
    *,
    beta: float = BETA,
    head_seed: int = HEAD_SEED,
    n_features: int = N_FEATURES,
    seq_len: int = SEQ_LEN,
    needle: int = NEEDLE,
    readout: Readout = "last",
) -> Architecture:
    """Layer 1 = [self, scramble], layer 2 = [needle, uniform]: paths :data:`PATH_NAMES`.

    Both layer-2 heads attend the same way from every query, so the readout token does not
    change the paths; it is the last token by default.
    """
    sizes = dict(beta=beta, n_features=n_features, seq_len=seq_len)
    layer1 = np.stack([self_head(**sizes), scramble_head(head_seed, needle=needle, **sizes)])
    layer2 = np.stack([needle_head(needle=needle, **sizes), np.zeros((token_dim(n_features, seq_len),) * 2)])
    return Architecture((ScoreAttention(layer1), ScoreAttention(layer2)), readout=readout)
