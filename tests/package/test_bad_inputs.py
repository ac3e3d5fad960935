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
from paththeory import action, hessian, kernels, predict, pruning, sampling, solve, training
from paththeory.display import plots, widgets
from paththeory.exercises import model_problem
from paththeory.experiments import stats
from paththeory.sampling import diagnostics
from paththeory.tasks import markov, multiclass, omniglot, toy


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


# --------------------------------------------------------------------------- one test per class of bad input
# Each message must say what was wrong (the argument and the value received) and how to fix it.

_W3, _V4 = (10.0, 10.0, 10.0), (1.0, 1.0, 1.0, 1.0)


def _us():
    return [np.eye(6), np.eye(2)]


def _kernel():
    return np.asarray(kernels.kernel_matrix(np.eye(6), _problem()[3]))


def _complex(a):
    """A JAX array of complex numbers (numpy's were refused already; JAX's lost their imaginary part)."""
    return jax.numpy.asarray(a).astype(complex) + 1j


def _figure_axes():
    import matplotlib.pyplot as plt

    return plt.figure().subplots()


def _rejects(call, error, message):
    try:
        with pytest.raises(error, match=message) as err:
            call()
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    assert "\n" not in str(err.value)


TYPES = [
    ("complex JAX tokens", lambda a, p, x, f, y: pt.path_features(a, _complex(x)), TypeError,
     "tokens x must hold real numbers; got an array of complex numbers"),
    ("complex JAX order parameter", lambda a, p, x, f, y: kernels.kernel_matrix(_complex(np.eye(6)), f), TypeError,
     "U must hold real numbers; got an array of complex numbers"),
    ("complex JAX labels", lambda a, p, x, f, y: solve.Theory(a, f, _complex(y)), TypeError,
     "y must hold real numbers; got an array of complex numbers"),
    ("arch a string", lambda a, p, x, f, y: pt.path_features("arch", x), TypeError,
     r"arch must be a paththeory.Architecture \(e.g. pt.Architecture\(\[pt.ScoreAttention\(w\)\]\)\); got str"),
    ("arch None in gp_kernel", lambda a, p, x, f, y: kernels.gp_kernel(None, f), TypeError,
     "arch must be a paththeory.Architecture .*got NoneType"),
    ("n_outputs a string", lambda a, p, x, f, y: kernels.kernel_matrix(np.eye(6), f, n_outputs="2"), TypeError,
     "n_outputs must be a whole number; got str '2'"),
    ("energy temperature a string", lambda a, p, x, f, y: action.energy(_kernel(), y, "hot"), TypeError,
     "temperature must be a real number; got str 'hot'"),
    ("entropy widths a string", lambda a, p, x, f, y: pt.entropy(_us(), "wide", (3, 2), _V4), TypeError,
     r"widths must be a sequence of 3 numbers \(n_0..n_L\) for heads \(3, 2\); got str 'wide'"),
    ("rng a string", lambda a, p, x, f, y: markov.hidden_chains(3, 0.3, 5, "seed"), TypeError,
     r"rng must be a numpy.random.Generator or a seed, a whole number >= 0, e.g. np.random.default_rng\(0\)"),
    ("normalisation std a string", lambda a, p, x, f, y: omniglot.encode_images(np.zeros((1, 28, 28), np.uint8),
                                                                               (0.5, "0.1")), TypeError,
     "normalisation must hold real numbers; got an array of strings"),
    ("init_params config a dict", lambda a, p, x, f, y: training.init_params({"heads": 2}, 6), TypeError,
     "config must be a paththeory.training.TrainConfig; got dict"),
    ("evaluate params None", lambda a, p, x, f, y: training.evaluate(None, x, y), TypeError,
     r"checkpoint_or_params must be a Checkpoint or a params dict of paththeory.training \(init_params, train\)"),
    ("load_checkpoint a number", lambda a, p, x, f, y: training.load_checkpoint(3), TypeError,
     "path must be a checkpoint name such as 'omniglot_l2h4' or a path to a .npz; got int 3"),
    ("complex draws", lambda a, p, x, f, y: diagnostics.rank_rhat_ess(np.ones((2, 8)) + 1j), TypeError,
     "draws must hold real numbers; got an array of complex numbers"),
    ("heat map of strings", lambda a, p, x, f, y: plots.matrix_heatmap(_figure_axes(), [["a", "b"], ["c", "d"]],
                                                                       None, "U"), TypeError,
     "M must hold real numbers; got an array of strings"),
    ("panel count a string", lambda a, p, x, f, y: plots.panel_grid("3"), TypeError,
     "n must be a whole number; got str '3'. panel_grid needs at least one panel"),
    ("point labels a string", lambda a, p, x, f, y: plots.label_points(_figure_axes(), [0, 1], [0, 1], "ab"),
     TypeError, "labels must be a list of one text per point, not the string 'ab'"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in TYPES], ids=[c[0] for c in TYPES])
