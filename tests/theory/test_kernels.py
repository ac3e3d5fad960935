"""Path-path kernels, K(U), and the two solver backends."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import kernels
from tests.conftest import random_qk_arch


def test_path_kernel_matches_token_double_sum(rng):
    """C^{pi sigma}(x, x') = sigma_0^2/(N0 H_tot) sum_{s s'} alpha_s alpha'_s' x_s . x'_s' (paper Eqs. (7), (10))."""
    arch = random_qk_arch((2, 2), variances=(1.7, 1, 1, 1))
    x = rng.normal(size=(4, 5, 12))
    alpha = np.asarray(pt.path_attention(arch, x))
    tokens = np.einsum("bsn,ctn->bcst", x, x)  # x_s . x'_t
    expected = 1.7 / (12 * 4) * np.einsum("bps,cqt,bcst->pqbc", alpha, alpha, tokens)
    C = np.asarray(kernels.path_kernels(pt.path_features(arch, x)))
    np.testing.assert_allclose(C, expected, atol=1e-12)


def test_kernel_matrix_forms_agree(rng):
    arch = random_qk_arch((3, 2), n0=60)
    feats = pt.path_features(arch, rng.normal(size=(9, 5, 60)))
    A = rng.normal(size=(6, 6))
    U = A @ A.T + np.eye(6)
    C = np.asarray(kernels.path_kernels(feats))
    dense = np.einsum("ab,abpq->pq", U, C)
    np.testing.assert_allclose(kernels.kernel_matrix(U, feats), dense, atol=1e-12)
    np.testing.assert_allclose(kernels.kernel_matrix(U, feats, feats, batch_size=2), dense, atol=1e-12)
    np.testing.assert_allclose(kernels.kernel_diagonal(U, feats), np.diag(dense), atol=1e-12)
    np.testing.assert_allclose(
        kernels.gp_kernel(arch, feats), kernels.kernel_matrix(arch.gp_scale * np.eye(6), feats), atol=1e-12
    )
    gram = kernels.kernel_operator(feats)
    streamed = kernels.kernel_operator(feats, memory_budget=0)
    assert isinstance(gram, kernels.GramBlocks) and gram.n_paths == 6
    assert isinstance(streamed, kernels.FeatureKernel)
    np.testing.assert_allclose(kernels.apply_operator(gram, U), dense, atol=1e-12)
    np.testing.assert_allclose(kernels.apply_operator(streamed, U), dense, atol=1e-12)


@pytest.mark.parametrize("n_paths", [1, 2])
def test_block_kernel_of_many_outputs_matches_the_dense_sum(n_paths, rng):
    """``K^{cd} = sum U^{cd}_{pi sigma} C^{pi sigma}`` from the packed Gram blocks, one path included (which has no
    antisymmetric part: it used to fail on an empty array)."""
    P, C = 7, 2
    feats = rng.normal(size=(P, n_paths, 40))
    A = rng.normal(size=(C * n_paths, C * n_paths))
    U = A @ A.T + np.eye(C * n_paths)
    paths = np.asarray(kernels.path_kernels(feats))
    dense = np.einsum("cadb,abpq->cpdq", U.reshape(C, n_paths, C, n_paths), paths).reshape(C * P, C * P)
    op = kernels.kernel_operator(feats, n_outputs=C)
    assert isinstance(op, kernels.GramBlocks)
    np.testing.assert_allclose(kernels.apply_operator(op, U), dense, atol=1e-12)


@pytest.mark.parametrize("size", [1, 2, 3, 8, 9, 600, 601])
def test_symmetric_packing_round_trips(size, rng):
    A = rng.normal(size=(size, size))
    D = A + A.T
    packed = kernels.pack_symmetric(D)
    assert packed.size == size * (size + 1) // 2  # no padding
    np.testing.assert_array_equal(np.asarray(kernels.unpack_symmetric(jnp.asarray(packed), size)), D)
    gram = kernels.GramBlocks(jnp.asarray(packed)[None])
    assert gram.n_examples == size and gram.n_paths == 1


def test_memory_budget_selects_backend():
    assert kernels.gram_bytes(600, 16) == 8 * 136 * (600 * 601 // 2)  # the Omniglot size: 196 MB
    n0 = kernels.GRAM_MIN_FEATURES_PER_PATH * 5  # n = 4 paths: from here Gram blocks are the faster form
    feats = np.zeros((50, 4, n0))
    budget = 2 * kernels.gram_bytes(50, 4)
    assert isinstance(kernels.kernel_operator(feats, budget), kernels.GramBlocks)
    assert isinstance(kernels.kernel_operator(feats, budget - 1), kernels.FeatureKernel)
    # with few features per path the factorised form is faster, whatever the budget
    assert isinstance(kernels.kernel_operator(feats[:, :, : n0 - 1], budget), kernels.FeatureKernel)


def test_kernel_bad_inputs(rng):
    feats = rng.normal(size=(5, 4, 3))
    with pytest.raises(ValueError, match="U must be"):
        kernels.kernel_matrix(np.eye(3), feats)
    with pytest.raises(ValueError, match="dimensions"):
        kernels.kernel_matrix(np.eye(4), feats[0])
    with pytest.raises(ValueError, match="features_b"):
        kernels.kernel_matrix(np.eye(4), feats, rng.normal(size=(5, 4, 2)))


def _equations(jaxpr):
    """Every equation of ``jaxpr`` and of the jaxprs nested in its equations' parameters."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else [param]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _equations(inner)


def test_kernel_gradient_adds_into_no_array_of_all_output_blocks(rng):
    """The C x C block kernel's gradient is built from slices, not by adding into a zero array of every output
    block pair (the gradient of a gather): XLA hoisted that array out of the solver's loops and kept it for the
    whole solve, 158 MB in float64 at C = 10, P = 600. The gather form fails this test."""
    P, n, C = 12, 2, 3
    op = kernels.kernel_operator(rng.normal(size=(P, n, 40)), n_outputs=C)
    assert isinstance(op, kernels.GramBlocks)
    K, vjp = jax.vjp(lambda u: kernels.apply_operator(op, u), jnp.eye(C * n))
    shapes = [eqn.outvars[0].aval.shape for eqn in _equations(jax.make_jaxpr(vjp)(K).jaxpr)
              if eqn.primitive.name == "scatter-add"]
    # the packed blocks' unpacking still adds into arrays of its own: the walk does see scatter-adds
    assert shapes and (C * (C + 1) // 2, P, P) not in shapes, shapes
