"""The findings of :mod:`paththeory.experiments.residual` in words and tables (book: the residual-stream chapter).
Formats only: every number and verdict comes from the rows and :class:`~paththeory.experiments.residual.Findings`."""

from __future__ import annotations

from typing import Sequence

from paththeory.display.tables import markdown_table
from paththeory.experiments import SAMPLER_NAMES
from paththeory.experiments.compare import Distance
from paththeory.experiments.markov import settings as markov_settings
from paththeory.experiments.residual import NETWORK_NAMES, R_HAT_OK, Findings, Paired, Row
from paththeory.reports.records import provenance_sentence

#: :attr:`paththeory.experiments.residual.AgainstAttention.verdict` in words.
AGAINST_ATTENTION = {"holds": "differs from", "fails": "matches", "within noise": "cannot be told apart from"}
NO_RECORD = "No record to compare in this profile."


def provenance_text(provenance: dict | None) -> str:
    """Where one sampler's records come from (``results["provenance"]`` or ``results["gibbs_provenance"]`` of
    :func:`paththeory.experiments.residual.run`; ``None``: the profile samples nothing with it), and the data's
    sizes."""
    if provenance is None:
        return provenance_sentence(None)
    cfg, markov = provenance["config"], markov_settings(provenance["profile"])
    fewer = ("" if (cfg["n_train"], cfg["n_test"]) == (markov.n_train, markov.n_test) else
             f" (the Markov chapter's task, with {markov.n_train} and {markov.n_test} there: here four networks are "
             "sampled at several widths each)")
    return provenance_sentence(provenance, f"P = {cfg['n_train']} training and {cfg['n_test']} test sequences"
                                           f"{fewer}, T = {cfg['temperature']:g}.")


def _sampler_name(rows: Sequence[Row]) -> str:
    """The name of the one sampler behind ``rows`` (rows of two samplers are tabled apart)."""
    samplers = {r.sampler for r in rows}
    if len(samplers) != 1:
        raise ValueError(f"rows of one sampler expected; got {sorted(samplers) or 'none'}.")
    return SAMPLER_NAMES[samplers.pop()]


def _noise(x: float | None) -> str:
    return "" if x is None else f" ({x:.3f})"


def _width(r: Row) -> str:
    """A record's width, marked where it lies below the number of paths, outside the theory's regime."""
    return str(r.width) if r.in_regime else f"{r.width} (< |Π|)"


def distance_table(rows: Sequence[Row]) -> str:
    """The theory against the samples of one sampler, one row per record, with ``|Pi| / N``."""
    if not rows:
        return NO_RECORD
    _sampler_name(rows)
    body = [[NETWORK_NAMES[r.network], str(r.paths), _width(r), f"{r.ratio:.2g}",
             f"{r.U_distance:.3f}{_noise(r.U_noise)}", f"{r.U_gp_distance:.3f}",
             f"{r.f_distance:.3f}{_noise(r.f_noise)}", f"{r.f_gp_distance:.3f}", f"{r.r_hat:.3f}", f"{r.ess:.0f}"]
            for r in rows]
    return markdown_table(["network", "paths", "N", "|Π|/N", "U: theory (MC error)", "U: GP",
                           "predictor: theory (MC error)", "predictor: GP", "R-hat (U)", "ESS (U)"], body)


def _diff(d: Paired) -> str:
    return f"{d.difference:+.3f} ± {d.se:.3f}"


def accuracy_table(rows: Sequence[Row]) -> str:
    """Test accuracies with the paired standard errors of the differences."""
    if not rows:
        return NO_RECORD
    name = _sampler_name(rows)
    body = [[NETWORK_NAMES[r.network], _width(r), f"{r.accuracy.theory:.3f}", f"{r.accuracy.sampled:.3f}",
             f"{r.accuracy.gp:.3f}", f"{r.accuracy.attention_theory:.3f}", _diff(r.theory_minus_sampled),
             _diff(r.sampled_minus_gp), _diff(r.sampled_minus_attention_theory)] for r in rows]
    return markdown_table(["network", "N", "theory", name, "GP", "attention-only theory", f"theory − {name}",
                           f"{name} − GP", f"{name} − attention-only"], body)


