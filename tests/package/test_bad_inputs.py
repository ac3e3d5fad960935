"""No silent failures: every input the theory cannot mean raises a ValueError or TypeError naming the
argument, every output is finite or the call raises, and a solve that stops short warns."""

from __future__ import annotations

import functools
import warnings

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import paththeory as pt
from paththeory import kernels, predict, pruning, sampling, solve, training
from paththeory.experiments import stats
from paththeory.exercises import model_problem


@functools.lru_cache(maxsize=None)
def _problem():
    """The exercises' model problem: heads (3, 2), 4 inputs of 5 tokens with N0 = 6, mean readout."""
    arch, params, x = model_problem("mean")
    params = jax.tree.map(np.asarray, params)
    feats = np.asarray(pt.path_features(arch, x))
    y = np.array([1.0, -1.0, 1.0, -1.0])
    return arch, params, np.asarray(x), feats, y, solve.Theory(arch, feats, y)


def _asym(n: int = 6) -> np.ndarray:
    u = np.eye(n)
    u[0, 1] = 0.5
    return u


def _signed_negative() -> np.ndarray:
    return np.array([[1.0, -0.9], [-0.9, 1.0]])


# (id, call(arch, params, x, f, y, theory), exception, message pattern naming the argument)
CASES = [
    # model: tokens, masks, widths, architecture
    ("path_features huge tokens", lambda a, p, x, f, y, th: pt.path_features(a, x * 1e200), ValueError, "tokens x"),
    ("path_features NaN tokens", lambda a, p, x, f, y, th: pt.path_features(a, np.where(x > 1, np.nan, x)),
     ValueError, "tokens x"),
    ("path_features empty tokens", lambda a, p, x, f, y, th: pt.path_features(a, x[:0]), ValueError, "tokens x"),
    ("path_features 2-D tokens", lambda a, p, x, f, y, th: pt.path_features(a, x[0]), ValueError, "tokens x"),
    ("path_features wrong N0", lambda a, p, x, f, y, th: pt.path_features(a, x[..., :4]), ValueError, "tokens x"),
    ("path_attention empty tokens", lambda a, p, x, f, y, th: pt.path_attention(a, x[:, :0]), ValueError, "tokens x"),
    ("network_output huge tokens", lambda a, p, x, f, y, th: pt.network_output(a, p, x * 1e200), ValueError,
     "tokens x"),
    ("network_output huge weights", lambda a, p, x, f, y, th: pt.network_output(a, {**p, "V0": p["V0"] * 1e300, "a": p["a"] * 1e300}, x),
     ValueError, "params"),
    ("network_output mask empties a layer",
     lambda a, p, x, f, y, th: pt.network_output(a, p, x, head_mask=[np.zeros(3), np.ones(2)]), ValueError,
     r"head_mask\[0\]"),
    ("network_output mask wrong shape", lambda a, p, x, f, y, th: pt.network_output(a, p, x, head_mask=[np.ones(2)]),
     ValueError, "head_mask"),
    ("network_output NaN mask",
     lambda a, p, x, f, y, th: pt.network_output(a, p, x, head_mask=[np.array([1, np.nan, 1]), np.ones(2)]),
     ValueError, r"head_mask\[0\]"),
    ("network_output missing weights", lambda a, p, x, f, y, th: pt.network_output(a, {"V0": p["V0"]}, x),
     ValueError, "params"),
    ("sample_prior fractional width", lambda a, p, x, f, y, th: pt.sample_prior(a, 8.5, 6, jax.random.PRNGKey(0)),
     ValueError, "width"),
    ("sample_prior fractional layer width",
     lambda a, p, x, f, y, th: pt.sample_prior(a, (8, 8.5, 8), 6, jax.random.PRNGKey(0)), ValueError, r"widths\[1\]"),
    ("sample_prior zero width", lambda a, p, x, f, y, th: pt.sample_prior(a, 0, 6, jax.random.PRNGKey(0)),
     ValueError, "width"),
    ("sample_prior fractional input_dim", lambda a, p, x, f, y, th: pt.sample_prior(a, 8, 6.5, jax.random.PRNGKey(0)),
     ValueError, "input_dim"),
    ("Architecture without layers", lambda a, p, x, f, y, th: pt.Architecture(()), ValueError, "attention"),
    ("Architecture unknown readout", lambda a, p, x, f, y, th: pt.Architecture(a.attention, readout="max"),
     ValueError, "readout"),
    ("Architecture negative variance",
     lambda a, p, x, f, y, th: pt.Architecture(a.attention, variances=(1, 1, -1, 1)), ValueError, r"variances\[2\]"),
    ("QKAttention empty", lambda a, p, x, f, y, th: pt.QKAttention(np.zeros((2, 0, 5)), np.zeros((2, 0, 5))),
     ValueError, "QKAttention.query"),
    # kernels: the order parameter and the features
    ("kernel_matrix non-symmetric U", lambda a, p, x, f, y, th: kernels.kernel_matrix(_asym(), f), ValueError,
     "U must be symmetric"),
    ("kernel_matrix negative-definite U", lambda a, p, x, f, y, th: kernels.kernel_matrix(-np.eye(6), f), ValueError,
     "U must be positive semi-definite"),
    ("kernel_matrix wrong-size U", lambda a, p, x, f, y, th: kernels.kernel_matrix(np.eye(4), f), ValueError,
     r"U must be \[6, 6\]"),
    ("kernel_matrix NaN features", lambda a, p, x, f, y, th: kernels.kernel_matrix(np.eye(6), f * np.nan),
     ValueError, "features"),
    ("kernel_matrix huge features", lambda a, p, x, f, y, th: kernels.kernel_matrix(np.eye(6), f * 1e200),
     ValueError, "features"),
    ("kernel_diagonal infinite U", lambda a, p, x, f, y, th: kernels.kernel_diagonal(np.diag(np.full(6, np.inf)), f),
     ValueError, "U"),
    ("gp_kernel empty features", lambda a, p, x, f, y, th: kernels.gp_kernel(a, f[:0]), ValueError, "features"),
    ("path_kernels 2-D features", lambda a, p, x, f, y, th: kernels.path_kernels(f[0]), ValueError, "features"),
    ("kernel_operator infinite features", lambda a, p, x, f, y, th: kernels.kernel_operator(f * np.inf), ValueError,
     "features"),
    # predict
    ("predictor non-symmetric U", lambda a, p, x, f, y, th: predict.predictor(_asym(), f, y, f, 0.1), ValueError,
     "U must be symmetric"),
    ("predictor negative-definite U", lambda a, p, x, f, y, th: predict.predictor(-np.eye(6), f, y, f, 0.1),
     ValueError, "U must be positive semi-definite"),
    ("predictor indefinite U",
     lambda a, p, x, f, y, th: predict.predictor(np.diag([1.0, -1, 1, 1, 1, 1]), f, y, f, 0.1), ValueError,
     "U must be positive semi-definite"),
    ("predictor negative temperature", lambda a, p, x, f, y, th: predict.predictor(np.eye(6), f, y, f, -1.0),
     ValueError, "temperature"),
    ("predictor string temperature", lambda a, p, x, f, y, th: predict.predictor(np.eye(6), f, y, f, "warm"),
     TypeError, "temperature"),
    ("predictor labels mismatch", lambda a, p, x, f, y, th: predict.predictor(np.eye(6), f, y[:3], f, 0.1),
     ValueError, "y"),
    ("predictor empty test set", lambda a, p, x, f, y, th: predict.predictor(np.eye(6), f, y, f[:0], 0.1),
     ValueError, "features_test"),
    ("accuracy empty", lambda a, p, x, f, y, th: predict.accuracy(np.array([]), np.array([])), ValueError, "mean"),
    ("accuracy NaN prediction", lambda a, p, x, f, y, th: predict.accuracy(np.array([np.nan, 1.0]), np.ones(2)),
     ValueError, "mean"),
    ("accuracy NaN label", lambda a, p, x, f, y, th: predict.accuracy(np.ones(2), np.array([1.0, np.nan])),
     ValueError, "y"),
    ("accuracy shape mismatch", lambda a, p, x, f, y, th: predict.accuracy(np.ones(3), np.ones(2)), ValueError,
     "mean and y"),
    ("soft_accuracy NaN variance",
     lambda a, p, x, f, y, th: predict.soft_accuracy(np.ones(2), np.array([np.nan, 1.0]), np.ones(2)), ValueError,
     "variance"),
    ("pc_label_overlap k = 0", lambda a, p, x, f, y, th: predict.pc_label_overlap(np.eye(4), y, k=0), ValueError,
     "k must"),
    # the theory and its solver
    ("Theory on zero examples", lambda a, p, x, f, y, th: solve.Theory(a, f[:0], y[:0]), ValueError, "features"),
    ("Theory NaN labels", lambda a, p, x, f, y, th: solve.Theory(a, f, y * np.nan), ValueError, "y"),
    ("Theory not an architecture", lambda a, p, x, f, y, th: solve.Theory("arch", f, y), TypeError, "arch"),
    ("Theory unknown precision", lambda a, p, x, f, y, th: solve.Theory(a, f, y, precision="half"), ValueError,
     "precision"),
    ("Theory.solve negative tol", lambda a, p, x, f, y, th: th.solve(10, 0.1, tol=-1), ValueError, "tol"),
    ("Theory.solve NaN tol", lambda a, p, x, f, y, th: th.solve(10, 0.1, tol=np.nan), ValueError, "tol"),
    ("Theory.solve max_iter = 0", lambda a, p, x, f, y, th: th.solve(10, 0.1, max_iter=0), ValueError, "max_iter"),
    ("Theory.solve fractional max_iter", lambda a, p, x, f, y, th: th.solve(10, 0.1, max_iter=2.5), ValueError,
     "max_iter"),
    ("Theory.solve string max_iter", lambda a, p, x, f, y, th: th.solve(10, 0.1, max_iter="10"), TypeError,
     "max_iter"),
    ("Theory.solve negative rtol", lambda a, p, x, f, y, th: th.solve(10, 0.1, rtol=-1e-9), ValueError, "rtol"),
    ("Theory.solve zero width", lambda a, p, x, f, y, th: th.solve(0, 0.1), ValueError, "width"),
    ("Theory.solve negative temperature", lambda a, p, x, f, y, th: th.solve(10, -0.1), ValueError, "temperature"),
    ("Theory.solve non-symmetric init", lambda a, p, x, f, y, th: th.solve(10, 0.1, init=[_asym(), np.eye(2)]),
     ValueError, r"init U\^\(1\) must be symmetric"),
    ("solve zero tol", lambda a, p, x, f, y, th: solve.solve(a, f, y, 10, 0.1, tol=0.0), ValueError, "tol"),
    ("sweep empty widths", lambda a, p, x, f, y, th: solve.sweep(a, f, y, [], 0.1), ValueError, "widths"),
    ("sweep empty temperatures", lambda a, p, x, f, y, th: th.sweep([10], []), ValueError, "temperatures"),
    ("sweep non-numeric width", lambda a, p, x, f, y, th: th.sweep(object(), 0.1), TypeError, "width"),
    ("solve_many mismatched points", lambda a, p, x, f, y, th: th.solve_many([10, 20], [0.1]), ValueError, "widths"),
    ("solve_many non-iterable widths", lambda a, p, x, f, y, th: th.solve_many(10, [0.1]), TypeError, "widths"),
    ("Theory.action non-symmetric U", lambda a, p, x, f, y, th: th.action([_asym(), np.eye(2)], 10, 0.1), ValueError,
     r"Us U\^\(1\)"),
    ("Theory.action negative-definite inner", lambda a, p, x, f, y, th: th.action([np.eye(6), -np.eye(2)], 10, 0.1),
     ValueError, r"Us U\^\(2\) must be positive definite"),
    ("Theory.action one matrix for two layers", lambda a, p, x, f, y, th: th.action([np.eye(6)], 10, 0.1),
     ValueError, "Us must hold"),
    # pruning
    ("head_scores zero U", lambda a, p, x, f, y, th: pruning.head_scores(np.zeros((6, 6)), (3, 2)), ValueError,
     "normalise"),
    ("head_scores negative-definite U", lambda a, p, x, f, y, th: pruning.head_scores(-np.eye(6), (3, 2)),
     ValueError, "U must be positive semi-definite"),
    ("head_scores non-symmetric U", lambda a, p, x, f, y, th: pruning.head_scores(_asym(), (3, 2)), ValueError,
     "U must be symmetric"),
    ("head_scores wrong-size U", lambda a, p, x, f, y, th: pruning.head_scores(np.eye(4), (3, 2)), ValueError,
     r"U must be \[6, 6\]"),
    ("head_scores no heads", lambda a, p, x, f, y, th: pruning.head_scores(np.eye(1), ()), ValueError, "heads"),
    ("head_scores signed, nothing to normalise by",
     lambda a, p, x, f, y, th: pruning.head_scores(_signed_negative(), (2,), absolute=False), ValueError,
     "normalise"),
    ("head_mask fractional heads", lambda a, p, x, f, y, th: pruning.head_mask((2.5, 2), []), ValueError,
     r"heads\[0\]"),
    ("head_mask missing head", lambda a, p, x, f, y, th: pruning.head_mask((3, 2), [(1, 5)]), ValueError, "head"),
    ("path_weights empties a layer", lambda a, p, x, f, y, th: pruning.path_weights((3, 2), [(1, 0), (1, 1)]),
     ValueError, "removes every head"),
    ("pruned_accuracies NaN contributions",
     lambda a, p, x, f, y, th: pruning.pruned_accuracies(np.full((4, 6), np.nan), y, (3, 2), [[]]), ValueError,
     "contributions"),
    ("random_orders negative count", lambda a, p, x, f, y, th: pruning.random_orders((3, 2), -1), ValueError, "n must"),
    ("path_contributions NaN features", lambda a, p, x, f, y, th: pt.path_contributions(a, p, f * np.nan),
     ValueError, "path_contributions"),
    ("effective_weights NaN readout", lambda a, p, x, f, y, th: pt.effective_weights(a, {**p, "a": p["a"] * np.nan}),
     ValueError, "params"),
    ("soft_accuracy negative variance",
     lambda a, p, x, f, y, th: predict.soft_accuracy(np.ones(4), -np.ones(4), y), ValueError, "variance"),
    # statistics: a NaN never turns into a p-value or a verdict
    ("spearman_test NaN", lambda a, p, x, f, y, th: stats.spearman_test([1, 2, np.nan], [1, 2, 3]), ValueError,
     r"^x contains"),
    ("mantel_test NaN", lambda a, p, x, f, y, th: stats.mantel_test(np.eye(3), np.full((3, 3), np.nan)),
     ValueError, r"^B contains"),
    ("paired_difference NaN", lambda a, p, x, f, y, th: stats.paired_difference([np.nan, 1], [1, 1]), ValueError,
     r"^a contains"),
    ("standard_error accuracy above one", lambda a, p, x, f, y, th: stats.standard_error(1.5, 10), ValueError,
     r"^p must"),
    ("standard_error NaN accuracy", lambda a, p, x, f, y, th: stats.standard_error(np.nan, 10), ValueError, r"^p must"),
    ("batch_means_se NaN draws", lambda a, p, x, f, y, th: stats.batch_means_se(np.array([[np.nan, 1, 2, 3.0]])),
     ValueError, "draws"),
    # sampling and trained networks
    ("marginal_log_likelihood zero temperature",
     lambda a, p, x, f, y, th: sampling.marginal_log_likelihood(np.ones((4, 2)), y, 0.0), ValueError, "temperature"),
    ("draw_readout negative temperature",
     lambda a, p, x, f, y, th: sampling.draw_readout(np.ones((4, 2)), y, -1.0, jax.random.PRNGKey(0)), ValueError,
     "temperature"),
    ("readout_design wrong N0", lambda a, p, x, f, y, th: sampling.readout_design(a, p, f[:, :, :5]), ValueError,
     "features must be"),
    ("evaluate without queries and keys", lambda a, p, x, f, y, th: training.evaluate(p, x, y), ValueError,
     r"params lacks \['Q', 'K'\]"),
    ("evaluate empty set", lambda a, p, x, f, y, th: training.evaluate(_trained(), x[:0], y[:0]), ValueError,
     r"x must be \[P >= 1"),
    ("evaluate NaN tokens", lambda a, p, x, f, y, th: training.evaluate(_trained(), x * np.nan, y), ValueError,
     "x contains NaN"),
    ("evaluate NaN weights", lambda a, p, x, f, y, th: training.evaluate({**_trained(), "a": _trained()["a"] * np.nan}, x, y),
     ValueError, "weights are not finite"),
    ("load_checkpoint empty name", lambda a, p, x, f, y, th: training.load_checkpoint(""), ValueError,
     "checkpoint name is empty"),
    ("Theory.solve string width", lambda a, p, x, f, y, th: th.solve("10", 0.1), TypeError, "width"),
    ("kernel_matrix complex U", lambda a, p, x, f, y, th: kernels.kernel_matrix(np.eye(6) * (1 + 1j), f), TypeError,
     "U must hold real numbers"),
    ("path_features string tokens", lambda a, p, x, f, y, th: pt.path_features(a, x.astype(str)), TypeError,
     "tokens x must hold real numbers"),
    ("TrainConfig negative time limit", lambda a, p, x, f, y, th: training.TrainConfig(time_limit_minutes=-1),
     ValueError, "time_limit_minutes"),
]


