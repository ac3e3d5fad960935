"""Bad secondary arguments and silently wrong results: the predictor at a tiny temperature, labels other than
+-1, a network's parameters against its architecture, widths and counts, statistics, pruning sets, shapes that
must agree between two arguments, and the two spellings of widths in ``solve`` and ``sweep``.

Every case ends in a one-line ValueError or TypeError naming the argument, or in a correct result."""

from __future__ import annotations

import math
import warnings

import jax
import numpy as np
import pytest

import paththeory as pt
from paththeory import kernels, model, predict, pruning, sampling, solve
from paththeory.experiments import stats
from paththeory.tasks import markov, omniglot, toy
from tests.package.test_bad_inputs import _problem  # the exercises' model problem, shared




def _sampler(**kw):
    arch, _, _, f, y, _ = _problem()
    args = dict(arch=arch, features=f, y=y, width=2, temperature=0.1, num_warmup=2, num_samples=2, num_chains=1,
                progress_bar=False)
    return lambda: sampling.sample_posterior(**{**args, **kw})


def _one_line(err: pytest.ExceptionInfo) -> None:
    assert "\n" not in str(err.value) and "Traceback" not in str(err.value)


# --------------------------------------------------------------------------- the predictor at tiny T


def _duplicated():
    """The model problem's inputs plus a copy of the first with the opposite label: the exact mean there is 0
    (two equal rows of K_U, labels +1 and -1), and K_U is singular."""
    _, _, _, f, _, _ = _problem()
    return np.concatenate([f, f[:1]]), np.array([1.0, -1.0, 1.0, -1.0, -1.0]), f[:1]


def _rank_deficient():
    """One path, N0 = 3, P = 10: K_U has rank 3."""
    g = np.random.default_rng(0).normal(size=(10, 1, 3))
    return g, np.random.default_rng(1).choice([-1.0, 1.0], 10), g[:3]


@pytest.mark.parametrize("problem", [_duplicated, _rank_deficient], ids=["repeated input", "rank 3 of 10"])
@pytest.mark.parametrize("temperature", [0.0, 1e-17, 1e-15, 1e-13, 1e-11])
def test_predictor_refuses_an_ill_conditioned_training_kernel_and_says_how_far_to_raise_T(problem, temperature):
    ftr, y, fte = problem()
    with pytest.raises(ValueError, match=r"K_U \+ T I is (singular|too ill-conditioned).*raise T to about") as err:
        predict.predictor(np.eye(ftr.shape[1]), ftr, y, fte, temperature)
    _one_line(err)


@pytest.mark.parametrize("temperature", [1e-9, 1e-8, 1e-7])
def test_predictor_at_small_but_safe_T_keeps_the_exact_mean(temperature):
    """Where the solve is accurate the mean at the repeated input is its T -> 0 limit 0 (the average of its two
    labels), up to O(T) and the round-off the predictor allows (MAX_SOLVE_ERROR = 1e-6): |mean| < 1e-6."""
    ftr, y, fte = _duplicated()
    mean, var = predict.predictor(np.eye(6), ftr, y, fte, temperature)
    assert abs(float(mean[0])) < 1e-6 and np.all(np.isfinite(var))


def test_predictor_advice_is_enough():
    """The temperature the message suggests gives an accepted solve on the same kernel."""
    ftr, y, fte = _rank_deficient()
    with pytest.raises(ValueError, match="raise T to about") as err:
        predict.predictor(np.eye(1), ftr, y, fte, 1e-13)
    suggested = float(str(err.value).split("raise T to about ")[1].split(" ")[0])
    mean, _ = predict.predictor(np.eye(1), ftr, y, fte, suggested)
    assert np.all(np.isfinite(mean))


def test_predictor_on_well_conditioned_kernels_is_unchanged_at_tiny_T():
    """A non-singular kernel (4 inputs in 36 dimensions) solves at T = 0 and 1e-14: interpolation, to 1e-8."""
    _, _, _, f, y, _ = _problem()
    for t in (0.0, 1e-14):
        mean, _ = predict.predictor(np.eye(6), f, y, f, t)
        np.testing.assert_allclose(mean, y, atol=1e-8)


