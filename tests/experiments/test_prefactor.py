"""The validity chapter's prefactor question (paththeory.experiments.prefactor): verdicts as numbers, on points built
by hand or simulated where the truth is known. The words are tested once, in tests/package/test_reports.py."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory.experiments import prefactor
from paththeory.experiments.compare import distance
from paththeory.experiments.prefactor import findings, growth, network_scaling, point

WIDTHS = (10, 30, 100, 300)


def exact_points(network, paths, c, widths=WIDTHS, sampler="gibbs", noise=0.05):
    """d = c / N exactly with a floor of ``noise`` d: resolved everywhere, debiased to d sqrt(1 - noise^2)."""
    return [point(network, paths, w, sampler, c / w, noise * c / w, 40, True) for w in widths]


def test_the_prefactor_is_n_d_over_the_resolved_widths_in_the_regime():
    pts = exact_points("a", 4, 2.0)
    s = network_scaling(pts, "a")
    assert s.regime_widths == WIDTHS and s.prefactor == pytest.approx(2.0 * np.sqrt(1 - 0.05**2), rel=1e-9)
    assert s.fit.determined and s.fit.b == pytest.approx(1.0, abs=1e-9)
    # N < |Pi| is outside the regime: 36 paths leave only N = 100 and 300
    assert network_scaling(exact_points("b", 36, 2.0), "b").regime_widths == (100, 300)


def test_one_resolved_width_in_the_regime_gives_no_prefactor_and_no_growth():
    pts = exact_points("a", 4, 1.0) + [point("b", 16, 20, "nuts", 0.1, 0.02, 40, True),
                                       point("b", 16, 100, "gibbs", 0.012, 0.01, 40, True)]  # unresolved at 100
    s = network_scaling(pts, "b")
    assert s.prefactor is None and s.regime_widths == () and not s.fit.determined
    assert s.fit.n_measured == 1 and s.fit.n_censored == 1
    g = growth([network_scaling(pts, "a"), s])
    assert not g.determined and g.eta is None and g.networks == ("a",)


def test_unmixed_or_noiseless_points_enter_no_fit_and_nuts_and_gibbs_are_pooled():
    pts = [point("a", 4, 10, "nuts", 0.2, 0.01, 20, True), point("a", 4, 30, "gibbs", 0.2 / 3, 0.004, 40, True),
           point("a", 4, 100, "gibbs", 5.0, 0.01, 40, False),  # not mixed: would wreck the fit
           point("a", 4, 300, "gibbs", 5.0, None, None, True)]  # noise unknown
    s = network_scaling(pts, "a")
    assert len(s.points) == 4 and s.fit.n_measured == 2 and s.fit.n_censored == 0
    assert s.fit.b == pytest.approx(1.0, abs=0.02) and s.regime_widths == (10, 30)
    assert not pts[3].resolved and pts[3].upper_limit is None


@pytest.mark.parametrize("eta, reads", [(0.0, ("flat",)), (1.0, ("paths",)), (2.0, ("modes",))])
def test_the_growth_verdict_recovers_a_known_exponent(eta, reads):
    pts = [p for n, k in (("a", 4), ("b", 9), ("c", 36)) for p in exact_points(n, k, 0.3 * k**eta, noise=0.02)]
    f = findings(pts)
    assert f.growth.determined and f.growth.eta == pytest.approx(eta, abs=1e-6)
    assert f.growth.consistent == reads and abs(f.growth.z[reads[0]]) < 1e-3


def test_the_growth_fit_is_unbiased_and_covers_on_noisy_simulated_distances():
    """Simulated runs: U entries with Monte Carlo noise along the difference (where the debiased error is exact),
    d_true = c(|Pi|) / N with c = 0.5 |Pi|^0.5, floors s = d_true / 4 at every width (the runs resolve every width).
    Over 200 replicates the fitted eta's mean lies within 0.02 of 0.5 (measured 0.491; its spread is 0.093, so the
    mean's own error is 0.007) and the +-2 error bars cover the truth in at least 90 % of them (nominal 95 %; measured
    98.5 %: each point's error, s d / sqrt(d^2 - s^2), is exact only to first order in s / d)."""
    rng = np.random.default_rng(0)
    hits, etas = 0, []
    for _ in range(200):
        pts = []
        for name, k in (("a", 4), ("b", 9), ("c", 36)):
            for w in (40, 100, 300):
                d_true = 0.5 * k**0.5 / w
                s = d_true / 4
                d = abs(d_true + s * rng.normal())  # the noise along the difference
                pts.append(point(name, k, w, "gibbs", max(d, 1e-12), s, None, True))
        g = findings(pts).growth
        if g.determined:
            etas.append(g.eta)
            hits += abs(g.eta - 0.5) <= 2 * g.eta_se
    assert len(etas) >= 190
    assert abs(np.mean(etas) - 0.5) < 0.02
    assert hits / len(etas) >= 0.90


def test_scan_settings_sample_wider_and_longer_than_the_chapters():
    v, r, m = prefactor.scan_settings("smoke")
    assert v.gibbs_omniglot_widths == (20, 40, 100) and v.gibbs_markov_widths == () and v.gibbs_samples == 3200
    assert all(w >= 9 for n, w in r.gibbs) and r.gibbs_samples == 3200
    assert m.gibbs_widths == (20, 30, 60, 100) and m.sample_widths == () and m.gibbs_samples == 3200
    assert min(m.gibbs_widths) >= m.n_classes * 4  # N >= C |Pi|
    with pytest.raises(ValueError, match="experiment must be one of"):
        prefactor.write_scan("markov", "smoke")


