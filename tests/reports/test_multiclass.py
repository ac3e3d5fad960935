"""The words of the many-outputs chapter (paththeory.reports.multiclass): one test that they format the findings'
numbers and verdicts (tests/tasks/test_multiclass.py tests the findings themselves)."""

from __future__ import annotations

from paththeory.reports import multiclass as report
from tests.tasks.test_multiclass import fake_results, with_findings


def test_the_multiclass_report_words_the_findings():
    results = with_findings(fake_results())
    table = report.sampled_table(results)
    assert "| 30 | Gibbs | 0.40 | 5.0% (2.0%) | 5.0% (2.0%) | 14.9% (6.8%) | 1.020 | 205 | 55.3 | 4 s |" in table
    assert "| 10 | NUTS |" in table
    assert ("the theory's U is resolved at N = 10 (29.9 ± 2.0% debiased) and resolved at N = 30 (4.6 ± 2.2% "
            "debiased)") in report.resolution_sentence(results)
    assert "| 30 | Kronecker | 3.5% (< 7.8%) | 3.5% (< 7.8%) | 0.667 |" in report.comparison_table(results)
    assert "| 30 | samples (Gibbs) |  |  | 0.500 |" in report.comparison_table(results)
    assert "| 30 | GP | 0.167 | 0.667 | +50.0 ± 22.4 |" in report.accuracy_table(results)
    assert report.comparison_sentence(results) == (
        "Of 3 comparisons of mean predictors (the GP, independent outputs and the nearest Kronecker U, at 1 width "
        "with C|Π|/N ≤ 0.4), the samples lie closer to the full multi-output theory beyond twice the Monte-Carlo "
        "noise in 2; not beyond it against the nearest Kronecker U at N = 30 (within noise: 3.5% vs 5.0% from the "
        "samples, noise 2.0%).")
    assert report.scaling_sentence(results).endswith(
        "is -11.0 ± 2.8 points (the SE of independent test sets), so on this task family, at these sizes, finite "
        "width helps less with more classes. The tasks differ in more than C: each C has its own classes, one "
        "training set (P = 40, 60, 100) and its own width (N = 26.7, 40.0, 66.7); at C = 5 the theory scores "
        "0.600 and the GP 0.550.")
    assert "| 5 | 100 | 66.7 | 0.30 | 0.20 | 0.600 | 0.550 | -3.7 ± 2.2 |" in report.scaling_table(results)
    assert report.decoupling_sentence(results).startswith("Both deviations are below $10^{-6}$ of the live block's")
    assert report.block_sentence(results).startswith(
        "At N = 30 the Frobenius norm of the off-diagonal output blocks of U, relative to that of the diagonal "
        "blocks, is 0.00 in the theory's and 0.14 in the Gibbs samples'. Part of that is the basis: in one whose "
        "first output is the label-free direction (1, …, 1)/√C, that output's blocks with the others are $")
    assert report.block_sentence(results).endswith(
        "in the Gibbs samples': it decouples, and the output-output coupling lies among the other C − 1 outputs.")
    assert report.sampler_sentence(results) == (
        "This run samples N = 10 with NUTS (2 chains of 80 draws after 60 warm-up steps) and N = 30 with the exact "
        "Gibbs sampler (2 chains of 400 sweeps after 100 warm-up sweeps).")
    shipped = {"sampler": "gibbs", "profile": "smoke", "config": results["config"], "date": "2026-11-29",
               "command": "python -m paththeory multiclass --profile smoke --sampler gibbs", "seconds": 600.0,
               "machine": "x86_64, 2 CPU cores, JAX on cpu"}
    assert report.sampler_sentence({**results, "records": {"gibbs": shipped}}).endswith(
        "The Gibbs samples (smoke sizes) were drawn by `python -m paththeory multiclass --profile smoke --sampler "
        "gibbs` on 2026-11-29 (x86_64, 2 CPU cores, JAX on cpu, 10 minutes) and ship with the package; the theory "
        "is solved as the page is built.")
    assert "| 30 | 74 (1.025) | 196 (1.019) | 3.6–4.0 | 14–17 | 4.0–4.2× | Gibbs |" in (
        report.sampler_speed_table(results))
    assert "| 20 |" in report.sampler_speed_table() and "this profile" not in report.sampler_speed_table()