# --------------------------------------------------------------------------- labels must be +-1

LABELS = [
    ("0/1 labels", np.array([1.0, 0.0, 1.0, 0.0]), ValueError, r"y must hold labels -1 or \+1.*2 \* y - 1"),
    ("bool labels", np.array([True, False, True, False]), TypeError, "y holds booleans"),
    ("labels +-2", np.array([2.0, -2.0, 2.0, -2.0]), ValueError, r"y must hold labels -1 or \+1"),
    ("fractional labels", np.array([0.5, -1.0, 1.0, -1.0]), ValueError, r"y must hold labels -1 or \+1"),
]


@pytest.mark.parametrize("labels, error, message", [c[1:] for c in LABELS], ids=[c[0] for c in LABELS])
def test_accuracies_refuse_labels_other_than_plus_minus_one(labels, error, message):
    mean = np.array([1.0, -1.0, 1.0, -1.0])
    contributions = np.ones((4, 6))
    for call in (lambda: predict.accuracy(mean, labels), lambda: predict.soft_accuracy(mean, np.ones(4), labels),
                 lambda: pruning.pruned_accuracies(contributions, labels, (3, 2), [[]]),
                 lambda: pruning.pruning_curves(contributions, labels, (3, 2), [[(0, 0)]])):
        with pytest.raises(error, match=message) as err:
            call()
        _one_line(err)


def test_accuracies_of_plus_minus_one_labels_are_unchanged():
    y = np.array([1.0, -1.0, 1.0, -1.0])
    assert predict.accuracy(np.array([0.5, -0.1, -0.2, -3.0]), y) == 0.75
    assert predict.accuracy(y, y.astype(int)) == 1.0
    assert abs(predict.soft_accuracy(np.zeros(4), np.ones(4), y) - 0.5) < 1e-15
    c = np.array([[1.0, 0.5, -0.2, 0.1], [-1.0, 0.2, 0.3, -0.4]])
    np.testing.assert_array_equal(pruning.pruned_accuracies(c, [1, -1], (2, 2), [[], [(0, 0)], [(0, 0), (0, 1)]]),
                                  [1.0, 0.5, np.nan])


@pytest.mark.parametrize("labels", [np.array([True, False, True, False]), [1, [0], 1, 0]], ids=["bool", "ragged"])
def test_targets_of_the_theory_and_the_sampler_refuse_booleans_and_ragged_lists(labels):
    arch, _, _, f, _, _ = _problem()
    for call in (lambda: predict.predictor(np.eye(6), f, labels, f, 0.1), lambda: solve.Theory(arch, f, labels),
                 _sampler(y=labels)):
        with pytest.raises((ValueError, TypeError), match="y") as err:
            call()
        _one_line(err)


# --------------------------------------------------------------------------- the network and its parameters


def _attention(count=None, order=1, batch=None):
    arch, _, x, *_ = _problem()
    attn = pt.attention_matrices(arch, x)[::order][:count]
    return [a[:batch] for a in attn]


ATTENTION = [
    ("fewer layers", lambda: _attention(count=1), r"attn must hold one attention array per layer, L = 2"),
    ("layers swapped", lambda: _attention(order=-1), r"attn\[0\] must be \[B=4, H_1=3, T=5, T=5\]"),
    ("fewer examples", lambda: _attention(batch=2), r"attn\[0\] must be \[B=4"),
    ("not a list", lambda: _attention()[0], "attn must hold one attention array per layer"),
]


@pytest.mark.parametrize("attn, message", [c[1:] for c in ATTENTION], ids=[c[0] for c in ATTENTION])
def test_network_output_checks_precomputed_attention_against_the_architecture(attn, message):
    arch, params, x, *_ = _problem()
    with pytest.raises(ValueError, match=message) as err:
        pt.network_output(arch, params, x, attn=attn())
    _one_line(err)


def test_network_output_with_its_own_attention_is_unchanged():
    arch, params, x, *_ = _problem()
    np.testing.assert_allclose(pt.network_output(arch, params, x, attn=_attention()),
                               pt.network_output(arch, params, x), atol=1e-14)


