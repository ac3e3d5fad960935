"""The findings of :mod:`paththeory.experiments.prefactor` in words, tables and one figure (book: the validity chapter,
"Does the prefactor grow with the architecture?"). Formats only: every number and verdict comes from the findings."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from paththeory.display.plots import COLOURS, book_style, legend_below, panel_grid, stamp_profile
from paththeory.display.tables import markdown_table
from paththeory.experiments.prefactor import GROWTHS, LEVEL, Z_CONSISTENT, Findings, Growth, NetworkScaling, Point

#: The networks' names in text.
NAMES = {"markov": "Markov task", "omniglot": "Omniglot", "attention": "attention only", "mlp": "with MLP blocks",
         "skip": "with skips", "residual": "two residual blocks", "outputs": "three outputs"}
#: What each reference exponent of the growth means, in words.
GROWTH_WORDS = {"flat": "no growth", "paths": "growth like the number of paths",
                "modes": "growth like the number of fluctuation modes"}
#: The figure's marker of each sampler, and its nudge along the width axis (two samplers at one width stay apart).
MARKERS = {"nuts": "o", "gibbs": "D"}
SHIFT = {"nuts": 0.95, "gibbs": 1.05}


def _name(network: str) -> str:
    return NAMES.get(network, network)


def _paths(paths: int, outputs: int = 1) -> str:
    """The size of a network's ``U`` as the table prints it: ``|Pi|``, or ``C x |Pi|`` with ``C`` outputs."""
    return str(paths) if outputs == 1 else f"{outputs} × {paths // outputs}"


def _outputs(findings: Findings) -> dict[str, int]:
    """Each network's number of outputs."""
    return {s.network: s.outputs for s in findings.networks}


def _value(p: Point) -> str:
    """A point's distance as printed: debiased with its error, or an upper limit, or the raw distance."""
    if not p.judged:
        return f"{100 * p.distance:.1f} % ({'not mixed' if not p.mixed else 'noise unknown'})"
    if p.resolved:
        return f"{100 * p.value:.2f} ± {100 * p.se:.2f} %"
    return f"< {100 * p.upper_limit:.2f} %"


def points_table(findings: Findings) -> str:
    """Every sampled width: network, paths, N, sampler, d and its floor s, the debiased d or an upper limit, N d, and
    the next order of Laplace's method's N d where it covers the network."""
    predicted = {(q.network, q.width): q.width * q.distance for q in findings.predictions}
    rows = []
    for s in findings.networks:
        for p in s.points:
            nd = (f"{p.width * p.value:.2f} ± {p.width * p.se:.2f}" if p.judged and p.resolved
                  else f"< {p.width * p.upper_limit:.2f}" if p.judged else "")
            pred = predicted.get((s.network, p.width))
            rows.append([_name(s.network), _paths(s.paths, s.outputs), p.width,
                         p.sampler.upper() if p.sampler == "nuts" else "Gibbs",
                         f"{100 * p.distance:.2f} %", "" if p.noise is None else f"{100 * p.noise:.2f} %",
                         _value(p), nd, "" if pred is None else f"{pred:.2f}"])
    return markdown_table(["network", "paths", "N", "sampler", "d", "noise floor s", "debiased d", "N d",
                           "N d predicted"], rows)


def prediction_table(findings: Findings) -> str:
    """Per network the next order of Laplace's method covers: its resolved points against the prediction (chi-square,
    p), its upper limits above the prediction, and the verdict."""
    rows, outputs = [], _outputs(findings)
    for c in findings.checks:
        fit = "" if c.chi2 is None else f"{c.chi2:.1f} / {c.n_resolved}"
        verdict = ("no resolved point" if c.agrees is None else "consistent (not rejected)" if c.agrees
                   else "disagree" + ("" if c.fit_agrees else f" (p < {LEVEL:g})")
                   + ("" if c.limits_agree else " (an upper limit below the prediction)"))
        if c.below_paths:
            widths = ", ".join(str(w) for w in c.below_paths)
            verdict += f"; counts N = {widths} < |Π|, outside the regime"
        rows.append([_name(c.network), _paths(c.paths, outputs.get(c.network, 1)), fit, "" if c.p is None else f"{c.p:.2f}",
                     f"{c.limits_kept} of {c.limits}", verdict])
    return markdown_table(["network", "paths", "χ² / resolved points", "p", "upper limits above the prediction",
                           "measured against predicted"], rows)


def _fit(s: NetworkScaling) -> str:
    f = s.fit
    if not f.determined:
        return f"undetermined ({f.n_measured} resolved width{'s' if f.n_measured != 1 else ''})"
    chi = "" if f.chi2_nu is None else f", χ²/ν {f.chi2_nu:.1f}"
    limits = f"{f.n_censored} limit" + ("" if f.n_censored == 1 else "s")
    return f"{f.b:.2f} ± {f.b_se:.2f} ({f.n_measured} resolved, {limits}{chi})"


def _prefactor(s: NetworkScaling) -> str:
    if s.prefactor is None:
        return "none (fewer than two resolved widths with N ≥ |Π|)"
    widths = ", ".join(str(w) for w in s.regime_widths)
    return f"{s.prefactor:.2f} ± {s.prefactor_se:.2f} (N = {widths})"


