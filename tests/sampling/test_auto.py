"""``sample_posterior(method="auto")``: the sampler and schedule chosen from the sizes, runs that go on to an ESS
target as exact continuations of the same chains, and the choice reported."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import paththeory as pt
from paththeory import sampling
from paththeory.sampling import auto
from paththeory.sampling.results import draws_to_add, least_ess_U
from paththeory.tasks.examples import model_problem


def _problem():
    arch, _, x = model_problem("mean")
    return arch, np.asarray(pt.path_features(arch, x)), np.array([1.0, -1.0, 1.0, -1.0])


def test_draws_to_add_follows_the_measured_rate_within_its_bounds():
    assert draws_to_add(400.0, 100, 400.0, 1000) == 0  # target met
    assert draws_to_add(10.0, 100, None, 1000) == 0  # no target
    assert draws_to_add(10.0, 1000, 400.0, 1000) == 0  # cap reached
    assert draws_to_add(100.0, 100, 400.0, 10_000) == 380  # 1.2 x 100 x 4 - 100
    assert draws_to_add(390.0, 100, 400.0, 10_000) == 25  # at least a quarter of what is kept
    assert draws_to_add(1.0, 100, 400.0, 500) == 400  # at most up to the cap
    assert draws_to_add(0.0, 100, 400.0, 10_000) == 9900  # an undefined ESS counts as one draw, up to the cap


def test_least_ess_of_u_is_about_the_draw_count_for_independent_draws_and_zero_when_undefined():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 200, 3, 3))
    draws = draws + draws.transpose(0, 1, 3, 2)
    ess = least_ess_U(draws)
    assert 200 < ess < 600  # independent draws: about 400
    assert least_ess_U(draws[:, :3]) == 0.0


def test_the_table_of_sweeps_is_read_at_and_between_its_widths():
    for width, sweeps in auto.GIBBS_SWEEPS.items():
        assert auto.gibbs_sweeps_per_draw(width) == pytest.approx(sweeps)
    assert auto.gibbs_sweeps_per_draw(3) == pytest.approx(auto.GIBBS_SWEEPS[10])
    assert auto.gibbs_sweeps_per_draw(1000) == pytest.approx(auto.GIBBS_SWEEPS[300])
    between = auto.gibbs_sweeps_per_draw(17)
    assert auto.GIBBS_SWEEPS[30] < between < auto.GIBBS_SWEEPS[10]


def test_choose_picks_gibbs_for_a_linear_network_and_nuts_where_gibbs_cannot_or_was_not_asked():
    arch, _, _ = _problem()
    gibbs = auto.choose(arch, (10, 10, 10), {})
    assert gibbs.method == "gibbs" and "linear in each weight block" in gibbs.reason
    assert gibbs.num_samples == 5000 and gibbs.num_warmup == 500 and gibbs.max_samples == auto.CAP * 5000
    wide = auto.choose(arch, (300, 300, 300), {})
    assert wide.num_samples == 140 and wide.num_warmup == 200  # 400 x 1.4 sweeps / 4 chains
    assert auto.choose(arch, (300, 10, 300), {}).num_samples == 5000  # the smallest width decides
    asked = auto.choose(arch, (10, 10, 10), {"max_tree_depth": 6})
    assert asked.method == "nuts" and "max_tree_depth" in asked.reason
    given = auto.choose(arch, (10, 10, 10), {"num_warmup": 7, "num_samples": 9})
    assert (given.num_warmup, given.num_samples, given.max_samples) == (7, 9, 9 * auto.CAP)
    rng = np.random.default_rng(0)
    relu = pt.Architecture((pt.QKAttention(rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))), pt.MLP("relu")),
                           readout="last")
    nonlinear = auto.choose(relu, (10, 10, 10), {})
    assert nonlinear.method == "nuts" and "nonlinear MLP block (relu)" in nonlinear.reason


@pytest.mark.parametrize("method", ["gibbs", pytest.param("nuts", marks=pytest.mark.slow)])
def test_a_run_to_an_ess_target_continues_the_same_chains(method):
    """The draws of a run that goes on to its ESS target begin with the draws of the run that stops at
    ``num_samples`` (same seed): the extension continues each chain, it does not restart it."""
    arch, f, y = _problem()
    common = dict(method=method, num_warmup=20, num_samples=30, num_chains=2, seed=4, progress_bar=False)
    planned = sampling.sample_posterior(arch, f, y, 3, 0.1, **common)
    with pytest.warns(sampling.SamplingWarning, match="short of its target") as caught:
        longer = sampling.sample_posterior(arch, f, y, 3, 0.1, target_ess=1e6, max_samples=50, **common)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert planned.U_draws.shape[1] == 30 and longer.U_draws.shape[1] == 50
    assert longer.settings["num_samples"] == 50 and longer.settings["target_ess"] == 1e6
    assert longer.diagnostics["draws_planned"] == 100 and longer.complete
    np.testing.assert_array_equal(longer.U_draws[:, :30], planned.U_draws)
    np.testing.assert_array_equal(longer.f_draws[:, :30], planned.f_draws)
    assert all(c.samples_done == 50 and c.completed for c in longer.chains)


def test_a_run_whose_target_is_met_takes_no_more_draws():
    arch, f, y = _problem()
    run = sampling.sample_posterior(arch, f, y, 3, 0.1, method="gibbs", num_warmup=20, num_samples=200,
                                    num_chains=2, target_ess=5.0, progress_bar=False)
    assert run.U_draws.shape[1] == 200 and run.diagnostics["ess_bulk_U_min"] >= 5.0


def test_auto_reaches_its_target_and_says_what_it_chose():
    arch, f, y = _problem()
    run = sampling.sample_posterior(arch, f, y, 3, 0.1, num_warmup=50, num_samples=25, num_chains=2, target_ess=60,
                                    seed=1, progress_bar=False)
    chosen = run.settings["auto"]
    assert chosen["method"] == run.settings["method"] == "gibbs" and chosen["reached"]
    assert run.diagnostics["ess_bulk_U_min"] >= 60 and chosen["ess_U_min"] == run.diagnostics["ess_bulk_U_min"]
    assert 25 < run.settings["num_samples"] <= chosen["max_samples"] == 25 * auto.CAP
    assert "chosen by method='auto': exact blocked Gibbs" in run.summary()


@pytest.mark.parametrize("method", ["auto", "gibbs", "nuts"])
def test_a_run_warns_when_its_cap_stops_it_short_of_the_target(method):
    arch, f, y = _problem()
    cap = {} if method == "auto" else {"max_samples": 40}
    with pytest.warns(sampling.SamplingWarning, match=r"max_samples = 40 kept draws per chain .* short of its target 1e\+06"):
        run = sampling.sample_posterior(arch, f, y, 3, 0.1, method=method, num_warmup=10, num_samples=10,
                                        num_chains=2, target_ess=1e6, progress_bar=False, **cap)
    assert run.diagnostics["target_reached"] is False and run.settings["num_samples"] == 40
    assert method != "auto" or run.settings["auto"]["reached"] is False


def test_auto_without_a_target_keeps_to_its_schedule():
    arch, f, y = _problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = sampling.sample_posterior(arch, f, y, 3, 0.1, num_warmup=10, num_samples=12, num_chains=2,
                                        target_ess=None, progress_bar=False)
    chosen = run.settings["auto"]
    assert run.settings["num_samples"] == 12 and run.settings["target_ess"] is None and chosen["reached"] is None
    assert chosen["target_ess"] is None and chosen["max_samples"] == 12 and "more while" not in chosen["reason"]
    assert run.diagnostics["target_reached"] is None


@pytest.mark.parametrize("kw, error, message", [
    ({"target_ess": -1.0}, ValueError, "target_ess"),
    ({"max_samples": 10}, TypeError, "sets max_samples itself"),
    ({"num_samples": "many"}, TypeError, "num_samples"),
    ({"colour": "red"}, TypeError, r"method='auto'\) does not take colour"),
])
def test_auto_refuses_bad_options_in_one_line(kw, error, message):
    arch, f, y = _problem()
    with pytest.raises(error, match=message) as err:
        sampling.sample_posterior(arch, f, y, 3, 0.1, progress_bar=False, **kw)
    assert "\n" not in str(err.value)


def test_the_samplers_refuse_draws_that_would_not_fit_and_seeds_jax_cannot_take():
    arch, f, y = _problem()
    with pytest.raises(ValueError, match="kept draws of U .* would need"):
        sampling.sample_posterior(arch, f, y, 3, 0.1, method="gibbs", num_samples=10**13, progress_bar=False)
    with pytest.raises(ValueError, match=r"seed must be a whole number between 0 and 2\*\*63 - 1"):
        sampling.sample_posterior(arch, f, y, 3, 0.1, method="nuts", seed=2**64, progress_bar=False)


@pytest.mark.parametrize("kw, message", [
    ({"max_samples": 10}, "give target_ess too"),
    ({"target_ess": 10.0, "max_samples": 5}, r"max_samples \(5\) is below num_samples \(8\)"),
    ({"target_ess": 0.0}, "target_ess"),
])
def test_the_samplers_refuse_a_bad_target(kw, message):
    arch, f, y = _problem()
    for method in ("gibbs", "nuts"):
        with pytest.raises(ValueError, match=message):
            sampling.sample_posterior(arch, f, y, 3, 0.1, method=method, num_warmup=2, num_samples=8,
                                      progress_bar=False, **kw)