def _other_architectures():
    arch = _problem()[0]
    return {
        "layers swapped": pt.Architecture(arch.attention[::-1], readout="mean"),
        "one layer": pt.Architecture(arch.attention[:1], readout="mean"),
        "three layers": pt.Architecture(arch.attention + arch.attention[:1], readout="mean"),
    }


@pytest.mark.parametrize("name", ["layers swapped", "one layer", "three layers"])
def test_effective_weights_and_path_contributions_check_arch_against_the_weights(name):
    _, params, _, f, _, _ = _problem()
    other = _other_architectures()[name]
    for call in (lambda: pt.effective_weights(other, params), lambda: pt.path_contributions(other, params, f)):
        with pytest.raises(ValueError, match=r"params\['V'\] must be a list of L|V\[0\] must be") as err:
            call()
        _one_line(err)


PARAMS = [
    ("missing readout", lambda p: {"V0": p["V0"], "V": p["V"]}, ValueError, "missing 'a'"),
    ("V not a list", lambda p: {**p, "V": 5}, ValueError, r"params\['V'\] must be a list"),
    ("not a dict", lambda p: [p["V0"], p["V"], p["a"]], TypeError, "params must be a dict"),
    ("ragged readout", lambda p: {**p, "a": [1.0, [2.0]]}, ValueError, "ragged"),
    ("readout of the wrong width", lambda p: {**p, "a": p["a"][:3]}, ValueError, r"a must be \[n_L=8\]"),
]


@pytest.mark.parametrize("change, error, message", [c[1:] for c in PARAMS], ids=[c[0] for c in PARAMS])
def test_weights_are_checked_by_every_function_that_takes_them(change, error, message):
    arch, params, x, f, _, _ = _problem()
    bad = change(params)
    for call in (lambda: pt.network_output(arch, bad, x), lambda: pt.effective_weights(arch, bad),
                 lambda: pt.path_contributions(arch, bad, f)):
        with pytest.raises(error, match=message):
            call()


def test_weights_as_nested_lists_give_the_same_output():
    arch, params, x, *_ = _problem()
    as_lists = {"V0": params["V0"].tolist(), "V": [v.tolist() for v in params["V"]], "a": params["a"].tolist()}
    np.testing.assert_allclose(pt.network_output(arch, as_lists, x), pt.network_output(arch, params, x), atol=1e-14)


# --------------------------------------------------------------------------- widths, temperatures, counts

WIDTHS = [
    ("fractional width", 2.5, ValueError, r"width must be a whole number >= 1; got 2.5\. A finite network"),
    ("fractional layer width", (2, 2.5, 2), ValueError, r"widths\[1\] must be a whole number"),
    ("bool width", True, TypeError, "width must be a number, not a bool"),
    ("zero width", 0, ValueError, "width must be a finite positive number"),
    ("ragged widths", [2, [2, 3], 2], TypeError, r"widths\[1\] must be one number"),
]


@pytest.mark.parametrize("width, error, message", [c[1:] for c in WIDTHS], ids=[c[0] for c in WIDTHS])
def test_network_widths_are_whole_positive_numbers_in_the_sampler_and_the_prior(width, error, message):
    arch = _problem()[0]
    for call in (_sampler(width=width), lambda: pt.sample_prior(arch, width, 6, jax.random.PRNGKey(0))):
        with pytest.raises(error, match=message) as err:
            call()
        _one_line(err)


@pytest.mark.parametrize("widths, error, message", [
    ((10.5,), ValueError, r"widths\[0\] must be a whole number >= 1; got 10\.5\. A finite network"),
    ((True,), TypeError, r"widths\[0\] must be a whole number; got bool"),
    ((), ValueError, "at least one width"),
], ids=["fractional", "bool", "empty"])
def test_theory_sweep_refuses_widths_it_would_truncate(widths, error, message):
    from paththeory.experiments.omniglot import theory_sweep

    arch = _problem()[0]
    with pytest.raises(error, match=message):
        theory_sweep(arch, {}, {}, widths, (0.5,))


