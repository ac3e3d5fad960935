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
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from paththeory.action import inverse_upper_triangular

Array = jax.Array


def energy_derivatives(features: Array, K: Array, y: Array, temperature) -> tuple[Array, Array]:
    """Gradient ``[n, n]`` and Hessian ``[n, n, n, n]`` of the energy with respect to ``U``.

    Args:
      features: path features ``[P, n, N0]`` (``X_a = features[:, a]``).
      K: the kernel ``K(U) = sum_ab U_ab X_a X_b^T`` ``[P, P]`` at the point of interest.
      y: targets ``[P]``.
      temperature: ``T``.
    Returns:
      ``(g, H)`` with ``g[a, b] = dE/dU_ab`` and ``H[a, b, c, d] = d2E/dU_ab dU_cd``; contract ``H``
      with symmetric directions only (by itself it is not symmetric under ``(a, b) <-> (c, d)``).

    Example:
      >>> f = jnp.asarray(np.random.default_rng(0).normal(size=(5, 2, 3)))
      >>> g, H = energy_derivatives(f, pt.kernels.kernel_matrix(np.eye(2), f), jnp.ones(5), 0.5)
      >>> g.shape, H.shape
      ((2, 2), (2, 2, 2, 2))
    """
    p, n, n0 = features.shape
    X = features.reshape(p, n * n0)
    chol = jnp.linalg.cholesky(K + temperature * jnp.eye(p, dtype=K.dtype))
    r_inv = inverse_upper_triangular(chol.T)  # K + T I = R^T R, G = R^{-1} R^{-T}
    Zt = X.T @ r_inv  # [n N0, P]: Z_a = R^{-T} X_a, so M_ab = Z_a^T Z_b
    v = (Zt @ (r_inv.T @ y)).reshape(n, n0)  # v_a = X_a^T b
    Z3 = Zt.reshape(n, n0 * p)
    grad = Z3 @ Z3.T - v @ v.T  # Tr(G C^ab) = Tr(Z_b^T Z_a)
    A = jnp.einsum("ai,bim->abm", v, Zt.reshape(n, n0, p)).reshape(n * n, p)  # A[(a,b)] = Z_b v_a
    second = (A @ A.T).reshape(n, n, n, n).transpose(0, 1, 3, 2)  # v_a^T M_bc v_d = (Z_b v_a).(Z_c v_d)
    M4 = (Zt @ Zt.T).reshape(n, n0, n, n0)  # M4[a, i, b, j] = (M_ab)_ij
    Q = M4.transpose(0, 2, 1, 3).reshape(n * n, n0 * n0)  # Q[(b,c), (i,j)] = (M_bc)_ij
    traces = (Q @ Q.T).reshape(n, n, n, n)  # [b, c, a, d] = Tr(M_bc M_ad^T) = Tr(M_bc M_da)
    hess = 2.0 * second - traces.transpose(2, 0, 1, 3)
    return grad, hess
