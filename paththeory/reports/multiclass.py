"""The findings of :mod:`paththeory.experiments.multiclass` in tables and sentences (book: the many-outputs chapter).
Formats only: every number and verdict comes from the findings stored in the results
(:func:`~paththeory.experiments.multiclass.stored_findings`) or from the records themselves."""

from __future__ import annotations

from paththeory.display.tables import markdown_table, scientific
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.multiclass import (
    COMPETITORS,
    ORDER_PARAMETERS,
    Distance,
    sampler_name,
    sampler_speed,
    stored_findings,
)
from paththeory.experiments.records import schedule
from paththeory.reports.records import provenance_sentence

#: Row labels of the tables (the samples' row also names its sampler).
LABELS = {"theory": "theory", "sampled": "samples", "gp": "GP", "independent": "independent",
          "kronecker": "Kronecker"}
#: The quantities compared with the samples, in words.
QUANTITIES = {"U": "U", "mean": "mean predictor", "cov": "output-output covariance"}


def _with_floor(d: Distance) -> str:
    """``d (s)``, and the upper limit where ``d`` is within twice its floor."""
    text = f"{d.distance:.1%} ({d.noise:.1%})"
    return text if d.resolved else f"{text}, < {d.upper_limit:.1%}"


def _distance(d: Distance) -> str:
    """``d``, and ``< upper limit`` where it is within twice the samples' floor."""
    return f"{d.distance:.1%}" if d.resolved else f"{d.distance:.1%} (< {d.upper_limit:.1%})"


def sampled_table(results: dict) -> str:
    """Per sampled width: its sampler, ``C |Pi| / N``, the distances of the theory's ``U``, mean and covariance from
    the samples' with their noise floors (and an upper limit where not resolved), R-hat, the smallest bulk ESS, the
    effective draws of ``U``'s slowest entry per second and the sampler's time."""
    rows = []
    for f in stored_findings(results).widths:
        d = results["widths"][str(f.width)]["diagnostics"]
        rows.append([f.width, SAMPLER_NAMES[f.sampler], f"{f.ratio:.2f}", _with_floor(f.U["theory"]),
                     _with_floor(f.mean["theory"]), _with_floor(f.cov), f"{d['r_hat_max']:.3f}",
                     f"{d['ess_bulk_min']:.0f}", f"{d['ess_per_second']:.1f}", f"{d['seconds']:.0f} s"])
    return markdown_table(["N", "sampler", "C|Π|/N", "U error (noise)", "mean error (noise)", "cov. error (noise)",
                           "R-hat max", "ESS min", "ESS/s of U", "time"], rows)


def resolution_sentence(results: dict) -> str:
    """Which of the theory's distances from the samples the run resolves (beyond twice the noise floor: debiased,
    with its error) and which it only bounds (an upper limit)."""
    found = stored_findings(results).widths

    def at(w: int, d: Distance) -> str:
        return (f"resolved at N = {w} ({100 * d.value:.1f} ± {100 * d.se:.1f}% debiased)" if d.resolved
                else f"within noise at N = {w} (below {d.upper_limit:.1%})")

    parts = [f"{name} is " + " and ".join(at(f.width, f.cov if q == "cov" else getattr(f, q)["theory"])
                                         for f in found)
             for q, name in QUANTITIES.items()]
    return ("Against twice its noise floor, the book's rule for every distance from samples, the theory's "
            + "; its ".join(parts) + ".")


def sampler_speed_table(results: dict | None = None) -> str:
    """:data:`~paththeory.experiments.multiclass.SAMPLER_SPEED` for a reader: per width, each sampler's effective
    draws of ``U``'s slowest entry (with their R-hat) and per second (over the repeated runs), Gibbs's lead, and,
    given ``results``, the sampler its profile uses there."""
    chosen = {} if results is None else results.get("samplers", {})
    rows = []
    for s in sampler_speed():
        row = [s.width, *(f"{s.ess[k]:.0f} ({s.r_hat[k]:.3f})" for k in ("nuts", "gibbs")),
               *(_range(*s.rate[k]) for k in ("nuts", "gibbs")), f"{_range(*s.lead)}×"]
        if results is not None:
            row.append(SAMPLER_NAMES[chosen[str(s.width)]] if str(s.width) in chosen else "not sampled")
        rows.append(row)
    head = ["N", "NUTS: ESS of U (R-hat)", "Gibbs: ESS of U (R-hat)", "NUTS: ESS/s", "Gibbs: ESS/s", "Gibbs/NUTS"]
    return markdown_table(head + (["this profile"] if results is not None else []), rows)


