"""The Fig. 3 verdicts are computed from the numbers: fed results where each claim holds and where it
fails, :func:`fig3_claims` must say so."""

from __future__ import annotations

import numpy as np

from paththeory.experiments.claims import (
    U_TOLERANCE,
    claims_table,
    fig3_claims,
    verdict_counts,
)


def _mantel(r, p_greater, p_less):
    return {"r": r, "p_greater": p_greater, "p_less": p_less, "n": 16, "exact": False}


def results(good: bool) -> dict:
    """A results dict shaped like ``omniglot.run``'s, every claim holding (``good``) or failing."""
    sign = 1 if good else -1
    p_claim, p_against = (0.01, 0.99) if good else (0.99, 0.01)
    pruning = {
        "spearman": {"rho": 0.9 * sign, "p_greater": p_claim, "p_less": p_against, "n": 8, "exact": True},
        "area": {"score_ascending": 0.80 if good else 0.60, "score_descending": 0.55 if good else 0.80,
                 "random_mean": 0.70, "random_sd": 0.02,
                 "ascending_vs_random": {"p_better": p_claim, "p_worse": p_against},
                 "descending_vs_random": {"p_better": p_against, "p_worse": p_claim}},
        "cumulative": {"random": {"n": 1000}},
        "two_lowest": {"difference": 0.005 if good else 0.10, "se": 0.003, "n": 1000},
        "best_pair": {"heads": [[0, 1], [0, 3]], "cost": 0.004, "median_cost": 0.05, "n_pairs": 28},
    }
    return {
        "widths": [10, 100],
        "split_names": {"test": "held-out", "mnist": "MNIST"},
        "finite_vs_gp": {s: {"10": {"difference": 0.06 * sign, "se": 0.01, "n": 1000},
                             "100": {"difference": 0.0, "se": 0.01, "n": 1000}} for s in ("test", "mnist")},
        "temperature_trend": {"rho": -0.9 * sign, "selected": {"10": 0.5, "100": 0.1},
                              "interval": [-1.0, -0.6] if good else [0.5, 1.0], "n_bootstrap": 100},
        "order_parameter_comparison": {"agreement": {
            "theory_vs_sampled": {"relative_distance": 0.05 if good else 0.6, "noise": 0.02,
                                  "gp_relative_distance": 0.9, "mantel": _mantel(0.95, 0.001, 1.0)},
            "theory_vs_gd": _mantel(0.8 * sign, p_claim, p_against),
            "block": {"theory": {"contrast": 3.0, "mantel": _mantel(0.6 * sign, p_claim, p_against)}},
        }},
        "pruning": {"test": pruning, "mnist": pruning, "one_shot_runs": pruning},
    }


def test_every_claim_holds_when_the_numbers_support_it():
    rows = fig3_claims(results(good=True))
    assert {r["verdict"] for r in rows} == {"holds"}
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == 2 + 1 + 3 + 2 * 4  # one_shot_runs pruning is not a claim row
    assert "one_shot_runs" not in {r["split"] for r in rows if r["id"].startswith("score_drop")}


def test_every_claim_fails_when_the_numbers_contradict_it():
    rows = fig3_claims(results(good=False))
    assert verdict_counts(rows) == {"holds": 0, "within noise": 0, "fails": len(rows)}


def test_noise_decides_within_noise():
    res = results(good=True)
    res["finite_vs_gp"]["test"]["10"] = {"difference": 0.015, "se": 0.01, "n": 1000}
    res["temperature_trend"]["interval"] = [-1.0, 0.2]
    res["order_parameter_comparison"]["agreement"]["theory_vs_sampled"]["relative_distance"] = U_TOLERANCE + 0.01
    res["pruning"]["test"] = dict(res["pruning"]["test"], spearman={"rho": 0.5, "p_greater": 0.09, "p_less": 0.93,
                                                                      "n": 8, "exact": True})
    by_id = {r["id"]: r["verdict"] for r in fig3_claims(res)}
    for key in ("finite_vs_gp:test", "temperature_trend", "u_sampled", "score_drop:test"):
        assert by_id[key] == "within noise", key
    assert by_id["finite_vs_gp:mnist"] == "holds"


def test_missing_parts_give_no_rows_and_the_table_prints():
    res = results(good=True)
    res["order_parameter_comparison"]["agreement"]["theory_vs_sampled"] = None  # no NUTS in this run
    rows = fig3_claims(res)
    assert "u_sampled" not in {r["id"] for r in rows}
    table = claims_table(rows)
    assert table.count("\n") == len(rows) + 1 and "**holds**" in table
    text = claims_table(rows, markdown=False)
    assert text.splitlines()[0].startswith("claim") and "holds" in text
    assert fig3_claims({"widths": [10]}) == []
    assert np.isfinite([r["value"] for r in rows]).all()
