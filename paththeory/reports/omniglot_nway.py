"""The findings of :mod:`paththeory.experiments.omniglot_nway` in tables and sentences (book: the many-outputs
chapter, "Omniglot, N-way"). Formats only: every verdict comes from the findings stored with the results
(:func:`~paththeory.experiments.omniglot_nway.stored_findings`) or with the attention measurements
(:class:`~paththeory.experiments.omniglot_nway.Attention`)."""

from __future__ import annotations

from paththeory.display.tables import markdown_table
from paththeory.experiments.omniglot_nway import SPLIT_NAMES, Attention, Predictor, stored_findings
from paththeory.experiments.records import typed

#: A :class:`~paththeory.experiments.omniglot_nway.Predictor`'s verdict against chance, in words.
CHANCE = {"holds": "above chance", "within noise": "at chance", "fails": "below chance"}
#: The theory's verdict against the GP, in words.
VERSUS_GP = {"holds": "better than the GP", "fails": "worse than the GP",
             "within noise": "not distinguishable from the GP"}
#: A changed format's paired change, in words.
MOVES = {"holds": "rises", "fails": "falls", "within noise": "does not change beyond noise"}
#: What each change of :data:`~paththeory.experiments.omniglot_nway.CONTROLS` does.
CONTROL_ACTIONS = {"fresh label vectors": "changing the label vectors",
                   "the query at its 5-way position": "moving the query"}


def _cell(r: dict) -> str:
    return f"{r['accuracy']:.3f} ± {r['se']:.3f}"


def _name(p: Predictor) -> str:
    return "the GP" if p.name == "gp" else f"the theory at N = {p.name}"


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def accuracy_table(results: dict, splits=("test", "one_shot_runs")) -> str:
    """Argmax accuracy ± binomial SE of the GP and the theory per width, and theory minus GP ± paired SE."""
    widths = [str(w) for w in results["config"]["widths"]]
    head = ["C", "sequences", "chance", "GP", *(f"theory N = {w}" for w in widths),
            *(f"N = {w} − GP" for w in widths)]
    rows = []
    for c, r in results["ways"].items():
        for s in splits:
            gains = [r["theory"][w][s]["gain"] for w in widths]
            rows.append([c, f"{SPLIT_NAMES[s]} ({r['n_eval'][s]})", f"{r['chance']:.3f}", _cell(r["gp"][s]),
                         *(_cell(r["theory"][w][s]) for w in widths),
                         *(f"{g['difference']:+.3f} ± {g['se']:.3f}" for g in gains)])
    return markdown_table(head, rows)


def sizes_table(results: dict) -> str:
    """Training set, kernel size, ``C |Pi| / N``, selected temperatures, convergence and solve times per ``C``."""
    widths = [str(w) for w in results["config"]["widths"]]
    converged = stored_findings(results).converged
    rows = []
    for c, r in results["ways"].items():
        temps = ", ".join(f"N = {w}: {r['temperature'][w]:g}" for w in widths)
        ratios = ", ".join(f"{r['ratio'][w]:.2g}" for w in widths)
        rows.append([c, r["n_train"], int(c) * r["n_train"], ratios, f"{temps}; GP: {r['temperature']['gp']:g}",
                     "yes" if converged[c] else "no", f"{r['seconds']['theory_solve']:.1f} s"])
    return markdown_table(["C", "P", "kernel C P", "C|Π|/N", "temperature (validation)", "converged",
                           "solve"], rows)


