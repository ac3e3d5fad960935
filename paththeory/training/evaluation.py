"""The accuracy of a trained network on sequences, and its "gradient-descent order parameter" (the
paper's Eqs. 6 and 13, Appendix H.2)."""


from __future__ import annotations

from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import check_count, check_sign_labels
from paththeory.model import Architecture, check_head_mask, effective_weights
from paththeory.training.checkpoints import Checkpoint
from paththeory.training.trainable import Params, architecture, predict, value_params


@jax.jit
def _predict_jit(params: Params, x: jax.Array, head_mask) -> jax.Array:
    return predict(params, x, head_mask)


def evaluate(checkpoint_or_params, x, y, head_mask: Sequence | None = None, batch_size: int = 500) -> float:
    """Accuracy ``mean(sign f(x) == y)`` of a :class:`Checkpoint` or a training params dict.

    Args:
      x: tokens ``[P, 48, N0]``; ``y``: targets ``[P]`` in ``{-1, +1}``.
      head_mask: list over layers of ``[H_l]`` 0/1 arrays: pruned heads (the paper's Appendix H.2.3).
    Computed in float32, as in training.
    """
    params = checkpoint_or_params.trained if isinstance(checkpoint_or_params, Checkpoint) else checkpoint_or_params
    if not isinstance(params, Mapping):
        raise TypeError(f"checkpoint_or_params must be a Checkpoint or a params dict of paththeory.training "
                        f"(init_params, train); got {type(params).__name__}.")
    batch_size = check_count(batch_size, "batch_size")
    missing = [k for k in ("Q", "K", "V0", "V", "a") if k not in params]
    if missing:
        raise ValueError(f"params lacks {missing}: pass a Checkpoint or the params of paththeory.training "
                         "(init_params, train), whose queries and keys are trained too.")
    if np.ndim(x) != 3 or np.ndim(y) != 1 or len(x) != len(y) or len(y) == 0:
        raise ValueError(f"x must be [P >= 1, T, N0] and y [P] in {{-1, +1}}; got {np.shape(x)} and {np.shape(y)}.")
    y = check_sign_labels(y, "y")
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinite tokens; clean the input before calling.")
    if head_mask is not None:  # checked here: inside the compiled forward pass the mask is not inspected
        head_mask = check_head_mask(architecture(params), head_mask, jnp.float32)
    with jax.enable_x64(False):
        p32 = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
        mask = None if head_mask is None else [jnp.asarray(m, jnp.float32) for m in head_mask]
        f = np.concatenate([
            np.asarray(_predict_jit(p32, jnp.asarray(x[i : i + batch_size], jnp.float32), mask))
            for i in range(0, len(y), batch_size)
        ])
    if not np.all(np.isfinite(f)):
        raise ValueError("the network's outputs came out NaN or infinite: its weights are not finite "
                         "(a damaged checkpoint?) or the tokens are too large for float32.")
    return float(np.mean(np.sign(f) == y))


def gd_order_parameter(arch: Architecture, params: dict) -> np.ndarray:
    """"Gradient-descent U" ``w^pi . w^sigma`` ``[n_paths, n_paths]`` from trained weights (the paper's Eqs. 6 and 13).

    ``w^pi`` are the effective weights of :func:`paththeory.model.effective_weights` (``V0`` excluded);
    they differ from the raw products ``V1^T V2^T a`` by one factor common to all paths, so only
    the colour pattern is meaningful. ``params`` may be the value part or the full training dict.
    """
    w = np.asarray(effective_weights(arch, value_params(params)), dtype=np.float64)
    if w.shape[0] != arch.n_paths:
        raise ValueError(f"params give {w.shape[0]} paths but the architecture has {arch.n_paths}.")
    return w @ w.T
