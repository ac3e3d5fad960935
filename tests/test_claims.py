"""The Fig. 3 verdicts are computed from the numbers: fed results where each claim holds and where it
fails, :func:`fig3_claims` must say so."""

from __future__ import annotations

import numpy as np

from paththeory.experiments.claims import (
    OWN_TEST,
    U_TOLERANCE,
    claims_table,
    fig3_claims,
    reproduction_summary,
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
    ood = dict(pruning, two_lowest={"difference": -0.03 if good else 0.10, "se": 0.005, "n": 428})
    captured = {"theory": {"1": 0.3, "5": 0.5, "10": 0.7 if good else 0.2, "50": 0.9},
                "gp": {"1": 0.1, "5": 0.3, "10": 0.4, "50": 0.8}}
    return {
        "widths": [10, 100],
        "split_names": {"test": "held-out", "fashion": "Fashion-MNIST", "mnist": "MNIST"},
        "finite_vs_gp": {s: {"10": {"difference": 0.06 * sign, "se": 0.01, "n": 1000},
                             "100": {"difference": 0.0, "se": 0.01, "n": 1000}} for s in ("test", "fashion", "mnist")},
        "pc_overlap": {"k": 50, "theory": [0.5] * 50, "gp": [0.3] * 50,
                       **{f"{k}_summary": {"captured": c, "best": 0.5, "best_rank": 2} for k, c in captured.items()}},
        "temperature_trend": {"rho": -0.9 * sign, "selected": {"10": 0.5, "100": 0.1},
                              "interval": [-1.0, -0.6] if good else [0.5, 1.0], "n_bootstrap": 100},
        "order_parameter_comparison": {"agreement": {
            "theory_vs_sampled": {"relative_distance": 0.05 if good else 0.6, "noise": 0.02,
                                  "gp_relative_distance": 0.9, "mantel": _mantel(0.95, 0.001, 1.0)},
            "theory_vs_gd": _mantel(0.8 * sign, p_claim, p_against),
            "block": {"theory": {"contrast": 3.0, "mantel": _mantel(0.6 * sign, p_claim, p_against)}},
        }},
        "pruning": {"test": pruning, "fashion": ood, "mnist": ood, "one_shot_runs": pruning},
    }


def test_every_claim_holds_when_the_numbers_support_it():
    rows = fig3_claims(results(good=True))
    assert {r["verdict"] for r in rows} == {"holds"}
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == 3 + 1 + 1 + 3 + 3 * 4  # one_shot_runs pruning is not a claim row
    assert {"ood_after_pruning:fashion", "ood_after_pruning:mnist", "two_lowest:test", "pc_overlap"} <= set(ids)
    assert "one_shot_runs" not in {r["split"] for r in rows if r["id"].startswith("score_drop")}


def test_every_claim_fails_when_the_numbers_contradict_it():
    rows = fig3_claims(results(good=False))
    assert verdict_counts(rows) == {"holds": 0, "within noise": 0, "fails": len(rows), "not enough draws": 0}


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


def test_every_row_names_its_source_and_own_tests_do_not_credit_the_paper():
    for good in (True, False):
        rows = fig3_claims(results(good))
        for r in rows:
            assert r["source"], r["id"]
            from_paper = r["source"] != OWN_TEST
            assert from_paper == any(tag in r["source"] for tag in ("§", "Fig.", "App.")), r
            if not from_paper:
                assert "paper" not in r["paper"].lower() and "paper" not in r["claim"].lower(), r
        by_id = {r["id"]: r for r in rows}
        for key in ("ascending_vs_random", "descending_vs_random"):
            assert {r["source"] for i, r in by_id.items() if i.startswith(key)} == {OWN_TEST}
        assert by_id["ood_after_pruning:fashion"]["source"] == "§4.2, Fig. 3f"
        assert by_id["ood_after_pruning:mnist"]["source"] == OWN_TEST
        assert by_id["finite_vs_gp:fashion"]["source"] == "§4.2, Fig. 3b"
        assert by_id["finite_vs_gp:mnist"]["source"].startswith("App. H.2.2")
        assert by_id["score_drop:test"]["source"] == "§4.2, Fig. 3e"
        assert by_id["pc_overlap"]["source"] == "§4.2, Fig. 3d"
    assert "source" in claims_table(rows).splitlines()[0]


def test_reproduction_summary_names_every_paper_claim_that_does_not_hold():
    good, bad = fig3_claims(results(good=True)), fig3_claims(results(good=False))
    n_paper = sum(r["source"] != OWN_TEST for r in good)
    assert f"Of the {n_paper} claims credited to the paper in this table, {n_paper} hold" in reproduction_summary(good)
    assert "Every one of them reproduces" in reproduction_summary(good)
    text = reproduction_summary(bad)
    assert f"{n_paper} claims credited to the paper in this table, 0 hold" in text
    fashion = [r for r in bad if r["id"] == "ood_after_pruning:fashion"][0]
    assert f"*{fashion['claim']}* on Fashion-MNIST ({fashion['measured']}: fails)" in text
    assert "random orders" not in text  # this book's own tests are not the paper's claims