BOOLS = [
    ("Theory.solve width", lambda th: th.solve(True, 0.1), "width"),
    ("Theory.solve temperature", lambda th: th.solve(10, True), "temperature"),
    ("Theory.solve temperature False", lambda th: th.solve(10, False), "temperature"),
    ("Theory.solve tol", lambda th: th.solve(10, 0.1, tol=True), "tol"),
    ("predictor temperature", lambda th: predict.predictor(np.eye(6), th.features, th.y, th.features, True),
     "temperature"),
    ("variance", lambda th: pt.Architecture(th.arch.attention, variances=(True, 1, 1, 1)), r"variances\[0\]"),
    ("sampler temperature", lambda th: _sampler(temperature=True)(), "temperature"),
    ("verdict estimate", lambda th: stats.verdict(True, 0.1), "estimate"),
    ("batch_size", lambda th: kernels.kernel_matrix(np.eye(6), th.features, batch_size=True), "batch_size"),
    ("toy signal", lambda th: toy.sample_task(4, signal=True), "signal"),
    ("markov n_examples", lambda th: markov.sample_task(True), "n_examples"),
    ("split fraction", lambda th: omniglot.split_characters(100, validation=True), "validation"),
]


@pytest.mark.parametrize("call, name", [c[1:] for c in BOOLS], ids=[c[0] for c in BOOLS])
def test_bools_never_pass_as_numbers(call, name):
    with pytest.raises(TypeError, match=f"^{name} must be a (whole )?number"):
        call(_problem()[-1])


# --------------------------------------------------------------------------- statistics

STATS = [
    ("verdict NaN estimate", lambda: stats.verdict(float("nan"), 0.1), "estimate must be a finite number"),
    ("verdict infinite estimate", lambda: stats.verdict(float("inf"), 0.1), "estimate must be a finite number"),
    ("verdict negative se", lambda: stats.verdict(0.5, -0.1), "se must be a standard error >= 0"),
    ("verdict NaN threshold", lambda: stats.verdict(0.5, 0.1, threshold=float("nan")), "threshold"),
    ("verdict negative z", lambda: stats.verdict(0.5, 0.1, z=-2.0), "z must be a positive"),
    ("verdict_from_p above 1", lambda: stats.verdict_from_p(1.5, 0.2), "p_greater must be a p-value"),
    ("verdict_from_p negative", lambda: stats.verdict_from_p(0.5, -0.2), "p_less must be a p-value"),
    ("verdict_from_p alpha 2", lambda: stats.verdict_from_p(0.5, 0.5, alpha=2.0), "alpha must lie strictly"),
    ("tail_p_values NaN", lambda: stats.tail_p_values(float("nan"), np.ones(3), True), "observed"),
    ("row_correlations mismatch", lambda: stats.row_correlations([1, 2, 3], [[1, 2]]), r"ys must be \[m, n\]"),
    ("mantel non-symmetric A", lambda: stats.mantel_test(np.arange(16.0).reshape(4, 4), np.eye(4)),
     "A must be symmetric"),
    ("mantel non-symmetric B", lambda: stats.mantel_test(np.eye(4) + 1, np.triu(np.ones((4, 4)))),
     "B must be symmetric"),
    ("pc_label_overlap non-symmetric", lambda: predict.pc_label_overlap(np.triu(np.ones((4, 4))), np.ones(4), k=2),
     "K must be symmetric"),
]


@pytest.mark.parametrize("call, message", [c[1:] for c in STATS], ids=[c[0] for c in STATS])
def test_statistics_refuse_what_they_would_misread(call, message):
    with pytest.raises(ValueError, match=message) as err:
        call()
    _one_line(err)


def test_verdicts_on_valid_inputs_are_unchanged():
    assert stats.verdict(0.1, 0.04) == "holds" and stats.verdict(-0.1, 0.04) == "fails"
    assert stats.verdict(0.1, float("nan")) == "within noise"  # the noise was not estimated
    assert stats.verdict(0.1, 0.0) == "holds"
    assert stats.verdict_from_p(float("nan"), float("nan")) == "within noise"  # spearman of a constant input
    assert stats.verdict_from_p(0.01, 0.99) == "holds"