def _inner(d: Distance) -> str:
    """A level's distance ``d (s)``: debiased with its error where resolved, else an upper limit; the raw ``d`` where
    the records give no floor."""
    if d.noise is None:
        return f"{d.distance:.3f} (no floor)"
    shown = f"{d.value:.3f} ± {d.se:.3f}" if d.resolved else f"< {d.upper_limit:.3f}"
    return f"{d.distance:.3f} ({d.noise:.3f}): {shown}"


def inner_table(rows: Sequence[Row]) -> str:
    """Relative distances of the levels above, $U^{(2)}$ to $U_a$, from the sampled ones, each as ``d (s)`` with its
    noise floor and then debiased where resolved, else an upper limit (the rule of every comparison in the book)."""
    if not rows:
        return NO_RECORD
    name = _sampler_name(rows)
    body = [[NETWORK_NAMES[r.network], _width(r), "; ".join(_inner(d) for d in r.inner)] for r in rows]
    return markdown_table(["network", "N", f"$U^{{(2)}}, \\dots, U_a$: theory vs {name}, d (s): debiased d"], body)


def _percent(x: float) -> str:
    return f"{100 * x:.0f} %"


def shares_sentence(findings: Findings) -> str:
    """The share of the paths through no attention head at the smallest NUTS width (theory and NUTS) and in the GP
    limit, for the two networks with skips; a width with more paths than units is marked outside the regime, and
    the direction of the theory's move is compared only between networks inside it."""
    parts = [f"with {NETWORK_NAMES[s.network]} at N = {s.width}, the paths through no attention head carry "
             f"{_percent(s.theory)} of the kernel's trace in the theory and {_percent(s.sampled)} with NUTS's U, "
             f"against {_percent(s.gp)} in the GP limit"
             + ("" if s.in_regime else " (more paths than units at this width: outside the theory's regime, so the "
                                       "theory's number is not checked)") for s in findings.shares]
    inside = [s for s in findings.shares if s.in_regime]
    if len(inside) >= 2:
        same = len({s.direction for s in inside}) == 1
        verdict = f"The direction is {'the same for' if same else 'different between'} the networks inside the regime"
    else:
        verdict = "Fewer than two networks are inside the regime here, so their directions are not compared"
    return ("On this page's training set, " + "; ".join(parts) + f". {verdict}, and the trace share does not by itself "
            "explain the accuracies below: the off-diagonal entries of U, which the share splits between classes, "
            "matter too.")


def accuracy_sentence(findings: Findings) -> str:
    """Per mixed NUTS record with MLP blocks or skips: its accuracy against the attention-only theory's, and the
    records left out because their chains did not mix."""
    out = [f"{NETWORK_NAMES[a.network]} at N = {a.width}: NUTS {a.sampled:.3f}, which "
           f"{AGAINST_ATTENTION[a.verdict]} the attention-only theory's {a.attention_theory:.3f} "
           f"({100 * a.difference.difference:+.1f} ± {100 * a.difference.se:.1f} points)"
           for a in findings.against_attention]
    skipped = [f"{network} at N = {width}" for network, width in findings.unmixed]
    tail = (f" Left out, their chains not mixed (R-hat of U above {R_HAT_OK}): {', '.join(skipped)}." if skipped
            else "")
    head = "Per sampled point: " + "; ".join(out) + "." if out else "No mixed NUTS record to compare."
    return head + tail