def verdict_sentences(results: dict, split: str = "one_shot_runs") -> str:
    """Per ``C`` and width: is the theory above chance, and does it beat the GP
    (:class:`~paththeory.experiments.omniglot_nway.Predictor`)?"""
    found = stored_findings(results).ways
    out = []
    for c, r in results["ways"].items():
        gp, *theory = found[c][split]
        parts = [f"at N = {p.name} the theory scores {p.accuracy:.3f} ± {p.se:.3f}, {CHANCE[p.chance]} "
                 f"and {VERSUS_GP[p.gain.verdict]} ({p.gain.difference:+.3f} ± {p.gain.se:.3f})" for p in theory]
        out.append(f"**{c}-way** ({SPLIT_NAMES[split]}, chance {r['chance']:.3f}): the GP scores "
                   f"{gp.accuracy:.3f} ± {gp.se:.3f}, {CHANCE[gp.chance]}; " + "; ".join(parts) + ".")
    return "\n\n".join(out)


def controls_table(results: dict, split: str = "one_shot_runs") -> str:
    """:func:`~paththeory.experiments.omniglot_nway.controls` as a table: per format, accuracy ± SE of the GP and
    the theory per width on ``split``, with the paired change from the trained format."""
    ctl = results["controls"]
    widths = [str(w) for w in results["config"]["widths"]]

    def cell(r: dict, converged: bool = True) -> str:
        change = f" ({r['gain']['difference']:+.3f} ± {r['gain']['se']:.3f})" if "gain" in r else ""
        return _cell(r) + change + ("" if converged else " (not converged)")

    rows = [[name, cell(f["gp"][split]), *(cell(f["theory"][w][split], f["converged"][w]) for w in widths),
             ", ".join(f"{f['temperature'][k]:g}" for k in ("gp", *widths))]
            for name, f in ctl["formats"].items()]
    return markdown_table(["2-way format", "GP", *(f"theory N = {w}" for w in widths),
                           f"T (GP, {', '.join(f'N = {w}' for w in widths)})"], rows)


def controls_sentences(results: dict, split: str = "one_shot_runs") -> str:
    """The 2-way controls in words (:class:`~paththeory.experiments.omniglot_nway.Controls`): per changed format and
    predictor, whether the change moves the accuracy and what is left against chance; then, of the predictors above
    chance in the trained format, which each change alone brings to chance."""
    ctl = results["controls"]
    found = stored_findings(results).controls[split]
    names = [_name(p) for p in found.trained]
    text = [f"In the trained format ({ctl['n_eval'][split]} sequences of the {SPLIT_NAMES[split]}, "
            f"P = {ctl['n_train']}) "
            + ", ".join(f"{n} scores {p.accuracy:.3f} ± {p.se:.3f} ({CHANCE[p.chance]})"
                        for n, p in zip(names, found.trained)) + "."]
    for change in found.changes:
        parts = [f"{n} {MOVES[p.gain.verdict]} ({p.gain.difference:+.3f} ± {p.gain.se:.3f}, now {CHANCE[p.chance]})"
                 for n, p in zip(names, change.predictors)]
        text.append(f"With {change.format}: " + "; ".join(parts) + ".")
    if not found.any_above:
        text.append("No predictor is above chance in the trained format at this size, so these controls cannot "
                    "tell the two apart.")
        return " ".join(text)
    for change in found.changes:
        action = CONTROL_ACTIONS[change.format].capitalize()
        if change.all_broken:
            where = "chance" if change.all_to_chance else "or below chance"
            text.append(f"{action} alone brings every predictor that is above chance in the trained format to "
                        f"{where}.")
            continue
        by = {o: [n for n, got in zip(names, change.outcome) if got == o] for o in ("to chance", "below chance",
                                                                                     "unclear")}
        kept = [f"{n} ({p.accuracy:.3f} ± {p.se:.3f})"
                for n, p, o in zip(names, change.predictors, change.outcome) if o == "kept"]
        groups = [f"{_listed(by[o])} {o}" for o in ("to chance", "below chance") if by[o]]
        pieces = ["brings " + " and ".join(groups)] if groups else []
        if kept:
            verb = "stays" if len(kept) == 1 else "stay"
            pieces.append(f"while {_listed(kept)} {verb} above chance" if pieces else
                          f"leaves {_listed(kept)} above chance")
        if by["unclear"]:
            pieces.append(("and " if pieces else "") + f"leaves {_listed(by['unclear'])} at chance without a "
                          "significant drop")
        text.append(f"{action} alone " + ", ".join(pieces) + ".")
    return " ".join(text)