def test_values_of_the_wrong_type_are_named(call, error, message):
    _rejects(lambda: call(*_problem()[:5]), error, message)


SHAPES = [
    ("labels shorter than K", lambda: action.energy(_kernel(), _problem()[4][:3], 0.1), ValueError,
     r"K must be a square \[P, P\] kernel and y its \[P\] targets; got shapes \(4, 4\) and \(3,\)"),
    ("one order parameter for two layers", lambda: pt.entropy([np.eye(6)], _W3, (3, 2), _V4), ValueError,
     r"Us must be a list of L = 2 matrices \[U\^\(1\), ..., U\^\(L\)\], one per layer of heads \(3, 2\); got 1"),
    ("two widths for two layers", lambda: action.readout_order_parameter(2.5, (10.0, 10.0), (2, 3), _V4), ValueError,
     r"widths must hold 3 numbers \(n_0..n_L\) for heads \(2, 3\); got 2"),
    ("three variances for two layers", lambda: pt.gp_order_parameters((3, 2), (1.0, 1.0, 1.0)), ValueError,
     r"variances must hold 4 numbers \(sigma_0\^2, sigma_1\^2..sigma_L\^2, sigma_a\^2\); got 3"),
    ("partial trace of a size the heads do not divide", lambda: action.partial_trace(np.eye(5), 2), ValueError,
     r"U must be a square matrix whose size is a multiple of n_outputs \* n_heads = 2; got shape \(5, 5\)"),
    ("U_a of two outputs for one", lambda: action.entropy_with_readout(_us(), np.eye(2), _W3, (3, 2), _V4),
     ValueError, r"U_a must be a number for one output, or \[C, C\] for C outputs \(here C = 1\); got shape \(2, 2\)"),
    ("2-D energies", lambda: diagnostics.e_bfmi(np.ones((2, 5))), ValueError,
     r"energy must be one chain's energies \[draws\]; got shape \(2, 5\)"),
    ("classes of other sequences", lambda: multiclass.correct(np.eye(3), np.array([0, 1])), ValueError,
     r"mean \[P, C\] and classes \[P\] must hold the same P sequences; got \(3, 3\) and \(2,\)"),
    ("1-D states", lambda: multiclass.transition_counts(np.array([0, 1, 2])), ValueError,
     r"states must have 2 dimensions; got shape \(3,\)"),
    ("x and y of different lengths", lambda: plots.label_points(_figure_axes(), [0, 1], [0], ["a", "b"]), ValueError,
     "x and y must give one coordinate per point; got 2 x and 1 y"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in SHAPES], ids=[c[0] for c in SHAPES])
def test_arrays_of_the_wrong_shape_are_named(call, error, message):
    _rejects(call, error, message)