def conclusion(findings: Findings) -> str:
    """What the chapter's numbers say about the residual stream on this task, each statement with its noise and its
    sampler: the GP with and without skips, finite width's gain over the GP, the samples with a residual stream
    against those without one, MLP blocks against the attention-only theory, and, with skips, where the theory's
    accuracy and predictor stand against the samples."""
    parts = [f"The all-skip path carries kernel weight in the GP limit but no information about this task's label "
             f"(it reads the last token alone): the GP of the network with skips scores {findings.gp_skip:.3f} "
             f"against {findings.gp_attention:.3f} without them."]
    for g in findings.gains:
        name = SAMPLER_NAMES[g.sampler]
        text = (f"With {NETWORK_NAMES[g.network]} at N = {g.width}, finite width gains {100 * g.gain.difference:+.1f} "
                f"± {100 * g.gain.se:.1f} points over that GP ({name})")
        if g.plain is not None:
            text += (f", and the finite network scores {g.sampled:.3f} against {g.plain:.3f} for the paper's network "
                     f"without a residual stream ({name} both, {100 * g.gap:+.1f} points)")
        parts.append(text + ".")
    if findings.mlp is not None:
        m = findings.mlp
        parts.append(f"MLP blocks move the accuracy by at most {100 * m.largest.difference:+.1f} ± "
                     f"{100 * m.largest.se:.1f} points ({SAMPLER_NAMES[m.sampler]} at N = {m.width} against the "
                     f"attention-only theory), beyond two paired SEs at {m.beyond} of {m.count} points: they add order "
                     "parameters, not paths.")
    if findings.skips is not None:
        s = findings.skips
        parts.append(f"With skips, the theory's accuracy lies above the samples' at {s.above} of {s.count} points (by "
                     f"{100 * s.low:+.1f} to {100 * s.high:+.1f} points; beyond two paired SEs at {s.beyond}), and its "
                     "predictor is further from the samples' than without skips at the same width, beyond two Monte "
                     f"Carlo errors, at {s.further} of {s.pairs} points.")
    return " ".join(parts)


def agreement_table(rows: Sequence[dict]) -> str:
    """:func:`paththeory.experiments.compare.sampler_agreement` of NUTS against Gibbs: the distance with its
    combined Monte Carlo error, the largest entry-wise ``|z|`` against the Sidak threshold (5 % family-wise over the
    ``k`` entries), the entry ``(i, j)`` of ``U`` it is at, the family-wise p-value, whether both runs mixed and
    each sampler's effective draws of ``U`` per second."""
    body = [[NETWORK_NAMES[r["network"]], str(r["width"]), f"{r['distance']:.3f}", f"{r['noise']:.3f}",
             f"{r['max_z']:.1f} ({r['threshold']:.1f})", f"({r['entry'][0]}, {r['entry'][1]}) of {r['k']}",
             f"{r['p_family']:.2g}", "yes" if r["mixed"] else "no",
             f"{r['ess_per_second'][0]:.1f}", f"{r['ess_per_second'][1]:.1f}"] for r in rows]
    return markdown_table(["network", "N", "U: NUTS vs Gibbs", "MC error", "max |z| (threshold)", "entry",
                           "p (family)", "both mixed", "ESS/s NUTS", "ESS/s Gibbs"], body)


def pruning_markdown(findings: Findings) -> str:
    """Every pruned head of ``paththeory.experiments.residual.Findings.pruning``: its score, the accuracy with it
    pruned and the change."""
    body = [[NETWORK_NAMES[h.network], h.head, f"{h.score:.2f}", f"{h.accuracy:.3f}", f"{100 * h.change:+.1f}"]
            for p in findings.pruning for h in p.heads]
    return markdown_table(["network", "pruned head", "score", "accuracy", "change (points)"], body)


def pruning_sentence(findings: Findings) -> str:
    """Per network, whether the lowest-scored head is the cheapest to prune, with the numbers."""
    parts = [f"with {NETWORK_NAMES[p.network]}, the lowest-scored head ({p.lowest.head}, score {p.lowest.score:.2f}) "
             f"{'is also' if p.same else 'is not'} the cheapest to prune ({100 * p.lowest.change:+.1f} points; the "
             f"cheapest: {p.cheapest.head}, {100 * p.cheapest.change:+.1f})" for p in findings.pruning]
    return f"At N = {findings.pruning[0].lowest.width}: " + "; ".join(parts) + "."
