"""The architecture, its fixed attention, the finite network and its attention paths.

Conventions (paper §2, Eqs. (1)-(7), and App. A):

* tokens ``x``: ``[B, T, N0]`` (examples, tokens, features);
* attention matrices ``A``: ``[B, H, T, T]`` indexed ``[b, h, key s, query t]``, softmax over
  the key axis, so every column sums to one; every layer's attention is computed from the
  bare input ``x`` (never from hidden activations);
* paths ``pi = (h_1, ..., h_L)`` are packed with the first-layer head slowest,
  ``pi = h_1 H_2...H_L + ... + h_L`` (``itertools.product`` order);
* variances ``(sigma_0^2, sigma_1^2, ..., sigma_L^2, sigma_a^2)`` of the Gaussian priors.

One :class:`Architecture` drives the finite network (:func:`network_output`), the path
expansion (:func:`path_features`, :func:`effective_weights`), the theory, the posterior
sampler and gradient-descent training.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Literal, Mapping, NamedTuple, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import (
    as_float_array,
    check_allocation,
    check_count,
    check_key,
    check_nonnegative,
    check_positive,
    require_finite,
)
from paththeory.kernel_maps import activation, check_nonlinearity

Array = jax.Array
Readout = Literal["first", "last", "mean"]
READOUTS = ("first", "last", "mean")
NETWORK_WIDTHS = ("A finite network has whole-number widths (the theory, paththeory.solve.Theory, takes any "
                  "positive width).")


# --------------------------------------------------------------------------- attention


@dataclass(frozen=True, eq=False)
class QKAttention:
    """Query/key heads of one layer: scores ``S[s, t] = (K x_s) . (Q x_t) / sqrt(G)`` (paper Eq. (3)).

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Args:
      query: ``[H, G, N0]`` query weights, one ``G x N0`` matrix per head.
      key: ``[H, G, N0]`` key weights.

    Example:
      >>> pt.QKAttention(query=np.zeros((2, 3, 5)), key=np.zeros((2, 3, 5))).n_heads
      2
    """

    query: np.ndarray
    key: np.ndarray

    def __post_init__(self) -> None:
        q = as_float_array(self.query, "QKAttention.query", ndim=3)
        k = as_float_array(self.key, "QKAttention.key", ndim=3)
        if q.shape != k.shape:
            raise ValueError(f"query and key must have the same shape [H, G, N0]; got {q.shape} and {k.shape}.")
        object.__setattr__(self, "query", q)
        object.__setattr__(self, "key", k)

    @property
    def n_heads(self) -> int:
        return self.query.shape[0]

    @property
    def input_dim(self) -> int | None:
        return self.query.shape[2]

    def scores(self, x: Array) -> Array:
        """``[B, T, N0] -> [B, H, T(key), T(query)]``."""
        q = jnp.einsum("hgn,btn->bhtg", self.query, x)
        k = jnp.einsum("hgn,bsn->bhsg", self.key, x)
        return jnp.einsum("bhsg,bhtg->bhst", k, q) / math.sqrt(self.query.shape[1])


@dataclass(frozen=True, eq=False)
class ScoreAttention:
    """Bilinear heads of one layer: ``S[s, t] = x_s^T W x_t`` with no ``1/sqrt(d)`` (paper App. G.2).

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Args:
      w: ``[H, N0, N0]``; the row index acts on the key token, the column index on the query.

    Example:
      >>> pt.ScoreAttention(np.zeros((3, 5, 5))).n_heads
      3
    """

    w: np.ndarray

    def __post_init__(self) -> None:
        w = as_float_array(self.w, "ScoreAttention.w", ndim=3)
        if w.shape[1] != w.shape[2]:
            raise ValueError(f"ScoreAttention.w must be [H, N0, N0]; got {w.shape}.")
        object.__setattr__(self, "w", w)

    @property
    def n_heads(self) -> int:
        return self.w.shape[0]

    @property
    def input_dim(self) -> int | None:
        return self.w.shape[1]

    def scores(self, x: Array) -> Array:
        return jnp.einsum("bsn,hnm,btm->bhst", x, self.w, x)


@dataclass(frozen=True, eq=False)
class FixedAttention:
    """User-supplied attention matrices for one fixed set of B inputs.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Args:
      matrices: ``[B, H, T, T]`` indexed ``[b, h, key, query]``; nonnegative, columns sum to one.

    Example:
      >>> pt.FixedAttention(np.full((1, 2, 4, 4), 0.25)).n_heads
      2
    """

    matrices: np.ndarray

    def __post_init__(self) -> None:
        a = as_float_array(self.matrices, "FixedAttention.matrices", ndim=4)
        if a.shape[2] != a.shape[3]:
            raise ValueError(f"FixedAttention.matrices must be [B, H, T, T]; got {a.shape}.")
        if np.any(a < 0) or not np.allclose(a.sum(axis=2), 1.0, atol=1e-8):
            raise ValueError(
                "FixedAttention.matrices must be column-stochastic over keys: entries >= 0 and "
                "a.sum(axis=2) == 1 (index order [example, head, key, query])."
            )
        object.__setattr__(self, "matrices", a)

    @property
    def n_heads(self) -> int:
        return self.matrices.shape[1]

    @property
    def input_dim(self) -> int | None:
        return None


@dataclass(frozen=True, eq=False)
class MLP:
    """An MLP block: a token-wise Gaussian matrix and a pointwise nonlinearity,
    ``z_t -> phi(M z_t / sqrt(n))``, ``M_ij ~ N(0, sigma_M^2)``.

    Linear (``nonlinearity="identity"``, the default), in the theory it is a level with one head whose attention
    is the identity: it adds no path and no path kernel, only one order parameter (the paper's outlook, §5).
    With ``"relu"`` or ``"erf"`` the network is no longer linear in each weight matrix and the theory becomes the
    heuristic of :mod:`paththeory.nonlinear_theory` (the paper's outlook proposes it). Its prior variance is the level's
    entry of ``Architecture.variances``. As the top level, the readout plays the second matrix of the usual two-matrix
    block ``W_2 phi(W_1 z)``.

    Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-architecture)

    Args:
      nonlinearity: ``"identity"``, ``"relu"`` or ``"erf"`` (:data:`paththeory.kernel_maps.NONLINEARITIES`).

    Example:
      >>> pt.MLP().n_heads, pt.MLP("relu").nonlinearity
      (1, 'relu')
    """

    nonlinearity: str = "identity"

    def __post_init__(self) -> None:
        check_nonlinearity(self.nonlinearity)

    @property
    def n_heads(self) -> int:
        return 1

    @property
    def input_dim(self) -> int | None:
        return None


LayerAttention = Union[QKAttention, ScoreAttention, FixedAttention, MLP]
_LEVEL_TYPES = (QKAttention, ScoreAttention, FixedAttention, MLP)


@dataclass(frozen=True, eq=False)
class Residual:
    """A skip connection around one level: ``z^l = g_s z^{l-1} + g_a (H_l n)^{-1/2} sum_h V^l_h z^{l-1} A^l_h``.

    The skip is a weight-free branch with identity attention: every path chooses the skip or a head at
    this level (``H_l + 1`` branches). The gains ``skip_gain`` (``g_s``) and ``branch_gain`` (``g_a``) enter
    only the path features, never the order parameters.

    Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-architecture)

    Args:
      layer: the level inside the skip (an attention layer or :class:`MLP`).
      skip_gain: ``g_s >= 0``, the skip branch's factor.
      branch_gain: ``g_a >= 0``, the factor of the attention (or MLP) branch (not both zero).

    Example:
      >>> block = pt.Residual(pt.ScoreAttention(np.zeros((2, 5, 5))), skip_gain=1.0, branch_gain=0.5)
      >>> block.n_heads, block.gains(), pt.Architecture([block, pt.MLP()]).path_names()
      (2, (1.0, 0.5), ['(s,0)', '(0,0)', '(1,0)'])
    """

    layer: LayerAttention
    skip_gain: float = 1.0
    branch_gain: float = 1.0

    def __post_init__(self) -> None:
        if not isinstance(self.layer, _LEVEL_TYPES):
            raise TypeError(f"Residual(layer) takes an attention layer (QKAttention, ScoreAttention, FixedAttention) "
                            f"or an MLP; got {type(self.layer).__name__}. A skip around a skip adds nothing: "
                            "use one Residual per level.")
        object.__setattr__(self, "skip_gain", check_nonnegative(self.skip_gain, "Residual skip_gain"))
        object.__setattr__(self, "branch_gain", check_nonnegative(self.branch_gain, "Residual branch_gain"))
        if self.skip_gain == 0 and self.branch_gain == 0:
            raise ValueError("Residual(skip_gain=0, branch_gain=0) outputs zero; give one of the gains a positive value.")

    @property
    def n_heads(self) -> int:
        return self.layer.n_heads

    @property
    def input_dim(self) -> int | None:
        return self.layer.input_dim

    def gains(self) -> tuple[float, float]:
        """``(g_s, g_a)``."""
        return (self.skip_gain, self.branch_gain)


Level = Union[LayerAttention, Residual]
_TOO_LARGE = "the tokens x are too large for float64 (their products overflow); rescale x."


def _layer_attention(layer: Level, x: Array) -> Array:
    """The heads' attention of one level, ``[B, H, T, T]`` (the identity for an MLP)."""
    if isinstance(layer, Residual):
        return _layer_attention(layer.layer, x)
    if isinstance(layer, MLP):
        return jnp.broadcast_to(jnp.eye(x.shape[1], dtype=x.dtype), (x.shape[0], 1, x.shape[1], x.shape[1]))
    if isinstance(layer, FixedAttention):
        if x.shape[0] != layer.matrices.shape[0] or x.shape[1] != layer.matrices.shape[2]:
            raise ValueError(
                f"FixedAttention holds matrices for {layer.matrices.shape[0]} inputs of "
                f"{layer.matrices.shape[2]} tokens; got x of shape {tuple(x.shape)}."
            )
        return jnp.asarray(layer.matrices)
    scores = require_finite(layer.scores(x), "the attention scores of tokens x", _TOO_LARGE)
    return jax.nn.softmax(scores, axis=2)


