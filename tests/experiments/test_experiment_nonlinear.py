"""The nonlinear-block experiment: its comparison, its verdict rule calibrated on simulated samples, its report."""

from __future__ import annotations

import numpy as np
import pytest

from paththeory.experiments import nonlinear as ex
from paththeory.experiments.compare import distance, relative_distance
from paththeory.reports import nonlinear as report

SMALL = ex.Config((("relu", 10), ("erf", 10)), 5, 10, 2, 600.0, theory_widths=(10,), n_train=20, n_test=30)


def record_near(point: ex.TheoryPoint, phi: str, width: int, rng, noise: float = 0.01) -> dict:
    """A record whose sampled U, U_a and mean are one theory's plus Gaussian noise of the given relative size."""
    def noisy(a):
        a = np.asarray(a, float)
        return a + noise * np.linalg.norm(a) / np.sqrt(a.size) * rng.normal(size=a.shape)

    se = lambda a: np.full(np.shape(a), noise * np.linalg.norm(a) / np.sqrt(np.size(a)))  # noqa: E731
    U = noisy(point.U)
    inner = [noisy(m) for m in point.inner]
    return {"phi": phi, "width": width, "U": U, "U_se": se(point.U), "inner": inner,
            "inner_se": [se(m) for m in point.inner], "mean": noisy(point.mean), "mean_se": se(point.mean),
            "diagnostics": {"r_hat_U_max": 1.001, "ess_bulk_U_min": 500.0, "seconds": 1.0, "e_bfmi": [1.0, 1.0],
                            "draws_used": 400}}


def test_compare_names_the_theory_the_samples_were_drawn_around():
    """Oracle: records built around each theory in turn; the nearest theory in U is that one, clearly."""
    rng = np.random.default_rng(0)
    curves = {phi: ex.theories(ex.problem(phi, SMALL), [10], SMALL.temperature) for phi in ex.NONLINEARITIES}
    for truth in ("heuristic", "linear"):
        records = [record_near(curves[phi][truth][10], phi, 10, rng) for phi in ex.NONLINEARITIES]
        rows = ex.compare({"sampler": "nuts", "records": records}, SMALL, curves)
        found = ex.findings(rows)
        for n in found.nearest:
            if n.quantity == "U":
                assert n.theory == truth and n.clear, n
        text = report.verdict_text(found)
        assert ex.THEORY_NAMES[truth] in text and "ReLU" in text and "erf" in text
    assert "R-hat" in report.distance_table(rows) and "NUTS" in report.accuracy_table(rows)


def test_clear_rule_is_calibrated_on_two_equidistant_theories():
    """Oracle: simulated samples of a known truth, two theories at the same true distance from it; the rule
    ``gap > 4 noise`` calls one of them clearly nearer in at most 5 % of 2,000 runs (nominal: about 2 %), and
    calls the nearer one of two theories at distances 0.05 and 0.15 clear in at least 90 % of them."""
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(6, 6))
    truth = truth @ truth.T
    scale = np.linalg.norm(truth)
    direction = rng.normal(size=truth.shape)
    direction /= np.linalg.norm(direction)
    other = rng.normal(size=truth.shape)
    other -= (other.ravel() @ direction.ravel()) * direction
    other /= np.linalg.norm(other)
    se = np.full(truth.shape, 0.01 * scale / 6)  # the noise floor: |se|_F / |truth|_F = 0.01

    def clear_rate(d1: float, d2: float) -> float:
        t1, t2 = truth + d1 * scale * direction, truth + d2 * scale * other
        hits = 0
        for _ in range(2000):
            sampled = truth + se * rng.normal(size=truth.shape)
            a1 = ex.Against("a", distance(*relative_distance(t1, sampled, se), 20), distance(0.0, None),
                            distance(0.0, None), 1.0, 1.0)
            a2 = ex.Against("b", distance(*relative_distance(t2, sampled, se), 20), distance(0.0, None),
                            distance(0.0, None), 1.0, 1.0)
            row = ex.Row("relu", 10, (a1, a2), 1.0, 1.0, 100.0, 1.0, True)
            hits += ex.nearest(row, "U").clear
        return hits / 2000

    assert clear_rate(0.1, 0.1) <= 0.05
    assert clear_rate(0.05, 0.15) >= 0.9


@pytest.mark.parametrize("bad", [("tanh", 10), ("relu", 0)])
def test_bad_points_fail_before_sampling(bad):
    cfg = ex.Config((bad,), 5, 10, 1, 60.0, n_train=20, n_test=30)
    with pytest.raises(ValueError):
        ex.sample_points(cfg)


def test_the_command_line_refuses_the_gibbs_sampler(capsys):
    from paththeory.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["nonlinear", "--sampler", "gibbs", "--out", "/nonexistent/x.json"])
    assert "nuts" in str(stop.value)
