"""The Gaussian kernel maps of a pointwise nonlinearity: ``F_phi(q1, q2, q12) = E[phi(u) phi(v)]``.

For a centred Gaussian pair ``(u, v)`` with variances ``q1``, ``q2`` and covariance ``q12``
(``rho = q12 / sqrt(q1 q2)``):

* identity: ``F = q12``, mean ``m = 0``;
* ReLU (the arc-cosine kernel of degree one, Cho & Saul 2009):
  ``F = [sqrt(q1 q2 - q12^2) + (pi - arccos rho) q12] / (2 pi)``, ``m(q) = sqrt(q / (2 pi))``;
* erf (the arcsine kernel, Williams 1997): ``F = (2 / pi) arcsin(2 q12 / sqrt((1 + 2 q1)(1 + 2 q2)))``, ``m = 0``.

The centred map is ``F^c = F - m(q1) m(q2)``. Applied entrywise to a covariance matrix ``Q``
(:func:`kernel_map`), ``F_phi[Q]_ij = F_phi(Q_ii, Q_jj, Q_ij)`` is again positive semi-definite: it is
the second-moment matrix of ``phi`` of a Gaussian vector with covariance ``Q``.

The ReLU map is once differentiable at ``rho = 1`` (the diagonal of a kernel matrix): its first derivatives,
``dF/dq12 = (pi - arccos rho) / (2 pi)`` and ``dF/dq1 = sqrt(q1 q2 - q12^2) / (4 pi q1)``, are finite there, but
automatic differentiation of the formula returns NaN (``sqrt(q1 q2 - q12^2)`` has an infinite slope at
``rho = 1``). They are written out here (a custom derivative). The second derivative ``d2F/dq12^2 =
1 / (2 pi sqrt(q1 q2 - q12^2))`` does diverge as ``rho -> 1``; the slope inside the first derivatives is capped
(relative to ``q1 q2``), which leaves it exact except within ``1e-12`` of ``rho = 1`` and makes it finite there.
The diagonal of a kernel matrix moves along ``q1 = q2 = q12``, where ``F = q / 2`` is linear and the tangent of
``q1 q2 - q12^2`` is exactly zero, so the Hessian of ``F[Q]`` is exact: a capped slope times zero is zero. The angle is ``pi - atan2(sqrt(q1 q2 - q12^2), q12)``, exact on the
diagonal (``arccos(rho)`` there would turn the rounding of ``rho`` into an error of order ``1e-8``).

Book: Beyond the paper: nonlinear MLP blocks (https://paththeory.github.io/paththeory/book/nonlinear.html)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import as_float_array

Array = jax.Array

#: The nonlinearities with a kernel map, by name (:class:`paththeory.model.MLP`'s ``nonlinearity``).
NONLINEARITIES = ("identity", "relu", "erf")
#: Where the capped slope of ``sqrt(q1 q2 - q12^2)`` stops growing, relative to ``q1 q2`` (scale-free, as ReLU's
#: homogeneity needs: the map's Hessian at ``c Q`` is the one at ``Q`` over ``c`` for any scale ``c``).
_CAP = 1e-12


def check_nonlinearity(name) -> str:
    """``name`` if it is one of :data:`NONLINEARITIES`, else a ValueError that lists them.

    Example:
      >>> check_nonlinearity("relu")
      'relu'
    """
    if not isinstance(name, str) or name not in NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {NONLINEARITIES} (the ones with a Gaussian kernel map); "
                         f"got {name!r}.")
    return name


def activation(name: str, x: Array) -> Array:
    """``phi(x)`` entrywise: the nonlinearity itself, as the finite network applies it.

    Example:
      >>> print(np.asarray(activation("relu", jnp.array([-1.0, 2.0]))))
      [0. 2.]
    """
    name = check_nonlinearity(name)
    if name == "relu":
        return jnp.maximum(x, 0.0)
    if name == "erf":
        return jax.scipy.special.erf(x)
    return x


# --------------------------------------------------------------------------- capped primitives


@jax.custom_jvp
def _root(x: Array, scale: Array) -> Array:
    """``sqrt(max(x, 0))`` with its slope ``1 / (2 sqrt(x))`` capped where ``x < _CAP * scale`` (``scale``: the
    size of ``x``'s terms, ``q1 q2``; it only sets the cap and carries no derivative)."""
    return jnp.sqrt(jnp.maximum(x, 0.0))


@_root.defjvp
def _root_jvp(primals, tangents):
    (x, scale), (dx, _) = primals, tangents
    return _root(x, scale), 0.5 * dx / jnp.sqrt(jnp.maximum(x, _CAP * scale))


def _angle(root: Array, q12: Array) -> Array:
    """``pi - arccos(rho) = pi - atan2(sqrt(q1 q2 - q12^2), q12)``: exact on the diagonal, where ``root`` is zero
    (``arccos`` near ``rho = 1`` would turn the rounding of ``rho`` into an error of order ``1e-8``)."""
    return jnp.pi - jnp.arctan2(root, q12)


@jax.custom_jvp
def _relu_moment(q1: Array, q2: Array, q12: Array) -> Array:
    """``E[relu(u) relu(v)]`` (arc-cosine kernel), with the first derivatives written out."""
    root = _root(q1 * q2 - q12**2, q1 * q2)
    return (root + _angle(root, q12) * q12) / (2.0 * jnp.pi)


@_relu_moment.defjvp
def _relu_moment_jvp(primals, tangents):
    q1, q2, q12 = primals
    d1, d2, d12 = tangents
    root = _root(q1 * q2 - q12**2, q1 * q2)
    tangent = (_angle(root, q12) * d12 + 0.5 * root * (d1 / q1 + d2 / q2)) / (2.0 * jnp.pi)
    return _relu_moment(q1, q2, q12), tangent


# --------------------------------------------------------------------------- the maps


def second_moment(name: str, q1, q2, q12) -> Array:
    """``F_phi(q1, q2, q12) = E[phi(u) phi(v)]`` (broadcasting), the variances ``q1, q2 > 0``.

    Example:
      >>> round(float(second_moment("relu", 1.0, 2.0, 0.3)), 12), round(float(second_moment("relu", 2.0, 2.0, 2.0)), 12)
      (0.305162611024, 1.0)
    """
    name = check_nonlinearity(name)
    q1, q2, q12 = _variances(q1, "q1"), _variances(q2, "q2"), _covariances(q12, q1, q2)
    if name == "relu":
        return _relu_moment(*jnp.broadcast_arrays(q1, q2, q12))
    if name == "erf":
        return (2.0 / jnp.pi) * jnp.arcsin(2.0 * q12 / jnp.sqrt((1.0 + 2.0 * q1) * (1.0 + 2.0 * q2)))
    return jnp.broadcast_arrays(q1, q2, q12)[2]


def mean(name: str, q) -> Array:
    """``m_phi(q) = E[phi(u)]`` for ``u ~ N(0, q)``: ``sqrt(q / (2 pi))`` for ReLU, zero for the odd ones.

    Example:
      >>> round(float(mean("relu", 2 * np.pi)), 12), float(mean("erf", 1.0))
      (1.0, 0.0)
    """
    name = check_nonlinearity(name)
    q = _variances(q, "q")
    return jnp.sqrt(q / (2.0 * jnp.pi)) if name == "relu" else jnp.zeros_like(q)


def centred_moment(name: str, q1, q2, q12) -> Array:
    """``F^c_phi = F_phi - m_phi(q1) m_phi(q2)``: the covariance of ``phi(u)`` and ``phi(v)``.

    Example:
      >>> round(float(centred_moment("relu", 1.0, 2.0, 0.3)), 12)
      0.080083531985
    """
    return second_moment(name, q1, q2, q12) - mean(name, q1) * mean(name, q2)


def kernel_map(name: str, Q, centred: bool = False) -> Array:
    """``F_phi[Q]``, entrywise on a covariance matrix ``Q [n, n]``: ``F_phi(Q_ii, Q_jj, Q_ij)``
    (``centred``: ``F^c_phi``). Positive semi-definite when ``Q`` is.

    Example:
      >>> print(np.round(np.asarray(kernel_map("relu", jnp.array([[2.0, 0.0], [0.0, 4.0]]))), 6))
      [[1.       0.450158]
       [0.450158 2.      ]]
    """
    Q = jnp.asarray(Q)
    if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
        raise ValueError(f"Q must be a square covariance matrix; got shape {tuple(Q.shape)}.")
    return cross_map(name, jnp.diagonal(Q), jnp.diagonal(Q), Q, centred)


def cross_map(name: str, q_a, q_b, Q_ab, centred: bool = False) -> Array:
    """``F_phi(q_a[i], q_b[j], Q_ab[i, j])``: the map between two sets of points with variances ``q_a [n]`` and
    ``q_b [m]`` and cross-covariance ``Q_ab [n, m]`` (test against training points, for the predictor).

    Example:
      >>> float(cross_map("identity", jnp.ones(1), jnp.ones(1), jnp.full((1, 1), 0.5))[0, 0])
      0.5
    """
    moment = centred_moment if centred else second_moment
    return moment(name, jnp.asarray(q_a)[:, None], jnp.asarray(q_b)[None, :], jnp.asarray(Q_ab))


def _covariances(q12, q1: Array, q2: Array) -> Array:
    """``q12`` as an array; concrete values must be finite, broadcast against the variances and satisfy
    ``q12^2 <= q1 q2`` (to rounding): a covariance of two Gaussians."""
    if any(isinstance(v, jax.core.Tracer) for v in (q12, q1, q2)):
        return jnp.asarray(q12)
    arr = as_float_array(q12, "q12")
    try:
        a, b, c = np.broadcast_arrays(np.asarray(q1), np.asarray(q2), arr)
    except ValueError:
        raise ValueError(f"q1, q2 and q12 must broadcast to one shape; got {np.shape(q1)}, {np.shape(q2)} and "
                         f"{arr.shape}.") from None
    if np.any(c**2 > a * b * (1 + 1e-9)):
        raise ValueError("q12 is not a covariance of the variances q1, q2: q12^2 > q1 q2 somewhere (a correlation "
                         "above one); the kernel matrix it comes from is not positive semi-definite.")
    return jnp.asarray(arr)


def _variances(q, name: str) -> Array:
    """``q`` as an array; concrete values must be positive and finite (a kernel map needs a positive variance)."""
    if isinstance(q, jax.core.Tracer):
        return q
    arr = as_float_array(q, name)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        bad = arr[~(np.isfinite(arr) & (arr > 0))].ravel()[:3].tolist()
        raise ValueError(f"a kernel map needs positive, finite variances {name}; got {bad}. A zero variance means a "
                         "point whose pre-activation is always zero (an all-zero input, or a kernel built from "
                         "order parameters that are not positive definite).")
    return jnp.asarray(arr)

