"""The order-parameter solver against independent oracles."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

import paththeory as pt
from paththeory import action as act
from paththeory import kernels
from paththeory.kernels import kernel_matrix
from paththeory.solve import Theory, solve
from tests.conftest import random_qk_arch

T = 0.05


def independent_gradient(arch, feats, y, sol):
    """max |d(S/N)/dU| at the solver's output, by plain autodiff of the action (no solver code)."""
    Us = [jnp.asarray(u) for u in sol.order_parameters]

    def f(us):
        return act.action(us, kernel_matrix(us[0], feats), jnp.asarray(y), sol.temperature, sol.widths,
                          arch.heads, arch.variances)

    return max(float(jnp.max(jnp.abs(0.5 * (g + g.T)))) for g in jax.jit(jax.grad(f))(Us))  # jit: eager is slow


def test_solution_is_positive_definite_and_stationary(small_problem):
    arch, feats, y, *_ = small_problem
    for width in (5, 50):
        sol = solve(arch, feats, y, width, T)
        assert sol.report["converged"], sol.report
        assert sol.report["grad_norm"] <= 1e-9
        assert independent_gradient(arch, feats, y, sol) <= 1e-8
        for U in sol.order_parameters:
            assert np.linalg.eigvalsh(U)[0] > 0
        assert sol.U.shape == (4, 4) and len(sol.inner) == 1


def test_inner_order_parameter_matches_l2_closed_form(small_problem):
    arch, feats, y, *_ = small_problem
    sol = solve(arch, feats, y, (6, 9, 12), T, tol=1e-11)
    U2, U_a = act.inner_order_parameter_l2(sol.U, arch.heads, sol.widths, arch.variances)
    assert np.max(np.abs(U2 - sol.inner[0])) < 1e-7
    assert abs(U_a - sol.U_a) < 1e-7


def test_gp_limit_as_width_grows(small_problem):
    arch, feats, y, *_ = small_problem
    theory = Theory(arch, feats, y)
    widths = (1e3, 1e4, 1e5, 1e6)
    deviations = np.array([np.max(np.abs(theory.solve(n, T).U - np.eye(4))) for n in widths])
    scaled = deviations * np.array(widths)  # U* - I = O(1/N): N |U* - I| tends to a constant
    assert np.all(np.abs(scaled[1:] / scaled[:-1] - 1) < 0.2), deviations
    assert deviations[-1] < 1e-3


@pytest.mark.parametrize("depth", [1, 3])
def test_single_path_solution_matches_scalar_minimisation(depth, rng):
    """One path: S/N = (L+1) U^{1/(L+1)} - ln U + energy(U K_1)/N, minimised over scalar U by scipy."""
    arch = random_qk_arch((1,) * depth, n0=10, readout="first")
    x = rng.normal(size=(30, 4, 10))
    feats = np.asarray(pt.path_features(arch, x))
    y = np.sign(x[:, 0, 0])
    N = 8.0
    K1 = feats[:, 0] @ feats[:, 0].T

    def s(u):
        A = u * K1 + T * np.eye(30)
        return act.single_path_entropy_minimum(u, depth) + (np.linalg.slogdet(A)[1] + y @ np.linalg.solve(A, y)) / N

    best = minimize_scalar(s, bounds=(1e-3, 100), method="bounded", options={"xatol": 1e-12})
    sol = solve(arch, feats, y, N, T)
    assert abs(sol.U[0, 0] - best.x) < 1e-5 * best.x


def test_permuting_heads_permutes_solution(small_problem, rng):
    arch, feats, y, *_ = small_problem
    sol = solve(arch, feats, y, 8, T)
    (l1, l2) = arch.attention
    swapped = pt.Architecture((pt.QKAttention(l1.query[::-1], l1.key[::-1]), l2), readout=arch.readout)
    perm = [(1 - h1) * 2 + h2 for h1, h2 in arch.paths]  # new path -> old path
    sol_swapped = solve(swapped, feats[:, perm], y, 8, T)
    np.testing.assert_allclose(sol_swapped.U, sol.U[np.ix_(perm, perm)], atol=1e-7)


@pytest.mark.slow
def test_sweep_warm_start_agrees_with_cold_start_and_backends(small_problem, monkeypatch):
    arch, feats, y, *_ = small_problem
    widths = [4, 16, 64]
    streamed = Theory(arch, feats, y, memory_budget=0).sweep(widths, [T])[0]
    monkeypatch.setattr(kernels, "GRAM_MIN_FEATURES_PER_PATH", 0)
    gram = Theory(arch, feats, y)
    assert isinstance(gram.operator, kernels.GramBlocks)
    warm = gram.sweep(widths, T)
    for w, a, b in zip(widths, warm, streamed):
        cold = solve(arch, feats, y, w, T)
        np.testing.assert_allclose(a.U, cold.U, atol=1e-7)
        np.testing.assert_allclose(b.U, cold.U, atol=1e-7)