@pytest.mark.parametrize("scores, message", [
    ([np.array([np.nan, 0.5]), np.array([0.2])], r"scores\[0\] contains 1 NaN"),
    ([np.array([0.1]), np.array([np.inf])], r"scores\[1\] contains 1 NaN"),
    ([], "scores must be a non-empty list"),
    ([[0.1, [0.2]]], r"scores\[0\] is a ragged"),
], ids=["NaN", "inf", "empty", "ragged"])
def test_score_order_refuses_scores_it_cannot_sort(scores, message):
    with pytest.raises(ValueError, match=message):
        pruning.score_order(scores)


def test_score_order_of_layers_of_different_sizes():
    assert pruning.score_order([np.array([0.3, 0.5]), np.array([0.2])]) == [(1, 0), (0, 0), (0, 1)]


@pytest.mark.parametrize("value, error", [(2.0, ValueError), (0.0, ValueError), (1.0, ValueError),
                                          (float("nan"), ValueError), (True, TypeError), ("0.8", TypeError)])
def test_target_accept_prob_lies_in_the_open_unit_interval(value, error):
    with pytest.raises(error, match="target_accept_prob"):
        _sampler(target_accept_prob=value)()


# --------------------------------------------------------------------------- secondary arguments


def _bad_counts(minimum: int):
    return [(minimum - 1, ValueError), (-1, ValueError), (2.5, ValueError), ("3", TypeError), (float("nan"), ValueError)]


def _counted():
    arch, params, x, f, y, _ = _problem()
    s = np.arange(10.0)
    sym = np.add.outer(s, s)
    return {
        "predictor batch_size": ("batch_size", 1, lambda v: predict.predictor(np.eye(6), f, y, f, 0.1, batch_size=v)),
        "kernel_matrix batch_size": ("batch_size", 1, lambda v: kernels.kernel_matrix(np.eye(6), f, batch_size=v)),
        "path_features batch_size": ("batch_size", 1, lambda v: pt.path_features(arch, x, batch_size=v)),
        "kernel_operator memory_budget": ("memory_budget", 0, lambda v: kernels.kernel_operator(f, memory_budget=v)),
        "Theory memory_budget": ("memory_budget", 0, lambda v: solve.Theory(arch, f, y, memory_budget=v)),
        "sampler num_samples": ("num_samples", 1, lambda v: _sampler(num_samples=v)()),
        "sampler num_chains": ("num_chains", 1, lambda v: _sampler(num_chains=v)()),
        "sampler num_warmup": ("num_warmup", 0, lambda v: _sampler(num_warmup=v)()),
        "sampler max_tree_depth": ("max_tree_depth", 1, lambda v: _sampler(max_tree_depth=v)()),
        "sampler seed": ("seed", 0, lambda v: _sampler(seed=v)()),
        "spearman n_permutations": ("n_permutations", 1, lambda v: stats.spearman_test(s, s % 3, n_permutations=v)),
        "mantel n_permutations": ("n_permutations", 1, lambda v: stats.mantel_test(sym, sym % 3, n_permutations=v)),
        "batch_means_se n_batches": ("n_batches", 2, lambda v: stats.batch_means_se(np.ones((2, 40)), n_batches=v)),
        "random_orders seed": ("seed", 0, lambda v: pruning.random_orders((3, 2), 2, seed=v)),
        "readout_vector n_tokens": ("n_tokens", 1, lambda v: model.readout_vector("mean", v)),
        "hessian_pays n_examples": ("n_examples", 1, lambda v: solve.hessian_pays(v, 2, 3)),
        "markov sample_task n_examples": ("n_examples", 2, lambda v: markov.sample_task(v)),
        "toy sample_task seed": ("seed", 0, lambda v: toy.sample_task(4, seed=v)),
        "omniglot positional_encoding dim": ("dim", 1, lambda v: omniglot.positional_encoding(4, v)),
        "omniglot icl_indices n": ("n", 1, lambda v: omniglot.icl_indices(np.repeat(np.arange(4), 3), 0, v)),
    }