def _branch_attention(layer: Level, x: Array) -> Array:
    """Attention of every branch of one level, ``[B, B_l, T, T]``: the skip's identity first, then the heads."""
    heads = _layer_attention(layer, x)
    if not isinstance(layer, Residual):
        return heads
    eye = jnp.broadcast_to(jnp.eye(x.shape[1], dtype=heads.dtype), (x.shape[0], 1, x.shape[1], x.shape[1]))
    return jnp.concatenate([eye, heads], axis=1)


# --------------------------------------------------------------------------- architecture


@dataclass(frozen=True, eq=False)
class Architecture:
    """A stack of levels (attention layers, linear MLP blocks, either inside a skip connection) with fixed
    attention, Bayesian value weights and a linear readout.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Args:
      attention: one entry per level, bottom to top: an attention layer (:class:`QKAttention`,
        :class:`ScoreAttention` or :class:`FixedAttention`; level ``l`` has ``H_l`` heads, which may differ
        per level), an :class:`MLP` block, or either inside a :class:`Residual` skip connection.
      readout: ``"first"``, ``"last"`` or ``"mean"`` token pooling (paper Eqs. (4), (18)).
      variances: prior variances ``(sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2)``, one per level (an MLP's
        is its ``sigma_M^2``); all 1 by default.

    Paths choose one branch per level: a head, or the skip of a :class:`Residual` level (written ``s``),
    so there are ``prod_l (H_l + 1 [skip])`` of them, with the first level's branch slowest and the skip
    first among a level's branches.

    Example:
      >>> rng = np.random.default_rng(0)
      >>> layer = pt.QKAttention(rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 3, 5)))
      >>> arch = pt.Architecture((layer, layer), readout="mean")
      >>> arch.heads, arch.n_paths, arch.path_names()
      ((2, 2), 4, ['(0,0)', '(0,1)', '(1,0)', '(1,1)'])
      >>> pt.Architecture((pt.Residual(layer), pt.MLP())).path_names()
      ['(s,0)', '(0,0)', '(1,0)']
    """

    attention: tuple[Level, ...]
    readout: Readout = "last"
    variances: tuple[float, ...] | None = field(default=None)

    def __post_init__(self) -> None:
        layers = tuple(self.attention) if isinstance(self.attention, (list, tuple)) else (self.attention,)
        if not layers:
            raise ValueError("An Architecture needs at least one attention layer.")
        for i, layer in enumerate(layers):
            if not isinstance(layer, (*_LEVEL_TYPES, Residual)):
                raise ValueError(
                    f"attention[{i}] must be a QKAttention, ScoreAttention, FixedAttention, MLP or Residual; "
                    f"got {type(layer).__name__}."
                )
        if all(isinstance(_inner(layer), MLP) for layer in layers):
            raise ValueError("An Architecture needs at least one attention layer (QKAttention, ScoreAttention or "
                             "FixedAttention); MLP blocks alone have no attention path.")
        dims = {layer.input_dim for layer in layers} - {None}
        if len(dims) > 1:
            raise ValueError(f"All layers must act on the same bare input; got token dimensions {sorted(dims)}.")
        object.__setattr__(self, "attention", layers)
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}; got {self.readout!r}.")
        n_var = len(layers) + 2
        if self.variances is not None and not isinstance(self.variances, (list, tuple, np.ndarray)):
            raise TypeError(f"variances must be a sequence of L + 2 = {n_var} numbers (sigma_0^2, sigma_1^2..sigma_L^2, "
                            f"sigma_a^2); got {type(self.variances).__name__} {self.variances!r}.")
        variances = (1.0,) * n_var if self.variances is None else tuple(self.variances)
        if len(variances) != n_var:
            raise ValueError(
                f"variances must have L + 2 = {n_var} entries (sigma_0^2, sigma_1^2..sigma_L^2, sigma_a^2); "
                f"got {len(variances)}."
            )
        object.__setattr__(
            self, "variances", tuple(check_positive(v, f"variances[{i}]") for i, v in enumerate(variances))
        )
        with np.errstate(over="ignore", under="ignore"):  # out of range: the error below
            scales = np.cumprod(self.variances[:0:-1])  # sigma_a^2 prod_{m > l} sigma_m^2, the GP values of U^(l+1)
        if not np.all((scales > 0) & np.isfinite(scales)):
            raise ValueError(f"variances {self.variances} multiply to GP order parameters sigma_a^2 prod_l sigma_l^2 "
                             f"outside float64's range ({scales[-1]:g}); rescale them.")

    @property
    def n_layers(self) -> int:
        """``L``, the number of levels (attention layers and MLP blocks)."""
        return len(self.attention)

    @property
    def heads(self) -> tuple[int, ...]:
        """``(H_1, ..., H_L)``: the weighted branches of every level (one for an MLP block)."""
        return tuple(layer.n_heads for layer in self.attention)

    @property
    def nonlinearities(self) -> tuple[str, ...]:
        """Each level's nonlinearity: an :class:`MLP` block's, ``"identity"`` for an attention layer."""
        return tuple(getattr(_inner(layer), "nonlinearity", "identity") for layer in self.attention)

    @property
    def linear(self) -> bool:
        """Whether the network is linear in each weight matrix (no nonlinear :class:`MLP` block): the paper's
        theory then holds; otherwise the heuristic of :mod:`paththeory.nonlinear_theory`."""
        return all(phi == "identity" for phi in self.nonlinearities)

    @property
    def skips(self) -> tuple[bool, ...]:
        """Whether each level sits inside a :class:`Residual` skip connection."""
        return tuple(isinstance(layer, Residual) for layer in self.attention)

    @property
    def branches(self) -> tuple[int, ...]:
        """``B_l = H_l + 1`` at a skip level, ``H_l`` otherwise."""
        return tuple(h + s for h, s in zip(self.heads, self.skips))

    @property
    def n_paths(self) -> int:
        return int(np.prod(self.branches))

    @property
    def paths(self) -> list[tuple]:
        """All paths in matrix order (first level slowest): tuples of head indices, ``None`` for a skip."""
        options = [([None] if s else []) + list(range(h)) for h, s in zip(self.heads, self.skips)]
        return list(itertools.product(*options))

    @property
    def gp_scale(self) -> float:
        """``sigma_a^2 prod_l sigma_l^2``: the GP point is ``U = gp_scale * I`` (paper §3.1, App. B.1).

        With skip connections the paths' GP variances differ: see :meth:`gp_path_variances`."""
        if any(self.skips):
            raise ValueError("with skip connections the paths have different GP variances (a skip carries no weight "
                             "variance); use arch.gp_path_variances(), the diagonal of the GP point U.")
        return float(self.variances[-1] * np.prod(self.variances[1:-1]))

    def gp_path_variances(self) -> np.ndarray:
        """The GP point's diagonal ``[n_paths]``: ``sigma_a^2 prod_{l: pi_l a head} sigma_l^2`` (a skip adds no factor).

        Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-architecture)
        """
        factors = [np.array(([1.0] if s else []) + [v] * h)
                   for h, s, v in zip(self.heads, self.skips, self.variances[1:-1])]
        return self.variances[-1] * _outer_product(factors)

    def path_gains(self) -> np.ndarray:
        """``c_pi = prod_l c_l(pi_l)`` ``[n_paths]`` with ``c_l(skip) = g_s`` and ``c_l(head) = g_a / sqrt(H_l)``
        (``g_a = 1`` without a skip): the fixed factor of each path's features.

        Book: The residual stream (https://paththeory.github.io/paththeory/book/residual.html#residual-architecture)
        """
        factors = []
        for layer, h in zip(self.attention, self.heads):
            skip, branch = layer.gains() if isinstance(layer, Residual) else (None, 1.0)
            factors.append(np.array(([skip] if skip is not None else []) + [branch / math.sqrt(h)] * h))
        return _outer_product(factors)

    def path_names(self) -> list[str]:
        """Labels like ``"(0,1)"`` in matrix order; ``s`` marks a skip."""
        return ["(" + ",".join("s" if h is None else str(h) for h in p) + ")" for p in self.paths]

    def widths(self, width: float | Sequence[float]) -> tuple[float, ...]:
        """Expand a common width ``N`` to ``(n_0, ..., n_L)``, or check a full list of L+1 widths (equal around
        every skip connection)."""
        if _one_number(width):
            return (check_positive(width, "width"),) * (self.n_layers + 1)
        ws = tuple(np.ravel(width)) if hasattr(width, "shape") else tuple(width)
        if len(ws) != self.n_layers + 1:
            raise ValueError(
                f"widths must be one number or L + 1 = {self.n_layers + 1} numbers (n_0..n_L); got {len(ws)}."
            )
        ws = tuple(check_positive(w, f"widths[{i}]") for i, w in enumerate(ws))
        for l, skip in enumerate(self.skips):
            if skip and ws[l] != ws[l + 1]:
                raise ValueError(f"level {l + 1} has a skip connection, which adds its input to its output, so its "
                                 f"widths must be equal; got n_{l} = {ws[l]:g} and n_{l + 1} = {ws[l + 1]:g}.")
        return ws

    def network_widths(self, width: int | Sequence[int]) -> tuple[int, ...]:
        """:meth:`widths` for the finite network: every width must be a whole number (the theory takes any
        positive width, a network does not)."""
        one = _one_number(width)
        return tuple(check_count(w, "width" if one else f"widths[{i}]", hint=NETWORK_WIDTHS)
                     for i, w in enumerate(self.widths(width)))


