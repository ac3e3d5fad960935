"""Second derivatives of the energy from the path features (for the solver's Newton phase).

With ``K(U) = sum_ab U_ab C^{ab}``, ``C^{ab} = X_a X_b^T`` (``X_a = xi^a``, ``[P, N0]``),
``G = (K + T I)^{-1}`` and ``b = G y``, the energy ``E = ln det(K + T I) + y^T G y`` has

    dE/dU_ab           = Tr(G C^{ab}) - b^T C^{ab} b,
    d2E/dU_ab dU_cd    = -Tr(G C^{ab} G C^{cd}) + 2 b^T C^{ab} G C^{cd} b

along symmetric directions. Both come from ``M = X^T G X`` (``[n N0, n N0]``, blocks
``M_ab = X_a^T G X_b``) and ``v_a = X_a^T b``:

    Tr(G C^{ab}) = Tr M_ba,   Tr(G C^{ab} G C^{cd}) = Tr(M_bc M_da),   b^T C^{ab} G C^{cd} b = v_a^T M_bc v_d.

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