@pytest.mark.parametrize("case", list(_counted()))
def test_every_count_is_a_whole_number_at_its_minimum_or_more(case):
    name, minimum, call = _counted()[case]
    for value, error in _bad_counts(minimum):
        with pytest.raises(error, match=f"^{name} must be a whole number") as err:
            call(value)
        _one_line(err)


HEAD_PAIRS = [
    ("pair of one", [(0,)], r"\[0\] must be a \(layer, head\) pair"),
    ("pair of three", [(0, 1, 2)], r"\[0\] must be a \(layer, head\) pair"),
    ("string", ["ab"], r"\[0\] must be a \(layer, head\) pair"),
    ("None", [None], r"\[0\] must be a \(layer, head\) pair"),
    ("fractional head", [(0, 1.5)], r"\[0\]\[1\] must be a whole number"),
    ("negative layer", [(-1, 0)], r"\[0\]\[0\] must be a whole number >= 0"),
    ("missing head", [(1, 5)], r"head \(1, 5\) does not exist"),
    ("bool head", [(0, True)], r"\[0\]\[1\] must be a whole number"),
]


@pytest.mark.parametrize("pairs, message", [c[1:] for c in HEAD_PAIRS], ids=[c[0] for c in HEAD_PAIRS])
def test_head_pairs_are_checked_wherever_heads_are_pruned(pairs, message):
    c, y = np.ones((4, 6)), _problem()[4]
    for call in (lambda: pruning.head_mask((3, 2), pairs), lambda: pruning.path_weights((3, 2), pairs),
                 lambda: pruning.pruned_accuracies(c, y, (3, 2), [pairs]),
                 lambda: pruning.pruning_curves(c, y, (3, 2), [pairs])):
        with pytest.raises((ValueError, TypeError), match=message) as err:
            call()
        _one_line(err)


@pytest.mark.parametrize("call, message", [
    (lambda c, y: pruning.pruned_accuracies(c, y, (3, 2), []), "pruned_sets must be a non-empty list"),
    (lambda c, y: pruning.pruned_accuracies(c, y, (3, 2), 5), "pruned_sets must be a non-empty list"),
    (lambda c, y: pruning.pruning_curves(c, y, (3, 2), []), "orders must be a non-empty list"),
    (lambda c, y: pruning.pruning_curves(c, y, (3, 2), [[(0, 0)], [(0, 1), (1, 0)]]), "the same length"),
    (lambda c, y: pruning.pruned_accuracies(c, y, [3, [2]], [[]]), "heads must be a non-empty sequence"),
    (lambda c, y: pruning.random_orders([3, 0], 2), r"heads\[1\] must be a whole number >= 1"),
], ids=["no sets", "sets not a list", "no orders", "ragged orders", "ragged heads", "layer without heads"])
def test_pruning_sets_orders_and_heads_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call(np.ones((4, 6)), _problem()[4])


def test_pruning_curves_of_random_orders_are_unchanged():
    c = np.random.default_rng(0).normal(size=(40, 6))
    y = np.sign(c.sum(axis=1))
    orders = pruning.random_orders((3, 2), 5, seed=1)
    curves = pruning.pruning_curves(c, y, (3, 2), orders)
    assert curves.shape == (5, 6) and np.all(curves[:, 0] == 1.0)
    sets = [list(map(tuple, o[:k])) for o in orders for k in range(6)]
    np.testing.assert_array_equal(curves.ravel(), pruning.pruned_accuracies(c, y, (3, 2), sets))