def _inner(layer: Level) -> LayerAttention:
    return layer.layer if isinstance(layer, Residual) else layer


def _outer_product(factors: Sequence[np.ndarray]) -> np.ndarray:
    """``prod_l f_l[pi_l]`` over all paths, first level slowest."""
    out = np.ones(1)
    for f in factors:
        out = np.multiply.outer(out, f).reshape(-1)
    return out


def check_architecture(arch) -> Architecture:
    """``arch`` if it is an :class:`Architecture`, else a TypeError saying how to build one.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)
    """
    if not isinstance(arch, Architecture):
        raise TypeError(f"arch must be a paththeory.Architecture (e.g. pt.Architecture([pt.ScoreAttention(w)])); got "
                        f"{type(arch).__name__} {arch!r:.60}.")
    return arch


def _one_number(width) -> bool:
    """Whether ``width`` is one width (a number, or anything but a sequence: its check names it ``width``)."""
    if isinstance(width, (str, bytes)):
        return True
    try:
        return np.ndim(width) == 0
    except ValueError:  # a ragged list
        return False


def readout_vector(readout: Readout, n_tokens: int) -> Array:
    """The pooling vector ``r`` over query tokens (paper Eq. (18)).

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Example:
      >>> print(np.asarray(readout_vector("mean", 4)))
      [0.25 0.25 0.25 0.25]
    """
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}; got {readout!r}.")
    n_tokens = check_count(n_tokens, "n_tokens")
    check_allocation(8 * n_tokens, f"a readout over n_tokens = {n_tokens} tokens")
    if readout == "mean":
        return jnp.full((n_tokens,), 1.0 / n_tokens)
    return jnp.zeros((n_tokens,)).at[0 if readout == "first" else n_tokens - 1].set(1.0)