def scaling_table(findings: Findings) -> str:
    """Per network: its paths, the exponent b of d ~ N^-b and the prefactor N d with the widths it averages."""
    return markdown_table(["network", "paths", "$b$ in $d\\sim N^{-b}$", "prefactor $N\\,d$"],
                          [[_name(s.network), _paths(s.paths, s.outputs), _fit(s), _prefactor(s)]
                           for s in findings.networks])


def growth_sentence(findings: Findings) -> str:
    """The answer to "does the prefactor grow with the architecture, and how?", as the findings give it."""
    g, outputs = findings.growth, _outputs(findings)
    have = ", ".join(f"{_name(n)} ({_paths(k, outputs.get(n, 1))} paths)" for n, k in zip(g.networks, g.paths))
    if not g.determined:
        return ("Undetermined: a prefactor needs two resolved widths with N ≥ |Π|, and only "
                + (f"{have} " if have else "no network ") + "has one here, so nothing compares two path counts.")
    return f"Fitted through the prefactors of {have}: {_kappa(g)}"


def _kappa(g: Growth) -> str:
    """A determined :class:`Growth`: its exponent, how far it lies from each reference, the ones it is within, and
    whether one power law of the size describes the prefactors at all."""
    z = "; ".join(f"{GROWTH_WORDS[name]} (η = {GROWTHS[name]:g}) {abs(g.z[name]):.1f} errors away"
                  for name in GROWTHS)
    reads = (" and ".join(GROWTH_WORDS[c] for c in g.consistent) if g.consistent else "none of the three")
    chi = "" if g.chi2_nu is None else f", χ²/ν {g.chi2_nu:.1f}"
    text = (f"N d ~ |Π|^η with η = {g.eta:.2f} ± {g.eta_se:.2f}{chi}; {z}. Within {Z_CONSISTENT:g} errors: "
            f"{reads}.")
    if g.size_explains is False:
        text += (f" But one power law of the size does not describe these prefactors (p = {g.chi2_p:.2g} < "
                 f"{LEVEL:g}): the networks differ in more than their size, and η is a trend through them, not a "
                 "law they follow.")
    return text


def common_sentence(findings: Findings) -> str:
    """The growth at one width every network resolves, where the prefactors' different width ranges cannot bias it."""
    c = findings.common
    if c is None:
        return "No width is resolved for every network, so none compares them all at one width."
    outputs = _outputs(findings)
    values = ", ".join(f"{v:.2f} ± {e:.2f} ({_name(n)}, {_paths(k, outputs.get(n, 1))} paths)"
                       for n, k, v, e in zip(c.networks, c.paths, c.values, c.ses))
    fit = _kappa(c.growth) if c.growth.determined else "too few path counts to fit a growth."
    return f"At N = {c.width}, the largest width every network resolves, N d is {values}. Fitted through them: {fit}"


@book_style
def plot(findings: Findings, profile: str | None = None) -> Figure:
    """``N d`` against ``N``, one panel per network with points: resolved widths debiased with two errors (filled),
    unresolved ones as upper limits (open triangles), the prefactor as a band over the widths it averages, the next
    order of Laplace's method dashed where it covers the network; circles NUTS, diamonds Gibbs."""
    shown = [s for s in findings.networks if any(p.judged for p in s.points)]
    fig, axes = panel_grid(len(shown), height=2.4)
    for ax, s in zip(axes, shown):
        for p in s.points:
            if not p.judged:
                continue
            x = p.width * SHIFT[p.sampler]
            if p.resolved:
                ax.errorbar([x], [p.width * p.value], yerr=[2 * p.width * p.se], fmt=MARKERS[p.sampler],
                            color=COLOURS["theory"], capsize=3, ms=5)
            else:
                ax.plot([x], [p.width * p.upper_limit], "v", mfc="none", color=COLOURS["gp"], ms=6)
        curve = sorted((q.width, q.width * q.distance) for q in findings.predictions if q.network == s.network)
        if curve:
            ax.plot([w * 1.0 for w, _ in curve], [nd for _, nd in curve], "--", color=COLOURS["gp"], lw=1.2)
        if s.prefactor is not None:
            lo, hi = s.regime_widths[0], s.regime_widths[-1]
            ax.fill_between([lo, hi], s.prefactor - 2 * s.prefactor_se, s.prefactor + 2 * s.prefactor_se,
                            color=COLOURS["theory"], alpha=0.15, lw=0)
        ax.set_xscale("log")
        widths = sorted({p.width for p in s.points if p.judged})
        ax.set_xticks(widths, [str(w) for w in widths])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(widths[0] / 1.5, widths[-1] * 1.5)
        ax.set_title(f"{_name(s.network)}, {_paths(s.paths, s.outputs)} paths", fontsize=10)
        ax.set_xlabel("width N")
        ax.set_ylabel("N d")
        ax.set_ylim(bottom=0)
    axes[0].plot([], [], MARKERS["nuts"], color=COLOURS["theory"], label="NUTS, resolved (±2 errors)")
    axes[0].plot([], [], MARKERS["gibbs"], color=COLOURS["theory"], label="Gibbs, resolved (±2 errors)")
    axes[0].plot([], [], "v", mfc="none", color=COLOURS["gp"], label="upper limit")
    axes[0].fill_between([], [], [], color=COLOURS["theory"], alpha=0.15, lw=0, label="prefactor (±2 errors)")
    if findings.predictions:
        axes[0].plot([], [], "--", color=COLOURS["gp"], lw=1.2, label="next order of Laplace's method")
    legend_below(fig, list(axes), columns=2)
    stamp_profile(fig, profile)
    return fig