MISMATCHED = [
    ("kernel_matrix paths", lambda f: kernels.kernel_matrix(np.eye(6), f, f[:, :3]), "features_b have"),
    ("path_kernels N0", lambda f: kernels.path_kernels(f, f[:, :, :3]), "features_b have"),
    ("gp_kernel N0", lambda f: kernels.gp_kernel(_problem()[0], f, f[:, :, :3]), "features_b have"),
    ("gp_kernel paths of arch", lambda f: kernels.gp_kernel(_problem()[0], f[:, :3]), "features have 3 paths"),
    ("predictor N0", lambda f: predict.predictor(np.eye(6), f, _problem()[4], f[:, :, :3], 0.1),
     r"features_test must be \[P_test, n_paths=6, N0=6\]"),
    ("path_contributions N0", lambda f: pt.path_contributions(_problem()[0], _problem()[1], f[:, :, :3]),
     r"features must be \[B, n_paths=6, N0=6\]"),
    ("marginal likelihood", lambda f: sampling.marginal_log_likelihood(np.ones((4, 2)), np.ones(3), 0.1),
     r"phi must be \[P, n_L\] and y \[P\]"),
]


@pytest.mark.parametrize("call, message", [c[1:] for c in MISMATCHED], ids=[c[0] for c in MISMATCHED])
def test_mismatched_shapes_between_two_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message) as err:
        call(_problem()[3])
    _one_line(err)


RAGGED = [
    ("accuracy", lambda: predict.accuracy([1.0, [2.0]], [1.0, 1.0]), "mean is a ragged"),
    ("Theory features", lambda: solve.Theory(_problem()[0], [[[1.0]], [[1.0, 2.0]]], [1.0, -1.0]),
     "features is a ragged"),
    ("Theory.action", lambda: _problem()[-1].action([[[1.0, 2.0], [3.0]], np.eye(2)], 10, 0.1), "is a ragged"),
    ("head_mask", lambda: pt.network_output(*_problem()[:3], head_mask=[[1, [1], 1], [1, 1]]), "ragged"),
    ("sample_prior widths", lambda: pt.sample_prior(_problem()[0], [8, [8], 8], 6, jax.random.PRNGKey(0)),
     r"widths\[1\] must be one number"),
    ("variances", lambda: pt.Architecture(_problem()[0].attention, variances=[1, [1], 1, 1]),
     r"variances\[1\] must be one number"),
]


@pytest.mark.parametrize("call, message", [c[1:] for c in RAGGED], ids=[c[0] for c in RAGGED])
def test_ragged_lists_are_named_as_such(call, message):
    with pytest.raises((ValueError, TypeError), match=message) as err:
        call()
    _one_line(err)


OTHER = [
    ("sample_prior key", lambda: pt.sample_prior(_problem()[0], 8, 6, 0), TypeError, "key must be a JAX random key"),
    ("draw_readout key", lambda: sampling.draw_readout(np.ones((4, 2)), np.ones(4), 0.1, 0), TypeError, "key must"),
    ("readout name", lambda: model.readout_vector("max", 3), ValueError, "readout must be one of"),
    ("variances scalar", lambda: pt.Architecture(_problem()[0].attention, variances=1.0), TypeError,
     "variances must be a sequence"),
    ("head_mask not a list", lambda: pt.network_output(*_problem()[:3], head_mask=5), TypeError,
     "head_mask must be a list"),
    ("init not a list", lambda: _problem()[-1].solve(10, 0.1, init=5), TypeError, "init must be a list of L = 2"),
    ("hessian not a bool", lambda: solve.Theory(*_problem()[:1], _problem()[3], _problem()[4], hessian="yes"),
     TypeError, "hessian must be True or False"),
    ("integrate_readout a string", _sampler(integrate_readout="no"), TypeError, "integrate_readout must be True or False"),
    ("normalise a string", lambda: pruning.head_scores(np.eye(6), (3, 2), normalise="yes"), TypeError,
     "normalise must be True or False"),
    ("rank_rhat_ess 1-D", lambda: sampling.rank_rhat_ess(np.ones(5)), ValueError, r"draws must be \[chains"),
    ("pack_symmetric non-square", lambda: kernels.pack_symmetric(np.ones((3, 4))), ValueError, "D must be a square"),
    ("markov flip_probs", lambda: markov.sample_task(4, flip_probs=(0.3,)), ValueError, "flip_probs must be a pair"),
    ("markov seed", lambda: markov.sample_task(4, seed="a"), TypeError, "seed must be a whole number"),
    ("markov beta", lambda: markov.four_paths(beta=float("nan"), n_features=4, seq_len=3), ValueError, "beta"),
    ("toy needle", lambda: toy.sample_task(4, needle=1.5), ValueError, "needle must be a whole number"),
    ("toy beta", lambda: toy.architecture(beta=float("nan")), ValueError, "beta must be a finite number"),
    ("assemble_tokens index", lambda: omniglot.assemble_tokens(np.zeros((3, 16, 64)), [[0, 1, 5]], [[0, 1, 2]]),
     ValueError, "images must hold indices into patches"),
    ("assemble_tokens label", lambda: omniglot.assemble_tokens(np.zeros((3, 16, 64)), [[0, 1, 2]], [[0, 1, 3]]),
     ValueError, "image_labels must hold label ids"),
    ("assemble_tokens patches", lambda: omniglot.assemble_tokens(np.zeros((3, 16, 5)), [[0, 1, 2]], [[0, 1, 2]]),
     ValueError, r"patches must be \[n, 16, 64\]"),
    ("split_characters count", lambda: omniglot.split_characters(2.5), ValueError, "n_characters must be"),
    ("resize size", lambda: omniglot.resize(np.zeros((1, 28, 28), np.uint8), 0), ValueError, "size must be"),
]