@functools.lru_cache(maxsize=None)
def _trained() -> dict:
    """Training params (queries and keys included) of a tiny network for the model problem's tokens (N0 = 6)."""
    config = training.TrainConfig(d_model=4, qk_dim=2, heads=2, layers=1, channels=1)
    return training.init_params(config, 6)


@pytest.mark.parametrize("call, error, message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_a_message_naming_it(call, error, message):
    with pytest.raises(error, match=message):
        call(*_problem())


def test_unconverged_solve_warns_with_width_temperature_gradient_and_reason():
    arch, _, _, feats, y, _ = _problem()
    with pytest.warns(solve.ConvergenceWarning, match=r"widths \(10.0, 10.0, 10.0\), temperature T = 0.1") as record:
        sol = solve.solve(arch, feats, y, 10, 0.1, max_iter=2)
    assert not sol.report["converged"]
    assert "maximum iterations reached" in str(record[0].message)
    assert f"{sol.report['grad_norm']:.3g}" in str(record[0].message)


def test_converged_solve_is_silent_and_its_U_read_only():
    arch, _, _, feats, y, theory = _problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", solve.ConvergenceWarning)
        sol = theory.solve(10, 0.1)
    assert sol.report["converged"]
    with pytest.raises(ValueError, match="read-only"):
        sol.U[0, 0] = 0.0


def test_relative_tolerance_stops_where_the_absolute_one_would_not():
    """``rtol`` stops at ``rtol |S/N|`` (here |S/N| ~ 12), where an unreachable absolute ``tol`` runs out of iterations."""
    theory = _problem()[-1]
    with pytest.warns(solve.ConvergenceWarning):
        absolute = theory.solve(1, 1e-3, tol=1e-300, max_iter=40)
    relative = theory.solve(1, 1e-3, tol=1e-300, rtol=1e-6, max_iter=40)
    assert relative.report["converged"] and not absolute.report["converged"]
    assert 1e-6 < relative.report["grad_norm"] <= 1e-6 * abs(relative.report["action"])


def test_semi_definite_order_parameters_have_defined_results():
    """One path alone (a singular U) is a valid kernel; ``U = 0`` has all-zero raw head scores."""
    _, _, _, feats, y, _ = _problem()
    mean, var = predict.predictor(np.diag(np.eye(6)[0]), feats, y, feats, 0.1)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(var))
    assert [s.tolist() for s in pruning.head_scores(np.zeros((6, 6)), (3, 2), normalise=False)] == [[0.0] * 3, [0.0] * 2]