@pytest.mark.slow
def test_mixed_precision_reaches_the_double_precision_minimum():
    """The float32 first phase changes the path, not the answer: same U* and a float64 gradient <= tol."""
    rng = np.random.default_rng(11)
    arch = random_qk_arch((2, 2), n0=24, readout="mean", seed=5)
    x = rng.normal(size=(300, 6, 24))
    y = np.sign(x[:, 0] @ rng.normal(size=24))
    feats = np.asarray(pt.path_features(arch, x))
    auto = Theory(arch, feats, y)
    assert auto.precision == "mixed" and auto.hessian  # P = 300 >= MIXED_PRECISION_MIN_EXAMPLES, HESSIAN_MIN_EXAMPLES
    small = Theory(arch, feats[:100], y[:100])
    assert small.precision == "double" and not small.hessian
    double = Theory(arch, feats, y, precision="double", hessian=False).solve(8, T)
    factorised = Theory(arch, feats, y, memory_budget=0, precision="mixed", hessian=False)
    assert isinstance(factorised.operator, kernels.FeatureKernel)
    for theory in (auto, Theory(arch, feats, y, hessian=False), factorised):
        for tol in (1e-7, 1e-9):
            mixed = theory.solve(8, T, tol=tol)
            assert mixed.report["converged"] and mixed.report["precision"] == "mixed"
            assert mixed.report["hessian"] == theory.hessian
            assert mixed.report["grad_norm"] <= tol
            assert independent_gradient(arch, feats, y, mixed) <= 10 * tol
            np.testing.assert_allclose(mixed.U, double.U, atol=1e-4 if tol == 1e-7 else 1e-6)


def test_bad_input_raises_value_errors(small_problem):
    arch, feats, y, *_ = small_problem
    theory = Theory(arch, feats, y)
    with pytest.raises(ValueError, match="precision must be"):
        Theory(arch, feats, y, precision="half")
    assert Theory(arch, np.tile(feats, (5, 1, 1)), np.tile(y, 5), memory_budget=0).precision == "double"
    with pytest.raises(ValueError, match="paths"):
        Theory(arch, feats[:, :3], y)
    with pytest.raises(ValueError, match="labels"):
        Theory(arch, feats, y[:-1])
    with pytest.raises(ValueError, match="L \\+ 1"):
        theory.solve((5, 5), T)
    with pytest.raises(ValueError, match="positive definite"):
        theory.solve(5, T, init=[np.diag([1.0, 1.0, -1.0, 1.0]), np.eye(2)])
    with pytest.raises(ValueError, match="positive definite"):
        theory.action([np.diag([1.0, 1.0, 0.0, 1.0]), np.eye(2)], 5, T)
    with pytest.raises(ValueError, match="L = 2 matrices"):
        theory.action([np.eye(4)], 5, T)
    with pytest.raises(ValueError, match="temperature"):
        theory.solve(5, -0.1)
    nan_y = y.copy()
    nan_y[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Theory(arch, feats, nan_y)
    singular = np.random.default_rng(0).normal(size=(20, 4, 2))  # rank <= 8 < P = 20
    with pytest.raises(ValueError, match="singular"):
        Theory(arch, singular, np.ones(20)).solve(5, 0.0)
    Theory(arch, feats, y).solve(500, 0.0)  # T = 0 is fine for a non-singular kernel


@pytest.mark.slow
@pytest.mark.parametrize("heads", [(3, 3, 3), (8, 8)])
def test_many_paths_positive_definite_stationary_and_equivariant(heads, rng):
    """The deeper (27 paths, 378 entries of U) and wider (64 paths, 2,080 entries) networks of the
    Omniglot chapter, at small P: U* positive definite, stationary by plain autodiff of the action,
    and relabelling the heads of every layer relabels the paths of U* (features recomputed from the
    relabelled network, not permuted)."""
    arch = random_qk_arch(heads, n0=6, g=3, readout="mean", seed=4)
    x = rng.normal(size=(40, 5, 6))
    y = np.sign(x[:, 0] @ rng.normal(size=6) + 0.5 * x[:, 1] @ rng.normal(size=6))
    feats = np.asarray(pt.path_features(arch, x))
    sol = solve(arch, feats, y, 10, 0.1)
    assert sol.report["converged"], sol.report
    assert independent_gradient(arch, feats, y, sol) <= 1e-8
    for U in sol.order_parameters:
        assert np.linalg.eigvalsh(U)[0] > 0
    perms = [rng.permutation(h) for h in heads]
    relabelled = pt.Architecture(tuple(pt.QKAttention(layer.query[p], layer.key[p])
                                       for layer, p in zip(arch.attention, perms)), readout=arch.readout)
    old = [int(np.ravel_multi_index(tuple(p[h] for p, h in zip(perms, path)), heads)) for path in arch.paths]
    sol_relabelled = solve(relabelled, np.asarray(pt.path_features(relabelled, x)), y, 10, 0.1)
    np.testing.assert_allclose(sol_relabelled.U, sol.U[np.ix_(old, old)], atol=1e-7)
