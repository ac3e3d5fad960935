r"""Path-path kernels, the GP kernel and the renormalised kernel K(U) (paper Eq. (10), App. B.1 Eq. (31)).

All kernels are built from path features ``xi[P, n_paths, N0]`` (:func:`paththeory.model.path_features`):

.. math::

    C^{\pi\pi'}(x,x') &= \xi^\pi(x)\cdot\xi^{\pi'}(x'),

    K_U(x,x') &= \sum_{\pi\pi'} U_{\pi\pi'}\,C^{\pi\pi'}(x,x'),

    K_{GP} &= \sigma_a^2 \prod_\ell \sigma_\ell^2 \sum_\pi C^{\pi\pi}

(:math:`K_{GP}` is :math:`K_U` at the GP point).

The solver evaluates ``K(U)`` many times. :func:`kernel_operator` either precomputes the
``n(n+1)/2`` distinct symmetrised Gram blocks, each packed into a rectangle of ``P (P + 1) / 2``
numbers (:func:`pack_symmetric`; when they fit the memory budget, ``K(U)`` is then one
matrix-vector product of cost ``n^2 P^2 / 4``), or keeps only the
features and evaluates the factorised form ``K = Xi (U kron I) Xi^T`` (memory ``P n N0``, cost
``P n^2 N0 + P^2 n N0``). Neither materialises the ``[n, n, P, P]`` tensor. Both hand the solver
the ``P x P`` kernel, whose Cholesky factor costs ``P^3 / 3``.

``K(U)`` has rank at most ``m = n N0``. Where ``m < P`` the third backend, :class:`LowRankKernel`, never
forms it: with ``F = Xi`` (``[P, m]``), ``U = R R^T`` and ``B = F (R kron I_N0)``,

.. math::

    \ln\det(K + T I_P) &= (P - m) \ln T + \ln\det S, \qquad S = T I_m + B^\top B,

    y^\top (K + T I_P)^{-1} y &= |y - B w|^2 / T + |w|^2, \qquad w = S^{-1} B^\top y

(the matrix determinant lemma and Woodbury's identity; :func:`low_rank_energy`). ``B^T B`` comes from
the ``m x m`` Gram matrix ``F^T F``, computed once, so an evaluation costs ``m^3 / 3`` plus ``O(P m)``.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from paththeory._checks import (
    as_float_array,
    check_count,
    check_order_parameter,
    check_positive,
    require_finite,
)
from paththeory.model import check_architecture

Array = jax.Array
DEFAULT_MEMORY_BUDGET = 2 * 1024**3  # bytes
#: The backends :func:`kernel_operator` accepts: ``"auto"`` chooses, ``"dense"`` forms the ``P x P`` kernel
#: (:class:`GramBlocks` or :class:`FeatureKernel`), ``"low_rank"`` works in feature space (:class:`LowRankKernel`).
BACKENDS = ("auto", "dense", "low_rank")
# "auto" works in feature space from P >= LOW_RANK_MIN_EXAMPLES examples and P >= LOW_RANK_MIN_RATIO n N0
# (one output, within the memory budget). Measured by `paththeory bench --case large_p` on 2 shared CPU cores
# (Markov task, n N0 = 924, N = 100, T = 0.01, compilation apart): at P = 1,000 the P x P solve (Gram blocks,
# mixed precision, Hessian restart) took 1.8 s against 4.9 s in feature space; at P = 1,500, 53 s (59
# iterations) against 8.5 s; at P = 2,000, 393 s (523 iterations: K + T I, of rank 924 plus T, is too
# ill-conditioned for float32 and noisy in float64) against 9.2 s; at 5,000 and 10,000 the feature-space
# solve took 2.8 s and 4.2 s. The crossover lies between P = 1.08 n N0 and 1.62 n N0.
LOW_RANK_MIN_EXAMPLES = 1000
LOW_RANK_MIN_RATIO = 1.5
# Packed Gram blocks cost ~n^2 P^2 / 4 memory reads per evaluation, the factorised form ~n N0 P^2
# multiply-adds. Measured per action-and-gradient evaluation on a 2-core CPU (P = 600, n = 16,
# float64): blocks 27-29 ms for any N0, factorised 22 ms at N0 = 32, 29 ms at 64, 35 ms at 96;
# so the blocks pay off from N0 ~ 4 (n + 1).
GRAM_MIN_FEATURES_PER_PATH = 4


def check_features(features, name: str = "features") -> Array:
    """Validate path features ``[P, n_paths, N0]`` and return them as float64.

    Book: Attentioned input, the path vector (definition)
    (https://paththeory.github.io/paththeory/book/model.html#def-path-vector)
    """
    return jnp.asarray(as_float_array(features, name, ndim=3))


def _feature_pair(features, features_b) -> tuple[Array, Array]:
    """Both feature arguments, checked; ``features_b`` (``features`` when ``None``) must have the same
    ``[n_paths, N0]``."""
    fa = check_features(features)
    fb = fa if features_b is None else check_features(features_b, "features_b")
    if fa.shape[1:] != fb.shape[1:]:
        raise ValueError(f"features have [n_paths, N0] = {tuple(fa.shape[1:])} but features_b have "
                         f"{tuple(fb.shape[1:])}; compute both with paththeory.path_features(arch, x) of one arch.")
    return fa, fb


def _finite(kernel: Array, name: str) -> Array:
    """``kernel`` if finite; raise (naming the inputs to rescale) where float64 overflowed."""
    return require_finite(kernel, name, "the features (or U) are too large for float64; rescale them.")


def _check_matrix_for(U, n_paths: int, n_outputs: int = 1) -> tuple[Array, int]:
    """The order parameter ``U`` for features with ``n_paths`` paths and ``C`` outputs (symmetric positive
    semi-definite, ``C n_paths`` square) and ``C``, checked a whole number >= 1."""
    n_outputs = check_count(n_outputs, "n_outputs")
    return jnp.asarray(check_order_parameter(U, "U", n_outputs * n_paths, semi=True)), n_outputs


def path_kernels(features, features_b=None) -> Array:
    """All path-path kernels ``C^{pi sigma}(x^mu, x'^nu)``: ``[n, n, P, P']``.

    Materialises ``n^2 P P'`` numbers: use it for figures and small problems only.

    Book: Path-path kernel (definition) (https://paththeory.github.io/paththeory/book/model.html#def-path-kernel)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> path_kernels(pt.path_features(arch, x)).shape
      (6, 6, 4, 4)
    """
    fa, fb = _feature_pair(features, features_b)
    return _finite(jnp.einsum("man,qbn->abmq", fa, fb), "path_kernels(features)")


def gp_kernel(arch, features, features_b=None) -> Array:
    """The GP (infinite-width) kernel ``sum_pi U^GP_{pi pi} C^{pi pi}``: ``[P, P']``, with
    ``U^GP_{pi pi} = sigma_a^2 prod_l sigma_l^2`` (a skip branch adds no factor,
    :meth:`~paththeory.model.Architecture.gp_path_variances`).

    Book: Path-path kernels (https://paththeory.github.io/paththeory/book/model.html#model-path-kernels)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> f = pt.path_features(arch, x)
      >>> bool(np.allclose(gp_kernel(arch, f), kernel_matrix(arch.gp_scale * np.eye(6), f)))
      True
    """
    fa, fb = _feature_pair(features, features_b)
    if not check_architecture(arch).linear:
        raise ValueError(f"gp_kernel is the GP kernel of a network linear in each weight matrix; this one has a "
                         f"nonlinear MLP block (nonlinearities {arch.nonlinearities}): use "
                         "paththeory.nonlinear_theory.gp_kernel.")
    if fa.shape[1] != arch.n_paths:
        raise ValueError(f"features have {fa.shape[1]} paths but the architecture with heads {arch.heads} has "
                         f"{arch.n_paths}; compute them with paththeory.path_features(arch, x).")
    variances = jnp.asarray(arch.gp_path_variances())
    return _finite(jnp.einsum("man,a,qan->mq", fa, variances, fb), "gp_kernel(arch, features)")


def _kernel(U: Array, fa: Array, fb: Array) -> Array:
    """``K^{cd}_{mu nu} = sum_ab U^{cd}_ab xi^a_mu . xi^b_nu`` for ``C = U.shape[0] / n`` outputs: ``[C P, C P']``."""
    n = fa.shape[1]
    c = U.shape[0] // n
    k = jnp.einsum("man,cadb,qbn->cmdq", fa, U.reshape(c, n, c, n), fb, optimize="optimal")
    return k.reshape(c * fa.shape[0], c * fb.shape[0])


_kernel_jit = jax.jit(_kernel)


def kernel_matrix(U, features, features_b=None, batch_size: int = 2048, n_outputs: int = 1) -> Array:
    """Renormalised kernel ``K_U(x^mu, x'^nu)`` in factorised form, batched over ``x'``: ``[P, P']``.

    No temperature is added: ``K + T I`` is formed where it is needed (paper Eqs. (9), (12)). With
    ``n_outputs = C``, ``U`` is ``C n_paths`` square (blocks ``U^{cd}``) and the kernel is
    ``[C P, C P']`` with blocks ``K^{cd} = sum_ab U^{cd}_ab C^{ab}``, output index slowest.

    Book: Renormalised kernel (definition)
    (https://paththeory.github.io/paththeory/book/model.html#def-renormalised-kernel)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> f = pt.path_features(arch, x)
      >>> kernel_matrix(np.eye(6), f, f[:2]).shape
      (4, 2)
    """
    fa, fb = _feature_pair(features, features_b)
    batch_size = check_count(batch_size, "batch_size")
    u, n_outputs = _check_matrix_for(U, fa.shape[1], n_outputs)
    parts = [_kernel_jit(u, fa, fb[i : i + batch_size]).reshape(n_outputs * fa.shape[0], n_outputs, -1)
             for i in range(0, fb.shape[0], batch_size)]
    return _finite(jnp.concatenate(parts, axis=2).reshape(n_outputs * fa.shape[0], -1), "kernel_matrix(U, features)")


def kernel_diagonal(U, features, n_outputs: int = 1) -> Array:
    """``K_U(x, x)`` for every example: ``[P]``; with ``n_outputs = C`` the output-output blocks
    ``K^{cd}_U(x, x)``: ``[P, C, C]``.

    Book: Renormalised kernel (definition)
    (https://paththeory.github.io/paththeory/book/model.html#def-renormalised-kernel)

    Book, with ``C`` outputs: The derivation with an output index
    (https://paththeory.github.io/paththeory/book/many_outputs.html#many-outputs-derivation)

    Example:
      >>> from paththeory.tasks.examples import model_problem
      >>> arch, _, x = model_problem()
      >>> f = pt.path_features(arch, x)
      >>> bool(np.allclose(kernel_diagonal(np.eye(6), f), np.diag(kernel_matrix(np.eye(6), f))))
      True
    """
    f = check_features(features)
    n = f.shape[1]
    u, n_outputs = _check_matrix_for(U, n, n_outputs)
    u = u.reshape(n_outputs, n, n_outputs, n)
    diag = jnp.einsum("pan,cadb,pbn->pcd", f, u, f)
    return _finite(diag[:, 0, 0] if n_outputs == 1 else diag, "kernel_diagonal(U, features)")


# --------------------------------------------------------------------------- solver backends


def _triangular_count_root(count: int) -> int:
    """``m`` such that ``m (m + 1) / 2 = count``."""
    return int(round((np.sqrt(8 * count + 1) - 1) / 2))


def pack_symmetric(D: np.ndarray) -> np.ndarray:
    """The ``P (P + 1) / 2`` numbers of a symmetric ``[P, P]`` matrix as a ``[rows, h]`` rectangle.

    With ``h = ceil(P / 2)`` and ``D = [[D11, D21^T], [D21, D22]]`` (``D11`` of size ``h``), the two
    lower triangles share one block: for even ``P`` an ``(h + 1) x h`` block with ``tril(D11)``
    in rows ``1..h`` and ``tril(D22)^T`` on and above the diagonal of rows ``0..h-1``; for odd ``P``
    an ``h x h`` block with ``tril(D11)`` and ``tril(D22)^T`` strictly above its diagonal. ``D21``
    follows, so ``rows = P + 1`` (even ``P``) or ``P`` (odd). This is LAPACK's rectangular full
    packed format in spirit: unpacking is slicing and triangle masks, not a gather.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> D = np.arange(9.0).reshape(3, 3); D = D + D.T
      >>> bool(np.array_equal(unpack_symmetric(jnp.asarray(pack_symmetric(D)), 3), D))
      True
    """
    if np.ndim(D) != 2 or np.shape(D)[0] != np.shape(D)[1]:
        raise ValueError(f"D must be a square [P, P] matrix; got shape {np.shape(D)}.")
    p = D.shape[0]
    h = (p + 1) // 2
    low = np.tril(D[h:, h:]).T
    if p % 2 == 0:
        top = np.zeros((h + 1, h), D.dtype)
        top[1:] += np.tril(D[:h, :h])
        top[:h] += low
    else:
        top = np.tril(D[:h, :h])
        top[: h - 1, 1:] += low
    return np.concatenate([top, D[h:, :h]], axis=0)


def unpack_symmetric(R: Array, p: int) -> Array:
    """The symmetric ``[P, P]`` matrix from :func:`pack_symmetric`'s rectangle (traceable).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    h = (p + 1) // 2
    if p % 2 == 0:
        t1, t2, d21 = jnp.tril(R[1 : h + 1]), jnp.triu(R[:h]).T, R[h + 1 :]
    else:
        t1, t2, d21 = jnp.tril(R[:h]), jnp.triu(R[: h - 1, 1:h]).T, R[h:]
    s1 = t1 + t1.T - jnp.diag(jnp.diagonal(t1))
    s2 = t2 + t2.T - jnp.diag(jnp.diagonal(t2))
    return jnp.concatenate([jnp.concatenate([s1, d21.T], axis=1), jnp.concatenate([d21, s2], axis=1)], axis=0)


class GramBlocks(NamedTuple):
    """Precomputed symmetrised Gram blocks, packed: ``blocks[k]`` is :func:`pack_symmetric` of
    ``D^{ab} = w_ab (C^{ab} + C^{ab T})`` for the ``k``-th pair ``a <= b`` (``np.triu_indices(n)``
    order), ``w_aa = 1/2``, ``w_ab = 1``.

    Then ``K(U) = sum_{a <= b} U_ab D^{ab}`` for symmetric ``U``: storing only what a symmetric
    ``K`` needs halves both the memory and the reads of every evaluation, and unpacking needs no
    index arrays (which XLA would otherwise embed as large constants in every compiled solver).

    With ``C > 1`` outputs the off-diagonal output blocks ``U^{cd}`` (``c != d``) are not symmetric
    and also need the antisymmetric parts ``E^{ab} = C^{ab} - C^{ab T}``, ``a < b``
    (``np.triu_indices(n, 1)`` order): ``anti[k]`` packs the strict lower triangle of ``E^{ab}``
    (:func:`_unpack_antisymmetric`); ``None`` for one output.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """

    blocks: Array  # [n(n+1)/2, P + 1 - P mod 2, ceil(P/2)]
    anti: Array | None = None  # [n(n-1)/2, P + 1 - P mod 2, ceil(P/2)]

    @property
    def n_paths(self) -> int:
        return _triangular_count_root(self.blocks.shape[0])

    @property
    def n_examples(self) -> int:
        rows, h = self.blocks.shape[1:]
        return rows - 1 if rows == 2 * h + 1 else rows


class FeatureKernel(NamedTuple):
    """Features only; ``K(U)`` evaluated in factorised form (memory ``P n N0``).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """

    features: Array  # [P, n, N0]


class LowRankKernel(NamedTuple):
    """Features and their ``m x m`` Gram matrix ``F^T F`` (``F = features.reshape(P, m)``, ``m = n N0``):
    the kernel ``K(U) = F (U kron I_N0) F^T``, of rank at most ``m``, is never formed and the energy is
    evaluated in feature space (:func:`low_rank_energy`; memory ``P m + m^2``, cost ``m^3 / 3 + O(P m)``
    per evaluation instead of ``P^3 / 3``). One output only.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank)
    """

    features: Array  # [P, n, N0]
    gram: Array  # [n N0, n N0]

    @property
    def n_paths(self) -> int:
        return self.features.shape[1]

    @property
    def n_examples(self) -> int:
        return self.features.shape[0]


KernelOperator = Union[GramBlocks, FeatureKernel, LowRankKernel]


def gram_bytes(n_examples: int, n_paths: int, n_outputs: int = 1) -> int:
    """Bytes needed by :class:`GramBlocks` for ``P`` examples, ``n`` paths and ``C`` outputs (float64).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    n_examples, n_paths = check_count(n_examples, "n_examples"), check_count(n_paths, "n_paths")
    n_outputs = check_count(n_outputs, "n_outputs")
    pairs = n_paths * (n_paths + 1) // 2 + (n_paths * (n_paths - 1) // 2 if n_outputs > 1 else 0)
    return 8 * pairs * (n_examples * (n_examples + 1) // 2)


def low_rank_bytes(n_examples: int, n_paths: int, n_features: int) -> int:
    """Bytes of :class:`LowRankKernel` and its evaluation's temporaries for ``P`` examples and ``n`` paths of
    ``N0`` features (float64): the features (``P m``, ``m = n N0``) and six ``m x m`` matrices (``F^T F``,
    ``S``, its Cholesky factor and their cotangents).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank)

    Example:
      >>> round(low_rank_bytes(10_000, 4, 231) / 2**20, 1)  # the Markov task at P = 10,000: n N0 = 924
      109.6
    """
    n_examples, n_paths = check_count(n_examples, "n_examples"), check_count(n_paths, "n_paths")
    m = n_paths * check_count(n_features, "n_features")
    return 8 * (n_examples * m + 6 * m * m)


def low_rank_pays(n_examples: int, n_paths: int, n_features: int, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                  n_outputs: int = 1) -> bool:
    """Whether ``backend="auto"`` chooses :class:`LowRankKernel`: one output, ``P >= LOW_RANK_MIN_EXAMPLES``
    (1000), ``P >= LOW_RANK_MIN_RATIO n N0`` (1.5 times: an evaluation then costs ``(n N0)^3 / 3`` instead of
    ``P^3 / 3``, and the ``P x P`` form's mixed precision and Hessian restart no longer make up for it) and
    :func:`low_rank_bytes` within half of ``memory_budget``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank)

    Example:
      >>> low_rank_pays(10_000, 4, 231), low_rank_pays(600, 4, 231), low_rank_pays(10_000, 4, 231, n_outputs=3)
      (True, False, False)
    """
    n_examples, n_paths = check_count(n_examples, "n_examples"), check_count(n_paths, "n_paths")
    n_features, n_outputs = check_count(n_features, "n_features"), check_count(n_outputs, "n_outputs")
    memory_budget = check_count(memory_budget, "memory_budget", minimum=0)
    return (n_outputs == 1 and n_examples >= LOW_RANK_MIN_EXAMPLES
            and n_examples >= LOW_RANK_MIN_RATIO * n_paths * n_features
            and low_rank_bytes(n_examples, n_paths, n_features) <= memory_budget // 2)


def _unpack_antisymmetric(R: Array, p: int) -> Array:
    """The antisymmetric ``[P, P]`` matrix whose strict lower triangle :func:`pack_symmetric` packed
    (as that of a symmetric matrix with zero diagonal) into ``R`` (traceable).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> E = np.array([[0.0, -2.0], [2.0, 0.0]])
      >>> low = np.tril(E, -1)
      >>> bool(np.array_equal(_unpack_antisymmetric(jnp.asarray(pack_symmetric(low + low.T)), 2), E))
      True
    """
    low = jnp.tril(unpack_symmetric(R, p), -1)
    return low - low.T


def check_backend(backend) -> str:
    """``backend`` if it is one of :data:`BACKENDS`; else a ValueError that lists them.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank)
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} ('auto' chooses by size and memory budget, 'dense' "
                         f"forms the P x P kernel, 'low_rank' works in the n N0-dimensional feature space); got "
                         f"{backend!r}.")
    return backend


def kernel_operator(features, memory_budget: int = DEFAULT_MEMORY_BUDGET, n_outputs: int = 1,
                    backend: str = "auto") -> KernelOperator:
    """Choose the fastest ``K(U)`` backend that fits ``memory_budget`` bytes.

    ``backend="auto"`` (default) works in feature space (:class:`LowRankKernel`) where
    :func:`low_rank_pays`: one output and many more examples than features, ``P >= 1.5 n N0``. Otherwise
    (and with ``backend="dense"``) Gram blocks are used when they take at most half the budget (the rest
    is left for the solver's temporaries and, in mixed precision, its float32 copy of the blocks) and
    when ``N0 >= GRAM_MIN_FEATURES_PER_PATH (n + 1)``; otherwise the factorised form streams through
    the features. ``backend="low_rank"`` forces the feature-space form, at any ``P`` (with ``C > 1``
    outputs, which it does not serve, it warns and falls back to the dense choice).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)

    Example:
      >>> f = np.random.default_rng(0).normal(size=(10, 2, 40))  # P = 10, 2 paths, N0 = 40
      >>> type(kernel_operator(f)).__name__, type(kernel_operator(f, memory_budget=0)).__name__
      ('GramBlocks', 'FeatureKernel')
      >>> type(kernel_operator(f, backend="low_rank")).__name__
      'LowRankKernel'
    """
    f = check_features(features)
    memory_budget = check_count(memory_budget, "memory_budget", minimum=0)
    n_outputs = check_count(n_outputs, "n_outputs")
    backend = check_backend(backend)
    p, n, n0 = f.shape
    if backend == "low_rank" and n_outputs > 1:
        warnings.warn(f"backend='low_rank' serves one output (labels [P]); with C = {n_outputs} outputs the "
                      "energy acts on the (C P) x (C P) kernel of U's output blocks, which the feature-space "
                      "form does not cover: the P x P form is used instead.", stacklevel=2)
        backend = "dense"
    if backend == "low_rank" or (backend == "auto" and low_rank_pays(p, n, n0, memory_budget, n_outputs)):
        x = f.reshape(p, n * n0)
        return LowRankKernel(f, x.T @ x)
    if gram_bytes(p, n, n_outputs) > memory_budget // 2 or n0 < GRAM_MIN_FEATURES_PER_PATH * (n + 1):
        return FeatureKernel(f)
    rows, cols = np.triu_indices(n)
    shape = (p + 1 - p % 2, (p + 1) // 2)
    packed = np.empty((rows.size, *shape))
    anti = np.empty((n * (n - 1) // 2, *shape)) if n_outputs > 1 else None
    k_anti = 0
    for k, (a, b) in enumerate(zip(rows, cols)):  # one P x P block at a time: no [n, n, P, P] temporary
        block = np.asarray(f[:, a] @ f[:, b].T)
        packed[k] = pack_symmetric((0.5 if a == b else 1.0) * (block + block.T))
        if anti is not None and a < b:
            low = np.tril(block - block.T, -1)
            anti[k_anti] = pack_symmetric(low + low.T)
            k_anti += 1
    return GramBlocks(jnp.asarray(packed), None if anti is None else jnp.asarray(anti))


def apply_operator(op: KernelOperator, U: Array) -> Array:
    """``K(U)`` for either backend (traceable; used inside the jitted solver): ``[C P, C P]`` for ``U`` of
    size ``C n`` (``C`` outputs, blocks ``U^{cd}``, output index slowest).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    if isinstance(op, (FeatureKernel, LowRankKernel)):  # LowRankKernel: formed only where a caller needs K
        return _kernel(U, op.features, op.features)
    n, p = op.n_paths, op.n_examples
    c = U.shape[0] // n
    first, second = np.triu_indices(c)
    pairs = U.reshape(c, n, c, n)[first, :, second, :]  # the blocks U^{cd}, c <= d: [pairs, n, n]
    rows, cols = np.triu_indices(n)
    # Matrix products over the packed blocks (their transposes, the gradient, are contiguous products
    # too), then each packed rectangle is unfolded into its P x P block of K.
    sym = 0.5 * (pairs + jnp.swapaxes(pairs, 1, 2))[:, rows, cols]
    packed = sym.astype(op.blocks.dtype) @ op.blocks.reshape(op.blocks.shape[0], -1)
    blocks = jax.vmap(lambda r: unpack_symmetric(r, p))(packed.reshape(-1, *op.blocks.shape[1:]))
    if c > 1 and n > 1:  # one path has no antisymmetric part
        off = np.flatnonzero(first != second)
        low_rows, low_cols = np.triu_indices(n, 1)
        diff = 0.5 * (pairs[off] - jnp.swapaxes(pairs[off], 1, 2))[:, low_rows, low_cols]
        packed_anti = diff.astype(op.anti.dtype) @ op.anti.reshape(op.anti.shape[0], -1)
        blocks = blocks.at[off].add(jax.vmap(lambda r: _unpack_antisymmetric(r, p))(
            packed_anti.reshape(-1, *op.anti.shape[1:])))
    index = np.zeros((c, c), dtype=int)
    index[first, second] = index[second, first] = np.arange(first.size)
    # K^{cd} for c <= d; below, K^{cd} = (K^{dc})^T. Split and concatenated, not gathered: the gradient of a
    # gather adds into a zero array that XLA hoists out of the solver's loops and keeps (158 MB in float64 at
    # C = 10, P = 600).
    parts = [part[0] for part in jax.lax.split(blocks, (1,) * blocks.shape[0])]
    return jnp.concatenate([jnp.concatenate([parts[index[i, j]] if i <= j else parts[index[i, j]].T
                                             for j in range(c)], axis=1) for i in range(c)], axis=0)


def low_rank_energy(op: LowRankKernel, U, y, temperature) -> Array:
    r"""The energy ``ln det(K_U + T I_P) + y^T (K_U + T I_P)^{-1} y`` in feature space, for ``U``
    ``[n, n]`` positive definite, ``y`` ``[P]`` and ``T > 0``, without forming the ``P x P`` kernel.

    With ``F`` the ``[P, m]`` features (``m = n N0``), ``U = R R^T`` (Cholesky), ``G = R kron I_N0`` (so
    ``G G^T = U kron I_N0`` and ``K_U = F G G^T F^T``), ``B = F G`` and ``S = T I_m + G^T (F^T F) G``:

    .. math::

        \ln\det(K_U + T I_P) = (P - m) \ln T + \ln\det S

    (the matrix determinant lemma, ``det(T I_P + B B^T) = T^{P - m} det(T I_m + B^T B)``), and with
    ``w = S^{-1} B^T y``, ``r = y - B w`` (so that ``(K_U + T I)^{-1} y = r / T`` by Woodbury's identity
    and ``B^T r / T = w``)

    .. math::

        y^	op (K_U + T I_P)^{-1} y = |r|^2 / T + |w|^2 ,

    a sum of two positive terms: unlike ``(y^T y - b^T S^{-1} b) / T`` (``b = B^T y``) it does not
    cancel where ``K_U`` fits ``y`` closely. ``F^T F`` is the operator's; each evaluation costs one
    Cholesky factor of ``S`` (``m^3 / 3``) and ``O(P m)``. Differentiable to any order by JAX
    (no custom rule), in ``U``, ``y`` and ``T``.

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#solver-low-rank)

    Example:
      >>> f = np.random.default_rng(0).normal(size=(50, 2, 3))  # P = 50 > n N0 = 6
      >>> y = np.sign(f[:, 0, 0])
      >>> op = kernel_operator(f, backend="low_rank")
      >>> from paththeory.action import energy
      >>> bool(np.isclose(low_rank_energy(op, np.eye(2), y, 0.5), energy(kernel_matrix(np.eye(2), f), y, 0.5)))
      True
    """
    if not isinstance(op, LowRankKernel):
        raise TypeError(f"op must be a LowRankKernel (kernel_operator(features, backend='low_rank')); got "
                        f"{type(op).__name__}.")
    p, n = op.n_examples, op.n_paths
    u = U if isinstance(U, jax.core.Tracer) else jnp.asarray(check_order_parameter(U, "U", n))
    if not isinstance(y, jax.core.Tracer):
        y = jnp.asarray(as_float_array(y, "y", ndim=1))
    if jnp.shape(y) != (p,):
        raise ValueError(f"y must hold the operator's P = {p} targets, shape [P]; got shape {jnp.shape(y)}.")
    if not isinstance(temperature, jax.core.Tracer):
        temperature = check_positive(temperature, "temperature (the feature-space energy needs T > 0)")
    return require_finite(_low_rank_energy(op, u, y, temperature), "low_rank_energy",
                          "the features, y or U are too large for float64, or T too small; rescale them.")


def _low_rank_energy(op: LowRankKernel, U: Array, y: Array, temperature) -> Array:
    """:func:`low_rank_energy` of checked (or traced) arguments."""
    f = op.features
    p, n, n0 = f.shape
    m = n * n0
    R = jnp.linalg.cholesky(U)
    gram = op.gram.reshape(n, n0, n, n0)
    S = jnp.einsum("ac,akbl,bd->ckdl", R, gram, R, optimize="optimal").reshape(m, m)
    i = jnp.arange(m)
    chol = jnp.linalg.cholesky(S.at[i, i].add(temperature))
    b = (R.T @ jnp.einsum("pan,p->an", f, y)).reshape(m)  # B^T y = G^T F^T y
    w = jax.scipy.linalg.cho_solve((chol, True), b)
    r = y - jnp.einsum("pan,an->p", f, R @ w.reshape(n, n0))  # y - F G w
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol))) + (p - m) * jnp.log(temperature)
    return logdet + r @ r / temperature + w @ w


def operator_astype(op: KernelOperator, dtype) -> KernelOperator:
    """The same backend with its arrays cast to ``dtype`` (the solver's float32 copy).

    Book: How the solver finds U* (https://paththeory.github.io/paththeory/book/solver.html#derivation-solver)
    """
    return type(op)(*(None if a is None else jnp.asarray(a, dtype) for a in op))