def _check_tokens(arch: Architecture, x) -> Array:
    """Validate tokens ``[B, T, N0]`` against the architecture; return a float64 JAX array.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)
    """
    arr = as_float_array(x, "tokens x", ndim=3)
    dims = {layer.input_dim for layer in check_architecture(arch).attention} - {None}
    if dims and arr.shape[2] not in dims:
        raise ValueError(
            f"tokens x have {arr.shape[2]} features but the attention weights expect N0 = {dims.pop()}; "
            "x must be [examples, tokens, features]."
        )
    return jnp.asarray(arr)


def attention_matrices(arch: Architecture, x) -> tuple[Array, ...]:
    """Attention of every layer, computed from the bare input: tuple of ``[B, H_l, T, T]``.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()  # heads (3, 2), 4 inputs of 5 tokens
      >>> [a.shape for a in pt.attention_matrices(arch, x)]
      [(4, 3, 5, 5), (4, 2, 5, 5)]
    """
    xj = _check_tokens(arch, x)
    return tuple(_layer_attention(layer, xj) for layer in arch.attention)


def _path_attention_from_matrices(attn: Sequence[Array], readout: Readout) -> Array:
    """``alpha^pi = A^1_{h1} ... A^L_{hL} r`` for every path: ``[B, n_paths, T]`` (paper Eqs. (7), (23)).

    Book: Attention path (definition) (https://paththeory.github.io/paththeory/book/model.html#def-attention-path)
    """
    if len(attn) == 0:
        raise ValueError("attn is empty; pass one [B, H_l, T, T] attention array per layer.")
    n_tokens = attn[0].shape[-1]
    r = readout_vector(readout, n_tokens)
    v = jnp.einsum("bhst,t->bhs", attn[-1], r)  # [B, H_L, T]
    for a in reversed(attn[:-1]):
        v = jnp.einsum("bhst,bpt->bhps", a, v)  # this layer's head becomes the slowest index
        v = v.reshape(v.shape[0], -1, n_tokens)
    return v