def query_attention_table(att: dict) -> str:
    """:func:`~paththeory.experiments.omniglot_nway.query_attention` as a table: two rows per ``C``, one column per
    head (``layer.head``): the share on the matching drawing ± SE, and the mass on the query's drawing / on tokens
    33-48 (standard errors in the sentences); the column "blind head" is what a head blind to the drawings gives:
    ``1 / C`` of match share, ``1 / (C + 1)`` on any one image."""
    ways = att["ways"]
    first = next(iter(ways.values()))
    heads = [(l, h) for l, layer in enumerate(first["share"]) for h in range(len(layer))]
    rows = []
    for c, r in ways.items():
        rows.append([c, "match share", f"{r['chance']:.2f}",
                     *(f"{r['share'][l][h]:.2f} ± {r['se'][l][h]:.2f}" for l, h in heads)])
        rows.append([c, "on query / tokens 33–48", f"{r['uniform']:.2f}",
                     *(f"{r['on_query'][l][h]:.2f} / {r['on_trained_query'][l][h]:.2f}" for l, h in heads)])
    return markdown_table(["C", "what", "blind head", *(f"head {l + 1}.{h + 1}" for l, h in heads)], rows)


def query_attention_sentences(att: dict) -> str:
    """The attention findings in words (:class:`~paththeory.experiments.omniglot_nway.Attention`): per ``C`` the
    heads whose match share is above chance; what that says about the ``C``-way failure, read against ``C = 2``
    (the format of training); and, for the head that looks most at the query at ``C = 2``, where it looks when
    ``C`` grows."""
    found: Attention = typed(Attention, att["findings"], "attention findings")
    ways = att["ways"]
    parts = []
    for w in found.ways:
        r, (l, h) = ways[str(w.n_ways)], w.best
        parts.append(f"C = {w.n_ways}: " + (
            f"{len(w.above)} of {w.heads} heads above chance ({', '.join(f'{a + 1}.{b + 1}' for a, b in w.above)})"
            if w.above else f"no head above chance (largest {r['share'][l][h]:.2f} ± {r['se'][l][h]:.2f}, head "
                            f"{l + 1}.{h + 1}; chance {r['chance']:.2f})"))
    text = ("Match share, each head tested against chance one-sided at the Bonferroni level "
            f"{found.alpha:g} over the heads: " + "; ".join(parts) + ".")
    if found.query_head is None:
        return text
    if not found.trained_above:
        text += (" Since no head singles out the matching drawing even in the 2-way format the network was "
                 "trained on, the match share does not explain the failure at more ways.")
    elif found.lost:
        text += (" Heads that single out the matching drawing in the 2-way format stop doing so at "
                 f"C = {', '.join(c for c in ways if c != '2')}.")
    two, (l, h) = ways["2"], found.query_head
    later = [f"at C = {c} it gives the query {r['on_query'][l][h]:.2f} ± {r['on_query_se'][l][h]:.3f} and "
             f"tokens 33–48 {r['on_trained_query'][l][h]:.2f} ± {r['on_trained_query_se'][l][h]:.3f} (a blind "
             f"head: {r['uniform']:.2f})" for c, r in ways.items() if c != "2"]
    return (text + f" Head {l + 1}.{h + 1} gives the query's drawing {two['on_query'][l][h]:.2f} ± "
            f"{two['on_query_se'][l][h]:.3f} of all tokens' attention in the 2-way format (a blind head: "
            f"{two['uniform']:.2f}), where the query holds tokens 33–48"
            + ("; " + "; ".join(later) + ", where a context drawing now sits at tokens 33–48" if later else "")
            + ".")
