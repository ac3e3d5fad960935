"""The entrywise Hessian of the energy displayed in book/solver.md ("How the solver finds U*"),
evaluated in numpy and compared with central finite differences of the package's energy.

With ``cK = K_U + T I``, ``b = cK^{-1} y`` and ``C^{pi pi'} = F_pi F_pi'^T`` (``F_pi`` the ``[P, N0]``
attentioned inputs of path ``pi``), the chapter displays, for the energy
``E = ln det cK + y^T cK^{-1} y`` as a function of the entries ``U_{pi pi'}`` taken as independent,

    d2E / dU_{12} dU_{34} = -Tr(cK^{-1} C^{12} cK^{-1} C^{34})
                            + b^T C^{12} cK^{-1} C^{34} b + b^T C^{34} cK^{-1} C^{12} b .

``C^{pi pi'}`` is not symmetric for ``pi != pi'``, so the two ``b`` terms differ entry by entry; along a
symmetric direction ``V`` (``C_V = sum V_{pi pi'} C^{pi pi'}`` symmetric) they are equal, and the
bilinear form is ``-Tr(cK^{-1} C_V cK^{-1} C_W) + 2 b^T C_V cK^{-1} C_W b``. All in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import paththeory as pt  # noqa: F401  (turns on JAX's 64-bit mode)
from paththeory.action import energy as package_energy
from paththeory.kernels import kernel_matrix

T = 0.3
H = 1e-4  # finite-difference step
# Central second differences: truncation O(H^2 |E''''|) ~ 1e-8, round-off ~ 1e-16 |E| / H^2 ~ 1e-7 relative.
RTOL = 1e-5


def problem(seed: int, P: int = 9, n_paths: int = 3, N0: int = 5):
    """Random features ``F [P, n_paths, N0]``, a positive-definite ``U`` and labels."""
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(P, n_paths, N0)) / np.sqrt(N0)
    A = rng.normal(size=(n_paths, n_paths))
    U = A @ A.T / n_paths + 0.5 * np.eye(n_paths)
    y = np.sign(rng.normal(size=P))
    return F, U, y, rng


def path_kernels(F):
    """``C[a, b] = F_a F_b^T``: ``[n, n, P, P]``."""
    return np.einsum("man,qbn->abmq", F, F)


def kernel(U, C):
    return np.einsum("ab,abmq->mq", U, C)


def hessian_terms(U, C, y, temperature):
    """``Tr(cK^{-1} C^{12} cK^{-1} C^{34})`` and ``b^T C^{12} cK^{-1} C^{34} b``, each ``[n, n, n, n]``."""
    cK = kernel(U, C) + temperature * np.eye(len(y))
    G = np.linalg.inv(cK)
    b = G @ y
    GC = np.einsum("mk,abkq->abmq", G, C)  # cK^{-1} C^{ab}
    trace = np.einsum("abmq,cdqm->abcd", GC, GC)
    Cb = np.einsum("abmq,q->abm", C, b)  # C^{ab} b
    bC = np.einsum("m,abmq->abq", b, C)  # b^T C^{ab}
    cross = np.einsum("abm,mq,cdq->abcd", bC, G, Cb)
    return trace, cross


def displayed_hessian(U, C, y, temperature):
    """The chapter's entrywise formula, ``[n, n, n, n]`` (indices ``pi1, pi2, pi3, pi4``)."""
    trace, cross = hessian_terms(U, C, y, temperature)
    return -trace + cross + cross.transpose(2, 3, 0, 1)


def energy_of(U, F, y, temperature):
    """The package's energy at the kernel ``K_U`` (symmetric ``U`` only)."""
    return float(package_energy(kernel_matrix(U, F), y, temperature))


def mixed_difference(f, V, W, h=H):
    """Central finite difference of ``d2/ds dt f(s V + t W)`` at 0."""
    return (f(h * V + h * W) - f(h * V - h * W) - f(-h * V + h * W) + f(-h * V - h * W)) / (4 * h * h)


def symmetric(rng, n):
    A = rng.normal(size=(n, n))
    return A + A.T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_displayed_hessian_matches_finite_differences_along_symmetric_directions(seed):
    F, U, y, rng = problem(seed)
    C = path_kernels(F)
    np.testing.assert_allclose(kernel(U, C), np.asarray(kernel_matrix(U, F)), rtol=1e-12, atol=1e-12)
    Hess = displayed_hessian(U, C, y, T)
    n = U.shape[0]
    f = lambda D: energy_of(U + D, F, y, T)
    directions = [symmetric(rng, n) for _ in range(3)]
    # single symmetric entries: E_{12} + E_{21}, and a diagonal entry
    for a, b in [(0, 1), (1, 2), (2, 2)]:
        E = np.zeros((n, n))
        E[a, b] = E[b, a] = 1.0
        directions.append(E)
    for V in directions:
        for W in directions:
            exact = np.einsum("ab,abcd,cd->", V, Hess, W)
            fd = mixed_difference(f, V, W)
            assert abs(fd - exact) <= RTOL * max(1.0, abs(exact)), (fd, exact)


def test_displayed_hessian_is_symmetric_and_the_one_term_form_is_not():
    """A Hessian is symmetric under (pi1 pi2) <-> (pi3 pi4); "twice one b term" is not, for pi1 != pi2."""
    F, U, y, _ = problem(5)
    C = path_kernels(F)
    Hess = displayed_hessian(U, C, y, T)
    np.testing.assert_allclose(Hess, Hess.transpose(2, 3, 0, 1), rtol=1e-12, atol=1e-12)
    trace, cross = hessian_terms(U, C, y, T)
    one_term = -trace + 2 * cross  # the form that doubles one b term
    asymmetry = np.max(np.abs(one_term - one_term.transpose(2, 3, 0, 1)))
    assert asymmetry > 1e-3 * np.max(np.abs(one_term))
    # ... yet both agree on symmetric directions
    rng = np.random.default_rng(6)
    V, W = symmetric(rng, 3), symmetric(rng, 3)
    assert np.einsum("ab,abcd,cd->", V, one_term, W) == pytest.approx(np.einsum("ab,abcd,cd->", V, Hess, W),
                                                                      rel=1e-10)


def test_displayed_hessian_is_the_hessian_in_independent_entries():
    """Entry by entry, on the energy extended to non-symmetric U (numpy slogdet and solve): unit directions
    E_{12} and E_{34}, including pi1 != pi2."""
    F, U, y, _ = problem(3)
    C = path_kernels(F)
    Hess = displayed_hessian(U, C, y, T)
    n = U.shape[0]

    def extended(D):
        cK = kernel(U + D, C) + T * np.eye(len(y))
        return np.linalg.slogdet(cK)[1] + y @ np.linalg.solve(cK, y)

    for (a, b) in [(0, 1), (1, 0), (0, 2), (2, 2)]:
        for (c, d) in [(0, 1), (2, 1), (1, 1)]:
            V, W = np.zeros((n, n)), np.zeros((n, n))
            V[a, b], W[c, d] = 1.0, 1.0
            fd = mixed_difference(extended, V, W)
            assert abs(fd - Hess[a, b, c, d]) <= RTOL * max(1.0, abs(Hess[a, b, c, d])), ((a, b, c, d), fd)