def _range(lo: float, hi: float) -> str:
    """``"a"`` or ``"a–b"``: whole numbers from 10, one decimal from 1, two decimals from 0.1, two significant
    figures below."""
    def fmt(v: float) -> str:
        return f"{v:.0f}" if v >= 10 else f"{v:.1f}" if v >= 1 else f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"

    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}–{fmt(hi)}"


def sampler_sentence(results: dict) -> str:
    """Which sampler drew each width of ``results``, with the profile's chains for each
    (:func:`paththeory.experiments.records.schedule`), and where each sampler's records come from (shipped with the
    package or drawn in this run: :func:`paththeory.reports.records.provenance_sentence`)."""
    by: dict[str, list[str]] = {}
    for w, s in results.get("samplers", {}).items():
        by.setdefault(s, []).append(w)
    parts = []
    for s, widths in by.items():
        sch = schedule(results["config"], s)
        step, warm = ("draws", "warm-up steps") if s == "nuts" else ("sweeps", "warm-up sweeps")
        chains = sch["num_chains"]
        name = "NUTS" if s == "nuts" else "the exact Gibbs sampler"
        parts.append(f"N = {', '.join(widths)} with {name} ({chains} chain{'s' if chains > 1 else ''} of "
                     f"{sch['num_samples']} {step} after {sch['num_warmup']} {warm})")
    if not parts:
        return "This run samples no width."
    where = [provenance_sentence(results["records"][s], chains=False) for s in by if s in results.get("records", {})]
    return " ".join(["This run samples " + " and ".join(parts) + ".", *where])


def comparison_table(results: dict) -> str:
    """Per width and order parameter: distance of its ``U`` and of its mean predictor from the samples' (relative
    to the theory's; an upper limit where within twice the samples' noise floor), and its argmax accuracy; the
    samples' row names their sampler."""
    rows = []
    for f in stored_findings(results).widths:
        acc = results["widths"][str(f.width)]["accuracy"]
        for k in ORDER_PARAMETERS:
            rows.append([f.width, LABELS[k], _distance(f.U[k]), _distance(f.mean[k]), f"{acc[k]:.3f}"])
        rows.append([f.width, f"{LABELS['sampled']} ({SAMPLER_NAMES[f.sampler]})", "", "", f"{acc['sampled']:.3f}"])
    return markdown_table(["N", "U from", "U vs samples", "mean vs samples", "accuracy"], rows)


def accuracy_table(results: dict) -> str:
    """Argmax accuracy of every predictor and its paired difference from the theory's, per width (the samples' row
    names their sampler)."""
    rows = []
    for f in stored_findings(results).widths:
        acc = results["widths"][str(f.width)]["accuracy"]
        for k, d in f.accuracy.items():
            label = f"{LABELS[k]} ({SAMPLER_NAMES[f.sampler]})" if k == "sampled" else LABELS[k]
            rows.append([f.width, label, f"{acc[k]:.3f}", f"{acc['theory']:.3f}",
                         f"{100 * d.difference:+.1f} ± {100 * d.se:.1f}"])
    return markdown_table(["N", "other", "its accuracy", "theory's", "theory − other (points, paired SE)"], rows)


def scaling_table(results: dict) -> str:
    """Per number of classes: sizes, theory and GP accuracy, and the gain with its paired SE."""
    rows = [[c, r["n_train"], f"{r['width']:.1f}", f"{r['ratio']:.2f}", f"{r['chance']:.2f}", f"{r['theory']:.3f}",
             f"{r['gp']:.3f}", f"{100 * r['gain']['difference']:+.1f} ± {100 * r['gain']['se']:.1f}"]
            for c, r in results["scaling"].items()]
    return markdown_table(["C", "P", "N", "C|Π|/N", "chance", "theory", "GP", "gain (points, paired SE)"], rows)


