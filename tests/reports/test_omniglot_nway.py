"""The words of the Omniglot N-way section (paththeory.reports.omniglot_nway): one test that they format the findings'
numbers and verdicts (tests/experiments/test_omniglot_nway.py tests the findings themselves)."""

from __future__ import annotations

from paththeory.experiments import omniglot_nway as nway
from paththeory.experiments.records import jsonable
from paththeory.reports import omniglot_nway as report
from tests.experiments.test_omniglot_nway import attention_measurements, control_results, way_results


def with_findings(results: dict) -> dict:
    return {**results, "findings": jsonable(nway.findings(results))}


def test_the_omniglot_nway_report_words_the_findings():
    results = with_findings(control_results())
    text = report.controls_sentences(results)
    assert "(400 sequences of the evaluation alphabets (one-shot runs), P = 120) the GP scores 0.700" in text
    assert "With fresh label vectors: the GP does not change beyond noise (-0.010 ± 0.020, now above chance)" in text
    assert "the theory at N = 10 falls (-0.250 ± 0.020, now at chance)" in text
    assert ("Changing the label vectors alone leaves the GP (0.690 ± 0.020) and the theory at N = 10 "
            "(0.740 ± 0.020) above chance.") in text
    assert text.endswith("Moving the query alone brings every predictor that is above chance in the trained format "
                         "to chance.")
    table = report.controls_table(results)
    assert "0.500 ± 0.020 (-0.250 ± 0.020)" in table and "| 0.5, 0.25 |" in table
    for moved, end in (((0.6, 0.5, (-0.1, -0.25)), "Moving the query alone brings the theory at N = 10 to chance, "
                        "while the GP (0.600 ± 0.020) stays above chance."),
                       ((0.53, 0.53, (-0.01, -0.02)), "Moving the query alone leaves the GP and the theory at N = 10 "
                        "at chance without a significant drop."),
                       ((0.40, 0.40, (-0.3, -0.35)), "in the trained format to or below chance.")):
        assert report.controls_sentences(with_findings(control_results(moved=moved))).endswith(end)
    assert report.controls_sentences(with_findings(control_results(trained=(0.52, 0.51)))).endswith(
        "cannot tell the two apart.")
    results["controls"]["formats"]["trained format"]["converged"]["10"] = False
    assert "(not converged)" in report.controls_table(results)

    results = with_findings(way_results())
    assert report.verdict_sentences(results, "test") == (
        "**5-way** (held-out characters, chance 0.200): the GP scores 0.210 ± 0.020, at chance; at N = 10 the theory "
        "scores 0.200 ± 0.020, at chance and not distinguishable from the GP (-0.010 ± 0.010).")
    assert "0.600 ± 0.024, above chance and better than the GP (+0.100 ± 0.010)" in report.verdict_sentences(results)
    assert "0.600 ± 0.024" in report.accuracy_table(results)

    ways = attention_measurements()
    att = {"ways": ways, "findings": jsonable(nway.attention_findings(ways))}
    text = report.query_attention_sentences(att)
    assert "C = 2: 1 of 2 heads above chance (1.2)" in text
    assert "C = 5: no head above chance (largest 0.20 ± 0.02, head 1.1; chance 0.20)" in text
    assert "stop doing so at C = 5" in text
    assert "Head 1.2 gives the query's drawing 0.80 ± 0.010" in text
    assert "at C = 5 it gives the query 0.05 ± 0.010 and tokens 33–48 0.40 ± 0.020 (a blind head: 0.17)" in text
    ways["2"]["share"] = [[0.5, 0.5]]
    att = {"ways": ways, "findings": jsonable(nway.attention_findings(ways))}
    assert "does not explain the failure at more ways" in report.query_attention_sentences(att)
    assert "| 5 | on query / tokens 33–48 | 0.17 | 0.30 / 0.10 | 0.05 / 0.40 |" in report.query_attention_table(att)
