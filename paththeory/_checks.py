"""Input validation shared by the package: clear ValueErrors instead of NaNs deep in JAX."""

from __future__ import annotations

from typing import Sequence

import jax
import numpy as np


def as_float_array(value, name: str, ndim: int | Sequence[int] | None = None) -> np.ndarray:
    """Return ``value`` as a finite float64 numpy array, or raise a ValueError naming ``name``.

    Traced JAX values (inside ``jit``/``grad``) are passed through after the shape check only.
    """
    if isinstance(value, jax.core.Tracer):
        _check_ndim(value, name, ndim)
        return value
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array; got {type(value).__name__} ({err}).") from None
    _check_ndim(arr, name, ndim)
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite entries; clean the input before calling.")
    return arr


def _check_ndim(arr, name: str, ndim: int | Sequence[int] | None) -> None:
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            raise ValueError(
                f"{name} must have {' or '.join(str(d) for d in allowed)} dimensions; got shape {arr.shape}."
            )


def check_positive_definite(matrix: np.ndarray, name: str) -> None:
    """Raise a ValueError unless ``matrix`` is square, symmetric and positive definite."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {m.shape}.")
    scale = max(1.0, float(np.max(np.abs(m)))) if m.size else 1.0
    if not np.allclose(m, m.T, atol=1e-10 * scale, rtol=0.0):
        raise ValueError(f"{name} must be symmetric; max |M - M^T| = {np.max(np.abs(m - m.T)):.3g}.")
    eig_min = float(np.linalg.eigvalsh(m)[0]) if m.size else 1.0
    if not eig_min > 0.0:
        raise ValueError(
            f"{name} must be positive definite; its smallest eigenvalue is {eig_min:.3g}. "
            "Order parameters live on the cone of positive-definite matrices."
        )


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as float if it is finite and > 0, else raise."""
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite positive number; got {value!r}.")
    return v