def path_attention(arch: Architecture, x) -> Array:
    """Path attention vectors ``alpha^pi(x)``: ``[B, n_paths, T]``; each sums to one over tokens.

    Book: Attention path (definition) (https://paththeory.github.io/paththeory/book/model.html#def-attention-path)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> alpha = pt.path_attention(arch, x)
      >>> alpha.shape, bool(np.allclose(alpha.sum(axis=-1), 1.0))
      ((4, 6, 5), True)
    """
    xj = _check_tokens(arch, x)
    return _path_attention_from_matrices(tuple(_branch_attention(layer, xj) for layer in arch.attention), arch.readout)


def path_features(arch: Architecture, x, batch_size: int = 4096) -> Array:
    """Attentioned inputs ``xi^pi(x) = sigma_0 c_pi / sqrt(N0) sum_s alpha^pi_s x_s`` (paper Eqs. (7), (23)).

    ``c_pi`` is :meth:`Architecture.path_gains`: ``1 / sqrt(H_tot)`` without skip connections (the paper's
    case); a skip branch contributes its gain ``g_s`` and a head ``g_a / sqrt(H_l)``.

    Book: Attentioned input, the path vector (definition)
    (https://paththeory.github.io/paththeory/book/model.html#def-path-vector)

    Args:
      x: tokens ``[B, T, N0]``.
      batch_size: examples processed at once (bounds memory for large B).
    Returns:
      ``[B, n_paths, N0]`` float64.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> pt.path_features(arch, x).shape
      (4, 6, 6)
    """
    xj = _check_tokens(arch, x)
    batch_size = check_count(batch_size, "batch_size")
    if any(isinstance(layer, FixedAttention) for layer in arch.attention):
        batch_size = xj.shape[0]
    if any(arch.skips):
        scale = jnp.asarray(math.sqrt(arch.variances[0] / xj.shape[2]) * arch.path_gains())[None, :, None]
    else:  # every path's gain is 1 / sqrt(H_tot): one number, the paper's (and its float64 bits)
        scale = math.sqrt(arch.variances[0] / (xj.shape[2] * arch.n_paths))
    out = []
    for start in range(0, xj.shape[0], batch_size):
        xb = xj[start : start + batch_size]
        alpha = _path_attention_from_matrices(
            tuple(_branch_attention(layer, xb) for layer in arch.attention), arch.readout
        )
        out.append(scale * jnp.einsum("bps,bsn->bpn", alpha, xb))
    return require_finite(jnp.concatenate(out, axis=0), "path_features(arch, x)", _TOO_LARGE)


class TokenFeatures(NamedTuple):
    """The path features of a network cut at an MLP block between attention layers, resolved by token.

    ``lower [B, G, T, N0]``: the paths below the block, up to each token,
    ``Y_g(x)_s = sigma_0 c_lo / sqrt(N0) sum_{s'} x_{s'} beta^g(x)[s', s]`` with ``beta^g`` the product of the
    path's attention matrices and ``c_lo = (prod_{l < block} H_l)^{-1/2}``; ``upper [B, H, T]``: the attention of the
    paths above the block to the readout, ``c_up (A^{l}_{h} ... A^{L}_{h_L} r)_s``, ``c_up = (prod_{l > block}
    H_l)^{-1/2}``. A path ``(g, h)`` (``g`` slowest) has the feature ``xi^{(g, h)}(x) = sum_s upper_h(x)_s
    lower_g(x)_s``, :func:`path_features`'s.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
    """

    lower: Array
    upper: Array


def block_level(arch: Architecture) -> int:
    """The level (0-based) of the one :class:`MLP` block between attention layers at which token features cut the
    network, or a ValueError: one block, with attention below and above it, no skip connections.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
    """
    check_architecture(arch)
    blocks = [l for l, layer in enumerate(arch.attention) if isinstance(layer, MLP)]
    if len(blocks) != 1 or blocks[0] in (0, arch.n_layers - 1) or any(arch.skips):
        raise ValueError(f"token features cut a network at one MLP block between attention layers, without skip "
                         f"connections; this one has levels {[type(l).__name__ for l in arch.attention]} and skips "
                         f"{arch.skips}.")
    return blocks[0]