def scaling_sentence(results: dict) -> str:
    """Whether finite width helps more with more classes (:class:`~paththeory.experiments.multiclass.ClassGain`), on
    this task family: the tasks differ in more than ``C`` (their classes, training sets and widths), which the
    sentence says, with the accuracies at the largest ``C``."""
    g = stored_findings(results).class_gain
    sc = results["scaling"]
    gains = ", ".join(f"{100 * r['gain']['difference']:+.1f} ± {100 * r['gain']['se']:.1f} points at C = {c}"
                      for c, r in sc.items())
    reading = {"holds": "helps more with more classes", "fails": "helps less with more classes",
               "within noise": "does not help measurably more or less with more classes"}[g.gain.verdict]
    sizes = ", ".join(str(r["n_train"]) for r in sc.values())
    widths = ", ".join(f"{r['width']:.1f}" for r in sc.values())
    top = sc[str(g.largest)]
    return (f"Finite width's gain over the GP: {gains}. The difference between the largest and the smallest C "
            f"is {100 * g.gain.difference:+.1f} ± {100 * g.gain.se:.1f} points (the SE of independent test sets), so "
            f"on this task family, at these sizes, finite width {reading}. The tasks differ in more than C: each C "
            f"has its own classes, one training set (P = {sizes}) and its own width (N = {widths}); at C = "
            f"{g.largest} the theory scores {top['theory']:.3f} and the GP {top['gp']:.3f}.")


def comparison_sentence(results: dict) -> str:
    """What the comparisons of mean predictors against the samples say
    (``paththeory.experiments.multiclass.Width.closer``)."""
    found = stored_findings(results)
    if not found.comparisons:
        return "No mixed sampled width at C|Π|/N ≤ 0.4: no comparison has a verdict."
    others = [f"{COMPETITORS[k]} at N = {f.width} ({v.verdict}: {f.mean[k].distance:.1%} vs "
              f"{f.mean['theory'].distance:.1%} from the samples, noise {v.se:.1%})"
              for f in found.widths if f.valid for k, v in f.closer.items() if v.verdict != "holds"]
    return (f"Of {found.comparisons} comparisons of mean predictors (the GP, independent outputs and the nearest "
            f"Kronecker U, at {len(found.valid_widths)} width{'' if len(found.valid_widths) == 1 else 's'} with "
            f"C|Π|/N ≤ 0.4), the samples lie closer to "
            f"the full multi-output theory beyond twice the Monte-Carlo noise in {found.closer}"
            + ("." if not others else "; not beyond it against " + "; ".join(others) + "."))


def decoupling_sentence(results: dict) -> str:
    """Whether two outputs for two classes decouple into the single-output theory
    (:class:`~paththeory.experiments.multiclass.Decoupling`)."""
    d = stored_findings(results).decoupling
    if d.exact:
        return (f"Both deviations are below {scientific(d.tolerance)} of the live block's trace: two outputs for "
                f"two classes are the single-output theory of the paper plus an output with no labels, whose "
                f"U has shrunk to a trace of {d.dead_trace:.2f}.")
    return (f"The deviations reach {scientific(d.worst, 1)} of the live block's trace, above "
            f"{scientific(d.tolerance)}: "
            "the outputs do not decouple to the solver's accuracy here.")


def block_sentence(results: dict, width: int | str | None = None) -> str:
    """How large the theory's and the samples' off-diagonal output blocks of ``U`` are against the diagonal ones, and
    the label-free output's coupling to the others (:func:`~paththeory.experiments.multiclass.dead_coupling`), at
    ``width`` (default: the width the chapter draws,
    ``paththeory.experiments.multiclass.Findings.structure_width``)."""
    found = stored_findings(results)
    w = found.structure_width if width is None else int(width)
    f = next(x for x in found.widths if x.width == w)
    sampled = f"the {sampler_name(results['widths'][str(w)])} samples'"
    text = (f"At N = {w} the Frobenius norm of the off-diagonal output blocks of U, relative to that of the "
            f"diagonal blocks, is {f.blocks['theory']:.2f} in the theory's and {f.blocks['sampled']:.2f} in "
            f"{sampled}.")
    if f.dead is None:
        return text
    return (f"{text} Part of that is the basis: in one whose first output is the label-free direction "
            f"(1, …, 1)/√C, that output's blocks with the others are {scientific(f.dead['theory'], 1)} of the other "
            f"outputs' block in the theory's U and {scientific(f.dead['sampled'], 1)} in {sampled}: it decouples, "
            "and the output-output coupling lies among the other C − 1 outputs.")
