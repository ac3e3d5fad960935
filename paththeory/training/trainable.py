"""The trainable network of gradient-descent training: its settings (:class:`TrainConfig`), initial
weights, forward pass, loss and optimiser (the paper's Appendix H.1).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from paththeory._checks import check_allocation, check_count
from paththeory.model import Architecture, QKAttention, network_output

Params = dict  # {"Q", "K": [L, H, G, N0], "V0": [n, N0], "V": tuple of [H, n, n], "a": [n]}


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class TrainConfig:
    """Sizes and optimiser settings of one training run (defaults: the shipped checkpoint's, but its seed 1)."""

    steps: int = 41000
    batch_size: int = 128
    lr: float = 3e-4
    warmup: int = 200
    clip: float = 1.0
    weight_decay: float = 5e-5
    d_model: int = 512
    qk_dim: int = 128
    heads: int = 4
    layers: int = 2
    channels: int = 3
    qk_scale: float = 1.0
    qk_init: str = "random"
    augment: str = "dihedral"
    seed: int = 0
    val_every: int = 1000
    n_eval: int = 1000
    split_seed: int = 0
    validation: float = 0.1
    test: float = 0.25
    time_limit_minutes: float | None = None

    def __post_init__(self) -> None:
        self._check_types()
        self._check_signs()
        if self.channels not in (1, 3):
            raise ValueError(f"channels must be 1 (N0 = 64) or 3 (N0 = 192); got {self.channels!r}.")
        if self.qk_init not in ("random", "shared"):
            raise ValueError(f"qk_init must be 'random' or 'shared'; got {self.qk_init!r}.")
        if self.augment not in AUGMENTATIONS:
            raise ValueError(f"augment must be one of {tuple(AUGMENTATIONS)}; got {self.augment!r}.")
        if not (self.validation >= 0 and self.test >= 0 and self.validation + self.test < 1):
            raise ValueError(f"validation and test must be fractions of the characters, >= 0 with validation + test < 1 "
                             f"(the rest is for training); got {self.validation!r} and {self.test!r}.")
        if self.n_eval % 2:
            raise ValueError(f"n_eval must be even (balanced evaluation sets); got {self.n_eval}.")
        if self.time_limit_minutes is not None and not (self.time_limit_minutes > 0):
            raise ValueError(f"time_limit_minutes must be > 0 (or None for no limit: on the command line, leave out "
                             f"--time-limit-minutes); got {self.time_limit_minutes!r}.")

    def _check_types(self) -> None:
        """Each field of the type its annotation names (``None`` only where allowed), numbers finite."""
        for field in dataclasses.fields(self):
            value, kind = getattr(self, field.name), field.type.removesuffix(" | None")
            cls, word = _FIELD_KINDS[kind]
            if value is None and field.type.endswith("| None"):
                continue
            if isinstance(value, bool) or not isinstance(value, cls) or kind != "str" and not math.isfinite(value):
                raise TypeError(f"TrainConfig.{field.name} must be {word}; got {value!r} ({type(value).__name__}).")

    def _check_signs(self) -> None:
        """Counts positive, rates and scales > 0, decay, warm-up and seeds >= 0."""
        for name in ("steps", "batch_size", "d_model", "qk_dim", "heads", "layers", "val_every", "n_eval"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be a positive integer; got {getattr(self, name)!r}.")
        for name in ("lr", "clip", "qk_scale"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0; got {getattr(self, name)!r}.")
        for name in ("weight_decay", "warmup", "seed", "split_seed"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)!r}.")


#: The Python type and its description of each kind of :class:`TrainConfig` field.
_FIELD_KINDS = {"int": (numbers.Integral, "an integer"), "float": (numbers.Real, "a finite number"),
                "str": (str, "a string")}

#: Image transforms whose results are new training classes: rotations by k * 90 degrees, then
#: optionally a left-right flip.
AUGMENTATIONS: dict[str, tuple[tuple[int, bool], ...]] = {
    "none": ((0, False),),
    "rot4": tuple((k, False) for k in range(4)),
    "dihedral": tuple((k, f) for f in (False, True) for k in range(4)),
}


# --------------------------------------------------------------------------- parameters and model


def init_params(config: TrainConfig, input_dim: int, seed: int = 0) -> Params:
    """Initial weights (numpy float32). ``V0, V, a ~ N(0, 1)`` (the 1/sqrt(width) factors are explicit);
    ``Q, K ~ N(0, qk_scale^2 / N0)``, and with ``qk_init="shared"`` ``K = Q`` (``K^T Q`` positive
    semi-definite: every head starts out attending to tokens similar to the query)."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a paththeory.training.TrainConfig; got {type(config).__name__}.")
    input_dim, seed = check_count(input_dim, "input_dim"), check_count(seed, "seed", minimum=0)
    L, H, G, n = config.layers, config.heads, config.qk_dim, config.d_model
    check_allocation(8 * (L * H * (n * n + 2 * G * input_dim) + n * (input_dim + 1)),
                     f"the weights of d_model = {n}, qk_dim = {G}, {L} layers of {H} heads")
    rng = np.random.default_rng(seed)
    std = config.qk_scale / math.sqrt(input_dim)
    q = std * rng.standard_normal((L, H, G, input_dim))
    k = q if config.qk_init == "shared" else std * rng.standard_normal((L, H, G, input_dim))
    params = {
        "Q": q,
        "K": k,
        "V0": rng.standard_normal((n, input_dim)),
        "V": tuple(rng.standard_normal((H, n, n)) for _ in range(L)),
        "a": rng.standard_normal(n),
    }
    return jax.tree.map(lambda a: a.astype(np.float32), params)


def architecture(params: Params) -> Architecture:
    """The :class:`Architecture` of the trained Q/K (mean readout); works on traced arrays too."""
    return Architecture(
        tuple(QKAttention(q, k) for q, k in zip(params["Q"], params["K"])), readout="mean"
    )


def value_params(params: Params) -> dict:
    """The ``{"V0", "V", "a"}`` part that :func:`paththeory.model.network_output` takes."""
    return {"V0": params["V0"], "V": tuple(params["V"]), "a": params["a"]}


def predict(params: Params, x: jax.Array, head_mask: Sequence | None = None) -> jax.Array:
    """Network output ``f(x)`` ``[B]`` for tokens ``x [B, 48, N0]`` (the paper's Eqs. 1-4)."""
    return network_output(architecture(params), value_params(params), x, head_mask=head_mask)


def loss_fn(params: Params, x: jax.Array, y: jax.Array) -> jax.Array:
    """Mean squared error ``mean (f(x) - y)^2`` against ``y = +-1`` (the paper's Appendix H.1)."""
    return jnp.mean((predict(params, x) - y) ** 2)


def optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """Global-norm clipping, then AdamW with a linear warm-up to a constant learning rate."""
    schedule = optax.linear_schedule(0.0, config.lr, max(config.warmup, 1))
    return optax.chain(
        optax.clip_by_global_norm(config.clip), optax.adamw(schedule, weight_decay=config.weight_decay)
    )
