"""Input validation shared by the package: clear ValueErrors instead of NaNs deep in JAX."""

from __future__ import annotations

import os
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def as_float_array(value, name: str, ndim: int | Sequence[int] | None = None, finite: bool = True) -> np.ndarray:
    """Return ``value`` as a finite, non-empty float64 numpy array, or raise a ValueError naming ``name``.

    With ``finite=False`` NaN and infinite entries pass (for statistics that report them as NaN).
    Traced JAX values (inside ``jit``/``grad``) are passed through after the shape checks only.
    """
    if isinstance(value, jax.core.Tracer):
        _check_ndim(value, name, ndim)
        _check_nonempty(value, name)
        return value
    try:
        kind = (value if isinstance(value, jax.Array) else np.asarray(value)).dtype.kind
    except ValueError:  # numpy refuses ragged nested lists
        raise ValueError(f"{name} is a ragged nested list (its rows have different lengths); pass a "
                         "rectangular array.") from None
    if kind in "USc":  # strings would be parsed, complex numbers lose their imaginary part
        raise TypeError(f"{name} must hold real numbers; got an array of {'complex numbers' if kind == 'c' else 'strings'}.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a numeric array; got {type(value).__name__} ({err}).") from None
    _check_ndim(arr, name, ndim)
    _check_nonempty(arr, name)
    if finite and not np.all(np.isfinite(arr)):
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
    m = check_symmetric(matrix, name)
    eigs = np.linalg.eigvalsh(m) if m.size else np.ones(1)
    eig_min = float(eigs[0])
    floor = -1e-10 * float(np.max(np.abs(eigs))) if semi else 0.0
    if not (eig_min >= floor if semi else eig_min > floor):
        raise ValueError(
            f"{name} must be positive {'semi-' if semi else ''}definite; its smallest eigenvalue is {eig_min:.3g}. "
            "Order parameters live on the cone of positive-definite matrices "
            "(e.g. arch.gp_scale * I, or the U of a Solution)."
        )


def check_symmetric(matrix, name: str) -> np.ndarray:
    """``matrix`` as a float64 array after checking it is square and symmetric (up to round-off of 1e-10
    times its largest entry); raise a ValueError naming ``name`` otherwise."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"{name} must be a square matrix; got shape {m.shape}.")
    scale = max(1.0, float(np.max(np.abs(m)))) if m.size else 1.0
    if not np.allclose(m, m.T, atol=1e-10 * scale, rtol=0.0):
        raise ValueError(
            f"{name} must be symmetric; max |M - M^T| = {np.max(np.abs(m - m.T)):.3g}. "
            "Symmetrise it with (M + M.T) / 2 if the asymmetry is round-off."
        )
    return m


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


def check_finite(value: float, name: str) -> float:
    """Return ``value`` as float if it is a finite number, else raise."""
    v = _as_number(value, name)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number; got {value!r}.")
    return v


def check_open_interval(value: float, name: str, low: float = 0.0, high: float = 1.0) -> float:
    """Return ``value`` as float if ``low < value < high``, else raise."""
    v = _as_number(value, name)
    if not low < v < high:
        raise ValueError(f"{name} must lie strictly between {low:g} and {high:g}; got {value!r}.")
    return v


def _as_number(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, not a bool; got {value!r}.")
    if isinstance(value, (str, bytes, complex)):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}.")
    try:
        scalar = np.ndim(value) == 0
    except ValueError:  # a ragged list
        scalar = False
    if not scalar:
        raise TypeError(f"{name} must be one number; got {type(value).__name__} {value!r}.")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}.") from None


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of the strings ``choices``; else raise a ValueError naming ``name`` and them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {value!r}.")
    return value


def check_count(value, name: str, minimum: int = 1, hint: str = "") -> int:
    """Return ``value`` as an int if it is a whole number ``>= minimum``; else raise naming ``name`` (and
    adding ``hint``, a sentence on why)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
        raise TypeError(f"{name} must be a whole number; got {type(value).__name__} {value!r}.{hint and ' ' + hint}")
    if not (isinstance(value, (int, np.integer)) or np.isfinite(value)) or value != int(value) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}; got {value!r}.{hint and ' ' + hint}")
    return int(value)


