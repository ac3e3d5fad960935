"""The entropy with C outputs is invariant under flipping the sign of one output (book/many_outputs.md, the
consequences of the derivation, (iii)): U -> J U J in every order parameter, J a diagonal matrix of signs on
the output index. So at block-diagonal points its gradient has no off-diagonal output blocks. For C >= 3 it is
not even in all off-diagonal blocks at once."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory  # noqa: F401  (64-bit mode)
from paththeory import action as act

HEADS, WIDTHS, VARIANCES = (2, 3), (9.0, 11.0, 13.0), (1.0, 0.7, 1.3, 1.1)


def random_pd(rng, n):
    A = rng.normal(size=(n, n))
    return A @ A.T / n + np.eye(n)


def flip(C, c):
    return np.diag([-1.0 if d == c else 1.0 for d in range(C)])


def on_outputs(M, size, C):
    return np.kron(M, np.eye(size // C))


def entropy(Us):
    return float(act.entropy([jnp.asarray(u) for u in Us], WIDTHS, HEADS, VARIANCES))


@pytest.mark.parametrize("C", [2, 3, 4])
def test_entropy_is_invariant_under_flipping_one_output(C):
    rng = np.random.default_rng(C)
    sizes = act.order_parameter_sizes(HEADS, C)
    Us = [random_pd(rng, n) for n in sizes]
    for c in range(C):
        J = flip(C, c)
        flipped = [on_outputs(J, n, C) @ u @ on_outputs(J, n, C) for u, n in zip(Us, sizes)]
        assert entropy(flipped) == pytest.approx(entropy(Us), rel=1e-12)


def test_entropy_is_not_even_in_all_off_diagonal_blocks_for_three_outputs():
    rng = np.random.default_rng(0)
    C = 3
    sizes = act.order_parameter_sizes(HEADS, C)
    Us = [random_pd(rng, n) for n in sizes]
    signs = 2 * np.eye(C) - 1  # +1 on the diagonal blocks, -1 off them
    negated = [u * np.kron(signs, np.ones((n // C, n // C))) for u, n in zip(Us, sizes)]
    assert all(np.linalg.eigvalsh(u)[0] > 0 for u in negated)  # still order parameters (seed 0)
    assert abs(entropy(negated) - entropy(Us)) > 1e-3 * abs(entropy(Us))


@pytest.mark.parametrize("C", [2, 3])
def test_entropy_gradient_has_no_off_diagonal_blocks_at_block_diagonal_points(C):
    rng = np.random.default_rng(10 + C)
    sizes = act.order_parameter_sizes(HEADS, C)
    block = lambda n: np.kron(np.eye(C), np.ones((n // C, n // C)))
    Us = [random_pd(rng, n) * block(n) for n in sizes]
    grads = jax.grad(lambda us: act.entropy(us, WIDTHS, HEADS, VARIANCES))([jnp.asarray(u) for u in Us])
    for g, n in zip(grads, sizes):
        g = np.asarray(g)
        assert np.max(np.abs(g * (1 - block(n)))) < 1e-12 * max(1.0, np.max(np.abs(g)))
        assert np.max(np.abs(g * block(n))) > 1e-3  # the diagonal blocks do not vanish