SIGNS = [
    ("negative widths of the readout", lambda: action.readout_order_parameter(2.5, (-10.0, -10.0, -30.0), (2, 3), _V4),
     ValueError, r"widths\[0\] must be a finite positive number; got -10.0"),
    ("negative trace of the readout", lambda: action.readout_order_parameter(-2.5, _W3, (2, 3), _V4), ValueError,
     r"traced_last \(Tr U\^\(L\)\) must be a finite number >= 0; got -2.5"),
    ("indefinite kernel", lambda: action.energy(np.diag([1.0, -1.0, 1.0, 1.0]), _problem()[4], 0.1), ValueError,
     (r"the energy needs K \+ T I positive definite, but its smallest eigenvalue is -0.9 \(T = 0.1\). Pass a kernel "
      r"K_U of a positive semi-definite U")),
    ("indefinite kernel of the energy's derivatives",
     lambda: hessian.energy_derivatives(_problem()[3], -_kernel(), _problem()[4], 0.1), ValueError,
     r"energy_derivatives needs K \+ T I positive definite, but its smallest eigenvalue is"),
    ("negative-definite order parameter", lambda: pt.entropy([-np.eye(6), np.eye(2)], _W3, (3, 2), _V4), ValueError,
     r"Us U\^\(1\) must be positive definite; its smallest eigenvalue is -1"),
    ("non-symmetric kernel", lambda: action.energy(np.triu(np.ones((4, 4))) + 3 * np.eye(4), _problem()[4], 0.1),
     ValueError, r"K must be symmetric; max \|M - M\^T\| = 1. Symmetrise it"),
    ("negative variance", lambda: action.level_scale(0, (1.0, 1.0, 1.0, -2.0)), ValueError,
     r"variances\[3\] must be a finite positive number; got -2.0"),
    ("negative one-path U", lambda: action.single_path_entropy_minimum(-1.0, 2), ValueError,
     r"U must be > 0 \(a one-path order parameter\); its smallest entry is -1"),
    ("negative seed", lambda: training.TrainConfig(seed=-1), ValueError, "seed must be >= 0; got -1"),
    ("fractions above one", lambda: training.TrainConfig(test=1.5), ValueError,
     "validation and test must be fractions of the characters, >= 0 with validation \\+ test < 1.*got 0.1 and 1.5"),
    ("negative learning rate", lambda: training.TrainConfig(lr=-1.0), ValueError, "lr must be > 0; got -1.0"),
    ("negative panel height", lambda: plots.panel_grid(2, -1.0), ValueError,
     "height must be a finite positive number; got -1.0"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in SIGNS], ids=[c[0] for c in SIGNS])
def test_negative_and_zero_values_are_named(call, error, message):
    _rejects(call, error, message)


BOOLS = [
    ("width", lambda: action.readout_order_parameter(2.5, (True, 10.0, 30.0), (2, 3), _V4), TypeError,
     r"widths\[0\] must be a number, not a bool; got True"),
    ("head count", lambda: pt.gp_order_parameters((True, 2), _V4), TypeError,
     r"heads\[0\] must be a whole number; got bool True"),
    ("output count", lambda: kernels.kernel_matrix(np.eye(6), _problem()[3], n_outputs=True), TypeError,
     "n_outputs must be a whole number; got bool True"),
    ("temperature", lambda: action.energy(_kernel(), _problem()[4], True), TypeError,
     "temperature must be a number, not a bool; got True"),
    ("depth", lambda: action.single_path_entropy_minimum(1.0, True), TypeError,
     "depth must be a whole number; got bool True"),
    ("batch size", lambda: training.evaluate(_trained(), _problem()[2], _problem()[4], batch_size=True), TypeError,
     "batch_size must be a whole number; got bool True"),
    ("principal components", lambda: widgets.panel_data(_problem()[-1], _problem()[3], _problem()[4],
                                                        _problem()[-1].solve(10, 0.1), n_pcs=True), TypeError,
     "n_pcs must be a whole number; got bool True"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in BOOLS], ids=[c[0] for c in BOOLS])
def test_bools_are_refused_as_counts_and_widths(call, error, message):
    _rejects(call, error, message)


NON_FINITE = [
    ("NaN trace", lambda: action.readout_order_parameter(np.nan, _W3, (2, 3), _V4), ValueError,
     "traced_last contains 1 NaN or infinite entries; clean the input"),
    ("infinite width", lambda: action.readout_order_parameter(2.5, (10.0, np.inf, 10.0), (2, 3), _V4), ValueError,
     r"widths\[1\] must be a finite positive number; got inf"),
    ("NaN kernel", lambda: action.energy(_kernel() * np.nan, _problem()[4], 0.1), ValueError,
     "K contains 16 NaN or infinite entries; clean the input"),
    ("NaN temperature", lambda: action.energy(_kernel(), _problem()[4], np.nan), ValueError,
     "temperature must be a finite number >= 0; got nan"),
    ("NaN order parameter", lambda: action.inner_order_parameter_l2(np.full((4, 4), np.nan), (2, 2), _W3, _V4),
     ValueError, "U contains 16 NaN or infinite entries; clean the input"),
    ("NaN heat map", lambda: plots.matrix_heatmap(_figure_axes(), np.full((2, 2), np.nan), None, "U"), ValueError,
     "M contains 4 NaN or infinite entries; clean the input"),
    ("NaN outputs of classes", lambda: multiclass.correct(np.full((2, 3), np.nan), np.array([0, 1])), ValueError,
     "mean contains 6 NaN or infinite entries; clean the input"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in NON_FINITE], ids=[c[0] for c in NON_FINITE])
