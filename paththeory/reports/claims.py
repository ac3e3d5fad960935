"""The claims of :mod:`paththeory.experiments.claims` in words: the claims table (Markdown for the book, aligned text
for the command line), its cells "ours" and "noise" per ``paththeory.experiments.claims.Claim.measure`` and
``paththeory.experiments.claims.Evidence.kind``, and the paragraphs under the tables (book: the Fig. 2 and
Fig. 3 chapters and "Beyond the paper"). Formats only: every number and verdict comes from the findings."""

from __future__ import annotations

from typing import Sequence

from paththeory.display.tables import markdown_table, scientific
from paththeory.experiments.claims import Claim, Interpretation, NetworkHeader, Reproduction, verdict_counts
from paththeory.sampling import diagnostics_summary


def p_value(p: float | None) -> str:
    """A p-value as the tables print it: three decimals, or a power of ten below 0.001."""
    if p is None:
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else scientific(p)


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def measured(c: Claim) -> str:
    """The "ours" cell: the claim's ``value`` and ``details`` as its ``measure`` reads them (a run stopped before
    its draws: the sampler's diagnostics instead)."""
    d, v = c.details, c.value
    if c.evidence.kind == "not_enough_draws":
        return diagnostics_summary(c.evidence.diagnostics)
    if c.measure == "points":
        pair = (f"; cheapest of all {d['n_pairs']} pairs {_points(d['cheapest_pair'])}" if "cheapest_pair" in d
                else f"; best of all {d['n_pairs']} pairs {_points(d['best_pair'])}" if "best_pair" in d else "")
        return f"{_points(v)} points{pair}"
    if c.measure == "temperature_trend":
        return f"rho(N, T) = {v:+.2f}; T = {', '.join(f'{t:g}' for t in d.values())} for N = {', '.join(d)}"
    if c.measure == "captured":
        best = (f"; best PC overlap {d['theory_best']:.2f} (rank {d['theory_best_rank']}) vs {d['gp_best']:.2f} "
                f"(rank {d['gp_best_rank']})" if "theory_best" in d else "")
        return f"{d['theory']:.2f} vs {d['gp']:.2f} of y{best}"
    if c.measure == "distance":
        return f"{v:.1%}" + ("" if "mantel_r" not in d else f"; Mantel r = {d['mantel_r']:.2f}")
    if c.measure == "mantel":
        return f"Mantel r = {v:.2f}" + ("" if "contrast" not in d else f"; contrast {d['contrast']:.2f}")
    if c.measure == "rho":
        return "undefined" if v is None else f"rho = {v:+.2f}"
    if c.measure == "mean_accuracy":
        return f"mean accuracy {d['score']:.3f} vs random {d['random']:.3f}"
    if c.measure == "distances":
        return " vs ".join(f"{x:.1%}" for x in d.values())
    raise ValueError(f"no wording for the measure {c.measure!r} of claim {c.id!r}.")


def noise(c: Claim) -> str:
    """The "noise" cell: the claim's evidence as its ``kind`` reads it."""
    e = c.evidence
    if e.kind == "paired":
        return f"paired SE {100 * e.se:.1f} points" + ("" if e.n is None else f" on {e.n}")
    if e.kind == "independent":
        return f"SE {100 * e.se:.1f} points (independent test sets)"
    if e.kind == "bootstrap":
        return f"bootstrap 95 % [{e.low:+.2f}, {e.high:+.2f}] ({e.resamples} resamples)"
    if e.kind == "permutation":
        how = "" if e.exact is None else "exact " if e.exact else "sampled "
        return f"{how}permutation p = {p_value(e.p)}"
    if e.kind == "random_orders":
        return f"p = {p_value(e.p)} against {e.n} random orders (sd {100 * e.sd:.1f})"
    if e.kind == "monte_carlo":
        if e.noise is None:
            return "n/a"
        return f"Monte Carlo {e.noise:.1%}" + ("" if e.gp_distance is None else f" (GP point: {e.gp_distance:.0%})")
    if e.kind == "none":
        return "not estimated (one training set)"
    if e.kind == "not_enough_draws":
        return "n/a"
    raise ValueError(f"no wording for the evidence {e.kind!r} of claim {c.id!r}.")


