r"""Second derivatives of the energy from the path features (for the solver's Newton phase).

With :math:`K(U)=\sum_{ab}U_{ab}C^{ab}`, :math:`C^{ab}=X_aX_b^\top` (:math:`X_a=\xi^a`, ``[P, N0]``),
:math:`G=(K+TI)^{-1}` and :math:`b=Gy`, the energy :math:`E=\ln\det(K+TI)+y^\top Gy` has, along
symmetric directions,

.. math::

    \frac{\partial E}{\partial U_{ab}} = \operatorname{Tr}(GC^{ab}) - b^\top C^{ab} b, \qquad
    \frac{\partial^2 E}{\partial U_{ab}\,\partial U_{cd}}
    = -\operatorname{Tr}(GC^{ab}GC^{cd}) + 2\,b^\top C^{ab} G C^{cd} b .

Both come from :math:`M=X^\top GX` (``[n N0, n N0]``, blocks :math:`M_{ab}=X_a^\top GX_b`) and
:math:`v_a=X_a^\top b`:

.. math::

    \operatorname{Tr}(GC^{ab}) = \operatorname{Tr}M_{ba}, \quad
    \operatorname{Tr}(GC^{ab}GC^{cd}) = \operatorname{Tr}(M_{bc}M_{da}), \quad
    b^\top C^{ab}GC^{cd}b = v_a^\top M_{bc} v_d .

Cost ``2 P^2 n N0 + 2 P (n N0)^2 + 2 n^4 N0^2`` flops and ``(n N0)^2`` memory, independent of
the Gram blocks; the ``n^4`` traces are one product ``Q Q^T`` with ``Q[(b,c),(i,j)] = (M_bc)_ij``.

With ``C`` outputs the ``(CP) x (CP)`` kernel is ``sum U_{(c a),(d b)} X_{ca} X_{db}^T`` with the
block features ``X_{ca} = e_c kron X_a`` (``[C P, N0]``): the same formulas with ``C n`` paths and
``C P`` examples (``P -> C P``, ``n -> C n`` in the costs), ``Z_{ca}`` being ``X_a`` through the
``c``-th block of rows of ``R^{-T}``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from paththeory._checks import as_float_array
from paththeory.action import (
    check_energy_inputs,
    check_energy_result,
    inverse_upper_triangular,
)

Array = jax.Array


def energy_derivatives(features: Array, K: Array, y: Array, temperature) -> tuple[Array, Array]:
    """Gradient ``[n, n]`` and Hessian ``[n, n, n, n]`` of the energy with respect to ``U``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Args:
      features: path features ``[P, n, N0]`` (``X_a = features[:, a]``).
      K: the kernel ``K(U) = sum_ab U_ab X_a X_b^T`` ``[P, P]`` at the point of interest, or with ``C``
        outputs ``[C P, C P]`` (:func:`~paththeory.kernels.apply_operator`).
      y: targets ``[P]`` (``[C P]``: ``vec(Y)``, output index slowest).
      temperature: ``T``.
    Returns:
      ``(g, H)`` with ``g[a, b] = dE/dU_ab`` and ``H[a, b, c, d] = d2E/dU_ab dU_cd`` (indices ``(c, a)`` of
      size ``C n`` with C outputs); contract ``H`` with symmetric directions only (by itself it is not
      symmetric under ``(a, b) <-> (c, d)``).

    Example:
      >>> f = jnp.asarray(np.random.default_rng(0).normal(size=(5, 2, 3)))
      >>> g, H = energy_derivatives(f, pt.kernels.kernel_matrix(np.eye(2), f), jnp.ones(5), 0.5)
      >>> g.shape, H.shape
      ((2, 2), (2, 2, 2, 2))
    """
    features, K, y, temperature = check_derivative_inputs(features, K, y, temperature)
    p, n, n0 = features.shape
    outputs = K.shape[0] // p
    X = features.reshape(p, n * n0)
    chol = jnp.linalg.cholesky(K + temperature * jnp.eye(K.shape[0], dtype=K.dtype))
    r_inv = inverse_upper_triangular(chol.T)  # K + T I = R^T R, G = R^{-1} R^{-T}
    # [C n N0, C P]: Z_ca = R^{-T} X_ca, so M_(ca)(db) = Z_ca^T Z_db; then C outputs are C n paths.
    Zt = (X.T @ r_inv.reshape(outputs, p, outputs * p)).reshape(outputs * n * n0, outputs * p)
    p, n = outputs * p, outputs * n
    v = (Zt @ (r_inv.T @ y)).reshape(n, n0)  # v_a = X_a^T b
    Z3 = Zt.reshape(n, n0 * p)
    grad = Z3 @ Z3.T - v @ v.T  # Tr(G C^ab) = Tr(Z_b^T Z_a)
    A = jnp.einsum("ai,bim->abm", v, Zt.reshape(n, n0, p)).reshape(n * n, p)  # A[(a,b)] = Z_b v_a
    second = (A @ A.T).reshape(n, n, n, n).transpose(0, 1, 3, 2)  # v_a^T M_bc v_d = (Z_b v_a).(Z_c v_d)
    M4 = (Zt @ Zt.T).reshape(n, n0, n, n0)  # M4[a, i, b, j] = (M_ab)_ij
    Q = M4.transpose(0, 2, 1, 3).reshape(n * n, n0 * n0)  # Q[(b,c), (i,j)] = (M_bc)_ij
    traces = (Q @ Q.T).reshape(n, n, n, n)  # [b, c, a, d] = Tr(M_bc M_ad^T) = Tr(M_bc M_da)
    hess = 2.0 * second - traces.transpose(2, 0, 1, 3)
    return check_energy_result((grad, hess), K, temperature, "energy_derivatives")


def check_derivative_inputs(features, K, y, temperature, n_outputs: int | None = None):
    """``(features, K, y, T)`` of the energy's derivatives as arrays: ``K``, ``y`` and ``T`` checked as by
    :func:`~paththeory.action.check_energy_inputs`, ``features`` ``[P, n, N0]`` (concrete: finite) for a
    ``K`` of ``C P`` rows (``C = n_outputs`` when given); traced values get the shape checks.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    if not isinstance(features, jax.core.Tracer):
        as_float_array(features, "features", ndim=3)
    features = jnp.asarray(features)
    K, y, temperature = check_energy_inputs(K, y, temperature)
    p = features.shape[0] if features.ndim == 3 else 0
    outputs = K.shape[0] // p if p else 0
    if not outputs or K.shape[0] != outputs * p or n_outputs not in (None, outputs):
        raise ValueError(f"features must be [P, n_paths, N0] for a kernel K of C P = {K.shape[0]} rows "
                         f"({'C = ' + str(n_outputs) if n_outputs else 'C outputs'}); got features of shape "
                         f"{tuple(features.shape)}.")
    return features, K, y, temperature
