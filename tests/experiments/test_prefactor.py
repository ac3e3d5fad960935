"""The validity chapter's prefactor question (paththeory.experiments.prefactor): verdicts as numbers, on points built
by hand or simulated where the truth is known. The words are tested once, in tests/package/test_reports.py."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory.experiments import prefactor
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
    assert not g.determined and g.gamma is None and g.networks == ("a",)


def test_unmixed_or_noiseless_points_enter_no_fit_and_nuts_and_gibbs_are_pooled():
    pts = [point("a", 4, 10, "nuts", 0.2, 0.01, 20, True), point("a", 4, 30, "gibbs", 0.2 / 3, 0.004, 40, True),
           point("a", 4, 100, "gibbs", 5.0, 0.01, 40, False),  # not mixed: would wreck the fit
           point("a", 4, 300, "gibbs", 5.0, None, None, True)]  # noise unknown
    s = network_scaling(pts, "a")
    assert len(s.points) == 4 and s.fit.n_measured == 2 and s.fit.n_censored == 0
    assert s.fit.b == pytest.approx(1.0, abs=0.02) and s.regime_widths == (10, 30)
    assert not pts[3].resolved and pts[3].upper_limit is None


@pytest.mark.parametrize("gamma, reads", [(0.0, ("flat",)), (1.0, ("paths",)), (2.0, ("modes",))])
def test_the_growth_verdict_recovers_a_known_exponent(gamma, reads):
    pts = [p for n, k in (("a", 4), ("b", 9), ("c", 36)) for p in exact_points(n, k, 0.3 * k**gamma, noise=0.02)]
    f = findings(pts)
    assert f.growth.determined and f.growth.gamma == pytest.approx(gamma, abs=1e-6)
    assert f.growth.consistent == reads and abs(f.growth.z[reads[0]]) < 1e-3


def test_the_growth_fit_is_unbiased_and_covers_on_noisy_simulated_distances():
    """Simulated runs: U entries with Monte Carlo noise along the difference (where the debiased error is exact),
    d_true = c(|Pi|) / N with c = 0.5 |Pi|^0.5, floors s = d_true / 4 at every width (the runs resolve every width).
    Over 200 replicates the fitted gamma's mean lies within 0.02 of 0.5 (measured 0.491; its spread is 0.093, so the
    mean's own error is 0.007) and the +-2 error bars cover the truth in at least 90 % of them (nominal 95 %; measured
    98.5 %: each point's error, s d / sqrt(d^2 - s^2), is exact only to first order in s / d)."""
    rng = np.random.default_rng(0)
    hits, gammas = 0, []
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
            gammas.append(g.gamma)
            hits += abs(g.gamma - 0.5) <= 2 * g.gamma_se
    assert len(gammas) >= 190
    assert abs(np.mean(gammas) - 0.5) < 0.02
    assert hits / len(gammas) >= 0.90


def test_scan_settings_sample_wider_and_longer_than_the_chapters():
    v, r = prefactor.scan_settings("smoke")
    assert v.gibbs_omniglot_widths == (20, 40, 100) and v.gibbs_markov_widths == () and v.gibbs_samples == 3200
    assert all(w >= 9 for n, w in r.gibbs) and r.gibbs_samples == 3200
    with pytest.raises(ValueError, match="experiment must be one of"):
        prefactor.write_scan("markov", "smoke")