def test_nan_and_inf_never_come_back_as_a_result(call, error, message):
    _rejects(call, error, message)


EMPTY = [
    ("evaluation batch of 0", lambda: training.evaluate(_trained(), _problem()[2], _problem()[4], batch_size=0),
     ValueError, "batch_size must be a whole number >= 1; got 0"),
    ("no chains", lambda: diagnostics.rank_rhat_ess(np.ones((0, 10))), ValueError,
     r"draws is empty \(shape \(0, 10\)\); pass at least one entry"),
    ("empty heat map", lambda: plots.matrix_heatmap(_figure_axes(), np.zeros((0, 0)), None, "U"), ValueError,
     r"M is empty \(shape \(0, 0\)\); pass at least one entry"),
    ("network without layers", lambda: pt.gp_order_parameters((), (1.0, 1.0)), ValueError,
     r"heads must be a non-empty sequence of head counts per layer, e.g. \(3, 3\); got \(\)"),
    ("empty kernel", lambda: action.energy(np.zeros((0, 0)), np.zeros(0), 0.1), ValueError,
     r"K is empty \(shape \(0, 0\)\); pass at least one entry"),
    ("no sequences", lambda: omniglot.assemble_tokens(np.zeros((3, 16, 64)), np.zeros((0, 3), int),
                                                      np.zeros((0, 3), int)), ValueError,
     r"images and image_labels hold no sequences \(P = 0\); pass at least one \[context, context, query\] row"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in EMPTY], ids=[c[0] for c in EMPTY])
def test_empty_inputs_and_zero_counts_are_named(call, error, message):
    _rejects(call, error, message)


HUGE = [
    ("sequences", lambda: toy.sample_task(10**12), "n_examples = 1000000000000 sequences of 8 tokens"),
    ("Markov sequences", lambda: markov.sample_task(10**12), "n_examples = 1000000000000 sequences of 30 tokens"),
    ("chains", lambda: multiclass.hidden_chains(10**12, (0.5, 0.3, 0.2), 30, 0), "n = 1000000000000 chains"),
    ("pruning orders", lambda: pruning.random_orders((3, 2), 10**12), "n = 1000000000000 orders of 5 heads"),
    ("network widths (the process used to abort)", lambda: pt.sample_prior(_problem()[0], 10**7, 6,
                                                                            jax.random.PRNGKey(0)),
     r"the weights of widths \(10000000, 10000000, 10000000\) and input_dim = 6"),
    ("trained network", lambda: training.init_params(training.TrainConfig(d_model=10**6, qk_dim=2), 6),
     "the weights of d_model = 1000000"),
    ("positional encoding", lambda: omniglot.positional_encoding(10**7, 10**6),
     "the encoding of n_positions = 10000000 in dim = 1000000"),
]


@pytest.mark.parametrize("call, message", [c[1:] for c in HUGE], ids=[c[0] for c in HUGE])
def test_absurd_sizes_are_refused_before_allocating(call, message):
    _rejects(call, ValueError, message + r".* would need [\d,]+ GiB of memory, more than this machine's [\d,]+ GiB; "
                                         "ask for less")


@pytest.mark.parametrize("call, message", [
    (lambda: pt.Architecture(_problem()[0].attention, variances=(1e300,) * 4),
     r"variances \(1e\+300, .*\) multiply to GP order parameters .* outside float64's range \(inf\); rescale them"),
    (lambda: pt.Architecture(_problem()[0].attention, variances=(1e-300,) * 4),
     r"outside float64's range \(0\); rescale them"),
    (lambda: pt.gp_order_parameters((3, 2), (1e300,) * 4), r"= inf at l = 0, outside float64's range; rescale them"),
    (lambda: action.energy(_kernel(), _problem()[4] * 1e200, 0.1),
     r"the energy came out non-finite: K \+ T I \(smallest eigenvalue .*\) or y are too large for float64"),
], ids=["variances 1e300", "variances 1e-300", "GP point of variances 1e300", "labels 1e200"])
def test_huge_values_that_overflow_are_named(call, message):
    _rejects(call, ValueError, message)


def test_check_count_takes_a_huge_whole_number():
    """A Python int beyond float64 (10**300) used to fail inside numpy's isfinite."""
    assert action.single_path_entropy_minimum(2.0, 10**300) > 0