#: A Markdown claims table of more rows than this is folded behind a line that counts its verdicts (on a phone a
#: table of 30 rows is several screens).
FOLD_ROWS = 12


def claims_table(claims: Sequence[Claim], markdown: bool = True) -> str:
    """The claims as a table.

    ``markdown=True`` gives the book's four columns, narrow enough for a phone: the claim and its
    split, our measurement with its noise, the verdict (bold), and what the paper reports with
    its source; above :data:`FOLD_ROWS` rows, folded in a dropdown whose title counts the verdicts
    (:func:`verdict_line`). ``markdown=False`` gives aligned text with one column per field (the CLI's)."""
    if markdown:
        table = markdown_table(("claim", "ours (noise)", "verdict", "the paper (source)"),
                               [(c.claim + (f" ({c.split_name or c.split})" if c.split else ""),
                                 f"{measured(c)} ({noise(c)})", f"**{c.verdict}**", f"{c.paper} ({c.source})")
                                for c in claims])
        if len(claims) <= FOLD_ROWS:
            return table
        return f"````{{admonition}} {verdict_line(claims)} (open for the table)\n:class: dropdown\n\n{table}\n````"
    head = ("claim", "split", "ours", "noise", "verdict", "the paper", "source")
    body = [(c.claim, c.split or "", measured(c), noise(c), c.verdict, c.paper, c.source) for c in claims]
    widths = [0] * len(head)  # each column as wide as its widest cell
    for cells in (head, *body):
        widths = [w if w >= len(t) else len(t) for w, t in zip(widths, cells)]
    return "\n".join("  ".join(t.ljust(w) for t, w in zip(cells, widths)).rstrip() for cells in (head, *body))


def verdict_line(claims: Sequence[Claim]) -> str:
    """``"20 of 28 rows hold, 5 within noise, 3 fail"``: the verdicts of a claims table, counted.

    Example:
      >>> from paththeory.experiments.claims import Evidence, claim_row, OWN_TEST
      >>> rows = [claim_row(str(i), "x", None, 0.1, v, "not in the paper", OWN_TEST, Evidence("independent", se=0.01),
      ...                   "points") for i, v in enumerate(["holds", "holds", "fails"])]
      >>> verdict_line(rows)
      '2 of 3 rows hold, 1 fails'
    """
    counts = verdict_counts(claims)
    others = [f"{counts[v]} {'fail' if v == 'fails' and counts[v] > 1 else v}"
              for v in counts if v != "holds" and counts[v]]
    return ", ".join([f"{counts.get('holds', 0)} of {len(claims)} rows hold", *others])


def _items(claims: Sequence[Claim]) -> str:
    return "; ".join(f"*{c.claim}*" + (f" on {c.split_name}" if c.split_name else "") + f" ({measured(c)})"
                     for c in claims)


def reproduction_summary(r: Reproduction) -> str:
    """One Markdown paragraph on the claims credited to the paper: how many hold, which are contradicted
    (``"fails"``), which this build cannot decide (``"within noise"``), and which have no measurement
    (``"not enough draws"``); each named with its split and our number."""
    if not r.claims:
        return "None of these rows is a claim of the paper; all are this book's own tests."
    n_fail = len(r.fails)
    text = (f"Of the {r.claims} claim{'s' if r.claims != 1 else ''} credited to the paper in this table, "
            f"{r.held} hold{'s' if r.held == 1 else ''} in this build")
    if r.held == r.claims:
        return text + ". Every one of them reproduces."
    parts = [text + (" and none is contradicted." if not n_fail else
                     f"; {n_fail} {'is' if n_fail == 1 else 'are'} contradicted.")]
    if r.fails:
        parts.append(f"Not reproduced here (the measurement contradicts the paper beyond its noise): "
                     f"{_items(r.fails)}.")
    if r.within_noise:
        parts.append(f"Not decided by this build's noise (neither confirmed nor contradicted): "
                     f"{_items(r.within_noise)}.")
    if r.not_enough_draws:
        parts.append(f"Not measured (the sampling run stopped before all its draws): {_items(r.not_enough_draws)}.")
    return " ".join(parts)


