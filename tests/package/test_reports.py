"""The reports (paththeory/reports/) format findings and compute nothing: no statistics imported, no array reduced.
And one test per report checks its wording against findings built by hand."""

from __future__ import annotations

import ast
from pathlib import Path

from paththeory.experiments.prefactor import findings, point

REPORTS = Path(__file__).resolve().parents[2] / "paththeory" / "reports"
#: Modules a report may not import: the statistics, and the libraries that compute.
FORBIDDEN_IMPORTS = ("paththeory.experiments.stats", "numpy", "scipy", "jax")
#: Calls that reduce numbers to a statistic.
REDUCTIONS = {"sum", "mean", "median", "std", "var", "average", "min", "max", "argmin", "argmax", "polyfit", "lstsq",
              "power_law_fit", "weighted_mean", "debiased_distance", "agreement_test"}


def computing(source: str) -> list[str]:
    """What in a report's ``source`` computes: forbidden imports and reducing calls, one line each."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.startswith(FORBIDDEN_IMPORTS)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [f"from {node.module} import {n.rsplit('.', 1)[1]}" for n in names
                      if node.module.startswith(FORBIDDEN_IMPORTS) or n.startswith(FORBIDDEN_IMPORTS)]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in REDUCTIONS:
                found.append(f"line {node.lineno}: {name}(...)")
    return found


def test_reports_compute_nothing():
    files = sorted(REPORTS.glob("*.py"))
    assert len(files) >= 2
    problems = {p.name: computing(p.read_text()) for p in files}
    assert not any(problems.values()), problems


def test_the_check_sees_a_report_that_computes():
    bad = ("import numpy as np\nfrom paththeory.experiments import stats\n"
           "def table(f):\n    return f'{np.mean(f.values):.2f} {max(f.values)}'\n")
    found = computing(bad)
    assert any("numpy" in f for f in found) and any("stats" in f for f in found)
    assert any("mean" in f for f in found) and any("max" in f for f in found)


def test_the_prefactor_report_formats_the_findings_numbers():
    from paththeory.reports import prefactor as report

    pts = [point(n, k, w, "gibbs", 0.3 * k / w, 0.006 * k / w, 40, True)
           for n, k in (("markov", 4), ("omniglot", 16)) for w in (20, 60, 200)]
    pts.append(point("skip", 9, 30, "nuts", 0.02, 0.015, 20, True))
    pts += [point("outputs", 12, w, "gibbs", 2.4 / w, 0.1 / w, 40, True, outputs=3) for w in (20, 60)]
    f = findings(pts)
    text = report.growth_sentence(f)
    g = f.growth
    assert f"η = {g.eta:.2f} ± {g.eta_se:.2f}" in text and "growth like the number of paths" in text
    assert "Markov task (4 paths), Omniglot (16 paths):" in text  # one output each: the three outputs stand apart
    assert "| three outputs | 3 × 4 | 20 | Gibbs |" in report.points_table(f)
    assert "| three outputs | 3 × 4 |" in report.scaling_table(f)
    pts += [point("tiny", 2, w, "gibbs", 3.0 / w, 0.05 / w, 40, True) for w in (20, 60)]
    off = findings(pts)
    assert off.growth.size_explains is False and "does not describe these prefactors (p = " in (
        report.growth_sentence(off))
    table = report.scaling_table(f)
    assert f"{f.networks[0].prefactor:.2f} ± {f.networks[0].prefactor_se:.2f} (N = 20, 60, 200)" in table
    assert "undetermined (0 resolved widths)" in table  # the skip network: one unresolved point
    assert "< " in report.points_table(f)  # its upper limit
    assert report.growth_sentence(findings(pts[:3])).startswith("Undetermined")


def test_the_prefactor_report_words_the_prediction_check():
    from paththeory.experiments.prefactor import Prediction, check_prediction
    from paththeory.reports import prefactor as report

    pts = [point("markov", 4, w, "gibbs", 1.0 / w, 0.02 / w, 40, True) for w in (20, 100)]
    good = findings(pts, [Prediction("markov", 4, w, 1.0 / w) for w in (20, 100)])
    bad = findings(pts, [Prediction("markov", 4, w, 2.0 / w) for w in (20, 100)])
    c = good.checks[0]
    assert f"| Markov task | 4 | {c.chi2:.1f} / 2 | {c.p:.2f} | 0 of 0 | consistent (not rejected) |" in report.prediction_table(good)
    assert "disagree (p < 0.05)" in report.prediction_table(bad)
    assert "| 1.00 |" in report.points_table(good)  # N d predicted
    assert check_prediction(pts, bad.predictions, "markov").agrees is False
    small = [point("omniglot", 16, w, "nuts", 1.0 / w, 0.02 / w, 40, True) for w in (10, 20)]
    check = check_prediction(small, [Prediction("omniglot", 16, w, 1.0 / w) for w in (10, 20)], "omniglot")
    assert check.below_paths == (10,) and good.checks[0].below_paths == ()
    flagged = findings(small, [Prediction("omniglot", 16, w, 1.0 / w) for w in (10, 20)])
    assert r"consistent (not rejected); counts N = 10 < \|Π\|, outside the regime |" in report.prediction_table(flagged)


def test_the_prefactor_report_words_the_common_width():
    from paththeory.reports import prefactor as report

    pts = [point(n, k, w, "gibbs", 0.3 * k / w, 0.006 * k / w, 40, True)
           for n, k in (("markov", 4), ("omniglot", 16)) for w in (20, 60)]
    f = findings(pts)
    c = f.common
    text = report.common_sentence(f)
    assert text.startswith(f"At N = 60, the largest width every network resolves, N d is {c.values[0]:.2f} ± "
                           f"{c.ses[0]:.2f} (Markov task, 4 paths)")
    assert f"η = {c.growth.eta:.2f} ± {c.growth.eta_se:.2f}" in text
    assert report.common_sentence(findings(pts[:2])).startswith("At N = 60")  # one network: no growth to fit
    assert "too few path counts" in report.common_sentence(findings(pts[:2]))