def token_path_counts(arch: Architecture) -> tuple[int, int]:
    """``(G, H)``: the numbers of paths below and above the MLP block that token features cut at
    (:func:`block_level`), the shapes of :class:`TokenFeatures`' ``lower`` and ``upper``.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
    """
    cut = block_level(arch)
    return int(np.prod(arch.heads[:cut])), int(np.prod(arch.heads[cut + 1:]))


def token_features(arch: Architecture, x) -> TokenFeatures:
    """:class:`TokenFeatures` of tokens ``x [B, T, N0]`` for a network with one :class:`MLP` block between attention
    layers (no skip connections), cut at that block.

    Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()  # heads (3, 2)
      >>> arch = pt.Architecture((arch.attention[0], pt.MLP("relu"), arch.attention[1]))
      >>> tf = token_features(arch, x)
      >>> tf.lower.shape, tf.upper.shape
      ((4, 3, 5, 6), (4, 2, 5))
      >>> xi = jnp.einsum("bhs,bgsn->bghn", tf.upper, tf.lower).reshape(4, 6, 6)
      >>> bool(jnp.allclose(xi, pt.path_features(arch, x)))
      True
    """
    cut = block_level(arch)
    xj = _check_tokens(arch, x)
    attn = [_layer_attention(layer, xj) for layer in arch.attention]
    beta = attn[0]
    for a in attn[1:cut]:
        beta = jnp.einsum("bgst,bhtu->bghsu", beta, a).reshape(xj.shape[0], -1, xj.shape[1], xj.shape[1])
    lower = math.sqrt(arch.variances[0] / (xj.shape[2] * beta.shape[1])) * jnp.einsum("bgst,bsn->bgtn", beta, xj)
    upper = _path_attention_from_matrices(attn[cut + 1:], arch.readout)
    upper = upper / math.sqrt(upper.shape[1])
    return TokenFeatures(require_finite(lower, "token_features(arch, x)", _TOO_LARGE), upper)


# --------------------------------------------------------------------------- finite network


def weight_count(arch: Architecture, widths: Sequence[int], input_dim: int, n_outputs: int = 1) -> int:
    """Entries of ``V0``, every ``V^l`` and the readout of ``n_outputs`` outputs at the network ``widths`` ``(n_0..n_L)``.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)
    """
    return (widths[0] * input_dim + sum(h * n * m for h, n, m in zip(arch.heads, widths[1:], widths))
            + widths[-1] * n_outputs)


def sample_prior(arch: Architecture, widths: float | Sequence[float], input_dim: int, key: Array) -> dict:
    """Draw the Bayesian weights from their Gaussian priors (paper Eq. (8), App. A.3).

    Returns a dict with ``V0 [n0, N0]``, ``V`` (tuple over layers of ``[H_l, n_l, n_{l-1}]``) and
    ``a [n_L]``. Widths must be whole numbers (the theory takes any positive width, a network does not).

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Example:
      >>> import jax
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> params = pt.sample_prior(arch, 8, x.shape[2], jax.random.PRNGKey(0))
      >>> params["V0"].shape, [v.shape for v in params["V"]], params["a"].shape
      ((8, 6), [(3, 8, 8), (2, 8, 8)], (8,))
    """
    ns = check_architecture(arch).network_widths(widths)
    input_dim = check_count(input_dim, "input_dim")
    key = check_key(key)
    check_allocation(8 * weight_count(arch, ns, input_dim),
                     f"the weights of widths {ns} and input_dim = {input_dim}")
    keys = jax.random.split(key, arch.n_layers + 2)
    sd = [math.sqrt(v) for v in arch.variances]
    v0 = sd[0] * jax.random.normal(keys[0], (ns[0], input_dim))
    vs = tuple(
        sd[l + 1] * jax.random.normal(keys[l + 1], (h, ns[l + 1], ns[l])) for l, h in enumerate(arch.heads)
    )
    a = sd[-1] * jax.random.normal(keys[-1], (ns[-1],))
    return {"V0": v0, "V": vs, "a": a}


def _check_params(arch: Architecture, params: dict, input_dim: int | None = None) -> tuple[int, ...]:
    """Check that ``params`` holds ``V0 [n_0, N0]``, ``V`` (one ``[H_l, n_l, n_{l-1}]`` array per layer of
    ``arch``) and ``a [n_L]`` whose shapes chain together; return the widths ``(n_0..n_L)``.
    ``input_dim``: the tokens' ``N0`` (not checked when ``None``).

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)
    """
    check_architecture(arch)
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict with keys 'V0', 'V', 'a' (paththeory.sample_prior); "
                        f"got {type(params).__name__}.")
    for name in ("V0", "V", "a"):
        if name not in params:
            raise ValueError(f"params must have keys 'V0', 'V', 'a'; missing {name!r}.")
    v0 = _shape(params["V0"], "params['V0']")
    if len(v0) != 2 or (input_dim is not None and v0[1] != input_dim):
        raise ValueError(f"V0 must be [n0, N0={'N0' if input_dim is None else input_dim}]; got {v0}.")
    widths = [v0[0]]
    if not isinstance(params["V"], (list, tuple)) or len(params["V"]) != arch.n_layers:
        got = len(params["V"]) if isinstance(params["V"], (list, tuple)) else type(params["V"]).__name__
        raise ValueError(f"params['V'] must be a list of L = {arch.n_layers} arrays, one per layer of the "
                         f"architecture with heads {arch.heads}; got {got}.")
    for l, (v, h) in enumerate(zip(params["V"], arch.heads)):
        shape = _shape(v, f"params['V'][{l}]")
        if len(shape) != 3 or shape[0] != h or shape[2] != widths[-1]:
            raise ValueError(
                f"V[{l}] must be [H_{l + 1}={h}, n_{l + 1}, n_{l}={widths[-1]}]; got {shape} (mismatched widths "
                f"between consecutive layers, or weights of another architecture than heads {arch.heads})."
            )
        widths.append(shape[1])
    if _shape(params["a"], "params['a']") != (widths[-1],):
        raise ValueError(f"a must be [n_L={widths[-1]}]; got {_shape(params['a'], 'a')}.")
    return tuple(widths)


