"""The findings of :mod:`paththeory.experiments.validity` in words and a table (book: the validity chapter, "The
theory against samples as ``|Pi| / N`` grows"). Formats only: every number and verdict comes from the findings."""

from __future__ import annotations

from typing import Sequence

from paththeory.display.tables import markdown_table
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.validity import Findings, Row, SameRatio, sampled_widths
from paththeory.reports.records import provenance_sentence

#: The tasks in a sentence and in the table.
TASK_NAMES = {"markov": "the hidden Markov chain (4 paths)", "omniglot": "Omniglot (16 paths)"}
SHORT = {"markov": "Markov (4 paths)", "omniglot": "Omniglot (16 paths)"}
#: :attr:`paththeory.experiments.validity.SameRatio.order` in words.
ORDER = {"above": "lies above", "below": "lies below", "within": "lies within two errors of",
         "unordered": "cannot be ordered against"}


def provenance_text(payload: dict) -> str:
    """Where the records of ``payload`` (of :func:`paththeory.experiments.validity.samples`, either sampler) come
    from, and each task's sizes and widths."""
    prov = payload["provenance"]
    cfg, widths = prov["config"], sampled_widths(prov["config"], prov["sampler"])
    tasks = []
    if widths["markov"]:
        tasks.append(f"Markov: P = {cfg['markov_train']} training and {cfg['markov_test']} test sequences, "
                     f"T = {cfg['markov_temperature']:g}, N = {', '.join(map(str, widths['markov']))}.")
    if widths["omniglot"]:
        tasks.append(f"Omniglot: P = {cfg['omniglot_train']} training sequences (training characters) and "
                     f"{cfg['omniglot_test']} test sequences (held-out characters), "
                     f"T = {cfg['omniglot_temperature']:g}, N = {', '.join(map(str, widths['omniglot']))}.")
    return provenance_sentence(prov, " ".join(tasks))


def table(rows: Sequence[Row]) -> str:
    """The rows of :func:`paththeory.experiments.validity.compare` (of one sampler or both) as a Markdown table,
    narrow enough for a phone."""
    return markdown_table(
        ["task", "sampler", "N", "paths/N", "distance of U (Monte Carlo error)", "GP point's distance",
         "accuracy, sampled − theory", "R-hat / ESS of U"],
        [(SHORT[r.task], SAMPLER_NAMES[r.sampler], r.width, f"{r.ratio:.2g}",
          f"{r.distance:.3f} ({'n/a' if r.noise is None else f'{r.noise:.3f}'})", f"{r.gp_distance:.3f}",
          f"{100 * r.accuracy:+.1f} ± {100 * r.accuracy_se:.1f} pts",
          "n/a" if r.r_hat is None or r.ess is None else f"{r.r_hat:.2f} / {r.ess:.0f}") for r in rows])


def _distance(r: Row) -> str:
    """A row's distance: debiased with its error, or an upper limit, or the raw distance without a noise floor."""
    if r.noise is None:
        return f"{r.distance:.3f} (its noise not known)"
    if r.resolved:
        return f"{r.value:.3f} ± {r.se:.3f}"
    return f"below {r.upper_limit:.3f} (not resolved: {r.distance:.3f} against a noise floor of {r.noise:.3f})"


def _point(r: Row) -> str:
    mixing = "" if r.mixed or r.r_hat is None else (
        f"; R-hat {r.r_hat:.2f}: the chains have not fully mixed, so the error is itself uncertain")
    gp = "" if r.gp_fraction is None else f"; {r.gp_fraction:.2f} of the GP point's distance"
    return f"{_distance(r)} at |Π|/N = {r.ratio:.2g} (N = {r.width}{gp}{mixing})"


def summary(findings: Findings) -> str:
    """Per task and sampler: the distance at every ``|Pi| / N`` (debiased with its error where resolved, else an
    upper limit), its share of the GP point's distance, a note where the chains have not mixed, and the points
    whose accuracy differs beyond two paired standard errors."""
    if not findings.groups:
        return "No point was sampled to completion, so this build has no comparison."
    out = []
    for g in findings.groups:
        beyond = [r for r in g.rows if r.accuracy_beyond]
        acc = ("no accuracy difference is beyond two paired standard errors" if not beyond else
               "the accuracy differs beyond two paired standard errors at " +
               ", ".join(f"N = {r.width} ({100 * r.accuracy:+.1f} ± {100 * r.accuracy_se:.1f} points)"
                         for r in beyond))
        name = TASK_NAMES[g.task]
        out.append(f"{name[0].upper()}{name[1:]}, {SAMPLER_NAMES[g.sampler]}: the distance of U is "
                   + "; ".join(_point(r) for r in g.rows) + f"; {acc}.")
    return ("The distance of the sampled U from the theory's, debiased with its error where the run resolves it "
            "(beyond twice its noise floor s: sqrt(d² − s²) ± s·d/sqrt(d² − s²)), else an upper limit at 97.7 % "
            "(d + 2s). " + " ".join(out))


def _pair(p: SameRatio) -> str:
    a, b = p.markov, p.omniglot
    return (f"at |Π|/N = {p.ratio:.2g} the 16-path Omniglot point (N = {b.width}, {SAMPLER_NAMES[b.sampler]}) "
            f"{ORDER[p.order]} the 4-path Markov one (N = {a.width}, {SAMPLER_NAMES[a.sampler]}): {_distance(b)} "
            f"against {_distance(a)}")


def same_ratio(findings: Findings) -> str:
    """The two tasks at equal ``|Pi| / N``: at every ratio both sampled, the two distances and their order."""
    if not findings.same_ratio:
        return "No value of |Π|/N is sampled for both tasks in this profile."
    return ("Compared at equal |Π|/N: " + "; ".join(_pair(p) for p in findings.same_ratio) + ". The two tasks "
            "differ in data, temperature and training set size per width too, so a gap does not by itself separate "
            "|Π|/N from the mode count.")