def test_sweep_result_has_one_list_level_per_list_argument():
    arch, _, _, feats, y, theory = _problem()
    assert isinstance(theory.sweep(10, 0.1), solve.Solution)
    assert [s.temperature for s in theory.sweep(10, [0.1, 1.0])] == [0.1, 1.0]
    assert [s.widths[0] for s in theory.sweep([10, 20], 0.1)] == [10.0, 20.0]
    grid = theory.sweep([10, 20], [0.1, 1.0])
    assert [[(s.widths[0], s.temperature) for s in row] for row in grid] == [
        [(10.0, 0.1), (20.0, 0.1)], [(10.0, 1.0), (20.0, 1.0)]]


# --------------------------------------------------------------------------- property: finite or raise

_VALUES = st.one_of(
    st.floats(-3.0, 3.0), st.sampled_from([np.nan, np.inf, -np.inf, 1e200, -1e200, 0.0])
)


def _finite_or_raises(call) -> None:
    try:
        out = call()
    except (ValueError, TypeError):
        return
    for part in out if isinstance(out, (tuple, list)) else [out]:
        assert np.all(np.isfinite(np.asarray(part))), out


@settings(max_examples=50, deadline=None)
@given(
    u=hnp.arrays(np.float64, st.sampled_from([(2, 2), (2, 3), (0, 0)]), elements=_VALUES),
    symmetric=st.booleans(),
    feats=hnp.arrays(np.float64, st.tuples(st.integers(0, 3), st.just(2), st.integers(0, 2)), elements=_VALUES),
    labels=hnp.arrays(np.float64, st.integers(0, 3), elements=_VALUES),
)
def test_order_parameter_functions_are_finite_or_raise(u, symmetric, feats, labels):
    if symmetric and u.shape[0] == u.shape[1]:
        u = u + u.T
    _finite_or_raises(lambda: kernels.kernel_matrix(u, feats))
    _finite_or_raises(lambda: kernels.kernel_diagonal(u, feats))
    _finite_or_raises(lambda: predict.predictor(u, feats, labels, feats, 0.5))
    _finite_or_raises(lambda: pruning.head_scores(u, (2,)))
    _finite_or_raises(lambda: predict.accuracy(labels, labels))


@settings(max_examples=50, deadline=None)
@given(tokens=hnp.arrays(np.float64, st.tuples(st.integers(0, 2), st.just(5), st.sampled_from([0, 6])),
                         elements=_VALUES))
def test_network_functions_are_finite_or_raise(tokens):
    arch, params, *_ = _problem()
    _finite_or_raises(lambda: pt.path_features(arch, tokens))
    _finite_or_raises(lambda: pt.network_output(arch, params, tokens))