DUPLICATES = [
    ("an order repeating a head", lambda c, y: pruning.pruning_curves(c, y, (3, 2), [[(0, 0), (0, 0), (0, 1)]]),
     r"orders\[0\] prunes the heads \[\(0, 0\)\] more than once; an order lists each head at most once"),
    ("the second order repeating a head",
     lambda c, y: pruning.pruning_curves(c, y, (3, 2), [[(0, 0), (1, 1)], [(0, 1), (0, 1)]]),
     r"orders\[1\] prunes the heads \[\(0, 1\)\] more than once"),
    ("repeated explorer widths", lambda c, y: widgets.static_explorer(_problem()[-1], _problem()[3], y, [10, 10],
                                                                      [0.1]),
     r"widths repeat \[10.0\]; each point of the explorer's grid is one panel, so list every value once"),
    ("repeated explorer temperatures", lambda c, y: widgets.static_explorer(_problem()[-1], _problem()[3], y, [10],
                                                                            [0.1, 0.1]),
     r"temperatures repeat \[0.1\]; .* list every value once"),
]


@pytest.mark.parametrize("call, message", [c[1:] for c in DUPLICATES], ids=[c[0] for c in DUPLICATES])
def test_duplicates_where_distinct_values_are_needed_are_named(call, message):
    arch, params, _, f, y, _ = _problem()
    _rejects(lambda: call(np.asarray(pt.path_contributions(arch, params, f)), y), ValueError, message)


WRONG_NETWORK = [
    ("order parameters of other heads", lambda: pt.entropy(_us(), _W3, (2, 2), _V4), ValueError,
     r"Us U\^\(1\) must be \[4, 4\] \(one row and column per path\); got \(6, 6\)"),
    ("features of another kernel", lambda: hessian.energy_derivatives(_problem()[3][:3], _kernel(), _problem()[4], 0.1),
     ValueError, (r"features must be \[P, n_paths, N0\] for a kernel K of C P = 4 rows .*got features of shape "
                  r"\(3, 6, 6\)")),
    ("three layers for the two-layer oracle",
     lambda: action.inner_order_parameter_l2(np.eye(8), (2, 2, 2), (10.0,) * 4, (1.0,) * 5), ValueError,
     r"heads must be \(H_1, H_2\) of a two-layer network; got \(2, 2, 2\)"),
    ("a checkpoint name for the network", lambda: training.evaluate("omniglot_l2h4", _problem()[2], _problem()[4]),
     TypeError, "checkpoint_or_params must be a Checkpoint or a params dict.*got str"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in WRONG_NETWORK], ids=[c[0] for c in WRONG_NETWORK])
def test_parameters_of_another_network_are_named(call, error, message):
    _rejects(call, error, message)


LISTS = [
    ("R-hat", lambda conv: diagnostics.rank_rhat_ess(conv(np.random.default_rng(0).normal(size=(2, 50))))),
    ("E-BFMI", lambda conv: diagnostics.e_bfmi(conv(np.array([1.0, 3.0, 2.0, 5.0])))),
    ("energy", lambda conv: action.energy(conv(_kernel()), conv(_problem()[4]), 0.1)),
    ("entropy", lambda conv: pt.entropy([conv(u) for u in _us()], _W3, (3, 2), _V4)),
    ("partial trace", lambda conv: action.partial_trace(conv(np.eye(4)), 2)),
    ("square root", lambda conv: action.sqrtm_pd(conv(np.diag([4.0, 9.0])))),
    ("energy derivatives", lambda conv: hessian.energy_derivatives(conv(_problem()[3]), conv(_kernel()),
                                                                   conv(_problem()[4]), 0.1)),
    ("parametrisation", lambda conv: solve.theta_to_matrices(conv(np.zeros(3)), (2,), (1.0,))),
]


@pytest.mark.parametrize("call", [c[1] for c in LISTS], ids=[c[0] for c in LISTS])
def test_lists_work_like_arrays_and_ragged_ones_are_named(call):
    as_list = jax.tree.leaves(call(lambda a: np.asarray(a).tolist()))
    for got, want in zip(as_list, jax.tree.leaves(call(np.asarray))):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-12)
    _rejects(lambda: call(lambda a: [[1.0, 2.0], [3.0]]), ValueError,
             r"is a ragged nested list \(its rows have different lengths\); pass a rectangular array")