@pytest.mark.parametrize("call, error, message", [c[1:] for c in OTHER], ids=[c[0] for c in OTHER])
def test_other_secondary_arguments_are_checked_at_the_door(call, error, message):
    with pytest.raises(error, match=message) as err:
        call()
    _one_line(err)


def test_whole_float_counts_work_like_ints():
    """``10.0`` examples is 10 examples (a whole number), as everywhere else."""
    np.testing.assert_array_equal(markov.sample_task(10.0, n_features=4.0, seq_len=3).x,
                                  markov.sample_task(10, n_features=4, seq_len=3).x)
    np.testing.assert_array_equal(toy.sample_task(4.0).x, toy.sample_task(4).x)


# --------------------------------------------------------------------------- solve and sweep spellings


def test_solve_refuses_a_list_and_sweep_a_tuple_each_naming_both_spellings():
    theory = _problem()[-1]
    with pytest.raises(ValueError, match=r"solve takes one point.*tuple \(n_0, \.\.\., n_L\).*sweep\(\[10, 20, 30\], T\)"):
        theory.solve([10, 20, 30], 0.1)
    for call in (lambda: theory.sweep((10, 20, 30), 0.1), lambda: theory.solve_many((10, 20, 30), [0.1] * 3),
                 lambda: solve.sweep(*_problem()[:1], _problem()[3], _problem()[4], (10, 20, 30), 0.1)):
        with pytest.raises(ValueError, match=r"reads widths as points.*Pass \[10, 20, 30\] for 3 width points, or "
                                             r"\[\(10, 20, 30\)\] for one point"):
            call()
    with pytest.raises(ValueError, match="solve takes one point"):
        solve.solve(*_problem()[:1], _problem()[3], _problem()[4], [10, 20, 30], 0.1)


def test_the_two_spellings_each_mean_one_thing():
    theory = _problem()[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", solve.ConvergenceWarning)
        per_layer = theory.solve((10, 20, 30), 0.1)
        points = theory.sweep([10, 20, 30], 0.1)
        one_point = theory.sweep([(10, 20, 30)], 0.1)
    assert per_layer.widths == (10.0, 20.0, 30.0)
    assert [s.widths for s in points] == [(10.0,) * 3, (20.0,) * 3, (30.0,) * 3]
    np.testing.assert_allclose(one_point[0].U, per_layer.U, atol=1e-8)
    assert math.isclose(theory.solve(np.float64(10), 0.1).widths[0], 10.0)


def test_unconverged_advice_names_float32_when_x64_is_off():
    """With JAX in float32 (PATHTHEORY_NO_X64) the advice is float64, not more iterations."""
    assert "max_iter" in solve._unconverged_advice() == solve._unconverged_advice(x64=True)
    advice = solve._unconverged_advice(x64=False)
    assert "float32" in advice and "PATHTHEORY_NO_X64" in advice and "max_iter" not in advice
