"""The rows of :mod:`paththeory.experiments.nonlinear` in words and tables (book: Beyond the paper: nonlinear MLP
blocks). Formats only: every number and verdict comes from the rows."""

from __future__ import annotations

from typing import Sequence

from paththeory.display.tables import markdown_table
from paththeory.experiments.compare import Distance
from paththeory.experiments.nonlinear import PHI_NAMES, R_HAT_OK, THEORIES, THEORY_NAMES, Findings, Reading, Row
from paththeory.reports.records import provenance_sentence

SHORT = {"heuristic": "heuristic", "gp": "GP", "linear": "linear"}


def provenance_text(provenance: dict) -> str:
    """Where the records come from, and the data's sizes."""
    cfg = provenance["config"]
    return provenance_sentence(provenance, f"P = {cfg['n_train']} training and {cfg['n_test']} test sequences, "
                                           f"T = {cfg['temperature']:g}.")


def _cell(d: Distance) -> str:
    """A distance with its noise floor: ``0.123 (0.010)``."""
    return f"{d.distance:.3f}" if d.noise is None else f"{d.distance:.3f} ({d.noise:.3f})"


def distance_table(rows: Sequence[Row], quantity: str = "U") -> str:
    """Each theory's distance from the samples in ``quantity`` (``"U"``, ``"U_a"`` or ``"f"``, the mean
    predictor), one row per record, with the noise floor in brackets and R-hat."""
    body = []
    for r in rows:
        cells = [_cell(getattr(a, quantity)) for a in r.against]
        body.append([PHI_NAMES[r.phi], str(r.width), *cells, f"{r.r_hat:.3f}", f"{r.ess:.0f}"])
    return markdown_table(["φ", "N", *(SHORT[t] for t in THEORIES), "R-hat (U)", "ESS (U)"], body)


def accuracy_table(rows: Sequence[Row]) -> str:
    """Test accuracies of the samples' mean predictor and of each theory's."""
    body = [[PHI_NAMES[r.phi], str(r.width), f"{r.accuracy:.3f}", *(f"{a.accuracy:.3f}" for a in r.against)]
            for r in rows]
    return markdown_table(["φ", "N", "NUTS", *(SHORT[t] for t in THEORIES)], body)


QUANTITIES = {"U": "$U^{(1)}$", "f": "the predictor"}


def _nearest_sentence(mine, name: str) -> str:
    parts = []
    for n in mine:
        text = f"N = {n.width}: {THEORY_NAMES[n.theory]} ({n.distance:.3f})"
        if not n.clear:
            text += f", not clearly ({THEORY_NAMES[n.runner_up]} is {n.gap:.3f} further, within four noise floors)"
        parts.append(text)
    return f"Nearest in {name}: " + "; ".join(parts) + "."


def verdict_text(found: Findings) -> str:
    """Per nonlinearity: the nearest theory at each mixed width in $U^{(1)}$ and in the predictor (clearly, or within
    the noise of the runner-up), how the heuristic's distance falls with the width, and in which direction the
    heuristic and the linear theory err on the diagonal of $U^{(1)}$ at the widest width."""
    paragraphs = []
    for phi in PHI_NAMES:
        lines = []
        for q, name in QUANTITIES.items():
            mine = [n for n in found.nearest if n.phi == phi and n.quantity == q]
            if not mine:
                continue
            lines.append(_nearest_sentence(mine, name))
            fit = next((s for s in found.scaling if s.phi == phi and s.quantity == q), None)
            if fit is not None and fit.determined:
                lines.append(f"The heuristic's distance in {name} falls like $N^{{-b}}$ with "
                             f"$b = {fit.b:.2f} \\pm {fit.b_se:.2f}$ (widths {', '.join(map(str, fit.widths))}).")
            elif fit is not None:
                lines.append(f"The heuristic's distance in {name} is resolved at fewer than two widths: no rate.")
        ratio = next((r for r in found.ratios if r.phi == phi), None)
        if ratio is not None:
            lines.append(f"At N = {ratio.width} the diagonal of the heuristic's $U^{{(1)}}$ is {ratio.heuristic:.2f} "
                         f"times the samples' (on average over paths), the linear theory's {ratio.linear:.2f} times.")
        if lines:
            paragraphs.append(f"**{PHI_NAMES[phi]}.** " + " ".join(lines))
    if found.unmixed:
        paragraphs.append(f"Not mixed (R-hat of $U^{{(1)}}$ above {R_HAT_OK}), so not judged: " + ", ".join(
            f"{PHI_NAMES[phi]} at N = {width} (R-hat {r_hat:.3f})" for phi, width, r_hat in found.unmixed) + ".")
    return "\n\n".join(paragraphs) or "No mixed record to judge."


def _span(low: float, high: float) -> str:
    """``0.120`` or ``0.120 to 0.340``."""
    low_text, high_text = f"{low:.3f}", f"{high:.3f}"
    return low_text if low_text == high_text else f"{low_text} to {high_text}"


def reading_text(readings: Sequence[Reading]) -> str:
    """:func:`~paththeory.experiments.nonlinear.readings` in words: per quantity, the span of each theory's distance
    from the samples, the largest noise floor, and at how many mixed points the heuristic is nearer the samples than
    the linear theory, and clearly so."""
    if not readings:
        return "No record mixed: nothing to read."
    sentences = []
    for r in readings:
        span = {t: _span(*r.spans[t]) for t in THEORIES}
        floor = "" if r.floor is None else f" (the samples' noise floor at most {r.floor:.3f})"
        sentences.append(f"In {QUANTITIES[r.quantity]} the heuristic is {span['heuristic']} from the samples, the "
                         f"nonlinear GP {span['gp']} and the linear theory {span['linear']}{floor}: the heuristic is "
                         f"nearer than the linear theory at {r.nearer} of the {r.mixed} mixed points, by more than "
                         f"four noise floors at {r.clear} of them.")
    return " ".join(sentences)