def test_the_adapters_carry_each_experiments_rows_into_points():
    """A validity row has debiased its distance already (the point takes it as is); a residual row is debiased here,
    its mixing the experiment's own verdict (R-hat within residual.R_HAT_OK)."""
    from paththeory.experiments import residual, validity

    v = validity.row("gibbs", "omniglot", 40, 16, 0.3, 0.05, 20, 0.8, {"difference": 0.0, "se": 0.01, "n": 500},
                     0.9, 0.9, 1.0, 100.0)
    (p,) = prefactor.validity_points([v])
    assert (p.network, p.paths, p.width, p.sampler, p.mixed) == ("omniglot", 16, 40, "gibbs", True)
    assert p == point("omniglot", 16, 40, "gibbs", 0.3, 0.05, 20, True)
    paired = residual.Paired(0.0, 0.01, 500)
    r = residual.Row("skip", 30, 9, 0.3, "nuts", 0.049, 0.026, 20, 1.2, (distance(0.05, None),), 0.09, 0.07, 0.17,
                     residual.Accuracies(0.7, 0.7, 0.67, 0.94), paired, paired, paired, 0.3, 1.05, 400.0, 60.0, False)
    (q,) = prefactor.residual_points([r])
    assert q == point("skip", 9, 30, "nuts", 0.049, 0.026, 20, False) and not q.judged and not q.resolved


def test_the_prediction_check_agrees_with_a_true_prediction_and_rejects_a_wrong_one():
    """Points about a known d = 1/N, off by one or half a floor: the true prediction passes the chi-square at 5 %
    (chi2 about 2.5 over 4), one 30 % too high is rejected, and an upper limit below a prediction is named."""
    widths, z = (20, 40, 100, 200), (0.5, -0.5, 1.0, -1.0)  # deviations in units of the floor: chi2 = 2.5
    pts = [point("x", 4, w, "gibbs", (1.0 + 0.02 * e) / w, 0.02 / w, 40, True) for w, e in zip(widths, z)]
    true = [prefactor.Prediction("x", 4, w, 1.0 / w) for w in widths]
    wrong = [prefactor.Prediction("x", 4, w, 1.3 / w) for w in widths]
    c = prefactor.check_prediction(pts, true, "x")
    assert c.n_resolved == 4 and c.fit_agrees and c.limits_agree and c.agrees and c.p >= prefactor.LEVEL
    assert prefactor.check_prediction(pts, wrong, "x").agrees is False
    limit = point("x", 4, 400, "gibbs", 0.001, 0.001, 40, True)  # unresolved: upper limit about 0.003
    above = prefactor.check_prediction(pts + [limit], true + [prefactor.Prediction("x", 4, 400, 0.01)], "x")
    assert (above.limits, above.limits_kept, above.limits_agree, above.agrees) == (1, 0, False, False)
    f = findings(pts, true)
    assert [q.network for q in f.checks] == ["x"] and f.checks[0] == c


def test_predictions_follow_the_next_order_of_laplace_on_the_markov_data():
    """predict() solves the theory on the validity experiment's Markov data at every judged width and reads the next
    order off it: N d stays of order one and matches paththeory.laplace directly."""
    from paththeory.experiments import validity
    from paththeory.laplace import laplace_shift
    from paththeory.solve import Theory

    pts = [point("markov", 4, w, "gibbs", 1.0 / w, 0.1 / w, 40, True) for w in (10, 100)]
    pts.append(point("markov", 4, 30, "nuts", 0.03, 0.01, 20, False))  # not mixed: not predicted
    got = prefactor.predict(pts, "smoke")
    assert [(q.network, q.width) for q in got] == [("markov", 10), ("markov", 100)]
    prob = validity.problem("markov", validity.settings("smoke"))
    theory = Theory(prob.arch, prob.train, prob.y_train)
    direct = laplace_shift(theory, theory.solve(100.0, prob.temperature)).relative
    assert got[1].distance == pytest.approx(direct, rel=1e-10)
    assert all(0.3 < q.width * q.distance < 3 for q in got)


def test_the_common_width_compares_every_network_at_one_width_and_pools_the_samplers():
    """Networks resolved at different width ranges are compared at the largest width all resolve; two samplers at
    that width are pooled by their weighted mean; the growth through them recovers a known exponent (1)."""
    pts = [point(n, k, w, "gibbs", k / w, 0.05 * k / w, 40, True)
           for n, k in (("a", 4), ("b", 16)) for w in (20, 100)]
    pts.append(point("b", 16, 300, "gibbs", 16 / 300, 0.05 * 16 / 300, 40, True))  # b alone: not common
    pts.append(point("a", 4, 100, "nuts", 4.4 / 100, 0.1 * 4.4 / 100, 40, True))  # a second sampler at 100
    c = findings(pts).common
    assert c.width == 100 and c.networks == ("a", "b") and c.paths == (4, 16)
    at = [p for p in pts if p.network == "a" and p.width == 100]  # debiased values and their errors, times N
    w = np.array([1 / (100 * p.se) ** 2 for p in at])
    assert c.values[0] == pytest.approx(float(np.sum(w * np.array([100 * p.value for p in at])) / w.sum()), rel=1e-12)
    assert 4.0 < c.values[0] < 4.4
    assert c.growth.determined and c.growth.eta == pytest.approx(0.96, abs=0.05)
    assert findings([point("a", 4, 20, "gibbs", 0.1, 0.01, 40, True),
                     point("b", 16, 30, "gibbs", 0.1, 0.01, 40, True)]).common is None
