"""The wording of the Markov-chain chapter's report (:mod:`paththeory.reports.markov`), on findings built by hand."""

from __future__ import annotations

from paththeory.experiments import markov as exp
from paththeory.reports import markov as report


def test_the_markov_report_words_the_findings():
    tiny = exp.Config(n_train=20, n_test=40, widths=(10, 30, 1000), sample_widths=(10,), two_path_sample_widths=(),
                      num_warmup=10, num_samples=10, num_chains=1, time_limit=3600.0,
                      gibbs_widths=(30,), gibbs_warmup=10, gibbs_samples=20, gibbs_chains=2)
    table = report.sizes_table(tiny)
    assert table.splitlines()[1] == "|---|---|"
    assert "P = 20 / 40" in table and "N = 10: 1 chain of 10 draws" in table and "not sampled" in table
    assert "| exact Gibbs samples, four paths | N = 30: 2 chains of 20 sweeps after 10 warm-up sweeps each |" in table

    accuracy = {"samples": {"30": 0.8, "10": 0.7}}
    assert report.sampled_points(accuracy, {"10": "nuts", "30": "gibbs"}) == (
        "Samples of the finite network: NUTS samples (squares) at N = 10; exact Gibbs samples (diamonds) at N = 30.")
    assert report.sampled_points({"samples": {}}, {}).startswith("This build draws no samples")
    # a results.json written before the Gibbs sampler has no samplers: its points are NUTS's
    assert report.sampled_points({"samples": {"10": 0.7}}) == (
        "Samples of the finite network: NUTS samples (squares) at N = 10.")

    within = exp.Variance(10, "nuts", 0.0123, 0.0125, 0.0163, 0.021, False, 0.93, 40, 800)
    assert report.variance_sentence(within) == (
        "At N = 10 the theory's predictor variance, averaged over the 40 test sequences, is 0.0123 and that of the "
        "800 NUTS draws 0.0125: the samples' is +1.6 % off, with a Monte Carlo error of 2.1 %, within two Monte "
        "Carlo errors; across sequences the two variances correlate with r = 0.93.")
    beyond = exp.Variance(30, "gibbs", 0.01, 0.02, 1.0, 0.05, True, 0.9, 40, 40)
    assert "40 Gibbs draws 0.02" in report.variance_sentence(beyond)
    assert "+100.0 % off" in report.variance_sentence(beyond)
    assert "beyond two Monte Carlo errors" in report.variance_sentence(beyond)
    few = exp.Variance(30, "gibbs", 0.01, 0.02, 1.0, None, None, 0.9, 40, 6)
    assert report.variance_sentence(few).endswith("(too few draws for a Monte Carlo error).")

    pcs = exp.PCOverlap(10, (0.2, 0.7), (0.4, 0.1), exp.Leading(0.7, 2, 0.49), exp.Leading(0.4, 1, 0.16))
    assert report.pc_overlap_sentence(pcs) == (
        "The renormalised kernel's largest overlap is 0.70, on its principal component 2, which so carries 49 % of "
        "the labels' squared norm; the GP kernel's largest is 0.40 (component 1, 16 %).")