def _shape(value, name: str) -> tuple[int, ...]:
    """The shape of an array (or nested list), or a ValueError naming ``name`` for a ragged list."""
    try:
        return tuple(np.shape(value))
    except ValueError:
        raise ValueError(f"{name} is a ragged nested list (its rows have different lengths); pass an array.") from None


def _weights(params: dict) -> dict:
    """``params`` (checked by :func:`_check_params`) with its weights as JAX arrays."""
    return {"V0": jnp.asarray(params["V0"]), "V": tuple(jnp.asarray(v) for v in params["V"]),
            "a": jnp.asarray(params["a"])}


def network_output(
    arch: Architecture,
    params: dict,
    x,
    attn: Sequence[Array] | None = None,
    head_mask: Sequence | None = None,
) -> Array:
    """Layer-by-layer forward pass of paper Eqs. (1)-(4): ``f(x)`` of shape ``[B]``.

    ``z^0_s = V^0 x_s / sqrt(N0)``;
    ``z^l_t = (H_l n_{l-1})^{-1/2} sum_h V^l_h sum_s z^{l-1}_s A^l_h[s, t]``;
    ``f = a . (sum_t r_t z^L_t) / sqrt(n_L)``. A :class:`Residual` level computes
    ``g_s z^{l-1}_t + g_a (H_l n_{l-1})^{-1/2} sum_h ...`` and an :class:`MLP` level has one head with
    identity attention, followed by its nonlinearity ``phi`` token by token.

    Book: The architecture (https://paththeory.github.io/paththeory/book/model.html#model-architecture)

    Args:
      attn: precomputed attention matrices (skips recomputing them from ``x``).
      head_mask: optional list over layers of ``[H_l]`` 0/1 weights. A pruned head's output is
        zeroed and the layer sum is rescaled by ``(H_l - d_l)^{-1/2}`` instead of ``H_l^{-1/2}``
        (paper §4.2, App. H.2.3). A mask must leave every level without a skip at least one head; a
        :class:`Residual` level whose heads are all pruned passes only its skip.

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> f = pt.network_output(arch, params, x)
      >>> f.shape, bool(np.allclose(f, pt.path_expansion_output(arch, params, x)))
      ((4,), True)
    """
    xj = _check_tokens(arch, x) if attn is None else jnp.asarray(as_float_array(x, "tokens x", ndim=3))
    attn = attention_matrices(arch, xj) if attn is None else _check_attention(arch, attn, xj)
    _check_params(arch, params, xj.shape[2])
    params = _weights(params)
    masks = [jnp.ones(h, xj.dtype) for h in arch.heads] if head_mask is None else check_head_mask(
        arch, head_mask, xj.dtype)
    z = jnp.einsum("in,btn->bti", params["V0"], xj) / math.sqrt(xj.shape[2])
    for layer, v, a, m, phi in zip(arch.attention, params["V"], attn, masks, arch.nonlinearities):
        mixed = jnp.einsum("bsi,bhst->bhti", z, a) * m[None, :, None, None]
        heads = jnp.einsum("hji,bhti->btj", v, mixed) / jnp.sqrt(jnp.maximum(jnp.sum(m), 1e-300) * v.shape[2])
        heads = activation(phi, heads)  # an MLP block's nonlinearity (the identity elsewhere)
        z = layer.skip_gain * z + layer.branch_gain * heads if isinstance(layer, Residual) else heads
    pooled = jnp.einsum("btj,t->bj", z, readout_vector(arch.readout, xj.shape[1]).astype(z.dtype))
    return require_finite(pooled @ params["a"] / math.sqrt(params["a"].shape[0]), "network_output",
                          "the tokens x or the weights in params are too large for float64 (or not finite).")


def _check_attention(arch: Architecture, attn: Sequence, x: Array) -> tuple[Array, ...]:
    """Precomputed attention: one ``[B, H_l, T, T]`` array per layer for the tokens ``x [B, T, N0]``."""
    if x.ndim != 3:
        raise ValueError(f"tokens x must be [examples, tokens, features]; got shape {tuple(x.shape)}.")
    if not isinstance(attn, (list, tuple)) or len(attn) != arch.n_layers:
        got = len(attn) if isinstance(attn, (list, tuple)) else type(attn).__name__
        raise ValueError(f"attn must hold one attention array per layer, L = {arch.n_layers} "
                         f"(paththeory.attention_matrices(arch, x)); got {got}.")
    b, t = x.shape[:2]
    for l, (a, h) in enumerate(zip(attn, arch.heads)):
        if _shape(a, f"attn[{l}]") != (b, h, t, t):
            raise ValueError(f"attn[{l}] must be [B={b}, H_{l + 1}={h}, T={t}, T={t}] for tokens x of shape "
                             f"{tuple(x.shape)}; got {_shape(a, f'attn[{l}]')}.")
    return tuple(jnp.asarray(a) for a in attn)