def is_sequence(value) -> bool:
    """Whether ``value`` is a list, tuple or array (not a string)."""
    return isinstance(value, (list, tuple, np.ndarray))


def check_heads(heads: Sequence[int], name: str = "heads") -> tuple[int, ...]:
    """``heads`` as a non-empty tuple of whole numbers >= 1 (heads per layer), or raise naming ``name``."""
    if not is_sequence(heads) or any(is_sequence(h) for h in heads) or len(heads) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of head counts per layer, e.g. (3, 3); got {heads!r}.")
    return tuple(check_count(h, f"{name}[{l}]") for l, h in enumerate(heads))


def check_flag(value, name: str) -> bool:
    """Return ``value`` if it is ``True`` or ``False``; else raise (a string like ``"no"`` would read as true)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}.")
    return bool(value)


def check_targets(y, name: str = "y", ndim: int | Sequence[int] | None = None) -> np.ndarray:
    """Real-valued targets as :func:`as_float_array` does, but booleans refused (they would silently become 1/0)."""
    if getattr(y, "dtype", None) == bool or (not hasattr(y, "dtype") and np.asarray(y).dtype == bool):
        raise TypeError(f"{name} holds booleans; labels must be numbers, e.g. -1 or +1: pass np.where({name}, 1.0, -1.0).")
    return as_float_array(y, name, ndim)


def check_sign_labels(y, name: str = "y") -> np.ndarray:
    """``y`` as a float64 array of labels ``-1`` or ``+1`` (the two classes of the paper), or raise naming ``name``.

    Booleans and ``0/1`` labels are refused rather than read as ``+-1``: a ``0`` would count as a wrong
    sign for every prediction."""
    labels = check_targets(y, name)
    if not np.all(np.abs(labels) == 1):
        values = np.unique(labels)
        shown = ", ".join(f"{v:g}" for v in values[:6]) + (", ..." if values.size > 6 else "")
        hint = f" Map 0/1 labels to +-1 with 2 * {name} - 1." if set(values) <= {0.0, 1.0} else ""
        raise ValueError(f"{name} must hold labels -1 or +1; got the values {{{shown}}}.{hint}")
    return labels


def check_rng(rng, name: str = "rng") -> np.random.Generator:
    """``rng`` if it is a ``numpy.random.Generator``, or a new one seeded by a whole number ``rng >= 0``; else raise."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)):
        raise TypeError(f"{name} must be a numpy.random.Generator or a seed, a whole number >= 0, e.g. "
                        f"np.random.default_rng(0) or 0; got {type(rng).__name__} {rng!r}.")
    return np.random.default_rng(check_count(rng, name, minimum=0))


def check_allocation(n_bytes: float, what: str) -> None:
    """Raise a ValueError, before anything is allocated, when ``what`` (e.g. ``"n_examples = 10^12 sequences"``)
    would need more than this machine's physical memory (unchecked where the OS does not say)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
        return
    if n_bytes > total:
        raise ValueError(f"{what} would need {n_bytes / 2**30:,.0f} GiB of memory, more than this machine's "
                         f"{total / 2**30:,.0f} GiB; ask for less.")


def check_key(key, name: str = "key"):
    """Return ``key`` if it is a JAX PRNG key (``jax.random.PRNGKey(seed)`` or ``jax.random.key(seed)``), else raise."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and (jnp.issubdtype(dtype, jax.dtypes.prng_key)
                              or (dtype == jnp.uint32 and tuple(key.shape) == (2,))):
        return key
    raise TypeError(f"{name} must be a JAX random key such as jax.random.PRNGKey(0); got {type(key).__name__} "
                    f"{key!r}.")