def network_summary(h: NetworkHeader) -> str:
    """One sentence naming the network behind an Omniglot ``results.json``: the shipped checkpoint, or a network
    retrained in this run (the ``paper`` profile's ``retrain=True``), with its training steps."""
    if h.provenance is not None:
        what = f"not the shipped checkpoint but one {h.provenance}"
    else:
        what = "the checkpoint shipped with the book" + (f" ({h.selection})" if h.selection else "")
    cut = ("" if h.time_limit_minutes is None else
           f", cut short by the {h.time_limit_minutes:g} min time limit it was given ({h.planned_steps} were planned)")
    return (f"The network behind these results (L = {h.layers}, H = {h.heads}) is {what}"
            + ("" if h.steps_done is None else f", trained for {h.steps_done} steps") + cut + ".")


def _listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


#: How the theory stands against the GP on a split, by the claim's kind (a plain "beats the GP", or the paper's
#: "comparable", judged with a tolerance) and verdict.
AGAINST_GP = {(False, "holds"): "ahead of the GP on",
              (False, "within noise"): "within two standard errors of the GP on",
              (False, "fails"): "behind the GP on",
              (True, "holds"): "not worse than the GP by more than {tol} points (the paper reports the two as "
                               "comparable) on",
              (True, "within noise"): "within two standard errors of {tol} points behind the GP on",
              (True, "fails"): "more than {tol} points behind the GP (which the paper reports as comparable) on"}


def network_interpretation(i: Interpretation) -> str:
    """A paragraph reading one network's Omniglot results, each sentence chosen by a finding: the theory against the
    GP at the smallest width on every split, the trained network's ``U`` against the theory's, the block structure
    of ``U`` with the similarity of the paths' inputs, and whether the head scores rank the single-head drops and
    guide the pruning on held-out characters. Parts missing from the findings are left out."""
    sentences = []
    if i.finite_vs_gp:
        groups: dict[tuple[bool, str], list[Claim]] = {key: [] for key in AGAINST_GP}
        for c in i.finite_vs_gp:
            groups[(c.tolerance is not None, c.verdict)].append(c)
        parts = [AGAINST_GP[key].format(tol=f"{100 * (cs[0].tolerance or 0):.0f}") + " " + _listing(
            [f"{c.split_name} ({_points(c.value)} points, paired SE {100 * c.evidence.se:.1f})" for c in cs])
            for key, cs in groups.items() if cs]
        sentences.append(f"At N = {i.width}, the smallest width, the theory is {_listing(parts)}.")
    if i.trained_u is not None:
        m = i.trained_u
        shares = {"holds": "shares the theory's pattern", "fails": "is anti-correlated with the theory's",
                  "within noise": "does not measurably share the theory's pattern"}[m.verdict]
        sentences.append(f"The trained network's U {shares} (Mantel r = {m.value:.2f}, p = {p_value(m.evidence.p)}).")
    if i.block is not None:
        is_block = i.block.verdict == "holds"
        text = (f"The theory's U {'is' if is_block else 'is not measurably'} block-structured by first-layer "
                f"head (mean |U| within blocks / between them: {i.block.details['contrast']:.2f})")
        if i.paths_alike is not None:
            text += (f", and paths through the same first-layer head {'do' if i.paths_alike else 'do not measurably'} "
                     f"carry more similar inputs (mean cosine {i.same_first:.2f} against {i.different_first:.2f})")
        sentences.append(text + ".")
    if i.score_drop is not None:
        sp = i.score_drop
        rank = {"holds": "rank", "fails": "rank in reverse", "within noise": "do not measurably rank"}[sp.verdict]
        sentences.append(f"On held-out characters the head scores {rank} the single-head drops "
                         f"(Spearman rho = {sp.value:+.2f}, p = {p_value(sp.evidence.p)}).")
    if i.pruning is not None:
        keeps = {"holds": "keeps more accuracy than", "fails": "keeps less accuracy than",
                 "within noise": "keeps no measurably different accuracy from"}[i.pruning.verdict]
        sentences.append(f"Pruning lowest score first {keeps} random orders (mean accuracy along the curve "
                         f"{i.pruning.details['score']:.3f} against {i.pruning.details['random']:.3f}).")
    return " ".join(sentences)
