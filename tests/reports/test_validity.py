"""The words of the validity figure (paththeory.reports.validity, with the provenance sentence of
paththeory.reports.records), checked once against findings built by hand; the verdicts themselves are tested as
numbers in tests/experiments/test_validity.py."""

from __future__ import annotations

from paththeory.experiments import validity
from paththeory.reports import validity as report


def _row(task, width, distance, noise, gp, diff, se, sampler="nuts", r_hat=1.01):
    return validity.row(sampler, task, width, 4 if task == "markov" else 16, distance, noise, None, gp,
                        {"difference": diff, "se": se, "n": 500}, 0.9, 0.9 + diff, r_hat, 100.0)


def test_the_validity_report_words_the_findings():
    rows = [_row("markov", 10, 0.05, 0.04, 0.5, 0.002, 0.004), _row("omniglot", 10, 0.3, 0.05, 0.6, -0.05, 0.01),
            _row("markov", 1000, 0.005, 0.002, 0.05, 0.0, 0.002, sampler="gibbs", r_hat=1.08),
            _row("omniglot", 40, 0.02, 0.01, 0.8, 0.0, 0.01, sampler="gibbs")]
    found = validity.findings(rows)
    text = report.summary(found)
    assert "The hidden Markov chain (4 paths), NUTS: the distance of U is below 0.130 (not resolved: 0.050 against " \
           "a noise floor of 0.040) at |Π|/N = 0.4 (N = 10; 0.10 of the GP point's distance)" in text
    assert "0.296 ± 0.051 at |Π|/N = 1.6 (N = 10; 0.50 of the GP point's distance)" in text  # sqrt(0.3² − 0.05²)
    assert "The hidden Markov chain (4 paths), Gibbs: the distance of U is 0.005 ± 0.002" in text  # sqrt(21e-6)
    assert "R-hat 1.08: the chains have not fully mixed" in text
    assert "differs beyond two paired standard errors at N = 10 (-5.0 ± 1.0 points)" in text
    assert text.count("no accuracy difference is beyond two paired standard errors") == 3
    assert report.summary(validity.findings([])).startswith("No point was sampled")
    pair = report.same_ratio(found)
    assert pair.startswith("Compared at equal |Π|/N: at |Π|/N = 0.4 the 16-path Omniglot point (N = 40, Gibbs) "
                           "cannot be ordered against the 4-path Markov one (N = 10, NUTS): below 0.040 (not "
                           "resolved: 0.020 against a noise floor of 0.010) against below 0.130")  # two limits
    below = validity.findings([rows[0], _row("omniglot", 40, 0.4, 0.01, 0.8, 0.0, 0.01)])
    assert "(N = 40, NUTS) lies above the 4-path Markov one" in report.same_ratio(below)
    assert report.same_ratio(validity.findings(rows[:1])).startswith("No value of |Π|/N is sampled for both tasks")
    lines = report.table(rows).splitlines()
    assert len(lines) == 6 and "sampler" in lines[0] and "| NUTS |" in lines[2] and "| Gibbs |" in lines[4]
    assert "+0.2 ± 0.4 pts" in lines[2] and "0.050 (0.040)" in lines[2] and "1.08 / 100" in lines[4]
    assert "n/a" in report.table([_row("markov", 10, 0.1, 0.01, 1.0, 0.0, 0.01, r_hat=None)])
    prov = {"sampler": "gibbs", "profile": "smoke", "command": "python -m paththeory validity --profile smoke "
            "--sampler gibbs", "date": "2026-01-02", "machine": "x86_64, 2 CPU cores", "seconds": 780.0,
            "config": {**validity.SETTINGS["smoke"].__dict__, "gibbs_omniglot_widths": []}}
    text = report.provenance_text({"provenance": prov})
    assert text == ("The Gibbs samples (smoke sizes) were drawn by `python -m paththeory validity --profile smoke "
                    "--sampler gibbs` on 2026-01-02 (x86_64, 2 CPU cores, 13 minutes) and ship with the package; "
                    "the theory is solved as the page is built. Each point is 4 chains of 800 draws after 200 "
                    "warm-up sweeps. Markov: P = 100 training and 500 test sequences, T = 0.01, N = 100, 300, 1000.")
    fresh = report.provenance_text({"provenance": {**prov, "sampler": "nuts", "command": "sampled in this run"}})
    assert fresh.startswith("The NUTS samples (smoke sizes) were drawn while this page was built. Each point is 4 "
                            "chains of 300 draws after 200 warm-up steps. Markov:")
    assert "Omniglot: P = 300 training sequences (training characters) and 500 test sequences (held-out characters), " \
           "T = 0.25, N = 10, 20." in fresh
