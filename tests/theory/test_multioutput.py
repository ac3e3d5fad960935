"""The multi-output theory (labels [P, C]) against independent oracles.

Oracles: central finite differences of the action; plain autodiff of a dense (slogdet + solve)
energy; the single-output theory (C = 1 spellings, and the exact decoupled structure for Y = [y, 0]);
the GP point as N grows; the output-rotation symmetry; dense kernel regression for the predictor.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import paththeory as pt
from paththeory import action as act
from paththeory import kernels
from paththeory import solve as slv
from paththeory.hessian import energy_derivatives, energy_hessian_cholesky
from paththeory._labels import as_labels, stacked
from paththeory.predict import predictor
from tests.conftest import assert_gradient_matches_central_differences, random_qk_arch, sampler_agreement_z

T = 0.05


def dense_kernel(U, fa, fb=None):
    """``K_{(c mu),(d nu)} = sum_ab U_{(c a),(d b)} xi^a_mu . xi^b_nu`` by one plain einsum."""
    fb = fa if fb is None else fb
    n = fa.shape[1]
    c = U.shape[0] // n
    k = jnp.einsum("man,cadb,qbn->cmdq", fa, jnp.reshape(U, (c, n, c, n)), fb)
    return k.reshape(c * fa.shape[0], c * fb.shape[0])


def random_pd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T / n + np.eye(n)


@pytest.fixture(scope="module")
def problem():
    """L = 2, H = (2, 2), P = 30, three classes one-hot coded (labels from a random teacher)."""
    rng = np.random.default_rng(11)
    arch = random_qk_arch((2, 2), n0=12, readout="mean", seed=5, variances=(1.0, 0.9, 1.2, 1.1))
    x = rng.normal(size=(50, 5, 12))
    feats = np.asarray(pt.path_features(arch, x))
    teacher = rng.normal(size=(12, 3))
    classes = np.argmax(x.mean(axis=1) @ teacher, axis=1)
    return arch, feats[:30], np.eye(3)[classes[:30]], feats[30:]


# --------------------------------------------------------------------------- action


@pytest.mark.parametrize("heads,C", [((3,), 2), ((2, 3), 3), ((2, 1, 2), 2)])
def test_action_gradient_matches_finite_differences(heads, C):
    rng = np.random.default_rng(len(heads) + C)
    widths = tuple(float(w) for w in range(7, 8 + len(heads)))
    variances = (1.0,) + tuple(0.8 + 0.1 * l for l in range(len(heads))) + (1.3,)
    Us = [random_pd(rng, s) for s in act.order_parameter_sizes(heads, C)]
    P = 8
    feats = rng.normal(size=(P, Us[0].shape[0] // C, 4))
    y = jnp.asarray(rng.normal(size=P * C))

    def f(us):
        return act.action(us, dense_kernel(us[0], feats), y, 0.1, widths, heads, variances)

    assert_gradient_matches_central_differences(f, Us, rng, directions=3)


def test_matrix_readout_root_is_the_entropy_minimum():
    """U_a (C x C) from the matrix quadratic: zero gradient of the entropy at fixed U^(l), and a minimum."""
    rng = np.random.default_rng(3)
    heads, widths, variances, C = (2, 3), (5.0, 8.0, 11.0), (1.0, 0.9, 1.2, 1.4), 3
    Us = [jnp.asarray(random_pd(rng, s)) for s in act.order_parameter_sizes(heads, C)]
    traced = act.partial_trace(Us[-1], heads[-1], C)
    U_a = act.readout_order_parameter(traced, widths, heads, variances)
    ent = lambda ua: act.entropy_with_readout(Us, ua, widths, heads, variances)  # noqa: E731
    grad = jax.grad(ent)(U_a)
    assert float(jnp.max(jnp.abs(grad + grad.T))) < 1e-9
    assert np.linalg.eigvalsh(np.asarray(U_a))[0] > 0
    for _ in range(5):
        D = rng.normal(size=(C, C))
        assert float(ent(U_a + 1e-3 * (D + D.T))) > float(ent(U_a))
    # one output: the scalar root of the spec, and [[scalar]] for a 1 x 1 argument
    u = act.partial_trace(Us[-1][:3, :3], heads[-1], 1)
    scalar = act.readout_order_parameter(jnp.trace(Us[-1][:3, :3]), widths, heads, variances)
    assert abs(float(act.readout_order_parameter(u, widths, heads, variances)[0, 0]) - float(scalar)) < 1e-14


def test_matrix_square_root_derivatives_at_repeated_eigenvalues():
    """d sqrt(M) solves the Sylvester equation, also at M = I (the GP point), to second order."""
    M = jnp.eye(3)
    D = jnp.asarray(np.random.default_rng(0).normal(size=(3, 3)))
    D = D + D.T
    _, tangent = jax.jvp(act.sqrtm_pd, (M,), (D,))
    np.testing.assert_allclose(tangent, D / 2, atol=1e-14)
    second = jax.jvp(lambda m: jax.jvp(act.sqrtm_pd, (m,), (D,))[1], (M,), (D,))[1]
    np.testing.assert_allclose(second, -D @ D / 4, atol=1e-12)  # sqrt(I + tD) = I + tD/2 - t^2 D^2/8 + ...


# --------------------------------------------------------------------------- kernel operator and Hessian


@pytest.mark.parametrize("memory_budget", [kernels.DEFAULT_MEMORY_BUDGET, 0])  # Gram blocks, factorised
def test_operator_matches_dense_kernel(memory_budget):
    rng = np.random.default_rng(4)
    feats = rng.normal(size=(9, 3, 20))
    C = 3
    U = random_pd(rng, 3 * C)
    op = kernels.kernel_operator(feats, memory_budget, n_outputs=C)
    assert isinstance(op, kernels.GramBlocks) == (memory_budget > 0)
    np.testing.assert_allclose(kernels.apply_operator(op, jnp.asarray(U)), dense_kernel(U, feats), atol=1e-12)
    np.testing.assert_allclose(kernels.kernel_matrix(U, feats, feats[:4], n_outputs=C),
                               dense_kernel(U, feats, feats[:4]), atol=1e-12)
    diag = np.asarray(dense_kernel(U, feats)).reshape(C, 9, C, 9)[:, np.arange(9), :, np.arange(9)]
    np.testing.assert_allclose(kernels.kernel_diagonal(U, feats, n_outputs=C), diag, atol=1e-12)


def test_energy_derivatives_match_autodiff():
    rng = np.random.default_rng(5)
    P, n, n0, C = 12, 3, 4, 2
    feats = jnp.asarray(rng.normal(size=(P, n, n0)))
    U = jnp.asarray(random_pd(rng, n * C))
    y = jnp.asarray(rng.normal(size=P * C))

    def energy(u):
        A = dense_kernel(0.5 * (u + u.T), feats) + 0.2 * jnp.eye(P * C)
        return jnp.linalg.slogdet(A)[1] + y @ jnp.linalg.solve(A, y)

    grad, hess = jax.jit(energy_derivatives)(feats, dense_kernel(U, feats), y, 0.2)
    np.testing.assert_allclose(0.5 * (grad + grad.T), jax.jit(jax.grad(energy))(U), rtol=1e-9, atol=1e-11)
    sym = 0.25 * (hess + hess.transpose(1, 0, 2, 3) + hess.transpose(0, 1, 3, 2) + hess.transpose(1, 0, 3, 2))
    np.testing.assert_allclose(sym, jax.jit(jax.hessian(energy))(U), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("P,n,n0,C", [(12, 3, 4, 2), (7, 2, 5, 3)])  # C n N0 below and above C P
@pytest.mark.parametrize("chunk,block", [(None, None), (1, 2), (1, 4)])  # one or several feature chunks, row blocks
def test_cholesky_energy_hessian_matches_autodiff(P, n, n0, C, chunk, block):
    """The streamed energy Hessian in Cholesky coordinates (C > 1 Hessian restart) against ``J^T H J`` with ``J``
    by ``jacfwd`` of the parametrisation and ``H`` by autodiff of a slogdet + solve energy; added to ``out``, the
    rest of ``out`` untouched; float64 round-off only (1e-10 of the largest entry)."""
    rng = np.random.default_rng(15)
    size, scale = n * C, 1.3
    feats = jnp.asarray(rng.normal(size=(P, n, n0)))
    y = jnp.asarray(rng.normal(size=P * C))
    theta = jnp.asarray(0.4 * rng.normal(size=size * (size + 1) // 2))
    U_of = lambda t: slv.theta_to_matrices(t, [size], [scale])[0]  # noqa: E731
    U = U_of(theta)

    def energy(u):
        A = dense_kernel(0.5 * (u + u.T), feats) + 0.2 * jnp.eye(P * C)
        return jnp.linalg.slogdet(A)[1] + y @ jnp.linalg.solve(A, y)

    J = jax.jacfwd(U_of)(theta)
    expected = jnp.einsum("abk,abcd,cdl->kl", J, jax.jit(jax.hessian(energy))(U), J)
    L = jnp.linalg.cholesky(U / scale)
    m, out = theta.size, jnp.asarray(rng.normal(size=(theta.size + 3,) * 2))
    got = energy_hessian_cholesky(feats, dense_kernel(U, feats), y, 0.2, L, scale, 0.5, out, C, chunk, block)
    # The upper triangle is the Hessian (the one the solver's Cholesky factor reads); below it, only part of it.
    upper = np.triu_indices(m)
    np.testing.assert_allclose((got[:m, :m] - out[:m, :m])[upper], 0.5 * expected[upper], rtol=0,
                               atol=1e-10 * np.max(np.abs(expected)))
    np.testing.assert_array_equal(got[m:], out[m:])
    np.testing.assert_array_equal(got[:, m:], out[:, m:])
    with pytest.raises(ValueError, match="divisor"):
        energy_hessian_cholesky(feats, dense_kernel(U, feats), y, 0.2, L, scale, 0.5, out, C, n0 + 1, block)


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
def test_theta_hessian_matches_finite_differences(problem):
    """The solver's Hessian (Cholesky coordinates, all layers, C = 3) against differences of its gradient."""
    arch, feats, Y, _ = problem
    theory = slv.Theory(arch, feats, Y, precision="double")
    data = slv._Data(theory.operator, theory.targets, jnp.asarray(0.1), jnp.asarray(arch.widths((6.0, 9.0, 12.0))),
                     jnp.asarray(feats))
    opts = dict(sizes=theory.sizes, scales=theory.scales, heads=arch.heads, variances=arch.variances, skips=arch.skips)
    theta = jnp.asarray(0.3 * np.random.default_rng(6).normal(size=sum(s * (s + 1) // 2 for s in theory.sizes)))
    H = jax.jit(slv._hessian, static_argnames=tuple(opts))(theta, data, **opts)  # as the solver runs it
    grad = jax.jit(lambda t: slv._objective_and_grads(t, data, **opts)[1])
    h = 1e-5
    fd = np.stack([(grad(theta.at[k].add(h)) - grad(theta.at[k].add(-h))) / (2 * h) for k in range(theta.size)])
    upper = np.triu_indices(theta.size)  # the triangle the solver's Cholesky factor reads (_factored_inverse)
    H, fd = np.asarray(H)[upper], fd[upper]
    assert np.max(np.abs(H - fd)) <= 1e-6 * max(1.0, float(np.max(np.abs(H)))), np.max(np.abs(H - fd))


# --------------------------------------------------------------------------- the solver


def independent_gradient(arch, feats, Y, sol):
    """max |d(S/N)/dU| at a solution, by plain autodiff of the action on the dense kernel."""
    y = jnp.asarray(stacked(Y))

    def f(us):
        return act.action(us, dense_kernel(us[0], feats), y, sol.temperature, sol.widths, arch.heads, arch.variances)

    return max(float(jnp.max(jnp.abs(0.5 * (g + g.T)))) for g in jax.jit(jax.grad(f))([jnp.asarray(u) for u in
                                                                                sol.order_parameters]))


def test_solution_is_stationary_with_cross_output_blocks(problem):
    arch, feats, Y, _ = problem
    for hessian in (False, True):
        sol = slv.Theory(arch, feats, Y, hessian=hessian).solve(8, T)
        assert sol.report["converged"] and sol.report["hessian"] == hessian
        assert independent_gradient(arch, feats, Y, sol) <= 1e-8
        assert sol.U.shape == (12, 12) and sol.inner[0].shape == (6, 6) and sol.U_a.shape == (3, 3)
        assert all(np.linalg.eigvalsh(u)[0] > 0 for u in sol.order_parameters)
    # generic classes: the output-output blocks do not vanish (not block-diagonal, so not C single theories)
    assert np.max(np.abs(sol.U[:4, 4:])) > 1e-2


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
@pytest.mark.parametrize("precision", ["double", "mixed"])  # the restart's Hessian in float64 / float32
def test_hessian_restart_reaches_the_first_order_minimum(problem, precision):
    """C = 3: L-BFGS restarted from the block-structured Hessian finds the first-order solver's minimum (both
    to max |dS/dU| <= 1e-9, so U agrees to 1e-7 as in the one-output test), in fewer iterations."""
    arch, feats, Y, _ = problem
    plain = slv.Theory(arch, feats, Y, precision=precision, hessian=False)
    restarted = slv.Theory(arch, feats, Y, precision=precision, hessian=True)
    for width in (5.0, 50.0):
        a, b = plain.solve(width, T), restarted.solve(width, T)
        assert a.report["converged"] and b.report["converged"] and b.report["hessian"]
        assert b.report["grad_norm"] <= 1e-9 and b.report["iterations"] < a.report["iterations"]
        for u, v in zip(b.order_parameters, a.order_parameters):
            np.testing.assert_allclose(u, v, atol=1e-7)


def test_hessian_restart_is_chosen_by_cost_for_many_outputs():
    """The rule counts the streamed Hessian: on at the Omniglot size for C = 3, 5 and 10 (its D x D Hessian and
    factor, 1.4 GiB in float32 at C = 10, fit the default budget), off for C = 20 (10 GiB each) and below 256 C P;
    off where the D x D matrices alone exceed the budget although the features are few (C n = 320 paths)."""
    assert all(slv.hessian_pays(600, 16, 192, n_outputs=c, itemsize=4) for c in (3, 5, 10))
    assert slv.hessian_pays(600, 16, 192, n_outputs=5, itemsize=8)
    assert not slv.hessian_pays(600, 16, 192, n_outputs=20, itemsize=4)
    assert slv.hessian_pays(90, 4, 81, n_outputs=3) and not slv.hessian_pays(80, 4, 81, n_outputs=3)
    assert slv.hessian_pays(600, 16, 192) == slv.hessian_pays(600, 16, 192, n_outputs=1, itemsize=4)  # C = 1 as before
    assert not slv.hessian_pays(600, 32, 10, n_outputs=10) and slv.hessian_pays(600, 32, 10, 2**36, n_outputs=10)
    d = 160 * 161 // 2
    assert not slv.hessian_pays(600, 16, 192, 2**30, n_outputs=10, itemsize=4, n_parameters=d)
    assert slv.hessian_pays(600, 16, 192, 2**31, n_outputs=10, itemsize=4, n_parameters=d)


def test_one_output_spellings_agree(problem):
    arch, feats, Y, _ = problem
    y = np.where(Y[:, 0] > 0, 1.0, -1.0)
    a = slv.Theory(arch, feats, y).solve(8, T, tol=1e-11)
    b = slv.Theory(arch, feats, y[:, None]).solve(8, T, tol=1e-11)
    assert np.max(np.abs(a.U - b.U)) < 1e-8
    assert isinstance(a.U_a, float) and b.U_a.shape == (1, 1) and abs(a.U_a - b.U_a[0, 0]) < 1e-8


def test_gp_limit_gives_scaled_identity_blocks(problem):
    arch, feats, Y, _ = problem
    theory = slv.Theory(arch, feats, Y)
    gp = arch.gp_scale * np.eye(12)
    widths = (1e4, 1e5, 1e6)
    deviations = np.array([np.max(np.abs(theory.solve(n, T).U - gp)) for n in widths])
    scaled = deviations * np.array(widths)  # U* - U_GP = O(1/N)
    assert np.all(np.abs(scaled[1:] / scaled[:-1] - 1) < 0.2), deviations
    assert deviations[-1] < 1e-3


def test_output_rotation_rotates_the_order_parameters(problem):
    """Y -> Y O (O orthogonal) gives U^(l) -> (O^T kron I) U^(l) (O kron I) and U_a -> O^T U_a O."""
    arch, feats, Y, _ = problem
    O, _ = np.linalg.qr(np.random.default_rng(8).normal(size=(3, 3)))
    theory = slv.Theory(arch, feats, Y)
    base = theory.solve(8, T, tol=1e-11)
    rotated = slv.Theory(arch, feats, Y @ O).solve(8, T, tol=1e-11)
    for U, V in zip(base.order_parameters, rotated.order_parameters):
        R = np.kron(O, np.eye(U.shape[0] // 3))
        assert np.max(np.abs(R.T @ U @ R - V)) < 1e-7
    assert np.max(np.abs(O.T @ base.U_a @ O - rotated.U_a)) < 1e-7


def test_two_outputs_with_one_zero_column_decouple_exactly(problem):
    """Y = [y, 0]: every U^(l) and U_a is block-diagonal, output 0 the single-output theory of y and
    output 1 that of zero labels; Y = [y, -y] / sqrt(2) is the same rotated by 45 degrees."""
    arch, feats, Y, _ = problem
    y = np.where(Y[:, 0] > 0, 1.0, -1.0)
    sols = {
        "pair": slv.Theory(arch, feats, np.stack([y, 0 * y], axis=1)).solve(8, T, tol=1e-11),
        "one": slv.Theory(arch, feats, y).solve(8, T, tol=1e-11),
        "zero": slv.Theory(arch, feats, np.zeros((30, 1))).solve(8, T, tol=1e-11),
        "diagonal": slv.Theory(arch, feats, np.stack([y, -y], axis=1) / np.sqrt(2)).solve(8, T, tol=1e-11),
    }
    for l, U in enumerate(sols["pair"].order_parameters):
        m = U.shape[0] // 2
        assert np.max(np.abs(U[:m, m:])) < 1e-10
        assert np.max(np.abs(U[:m, :m] - sols["one"].order_parameters[l])) < 1e-7
        assert np.max(np.abs(U[m:, m:] - sols["zero"].order_parameters[l])) < 1e-7
        R = np.kron(np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2), np.eye(m))  # Y [1, -1]/sqrt2 = [y, 0] R^T
        assert np.max(np.abs(R @ U @ R.T - sols["diagonal"].order_parameters[l])) < 1e-7
    np.testing.assert_allclose(sols["pair"].U_a, np.diag([sols["one"].U_a, sols["zero"].U_a[0, 0]]), atol=1e-8)
    # the output without labels collapses below the GP point
    assert np.trace(sols["zero"].U) < np.trace(arch.gp_scale * np.eye(4))


# --------------------------------------------------------------------------- the predictor


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
def test_predictor_mean_and_covariance_match_dense_kernel_regression(problem):
    _, feats, Y, test = problem
    rng = np.random.default_rng(9)
    U = random_pd(rng, 12)
    mean, cov = predictor(U, feats, Y, test, T, batch_size=7)
    K = np.asarray(dense_kernel(U, feats)) + T * np.eye(90)
    k_star = np.asarray(dense_kernel(U, feats, test))  # [(c mu), (d j)]
    expected_mean = (k_star.T @ np.linalg.solve(K, Y.T.reshape(-1))).reshape(3, -1).T
    prior = np.asarray(dense_kernel(U, test)).reshape(3, 20, 3, 20)[:, np.arange(20), :, np.arange(20)]
    posterior = (k_star.T @ np.linalg.solve(K, k_star)).reshape(3, 20, 3, 20)[:, np.arange(20), :, np.arange(20)]
    assert mean.shape == (20, 3) and cov.shape == (20, 3, 3)
    np.testing.assert_allclose(mean, expected_mean, atol=1e-10)
    np.testing.assert_allclose(cov, prior - posterior, atol=1e-10)
    # one output: [P] and [P, 1] spellings
    m1, v1 = predictor(U[:4, :4], feats, Y[:, 0] * 2 - 1, test, T)
    m2, v2 = predictor(U[:4, :4], feats, (Y[:, :1] * 2 - 1), test, T)
    assert m1.shape == (20,) and v1.shape == (20,)
    np.testing.assert_allclose(m1, m2[:, 0], atol=1e-13)
    np.testing.assert_allclose(v1, v2[:, 0, 0], atol=1e-13)


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize("labels,message", [
    (lambda Y: np.where(np.isclose(Y, 1), np.nan, Y), "NaN"),
    (lambda Y: Y[:-1], "29 rows"),
    (lambda Y: Y[:, :0], "C = 0"),
    (lambda Y: np.argmax(Y, axis=1), "one-hot"),
    (lambda Y: np.argmax(Y, axis=1).astype(float), "class indices"),
])
def test_bad_labels_are_refused(problem, labels, message):
    arch, feats, Y, test = problem
    with pytest.raises(ValueError, match=message):
        slv.Theory(arch, feats, labels(Y))
    with pytest.raises(ValueError, match=message):
        predictor(np.eye(12), feats, labels(Y), test, T)


def test_one_hot_simplex_and_binary_labels_are_accepted(problem):
    arch, feats, Y, _ = problem
    simplex = Y @ (np.eye(3) - 1 / 3) * np.sqrt(3 / 2)  # the vertices of a centred regular simplex
    assert as_labels(Y, 30).shape == (30, 3) and as_labels(simplex, 30).shape == (30, 3)
    assert as_labels(np.where(Y[:, 0] > 0, 1, -1), 30).shape == (30, 1)  # integers +-1: binary labels
    assert as_labels(np.linspace(-1, 1, 30), 30).shape == (30, 1)  # real-valued targets
    for labels in (Y, simplex):
        assert slv.Theory(arch, feats, labels).n_outputs == 3


def test_bench_baseline_reaches_the_solver_minimum(problem):
    """The bench's first-order baseline (Adam on free symmetric matrices) with C = 3 outputs finds the solver's U."""
    from paththeory.experiments import bench

    arch, feats, Y, _ = problem
    theory = slv.Theory(arch, feats, Y)
    Us, gmax, steps = bench.baseline_adam(theory, 8.0, T, 0.1, 20_000)
    assert gmax < 1e-5 and steps < 20_000
    np.testing.assert_allclose(Us[0], theory.solve(8.0, T).U, atol=1e-3)


# --------------------------------------------------------------------------- NUTS with C outputs


def _tiny_sampling_problem(p: int = 5, n_test: int = 3):
    """One layer, two random heads, 3 features, 2 tokens (tests/sampling/test_sampling.py's tiny problem)."""
    from tests.sampling.test_sampling import _tiny_problem

    return _tiny_problem(p=p, n_test=n_test)


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
def test_sampler_one_output_spellings_agree():
    """Labels [P] and [P, 1] give the same draws (same seed): C = 1 is the single-output sampler."""
    from paththeory import sampling

    arch, feats, y, test = _tiny_sampling_problem()
    kw = dict(method="nuts", features_test=test, num_warmup=30, num_samples=30, num_chains=1, seed=2, progress_bar=False)
    one = sampling.sample_posterior(arch, feats, y, 2, 0.5, **kw)
    col = sampling.sample_posterior(arch, feats, y[:, None], 2, 0.5, **kw)
    assert one.mean.shape == (3,) and one.var.shape == (3,) and col.mean.shape == (3, 1) and col.var.shape == (3, 1, 1)
    np.testing.assert_allclose(col.U, one.U, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(col.f_draws[..., 0], one.f_draws, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(col.var[:, 0, 0], one.var, rtol=1e-10)


def test_multi_output_marginal_likelihood_is_the_vec_gaussian():
    """log N(vec Y; 0, I_C (x) (T I + Phi Phi^T)) by scipy, both Cholesky branches."""
    from scipy.stats import multivariate_normal

    from paththeory import sampling

    rng = np.random.default_rng(4)
    p, temp, c = 6, 0.3, 3
    for n in (3, 9):
        phi, Y = rng.normal(size=(p, n)), rng.normal(size=(p, c))
        cov = np.kron(np.eye(c), temp * np.eye(p) + phi @ phi.T)
        expected = multivariate_normal(np.zeros(p * c), cov).logpdf(stacked(Y))
        np.testing.assert_allclose(float(sampling.marginal_log_likelihood(phi, Y, temp)), expected, rtol=1e-12)


def test_multi_output_readout_draws_have_the_conditional_moments():
    """Matheron draws [n_L, C]: each column N(M^-1 Phi^T y_c, T M^-1), columns independent (5-sigma MC bounds)."""
    from paththeory import sampling

    rng = np.random.default_rng(6)
    p, n, c, temp, draws = 6, 3, 2, 0.3, 40000
    phi, Y = rng.normal(size=(p, n)), rng.normal(size=(p, c))
    b = np.asarray(jax.vmap(lambda k: sampling.draw_readout(phi, Y, temp, k))(
        jax.random.split(jax.random.PRNGKey(3), draws)))  # [draws, n, C]
    m = temp * np.eye(n) + phi.T @ phi
    mean, cov = np.linalg.solve(m, phi.T @ Y), temp * np.linalg.inv(m)
    sd = np.sqrt(np.diag(cov))
    assert np.all(np.abs(b.mean(0) - mean) < 5 * sd[:, None] / np.sqrt(draws))
    full = np.cov(b.reshape(draws, -1).T)  # [(n C), (n C)], output index fastest
    expected = np.kron(cov, np.eye(c))
    scale = np.sqrt(np.outer(np.repeat(sd, c), np.repeat(sd, c)))
    assert np.all(np.abs(full - expected) < 5 * scale * np.sqrt(2.0 / draws))


def test_output_effective_weights_reproduce_every_output_of_the_network():
    """Result 2's estimator uses w^{c pi}: sum_pi w^{c pi} . V0 xi^pi / (sigma_0 sqrt n_0) is network output c."""
    from paththeory import sampling

    arch = random_qk_arch((2, 2), n0=6, readout="mean", seed=1, variances=(0.7, 1.1, 0.9, 1.3))
    x = np.random.default_rng(0).normal(size=(4, 3, 6))
    params = pt.sample_prior(arch, (5, 4, 3), 6, jax.random.PRNGKey(1))
    b = np.random.default_rng(2).normal(size=(3, 2))  # n_L = 3, C = 2
    w = np.asarray(sampling.output_effective_weights(arch, params, jnp.asarray(b))).reshape(2, arch.n_paths, 5)
    z = np.einsum("in,bpn->bpi", np.asarray(params["V0"]), np.asarray(pt.path_features(arch, x)))
    for c in range(2):
        f_paths = np.einsum("pi,bpi->b", w[c], z) / np.sqrt(0.7 * 5)
        direct = pt.network_output(arch, {**params, "a": np.sqrt(1.3) * b[:, c]}, x)
        np.testing.assert_allclose(f_paths, direct, rtol=1e-10, atol=1e-12)


def test_result_two_estimator_is_exact_at_the_prior():
    """Without data, <w^{c pi} . w^{d sigma}> / n_0 = sigma_a^2 prod sigma_l^2 delta_cd delta_pi_sigma at any
    finite width (an exact case of Result 2): 4000 prior draws, 5-sigma Monte-Carlo bound."""
    from paththeory import sampling

    arch = random_qk_arch((2, 2), n0=6, seed=1, variances=(0.7, 1.1, 0.9, 1.3))
    widths, c, draws = (3, 4, 2), 2, 4000

    def overlap(key):
        k1, k2 = jax.random.split(key)
        params = pt.sample_prior(arch, widths, 6, k1)
        w = sampling.output_effective_weights(arch, params, jax.random.normal(k2, (widths[-1], c)))
        return w @ w.T / widths[0]

    u = np.asarray(jax.vmap(overlap)(jax.random.split(jax.random.PRNGKey(0), draws)))
    mean, se = u.mean(0), u.std(0) / np.sqrt(draws)
    expected = arch.gp_scale * np.eye(c * arch.n_paths)
    assert np.all(np.abs(mean - expected) < 5 * se + 1e-12)


def test_head_scores_sum_every_output_block():
    """Multi-output head scores against a loop over all pairs ((c, pi), (d, sigma)) through the head."""
    from paththeory.pruning import head_scores

    rng = np.random.default_rng(8)
    heads, c = (2, 3), 3
    U = random_pd(rng, c * 6) - 0.5  # signed entries, still positive definite
    U = U @ U.T
    paths = list(itertools.product(range(2), range(3)))
    for absolute in (True, False):
        expected = [np.zeros(h) for h in heads]
        for (a, pa), (b, pb) in itertools.product(itertools.product(range(c), range(6)), repeat=2):
            for l, h in enumerate(heads):
                for head in range(h):
                    if paths[pa][l] == head or paths[pb][l] == head:
                        entry = U[a * 6 + pa, b * 6 + pb]
                        expected[l][head] += abs(entry) if absolute else entry
        got = head_scores(U, heads, normalise=False, absolute=absolute)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12)
    with pytest.raises(ValueError, match="C n_paths square"):
        head_scores(np.eye(10), heads)


@pytest.mark.slow  # main suite only: .ci/lower-bounds runs the core tests, less these
def test_sampler_matches_the_multi_output_theory_at_small_size():
    """Three classes, P = 24, N = 30 (C |Pi| / N = 0.4), T = 0.1, 2 x 150 NUTS draws against the saddle point.

    The theory drops O(C |Pi| / N) corrections and the draws add Monte-Carlo noise: measured (seed 0)
    the relative error of U is 6 % with a noise of 6 %, of the mean 11 %, of the covariance 22 %, while
    the GP's U is 43 % away. The bounds: U within 15 % (and within 1/3 of the GP's distance), mean
    within 20 %, covariance within 35 %, and the output-output blocks of U (c != d) correlated with the
    theory's above 0.9."""
    from paththeory import sampling
    from paththeory.tasks import multiclass as mc

    kw = dict(n_features=12, seq_len=6)
    arch = mc.four_paths(**kw)
    train, test = mc.sample_task(24, seed=1, **kw), mc.sample_task(30, seed=2, **kw)
    ft, fe = np.asarray(pt.path_features(arch, train.x)), np.asarray(pt.path_features(arch, test.x))
    sol = slv.Theory(arch, ft, train.y).solve(30, 0.1)
    mean, cov = predictor(sol.U, ft, train.y, fe, 0.1)
    res = sampling.sample_posterior(arch, ft, train.y, 30, 0.1, method="nuts", features_test=fe, num_warmup=100,
                                    num_samples=150, num_chains=2, seed=0, progress_bar=False)
    assert res.diagnostics["r_hat_max"] < 1.1 and res.U.shape == (12, 12)
    assert res.mean.shape == (30, 3) and res.var.shape == (30, 3, 3)

    def err(a, b):
        return np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(b))

    assert err(res.U, sol.U) < min(0.15, err(arch.gp_scale * np.eye(12), sol.U) / 3)
    assert err(res.mean, mean) < 0.2 and err(res.var, cov) < 0.35
    off = ~np.kron(np.eye(3, dtype=bool), np.ones((4, 4), bool))
    assert np.corrcoef(res.U[off], sol.U[off])[0, 1] > 0.9


@pytest.mark.parametrize("labels,message", [
    (np.array([[1.0, np.nan]] * 5), "NaN|finite"),
    (np.zeros((5, 0)), "C = 0"),
    (np.array([0.0, 1.0, 2.0, 1.0, 0.0]), "class indices"),
    (np.eye(3)[[0, 1, 2, 0]], "rows of labels"),
])
def test_sampler_refuses_bad_labels(labels, message):
    from paththeory import sampling

    arch, feats, _, _ = _tiny_sampling_problem()
    with pytest.raises(ValueError, match=message):
        sampling.sample_posterior(arch, feats, labels, 2, 0.5, num_warmup=1, num_samples=1, progress_bar=False)


@pytest.mark.slow  # Monte Carlo, about a minute: main suite only
def test_gibbs_and_nuts_agree_with_two_outputs():
    """With C = 2 outputs the exact blocked Gibbs sampler and NUTS target the same posterior: every entry of ``U``,
    the test predictor and its second moment agree within 4.5 combined Monte Carlo standard errors (each run's from
    its chains' ESS; about 50 quantities, so noise alone gives a largest |z| near 3)."""
    from paththeory import sampling
    from paththeory.tasks import multiclass as mc

    kw = dict(n_features=6, seq_len=5)
    arch = mc.four_paths(**kw)
    train, test = mc.sample_task(16, n_classes=2, seed=1, **kw), mc.sample_task(4, n_classes=2, seed=2, **kw)
    ft, fe = np.asarray(pt.path_features(arch, train.x)), np.asarray(pt.path_features(arch, test.x))
    common = dict(features_test=fe, num_warmup=150, progress_bar=False)
    nuts = sampling.sample_posterior(arch, ft, train.y, 20, 0.2, method="nuts", num_samples=1000, num_chains=2, seed=0,
                                     **common)
    gibbs = sampling.sample_posterior(arch, ft, train.y, 20, 0.2, method="gibbs", num_samples=3000, num_chains=4,
                                      seed=1, **common)
    assert nuts.complete and gibbs.complete and gibbs.U.shape == (8, 8) and gibbs.mean.shape == (4, 2)
    z = sampler_agreement_z(nuts, gibbs)
    assert z.size == 36 + 2 * 8 and z.max() < 4.5, z


def test_streamed_hessian_updates_its_buffer_in_place():
    """The streamed Hessian adds into ``out`` in place, one row block at a time: XLA's own memory analysis of the
    compiled step holds no second ``D x D`` buffer (its temporaries stay below one), which is what keeps the C = 10
    restart within a laptop's memory. Measured: 7.0 MB of temporaries against 11.1 MB for one buffer; the former
    stream, which also wrote the lower triangle, held 29.9 MB."""
    rng = np.random.default_rng(4)
    P, n, n0, C = 20, 4, 2, 12
    size = n * C
    m = size * (size + 1) // 2  # 1176: a D x D float64 buffer of 11 MB, above the stream's other temporaries
    feats = jnp.asarray(rng.normal(size=(P, n, n0)))
    L = jnp.asarray(np.tril(rng.normal(size=(size, size))) + 3 * np.eye(size))
    K = dense_kernel(L @ L.T, feats)
    step = jax.jit(lambda out: energy_hessian_cholesky(feats, K, jnp.ones(P * C), 0.5, L, 1.0, 1.0, out, C, 1, 8))
    analysis = step.lower(jnp.zeros((m, m))).compile().memory_analysis()
    assert analysis.temp_size_in_bytes < m * m * 8, analysis.temp_size_in_bytes
