"""The Fig. 3 verdicts are computed from the numbers: fed results where each claim holds and where it
fails, :func:`fig3_claims` must say so."""

from __future__ import annotations

import numpy as np

from paththeory.experiments.claims import (
    COMPARABLE_TOLERANCE,
    OWN_TEST,
    TRANSFERRED_TEST,
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
        "four_lowest": {"difference": 0.008 if good else 0.12, "se": 0.004, "n": 1000},
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
    assert f"*{fashion['claim']}* on Fashion-MNIST ({fashion['measured']})" in text
    assert "Not reproduced here" in text and "Not decided" not in text
    assert "random orders" not in text  # this book's own tests are not the paper's claims


def test_reproduction_summary_follows_the_results_and_never_calls_noise_a_failure():
    res = results(good=True)
    n_paper = sum(r["source"] != OWN_TEST for r in fig3_claims(res))
    res["finite_vs_gp"]["fashion"]["10"] = {"difference": 0.01, "se": 0.01, "n": 428}  # within noise
    text = reproduction_summary(fig3_claims(res))
    assert f"{n_paper - 1} hold in this build and none is contradicted" in text
    assert "Not reproduced" not in text
    assert "Not decided by this build's noise" in text and "on Fashion-MNIST (+1.0 points)" in text
    res["finite_vs_gp"]["fashion"]["10"] = {"difference": -0.05, "se": 0.01, "n": 428}  # contradicted
    text = reproduction_summary(fig3_claims(res))
    assert "1 is contradicted" in text and "Not reproduced here" in text and "(-5.0 points)" in text
    assert "Not decided" not in text


def _finite_rows(heads, differences, se=0.005):
    res = results(good=True)
    res["heads"] = heads
    res["finite_vs_gp"] = {s: {"10": {"difference": d, "se": se, "n": 1000}} for s, d in differences.items()}
    return {r["split"]: r for r in fig3_claims(res) if r["id"].startswith("finite_vs_gp")}


def test_finite_vs_gp_main_network_on_mnist_is_the_papers_comparable():
    # App. H.2.2: on MNIST the L = 2, H = 4 network and its GP are comparable; §4.2: the gap holds on
    # Fashion-MNIST. A zero difference is then "not worse than the GP" (holds) on MNIST only.
    rows = _finite_rows([4, 4], {"test": 0.0, "fashion": 0.0, "mnist": 0.0})
    assert rows["mnist"]["source"] == "App. H.2.2" and "comparable" in rows["mnist"]["paper"]
    assert "not worse than the GP" in rows["mnist"]["claim"] and rows["mnist"]["verdict"] == "holds"
    assert "symbols were lost" in rows["mnist"]["paper"]
    assert rows["fashion"]["source"] == "§4.2, Fig. 3b" and "beats the GP" in rows["fashion"]["claim"]
    assert rows["fashion"]["verdict"] == rows["test"]["verdict"] == "within noise"
    # "not worse" fails only when finite width is worse by more than the tolerance, beyond the noise
    worse = _finite_rows([4, 4], {"mnist": -COMPARABLE_TOLERANCE - 0.02})["mnist"]
    assert worse["verdict"] == "fails"
    assert _finite_rows([4, 4], {"mnist": -COMPARABLE_TOLERANCE})["mnist"]["verdict"] == "within noise"
    assert _finite_rows([4, 4], {"mnist": 0.05})["mnist"]["verdict"] == "holds"
    # results without "heads" are the main network's
    res = results(good=True)
    assert {r["id"]: r for r in fig3_claims(res)}["finite_vs_gp:mnist"]["source"] == "App. H.2.2"


def test_finite_vs_gp_deeper_network_is_sourced_to_fig6_and_comparable_on_fashion():
    rows = _finite_rows([3, 3, 3], {"test": 0.0, "one_shot_runs": 0.0, "fashion": 0.0, "mnist": 0.0})
    assert {r["source"] for r in rows.values()} == {"App. H.2.2, Fig. 6"}
    assert "not worse than the GP" in rows["fashion"]["claim"] and rows["fashion"]["verdict"] == "holds"
    assert "comparable" in rows["fashion"]["paper"] and "symbols were lost" in rows["fashion"]["paper"]
    for split in ("test", "one_shot_runs", "mnist"):
        assert "beats the GP" in rows[split]["claim"] and rows[split]["verdict"] == "within noise", split
    assert "preserved" in rows["mnist"]["paper"]
    # the same numbers on the main network: Fashion-MNIST is the paper's "gap preserved" there
    assert _finite_rows([4, 4], {"fashion": 0.0})["fashion"]["verdict"] == "within noise"
    assert _finite_rows([3, 3, 3], {"fashion": -0.05})["fashion"]["verdict"] == "fails"


def test_a_network_the_paper_reports_no_accuracy_for_gets_own_tests():
    rows = _finite_rows([8, 8], {"test": 0.06, "fashion": 0.06, "mnist": 0.06})
    assert {r["source"] for r in rows.values()} == {OWN_TEST}
    assert all("paper" not in r["paper"].lower() for r in rows.values())
    res = results(good=True)
    res["heads"] = [8, 8]
    by_id = {r["id"]: r for r in fig3_claims(res)}
    assert by_id["score_drop:test"]["source"] == "App. H.2.3, Fig. 7c"
    assert by_id["ood_after_pruning:fashion"]["source"] == "App. H.2.3, Fig. 7d"
    assert by_id["u_gd"]["paper"].startswith("shown for the L = 2, H = 4 network (§4.2, Fig. 3c)")
    assert by_id["u_gd"]["source"] == TRANSFERRED_TEST
    # App. H.2.3 claims a marginal drop for up to four heads of this network: the row measures four
    four = by_id["two_lowest:test"]
    assert four["claim"].startswith("pruning the four lowest-scored heads") and four["value"] == 0.008
    assert four["source"] == "App. H.2.3, Fig. 7d"
    assert "Fig. 7d" in by_id["ascending_vs_random:test"]["paper"]


def test_rows_transferred_to_another_network_are_not_counted_as_the_papers():
    """A §4.2 claim tested on the deeper network is the book's test: the summary leaves it out."""
    res = results(good=False)
    res["heads"] = [3, 3, 3]
    rows = fig3_claims(res)
    transferred = [r for r in rows if r["source"] == TRANSFERRED_TEST]
    assert {r["id"] for r in transferred} >= {"two_lowest:test", "u_gd", "score_drop:test"}
    assert all(r["paper"].startswith("shown for the L = 2, H = 4 network (") for r in transferred)
    counted = [r for r in rows if r["source"] not in (OWN_TEST, TRANSFERRED_TEST)]
    assert {r["source"] for r in counted} == {"App. H.2.2, Fig. 6"}
    assert f"Of the {len(counted)} claims credited to the paper" in reproduction_summary(rows)


def test_the_network_sentence_follows_the_results_header():
    """The chapters print which network produced a page from its results: the shipped checkpoint, or a
    network retrained in the run (the ``paper`` profile, ``retrain=True``)."""
    from paththeory.experiments.claims import network_summary

    res = results(good=True)
    res["network"] = {"selection": "the project's network omniglot_l2h4_seed1", "steps_done": 41000}
    shipped = network_summary(res)
    assert "shipped with the book" in shipped and "omniglot_l2h4_seed1" in shipped and "41000 steps" in shipped
    res["network"] = {"provenance": "retrained in this run with the shipped checkpoint's configuration",
                      "steps_done": 5000}
    retrained = network_summary(res)
    assert "not the shipped checkpoint" in retrained and "retrained in this run" in retrained
    assert "5000 steps" in retrained and retrained != shipped
    res["heads"] = [3, 3, 3]
    assert "(L = 3, H = 3)" in network_summary(res)


def test_fig2_claims_follow_the_markov_results():
    """The Fig. 2 rows and the sentence written from them change with the numbers (a results dict
    shaped like ``markov.run``'s; the experiment itself is run in tests/experiments/test_experiment_markov.py)."""
    from paththeory.experiments.claims import fig2_claims

    def paired(d, se=0.01, n=1000):
        return {"difference": d, "se": se, "n": n}

    def markov_results(d: float) -> dict:
        return {"widths": [10, 1000],
                "finite_vs_gp": {k: {"10": paired(d), "1000": paired(0.0)}
                                 for k in ("gp_all", "gp_good", "gp_good_denoising")},
                "gp_vs_gp": {"good_vs_all": paired(d), "good_denoising_vs_good": paired(d)},
                "pc_overlap": {"width": 10, "theory": [0.5] * 30, "gp": [0.2] * 30},
                "sampled_vs_theory": {"10": {"accuracy": paired(d / 10, se=0.002), "relative_distance": 0.1, "noise": 0.02,
                                             "gp_relative_distance": 0.9, "mantel": _mantel(0.9, 0.01, 0.99)}},
                "sampling_diagnostics": {"10": {"complete": True}},
                "two_path": {"sigma_perp": 5.0, "denoising": "uniform",
                             "finite_vs_gp": {"gp_good_denoising": {"10": paired(d)}},
                             "sampled_vs_theory": {}, "sampling_diagnostics": {}}}

    good, bad, noisy = (fig2_claims(markov_results(d)) for d in (0.05, -0.05, 0.005))
    assert all(r["source"] != OWN_TEST for r in good)
    assert {r["verdict"] for r in good} == {"holds"}
    assert {r["verdict"] for r in bad if r["id"].startswith(("finite", "gp_"))} == {"fails"}
    assert {r["verdict"] for r in noisy if r["id"].startswith(("finite", "gp_"))} == {"within noise"}
    assert "Every one of them reproduces" in reproduction_summary(good)
    assert "Not reproduced here" in reproduction_summary(bad) and "-5.0 points" in reproduction_summary(bad)
    assert "Not decided by this build's noise" in reproduction_summary(noisy)
    assert {r["id"]: r for r in good}["finite_vs_gp_good_denoising:two_path"]["source"] == "§4.1, Fig. 2e; App. G.2.2, Fig. 5c"
    # each sampled row names its width's sampler: NUTS when the results do not say (written before Gibbs)
    assert "the NUTS samples' U" in {r["id"]: r for r in good}["u_sampled:four_paths:10"]["claim"]
    gibbs = {r["id"]: r for r in fig2_claims({**markov_results(0.05), "samplers": {"10": "gibbs"}})}
    assert "the Gibbs samples' U" in gibbs["u_sampled:four_paths:10"]["claim"]
    assert "the Gibbs samples' accuracy" in gibbs["accuracy_sampled:four_paths:10"]["claim"]


def test_the_network_interpretation_follows_the_results():
    from paththeory.experiments.claims import network_interpretation

    good, bad = results(good=True), results(good=False)
    text = network_interpretation(good)
    assert "the theory is ahead of the GP on held-out (+6.0 points, paired SE 1.0), Fashion-MNIST" in text
    assert "The trained network's U shares the theory's pattern (Mantel r = 0.80" in text
    assert "The theory's U is block-structured by first-layer head (mean |U| within blocks" in text
    assert "head scores rank the single-head drops (Spearman rho = +0.90" in text
    assert "Pruning lowest score first keeps more accuracy than random orders" in text
    text = network_interpretation(bad)
    assert "the theory is behind it on held-out (-6.0 points" in text
    assert "is anti-correlated with the theory's" in text and "is not measurably block-structured" in text
    assert "rank in reverse" in text and "keeps less accuracy than random orders" in text
    noisy = results(good=True)
    noisy["finite_vs_gp"]["mnist"]["10"] = {"difference": 0.01, "se": 0.01, "n": 1000}
    assert "within two standard errors of it on MNIST (+1.0 points" in network_interpretation(noisy)
    similar = {"same_first": 0.96, "different_first": 0.82, "mantel": _mantel(0.8, 0.0001, 1.0)}
    assert "do carry more similar inputs (mean cosine 0.96 against 0.82)" in network_interpretation(
        dict(good, path_similarity=similar))
    unlike = dict(similar, same_first=0.80)
    assert "do not measurably carry more similar inputs" in network_interpretation(dict(good, path_similarity=unlike))
    assert network_interpretation({"widths": [10]}) == ""
