"""Input validation shared by the package: clear ValueErrors instead of NaNs deep in JAX."""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def as_float_array(value, name: str, ndim: int | Sequence[int] | None = None) -> np.ndarray:
    """Return ``value`` as a finite, non-empty float64 numpy array, or raise a ValueError naming ``name``.

    Traced JAX values (inside ``jit``/``grad``) are passed through after the shape checks only.
    """
    if isinstance(value, jax.core.Tracer):
        _check_ndim(value, name, ndim)
        _check_nonempty(value, name)
        return value
    kind = np.asarray(value).dtype.kind if not isinstance(value, jax.Array) else "f"
    if kind in "USc":  # strings would be parsed, complex numbers lose their imaginary part
        raise TypeError(f"{name} must hold real numbers; got an array of {'complex numbers' if kind == 'c' else 'strings'}.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array; got {type(value).__name__} ({err}).") from None
    _check_ndim(arr, name, ndim)
    _check_nonempty(arr, name)
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


def _check_nonempty(arr, name: str) -> None:
    if 0 in arr.shape:
        raise ValueError(f"{name} is empty (shape {tuple(arr.shape)}); pass at least one entry along every axis.")


def check_positive_definite(matrix: np.ndarray, name: str, semi: bool = False) -> None:
    """Raise a ValueError unless ``matrix`` is square, symmetric and positive definite (with ``semi``:
    positive semi-definite, up to round-off of 1e-10 times its largest eigenvalue)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {m.shape}.")
    scale = max(1.0, float(np.max(np.abs(m)))) if m.size else 1.0
    if not np.allclose(m, m.T, atol=1e-10 * scale, rtol=0.0):
        raise ValueError(
            f"{name} must be symmetric; max |M - M^T| = {np.max(np.abs(m - m.T)):.3g}. "
            "Symmetrise it with (M + M.T) / 2 if the asymmetry is round-off."
        )
    eigs = np.linalg.eigvalsh(m) if m.size else np.ones(1)
    eig_min = float(eigs[0])
    floor = -1e-10 * float(np.max(np.abs(eigs))) if semi else 0.0
    if not (eig_min >= floor if semi else eig_min > floor):
        raise ValueError(
            f"{name} must be positive {'semi-' if semi else ''}definite; its smallest eigenvalue is {eig_min:.3g}. "
            "Order parameters live on the cone of positive-definite matrices "
            "(e.g. arch.gp_scale * I, or the U of a Solution)."
        )


def check_order_parameter(U, name: str, size: int, semi: bool = False):
    """``U`` as a float64 ``[size, size]`` array after checking it is finite, symmetric and positive
    definite, or with ``semi`` positive semi-definite (the one check for every order parameter a user
    passes in); raise a ValueError naming ``name`` otherwise. Traced values get the shape check only.

    The action needs a definite ``U`` (its entropy holds ``ln det U``); a kernel, a predictor or a
    head score is defined for any semi-definite one (the paper's condition, §3.1), e.g. one path alone."""
    u = as_float_array(U, name, ndim=2)
    if tuple(u.shape) != (size, size):
        raise ValueError(f"{name} must be [{size}, {size}] (one row and column per path); got {tuple(u.shape)}.")
    if not isinstance(u, jax.core.Tracer):
        check_positive_definite(u, name, semi)
    return u


def require_finite(value, name: str, hint: str):
    """Return ``value`` if it is finite (or traced); else raise a ValueError naming ``name`` with ``hint``."""
    if isinstance(value, jax.core.Tracer):
        return value
    finite = jnp.all(jnp.isfinite(value)) if isinstance(value, jax.Array) else np.all(np.isfinite(value))
    if not bool(finite):
        raise ValueError(f"{name} came out non-finite (NaN or inf): {hint}")
    return value


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as float if it is finite and > 0, else raise."""
    v = _as_number(value, name)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite positive number; got {value!r}.")
    return v


def check_nonnegative(value: float, name: str) -> float:
    """Return ``value`` as float if it is finite and >= 0, else raise."""
    v = _as_number(value, name)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0; got {value!r}.")
    return v


def _as_number(value, name: str) -> float:
    if isinstance(value, (str, bytes, complex)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}.") from None


def check_count(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int if it is a whole number ``>= minimum``; else raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise TypeError(f"{name} must be a whole number; got {type(value).__name__} {value!r}.")
    if not np.isfinite(value) or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}; got {value!r}.")
    return int(value)
