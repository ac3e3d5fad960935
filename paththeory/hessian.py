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
``c``-th block of rows of ``R^{-T}``. There the ``(C n)^4`` tensor and the ``(C n N0)^2`` matrix ``M`` outgrow
a laptop (21 GB at P = 600, C = 10, 16 paths of N0 = 192); the solver takes the Hessian straight in the
Cholesky coordinates of ``U`` instead, streaming ``M`` a few features at a time
(:func:`energy_hessian_cholesky`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import as_float_array
from paththeory.action import (
    check_energy_inputs,
    check_energy_result,
    inverse_upper_triangular,
    plus_diagonal,
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
    chol = jnp.linalg.cholesky(plus_diagonal(K, temperature))
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


# Temporaries of one step of :func:`energy_hessian_cholesky`'s feature stream (the chunk's ``M``, ``L^T M``,
# ``M L``, ``L^T M L`` and the products of one row block) are kept near this many bytes; ``HESSIAN_BLOCK``
# rows of ``L`` make one row block of the Hessian.
HESSIAN_CHUNK_BYTES = 2**27
HESSIAN_BLOCK = 16


def stream_shapes(size: int, n_features: int, itemsize: int) -> tuple[int, int]:
    """``(chunk, block)`` of :func:`energy_hessian_cholesky` for ``U`` of ``size = C n`` rows: the largest divisor
    ``chunk`` of ``N0`` whose four ``[chunk N0, C n, C n]`` arrays fit :data:`HESSIAN_CHUNK_BYTES` (at least 1),
    and row blocks of ``min(C n, HESSIAN_BLOCK)`` rows of ``L``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> stream_shapes(160, 192, 4), stream_shapes(6, 4, 8)
      ((1, 16), (4, 6))
    """
    fits = [k for k in range(1, n_features + 1)
            if n_features % k == 0 and 4 * k * n_features * size * size * itemsize <= HESSIAN_CHUNK_BYTES]
    return max(fits, default=1), min(size, HESSIAN_BLOCK)


def stream_bytes(n_examples: int, size: int, n_features: int, n_parameters: int, itemsize: int) -> int:
    """Peak bytes of the Hessian restart with ``C > 1`` outputs (:func:`energy_hessian_cholesky`, then its
    Cholesky factor): the ``D x D`` Hessian of ``D = n_parameters`` with either its factor (kept apart, for the
    shifted retry) or, during the stream, ``G`` and its factors (three ``C P x C P``), the chunk's four
    ``[chunk N0, C n, C n]`` arrays and the largest row block's products (three ``b i1 x (C n - i0) C n``; each row
    block waits for the previous one's update). XLA's memory analysis of the restart alone (the solver's Hessian and
    its factor, jitted in float32: the temporaries and the factor it returns), at the Omniglot size (P = 600, 16 paths
    of N0 = 192), counts 0.179, 0.278 and 1.398 GiB at C = 3, 5 and 10, against 0.156, 0.288 and 1.398 here.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    chunk, block = stream_shapes(size, n_features, itemsize)
    rows = max(min(i0 + block, size) * (min(i0 + block, size) - i0) * (size - i0) * size
               for i0 in range(0, size, block))
    stream = 3 * n_examples**2 + 4 * chunk * n_features * size * size + 3 * rows
    return itemsize * (n_parameters**2 + max(n_parameters**2, stream))


def energy_hessian_cholesky(features: Array, K: Array, y: Array, temperature, L: Array, scale, weight,
                            out: Array, n_outputs: int, chunk: int | None = None,
                            block: int | None = None) -> Array:
    r"""``out`` plus ``weight`` times the energy's Hessian in the Cholesky coordinates of ``U = s L L^T``
    (``theta_k``, ``k = (i, j)``, ``i >= j`` row-major, log-diagonal: ``paththeory.solve.theta_to_matrices``),
    added to the leading ``m x m`` block of ``out`` (``m = C n (C n + 1) / 2``), without the ``(C n)^4`` tensor.
    Only the upper triangle of that block is the Hessian (below it lies part of it): symmetrise with
    ``jnp.triu(H) + jnp.triu(H, 1).T`` before any use that reads the lower triangle (``numpy.linalg.eigh`` does).

    With ``dU/dtheta_k = s f_k (e_i l_j^T + l_j e_i^T)`` (``l_j = L e_j``, ``f_k = L_ii`` on the diagonal, else
    1), ``u_j = sum_b L_bj v_b`` and the blocks ``M~_xy = M_xy - v_x v_y^T`` (``M``, ``v`` as in
    :func:`energy_derivatives`, ``x = (c, a)``), the symmetric directions' Hessian
    ``-Tr(G dK G dK') + 2 b^T dK G dK' b`` is

    .. math::

        (J^\top H_E J)_{kk'} = 2 s^2 f_k f_{k'} \big[2 (v_i \cdot u_j)(v_{i'} \cdot u_{j'})
        - \operatorname{Tr}(P_{ji'} P_{j'i}) - \operatorname{Tr}(Q_{jj'} \tilde M_{i'i})\big], \quad
        P_{jx} = \sum_b L_{bj} \tilde M_{bx}, \quad Q_{jj'} = \sum_{bd} L_{bj} \tilde M_{bd} L_{dj'} .

    Both traces are sums over the feature pairs ``(p, q)`` of products of ``C n x C n`` matrices
    (``A^{pq}_{xy} = (M~_xy)_pq``): ``sum_pq (L^T A^pq)_{ji'} (A^pq L)_{ij'} + (L^T A^pq L)_{jj'} A^pq_{ii'}``.
    ``M`` streams through ``chunk`` features ``p`` at a time (``X_a^T G^{cd} X_b``: ``2 C^2 (P^2 m + P m^2)``
    flops in all, ``m = n N0``) and each chunk's products go straight into row blocks of ``block`` rows ``i``
    of ``L``, against the columns ``i' >= i``: about ``(2/3) (C n)^4 N0^2`` flops. Only the upper triangle of the
    result is the Hessian (the triangle the solver's Cholesky factor reads): the traces go into the upper block
    triangle only, each row block in place, so that one ``D x D`` buffer holds the Hessian.
    Memory: :func:`stream_bytes`.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> f = jnp.asarray(np.random.default_rng(0).normal(size=(5, 2, 3)))
      >>> K = pt.kernels.kernel_matrix(np.eye(4), f, n_outputs=2)
      >>> energy_hessian_cholesky(f, K, jnp.ones(10), 0.5, jnp.eye(4), 1.0, 1.0, jnp.zeros((10, 10)), 2).shape
      (10, 10)
    """
    n_outputs = int(n_outputs)
    features, K, y, temperature = check_derivative_inputs(features, K, y, temperature, n_outputs)
    p, n, n0 = features.shape
    size = n_outputs * n
    default_chunk, default_block = stream_shapes(size, n0, features.dtype.itemsize)
    chunk, block = chunk or default_chunk, block or default_block
    if n0 % chunk:
        raise ValueError(f"chunk must be a divisor of N0 = {n0} (the features per step of the stream); got {chunk}.")
    chol = jnp.linalg.cholesky(plus_diagonal(K, temperature))
    r_inv = inverse_upper_triangular(chol.T)
    G = (r_inv @ r_inv.T).reshape(n_outputs, p, n_outputs, p)
    b = (r_inv @ (r_inv.T @ y)).reshape(n_outputs, p)
    v = jnp.einsum("man,cm->can", features, b).reshape(size, n0)  # v_(ca) = X_a^T b_c
    rows, cols = jnp.tril_indices(size)
    f = jnp.where(rows == cols, jnp.diagonal(L)[rows], 1.0)
    w = 2.0 * scale * f * jnp.sum(v[rows] * (L.T @ v)[cols], axis=1)  # 2 s f_k v_i . u_j
    m = w.shape[0]
    out = out.at[:m, :m].add(weight * jnp.outer(w, w))
    coef = -2.0 * weight * scale**2

    def step(t, out):
        x_p = jax.lax.dynamic_slice_in_dim(features, t * chunk, chunk, axis=2)  # X_a[:, p], p in the chunk
        v_p = jax.lax.dynamic_slice_in_dim(v, t * chunk, chunk, axis=1)
        left = jnp.einsum("mak,cmdl->cakdl", x_p, G)
        A = jnp.einsum("cakdl,lbq->kqcadb", left, features).reshape(chunk * n0, size, size)
        A = A - jnp.einsum("xk,yq->kqxy", v_p, v).reshape(chunk * n0, size, size)  # A^pq = (M~_xy)_pq
        B = jnp.einsum("bj,kby->kjy", L, A)
        AL, Q = A @ L, B @ L
        for i0 in range(0, size, block):
            out = _add_row_block(out, i0, min(i0 + block, size), A, B, AL, Q, f, coef)
        return out

    return jax.lax.fori_loop(0, n0 // chunk, step, out)


def _add_row_block(out: Array, i0: int, i1: int, A: Array, B: Array, AL: Array, Q: Array, f: Array,
                   coef) -> Array:
    """Add ``coef f_k f_k' sum_pq [B_{ji'} AL_{ij'} + Q_{jj'} A_{ii'}]`` to ``out`` for the rows ``k = (i, j)``,
    ``i0 <= i < i1``, and the columns ``k' = (i', j')``, ``i' >= i0``: the upper block triangle, one update in place."""
    size = A.shape[1]
    # Zero times an entry of ``out`` as updated so far (not folded away for floats): the products below wait for the
    # previous row block's update, so that one row block's products are held at a time, not the chunk's all.
    after = 0.0 * out[0, 0]
    S = (jnp.einsum("kja,kic->ijac", B[:, :i1, i0:] + after, AL[:, i0:i1, :])
         + jnp.einsum("kia,kjc->ijac", A[:, i0:i1, i0:] + after, Q[:, :i1, :]))
    k0, k1 = i0 * (i0 + 1) // 2, i1 * (i1 + 1) // 2
    tril_i, tril_j = np.tril_indices(size)  # theta's order: k = i (i + 1) / 2 + j
    S = S.reshape((i1 - i0) * i1, (size - i0) * size)[(tril_i[k0:k1] - i0) * i1 + tril_j[k0:k1]]
    S = S[:, (tril_i[k0:] - i0) * size + tril_j[k0:]]
    S = S * (coef * f[k0:k1])[:, None] * f[None, k0:]  # S first: an outer product of f alone would be hoisted and kept
    # A traced offset: with a constant one XLA turns the read into a static slice and no longer updates in place.
    at = (jax.lax.optimization_barrier(jnp.asarray(k0, jnp.int32)),) * 2
    return jax.lax.dynamic_update_slice(out, jax.lax.dynamic_slice(out, at, S.shape) + S, at)
