"""The findings of :mod:`paththeory.experiments.markov` in words and tables (book: the Markov-chain chapter, Fig. 2).
Formats only: every number and verdict comes from the results and their typed findings."""

from __future__ import annotations

from typing import Sequence

from paththeory.display.tables import markdown_table
from paththeory.experiments.markov import SAMPLE_MARKERS, Config, PCOverlap, Variance, by_sampler
from paththeory.experiments.records import schedule
from paththeory.sampling.diagnostics import SAMPLER_NAMES


def sizes_table(cfg: Config) -> str:
    """The sizes of ``cfg`` for a reader, as a Markdown table (:func:`paththeory.display.tables.markdown_table`)."""
    def sampled(widths: Sequence[int], sampler: str) -> str:
        if not widths:
            return "not sampled"
        s = schedule(cfg, sampler)
        chains, step = s["num_chains"], "draws" if sampler == "nuts" else "sweeps"
        warmup = "warm-up steps" if sampler == "nuts" else "warm-up sweeps"
        return (f"N = {', '.join(map(str, widths))}: {chains} chain{'s' if chains > 1 else ''} of "
                f"{s['num_samples']} {step} after {s['num_warmup']} {warmup} each")

    return markdown_table(["what", "size"], [
        ("training / test sequences", f"P = {cfg.n_train} / {cfg.n_test}"),
        ("temperature", f"T = {cfg.temperature:g}"),
        ("widths of the theory", ", ".join(f"{w}" for w in cfg.widths)),
        ("NUTS samples, four paths", sampled(cfg.sample_widths, "nuts")),
        ("exact Gibbs samples, four paths", sampled(cfg.gibbs_widths, "gibbs")),
        ("NUTS samples, noisier task", sampled(cfg.two_path_sample_widths, "nuts")),
    ])


def sampled_points(accuracy: dict, sampled: dict | None = None) -> str:
    """The part of an accuracy figure's caption that depends on the run: where
    ``paththeory.experiments.markov.plot_accuracy`` or ``paththeory.experiments.markov.plot_two_path`` drew
    samples of the finite network, and with which sampler (``accuracy``: a results ``accuracy`` entry, whose
    ``samples`` maps widths to accuracies; ``sampled``: the results' ``samplers`` entry, ``{width: "nuts" | "gibbs"}``,
    NUTS where absent)."""
    groups = by_sampler(accuracy, sampled)
    if not groups:
        return "This build draws no samples in this figure: its profile samples no network here."
    parts = [f"{SAMPLE_MARKERS[k][2]} ({SAMPLE_MARKERS[k][1]}) at N = {', '.join(map(str, sorted(map(int, ws))))}"
             for k, ws in groups.items()]
    return f"Samples of the finite network: {'; '.join(parts)}."


def variance_sentence(v: Variance) -> str:
    """One sentence on a :class:`~paththeory.experiments.markov.Variance`: the two averages, their relative difference
    with its Monte Carlo error, and whether the difference is within two errors (``v.resolved``)."""
    head = (f"At N = {v.width} the theory's predictor variance, averaged over the {v.n} test "
            f"sequences, is {v.theory:.4g} and that of the {v.draws} {SAMPLER_NAMES[v.sampler]} draws {v.sampled:.4g}: "
            f"the samples' is {100 * v.relative_difference:+.1f} % off")
    if v.noise is None:
        return head + " (too few draws for a Monte Carlo error)."
    verdict = "beyond two Monte Carlo errors" if v.resolved else "within two Monte Carlo errors"
    return (f"{head}, with a Monte Carlo error of {100 * v.noise:.1f} %, {verdict}; across sequences "
            f"the two variances correlate with r = {v.r:.2f}.")


def pc_overlap_sentence(pcs: PCOverlap) -> str:
    """One sentence on a :class:`~paththeory.experiments.markov.PCOverlap`: each kernel's largest overlap with the
    labels, its rank, and the share of the labels' squared norm it carries."""
    t, g = pcs.theory_leading, pcs.gp_leading
    return (f"The renormalised kernel's largest overlap is {t.overlap:.2f}, on its principal component {t.rank}, which "
            f"so carries {100 * t.share:.0f} % of the labels' squared norm; the GP kernel's largest is {g.overlap:.2f} "
            f"(component {g.rank}, {100 * g.share:.0f} %).")
