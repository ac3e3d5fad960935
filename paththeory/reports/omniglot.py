"""The findings of :mod:`paththeory.experiments.omniglot` and ``paththeory.experiments.head_pruning`` in words and tables
(book: the Omniglot and pruning chapters, Fig. 3). Formats only: every number and verdict comes from the results and
their typed findings."""

from __future__ import annotations

from paththeory.display.tables import markdown_table
from paththeory.experiments.omniglot import PathSimilarity
from paththeory.experiments.omniglot_base import Config, gp_grid

#: The rules of ``paththeory.experiments.head_pruning.SCORE_VARIANTS`` that score a head, in words.
SCORE_RULES = {
    "abs": "sum of |U| over pairs through the head (the paper's score, §4.2)",
    "diagonal": "sum of U_pipi over the paths through the head (self-weights only)",
    "signed": "sum of U (signed) over pairs through the head",
    "silencing": "theory accuracy lost on validation when the head's paths are pruned in U",
}


def sizes_table(cfg: Config) -> str:
    """The sizes of ``cfg`` for a reader, as a Markdown table (:func:`paththeory.display.tables.markdown_table`)."""
    def values(xs) -> str:
        return ", ".join(f"{x:g}" for x in xs)

    nuts = (f"N = {cfg.sample_width} on P = {cfg.sample_n_train}: {cfg.num_chains} chain"
            f"{'s' if cfg.num_chains > 1 else ''} of {cfg.num_samples} draws after {cfg.num_warmup} "
            "warm-up steps" if cfg.sample_n_train else "not sampled")
    return markdown_table(["what", "size"], [
        ("training / validation / test sequences", f"P = {cfg.n_train} / {cfg.n_validation} / {cfg.n_test}"),
        ("widths of the theory", values(cfg.widths)),
        ("temperatures of the theory", values(cfg.temperatures)),
        ("temperatures of the GP", values(gp_grid(cfg))),
        ("NUTS samples", nuts),
        ("width of the head scores", f"N = {cfg.score_width}"),
        ("random pruning orders", f"{cfg.n_random_orders}"),
        ("the network", "retrained here" if cfg.retrain else "the shipped checkpoint"),
    ])


def accuracy_table(results: dict) -> str:
    """A Markdown table of test accuracies, one column per evaluation split: the theory at every
    width (with its validation-selected T), the GP (with its T) and the trained network (``results``: of
    ``paththeory.experiments.omniglot.run``, or its stages)."""
    splits = [s for s in results["splits"] if s != "validation"]
    names = results.get("split_names", {})
    rows = [(f"theory, N = {w} (T = {results['temperature']['theory'][str(w)]:g})",
             [results["accuracy"]["theory"][s][str(w)] for s in splits]) for w in results["widths"]]
    rows.append((f"GP (T = {results['temperature']['gp']:g})", [results["accuracy"]["gp"][s] for s in splits]))
    if "gd_accuracy" in results:
        rows.append(("trained network", [results["gd_accuracy"][s] for s in splits]))
    return markdown_table(["predictor", *(names.get(s, s) for s in splits)],
                          [[label, *(f"{a:.3f}" for a in accs)] for label, accs in rows])


def _cosine(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def path_similarity_sentence(sim: PathSimilarity) -> str:
    """One sentence on a :class:`~paththeory.experiments.omniglot.PathSimilarity`: the mean cosines, the Mantel test's
    one-sided p-value, and its verdict ``sim.alike``: whether the paths through the same first-layer head carry more
    similar inputs than the others."""
    numbers = (f"the attentioned inputs of two paths through the same first-layer head have a mean "
               f"cosine similarity of {_cosine(sim.same_first)}, those of two paths through different first-layer "
               f"heads {_cosine(sim.different_first)}, and {_cosine(sim.shared_later)} when those share a head of a "
               f"later layer (Mantel test of the cosines against the same-head indicator: "
               f"p = {sim.mantel['p_greater']:.3g})")
    if sim.alike:
        return (f"On the training sequences {numbers}: paths that share their first-layer head do "
                "carry more similar inputs, as the explanation of the block structure requires.")
    return (f"On the training sequences {numbers}: paths that share their first-layer head do not carry "
            "measurably more similar inputs, so the explanation of the block structure stays a "
            "hypothesis that these inputs do not support.")
