"""The claims' words (:mod:`paththeory.reports.claims`) format findings built by hand: the table's cells per
measure and evidence, the reproduction summary, the network sentence and the interpretation."""

from __future__ import annotations

import dataclasses

from paththeory.experiments.claims import (
    COMPARABLE_TOLERANCE,
    OWN_TEST,
    Evidence,
    Interpretation,
    NetworkHeader,
    claim_row,
    paired_claim,
    reproduction,
    u_claim,
)
from paththeory.reports import claims as report


def test_the_claims_report_words_the_findings():
    d = {"difference": -0.026, "se": 0.01, "n": 428}
    finite = dataclasses.replace(paired_claim("finite_vs_gp:fashion", "finite width (N = 10) beats the GP", "fashion",
                                              d, "gap kept", "§4.2, Fig. 3b"), split_name="Fashion-MNIST")
    mnist = dataclasses.replace(finite, id="finite_vs_gp:mnist", split="mnist", split_name="MNIST", value=-0.01,
                                tolerance=COMPARABLE_TOLERANCE, verdict="holds")
    trend = claim_row("temperature_trend", "the selected temperature grows as N shrinks", None, -0.9, "holds", "T",
                      "App. H.2.1", Evidence("bootstrap", low=-1.0, high=-0.6, resamples=100), "temperature_trend",
                      {"10": 0.5, "100": 0.1})
    u = u_claim("u_sampled", "NUTS samples match the theory's U", None, 0.05, 0.02, "agree", "§4.2, Fig. 3c",
                gp_distance=0.9, mantel_r=0.95)
    gd = claim_row("u_gd", "the trained network's U has the theory's pattern", None, 0.8, "holds", "kept",
                   "§4.2, Fig. 3c", Evidence("permutation", p=0.0004), "mantel")
    block = claim_row("u_block", "U is block-structured", None, 0.6, "fails", "blocks", "§4.2, Fig. 3c",
                      Evidence("permutation", p=0.99), "mantel", {"contrast": 3.0})
    drop = claim_row("score_drop:test", "a head's score predicts its single-head drop", "test", 0.9, "holds", "rho",
                     "§4.2, Fig. 3e", Evidence("permutation", p=0.01, exact=True), "rho")
    asc = claim_row("ascending_vs_random:test", "pruning lowest score first beats random orders", "test", 0.1,
                    "within noise", "not tested", OWN_TEST, Evidence("random_orders", p=0.2, n=1000, sd=0.02),
                    "mean_accuracy", {"score": 0.8, "random": 0.7})
    two = claim_row("two_lowest:test", "pruning the two lowest-scored heads costs <= 2 points", "test", 0.005,
                    "holds", "marginal", "§4.2, Fig. 3e, f", Evidence("paired", se=0.003), "points",
                    {"cheapest_pair": 0.004, "n_pairs": 28})
    cut = claim_row("u_sampled:x", "U matches", None, None, "not enough draws", "agree", "§4.2", Evidence(
        "not_enough_draws", diagnostics={"complete": False, "draws_used": 3, "draws_planned": 10, "stopped": {
            "chain": 0, "time_limit": 1.0, "phase": "sampling", "iteration": 3, "of": 10}}), "distance")
    claims = (finite, trend, u, gd, block, drop, asc, two, cut)

    table = report.claims_table(claims)
    assert table.splitlines()[0] == "| claim | ours (noise) | verdict | the paper (source) |"
    for cell in ("| finite width (N = 10) beats the GP (Fashion-MNIST) | -2.6 points (paired SE 1.0 points on 428) |",
                 "rho(N, T) = -0.90; T = 0.5, 0.1 for N = 10, 100 (bootstrap 95 % [-1.00, -0.60] (100 resamples))",
                 "5.0%; Mantel r = 0.95 (Monte Carlo 2.0% (GP point: 90%))", "Mantel r = 0.80 (permutation p = $4\\times10^{-4}$)",
                 "Mantel r = 0.60; contrast 3.00 (permutation p = 0.990)", "rho = +0.90 (exact permutation p = 0.010)",
                 "mean accuracy 0.800 vs random 0.700 (p = 0.200 against 1000 random orders (sd 2.0))",
                 "+0.5 points; cheapest of all 28 pairs +0.4 (paired SE 0.3 points)", "NUTS incomplete",
                 "| **within noise** | not tested (this book's own test) |"):
        assert cell in table, cell
    text = report.claims_table(claims, markdown=False)
    assert text.splitlines()[0].split() == ["claim", "split", "ours", "noise", "verdict", "the", "paper", "source"]
    # a long table folds behind a line that counts its verdicts; the table itself is unchanged inside
    many = claims * 2
    folded = report.claims_table(many)
    assert len(many) > report.FOLD_ROWS and folded.startswith("````{admonition} ")
    counts = [sum(c.verdict == v for c in many) for v in ("holds", "within noise", "fails", "not enough draws")]
    assert folded.splitlines()[0] == (f"````{{admonition}} {counts[0]} of {len(many)} rows hold, {counts[1]} within "
                                      f"noise, {counts[2]} fail, {counts[3]} not enough draws (open for the table)")
    assert ":class: dropdown" in folded and folded.rstrip().endswith("````")
    assert "| claim | ours (noise) | verdict | the paper (source) |" in folded

    summary = report.reproduction_summary(reproduction(claims))
    assert summary.startswith("Of the 8 claims credited to the paper in this table, 5 hold in this build; 2 are "
                              "contradicted.")
    assert ("Not reproduced here (the measurement contradicts the paper beyond its noise): *finite width (N = 10) "
            "beats the GP* on Fashion-MNIST (-2.6 points); *U is block-structured* (Mantel r = 0.60; contrast 3.00)."
            in summary)
    assert "Not measured (the sampling run stopped before all its draws): *U matches* (NUTS incomplete" in summary
    assert report.reproduction_summary(reproduction([trend])) == (
        "Of the 1 claim credited to the paper in this table, 1 holds in this build. Every one of them reproduces.")
    assert report.reproduction_summary(reproduction([asc])).startswith("None of these rows is a claim of the paper")

    assert report.network_summary(NetworkHeader(2, 4, None, "seed 1", 41000, None, None)) == (
        "The network behind these results (L = 2, H = 4) is the checkpoint shipped with the book (seed 1), trained "
        "for 41000 steps.")
    assert report.network_summary(NetworkHeader(1, 4, "retrained in this run", None, 50, 2.0, 900)) == (
        "The network behind these results (L = 1, H = 4) is not the shipped checkpoint but one retrained in this "
        "run, trained for 50 steps, cut short by the 2 min time limit it was given (900 were planned).")

    text = report.network_interpretation(Interpretation(10, (finite, mnist), gd, block, 0.96, 0.82, True, drop, asc))
    assert text == (
        "At N = 10, the smallest width, the theory is behind the GP on Fashion-MNIST (-2.6 points, paired SE 1.0) "
        "and not worse than the GP by more than 2 points (the paper reports the two as comparable) on MNIST "
        "(-1.0 points, paired SE 1.0). The trained network's U shares the theory's pattern (Mantel r = 0.80, "
        "p = $4\\times10^{-4}$). The theory's U is not measurably block-structured by first-layer head (mean |U| within blocks "
        "/ between them: 3.00), and paths through the same first-layer head do carry more similar inputs (mean "
        "cosine 0.96 against 0.82). On held-out characters the head scores rank the single-head drops (Spearman "
        "rho = +0.90, p = 0.010). Pruning lowest score first keeps no measurably different accuracy from random "
        "orders (mean accuracy along the curve 0.800 against 0.700).")
    assert report.network_interpretation(Interpretation(None, (), None, None, None, None, None, None, None)) == ""