def check_head_mask(arch: Architecture, head_mask: Sequence, dtype) -> list[Array]:
    """The masks as arrays of ``dtype``; raise unless there is one ``[H_l]`` array per layer, of finite
    nonnegative weights, leaving every layer at least one head.

    Book: Pruning one head at a time (Fig. 3e)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-single-heads)
    """
    if not isinstance(head_mask, (list, tuple)):
        raise TypeError(f"head_mask must be a list of L = {arch.n_layers} arrays of shapes {[(h,) for h in arch.heads]} "
                        f"(paththeory.pruning.head_mask); got {type(head_mask).__name__}.")
    masks = [m if isinstance(m, jax.core.Tracer) else as_float_array(m, f"head_mask[{l}]", ndim=1)
             for l, m in enumerate(head_mask)]
    if len(masks) != arch.n_layers or any(m.shape != (h,) for m, h in zip(masks, arch.heads)):
        raise ValueError(f"head_mask must be a list of L arrays of shapes {[(h,) for h in arch.heads]}.")
    for l, (m, skip) in enumerate(zip(masks, arch.skips)):
        if not isinstance(m, jax.core.Tracer) and (np.any(m < 0) or not (np.sum(m) > 0 or skip)):
            raise ValueError(
                f"head_mask[{l}] = {m.tolist()} removes every head of layer {l + 1} (or has negative weights); "
                "a pruned network must keep at least one head in every level without a skip connection."
            )
    return [jnp.asarray(m, dtype) for m in masks]


def effective_weights(arch: Architecture, params: dict) -> Array:
    """``w^pi = (n_L...n_1)^{-1/2} (V^1_{h1})^T ... (V^L_{hL})^T a``: ``[n_paths, n0]`` (paper Eqs. (6), (22)).

    A skip branch contributes the identity (and no width factor): ``w^{(s, pi')} = w^{pi'}``, so the
    skip's copies of the level above are exact, draw by draw. A nonlinear :class:`MLP` block is passed through
    linearly (``M^T``): these are the weights whose Grams the nonlinear heuristic's order parameters describe
    (:mod:`paththeory.nonlinear_theory`), no longer the network's output weights.

    Book: Effective weights (definition) (https://paththeory.github.io/paththeory/book/model.html#def-effective-weights)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> pt.effective_weights(arch, params).shape  # [paths, n0]
      (6, 8)
    """
    _check_params(arch, params)
    params = _weights(params)
    w = params["a"][None, :]  # [1, n_L]
    for skip, v in zip(reversed(arch.skips), reversed(params["V"])):
        w_heads = jnp.einsum("pj,hji->hpi", w, v) / math.sqrt(v.shape[1])
        w_all = jnp.concatenate([w[None], w_heads], axis=0) if skip else w_heads
        w = w_all.reshape(-1, v.shape[2])  # this level's branch slowest, the skip first
    return require_finite(w, "effective_weights(arch, params)", "params holds NaN or infinite weights (or ones too large for float64).")


def path_contributions(arch: Architecture, params: dict, features) -> Array:
    """Each path's share of the output, ``c_pi(x) = w^pi . (V^0 xi^pi(x)) / (sigma_0 sqrt(n_0))``: ``[B, n_paths]``.

    The network output is their sum (:func:`path_expansion_output`), and pruning heads only
    removes and rescales them (:func:`paththeory.pruning.path_weights`), so the accuracy of every
    pruned network follows from one ``[B, n_paths]`` array.

    Book: Pruning one head at a time (Fig. 3e)
    (https://paththeory.github.io/paththeory/book/pruning.html#pruning-single-heads)

    Args:
      features: path features ``[B, n_paths, N0]`` (:func:`path_features`).

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> c = pt.path_contributions(arch, params, pt.path_features(arch, x))
      >>> c.shape, bool(np.allclose(c.sum(axis=1), pt.network_output(arch, params, x)))
      ((4, 6), True)
    """
    _check_params(arch, params)
    _require_linear(arch, "path_contributions")
    n_in = _shape(params["V0"], "params['V0']")[1]
    shape = _shape(features, "features")
    if len(shape) != 3 or shape[1] != arch.n_paths or shape[2] != n_in:
        raise ValueError(f"features must be [B, n_paths={arch.n_paths}, N0={n_in}] "
                         f"(paththeory.path_features(arch, x)); got {shape}.")
    xi = jnp.asarray(features)
    params = _weights(params)
    w = effective_weights(arch, params)
    n0 = params["V0"].shape[0]
    per_input = w @ params["V0"]  # [n_paths, N0]: the input direction each path reads out
    c = jnp.einsum("pn,bpn->bp", per_input, xi) / (math.sqrt(arch.variances[0]) * math.sqrt(n0))
    return require_finite(c, "path_contributions(arch, params, features)",
                          "features or params hold NaN or infinite entries (or ones too large for float64).")


def _require_linear(arch: Architecture, caller: str) -> None:
    """Raise unless ``arch`` is linear in each weight matrix: a nonlinear MLP block breaks the sum over paths."""
    if not arch.linear:
        raise ValueError(f"{caller} writes the network as a sum over paths, which holds only without a nonlinear MLP "
                         f"block (levels' nonlinearities: {arch.nonlinearities}); use paththeory.network_output for "
                         "the output of a nonlinear network.")


def path_expansion_output(arch: Architecture, params: dict, x) -> Array:
    """``f(x) = sum_pi w^pi . (V^0 xi^pi(x)) / (sigma_0 sqrt(n_0))``: the network as a sum over paths.

    Book: Attention paths (https://paththeory.github.io/paththeory/book/model.html#model-attention-paths)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, params, x = model_problem()
      >>> bool(np.allclose(pt.path_expansion_output(arch, params, x), pt.network_output(arch, params, x)))
      True
    """
    return path_contributions(arch, params, path_features(arch, x)).sum(axis=1)
